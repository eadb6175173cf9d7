package core_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func TestCalculator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr    string
		want    string
		wantErr string
	}{
		{"(17.5 * 3) / 4", "13.125", ""},
		{"1 + 2 * 3", "7", ""},
		{"(1 + 2) * 3", "9", ""},
		{"10 - 4 - 3", "3", ""},
		{"100 / 10 / 5", "2", ""},
		{"2 ^ 3 ^ 2", "512", ""},
		{"-2 ^ 2", "-4", ""},
		{"(-2) ^ 2", "4", ""},
		{"2 ^ -1", "0.5", ""},
		{"--3", "3", ""},
		{"+3 - -3", "6", ""},
		{"7 % 3", "1", ""},
		{"-7 % 3", "-1", ""},
		{"sqrt(16) + abs(-2)", "6", ""},
		{"min(3, 1, 2) + max(4, 9)", "10", ""},
		{"round(2.5)", "3", ""},
		{"round(3.14159, 2)", "3.14", ""},
		{"floor(-1.5) + ceil(1.2)", "0", ""},
		{"ln(e)", "1", ""},
		{"log10(1000)", "3", ""},
		{"log(100)", "2", ""},
		{"log(8, 2)", "3", ""},
		{"sin(pi / 2) + cos(0) + tan(0)", "2", ""},
		{"PI", "3.1415926536", ""},
		{"1e3 + .5", "1000.5", ""},
		{"0.1 + 0.2", "0.3", ""},
		{"2 × 3 ÷ 4", "1.5", ""},
		{"1e25", "1e+25", ""},
		{"1 / 3", "0.3333333333", ""},

		{"", "", "required"},
		{"1 / 0", "", "division by zero"},
		{"5 % 0", "", "division by zero"},
		{"sqrt(-1)", "", "not defined"},
		{"ln(0)", "", "not defined"},
		{"log(8, 1)", "", "log base"},
		{"10 ^ 400", "", "not a finite number"},
		{"1 +", "", "unexpected end"},
		{"(1 + 2", "", "missing )"},
		{"1 + 2)", "", "unexpected"},
		{"2 3", "", "unexpected"},
		{"x + 1", "", "unknown name"},
		{"exp(1)", "", "unknown name"},
		{"os.exit(1)", "", "unknown name"},
		{"sqrt", "", "needs (arguments)"},
		{"sqrt(1, 2)", "", "takes 1"},
		{"min()", "", "takes at least 1"},
		{"round(1, 0.5)", "", "round digits"},
		{"1.2.3", "", "unexpected"},
		{"0x10", "", "unexpected"},
		{"1 = 1", "", "unexpected"},
		{"\"a\"", "", "unexpected"},
		{"1;2", "", "unexpected"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "", "nested too deeply"},
		{strings.Repeat("-", 100) + "1", "", "nested too deeply"},
		{strings.Repeat("1+", 600) + "1", "", "longer than 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": tt.expr}})
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var data struct{ Result string }
			if err := json.Unmarshal(res.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Result != tt.want {
				t.Errorf("%s = %s, want %s", tt.expr, data.Result, tt.want)
			}
		})
	}
	res, err := exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "2/3", "precision": 2.0}})
	if err != nil || res.Content != "2/3 = 0.67" {
		t.Errorf("precision 2: %q, %v", res.Content, err)
	}
	_, err = exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "1", "precision": 21.0}})
	wantToolErr(t, err, "precision")
	_, err = exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "1", "precision": 1.5}})
	wantToolErr(t, err, "integer")
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"1+2*3", "-2^2", "sqrt(16)", "min(1,2,3)", "((1))", "1e308*10", "log(8,2)", "2^-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := core.Evaluate(s)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q = %v accepted", s, v)
		}
		var ce *core.CalcError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("%q: error %T", s, err)
		}
	})
}
