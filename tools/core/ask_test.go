package core_test

import (
	"strings"
	"testing"

	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func question(header string, options ...any) map[string]any {
	return map[string]any{"header": header, "question": "Which " + header + "?", "options": options}
}

func TestAskUserQuestion(t *testing.T) {
	t.Parallel()
	q1 := question(" Colour ", "Red", "Blue ")
	q1["multiple"] = true
	q2 := question("Size", "S", "M", "L", "XL")
	q2["allowFreeText"] = true
	res, err := exec(t, core.Deps{}, "core.AskUserQuestionTool", tools.Call{Operation: "ask", Args: map[string]any{"questions": []any{q1, q2}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pause == nil || res.Pause.Kind != tools.PauseQuestion {
		t.Fatalf("pause %+v", res.Pause)
	}
	want := `[{"header":"Colour","question":"Which  Colour ?","options":["Red","Blue"],"multiple":true,"allowFreeText":false},` +
		`{"header":"Size","question":"Which Size?","options":["S","M","L","XL"],"multiple":false,"allowFreeText":true}]`
	if string(res.Pause.Questions) != want {
		t.Errorf("batch\n got %s\nwant %s", res.Pause.Questions, want)
	}

	five := []any{question("a", "1", "2"), question("b", "1", "2"), question("c", "1", "2"), question("d", "1", "2"), question("e", "1", "2")}
	badMultiple := question("a", "1", "2")
	badMultiple["multiple"] = "yes"
	extra := question("a", "1", "2")
	extra["default"] = "1"
	noQuestion := question("a", "1", "2")
	delete(noQuestion, "question")
	tests := []struct {
		name    string
		args    map[string]any
		wantErr string
	}{
		{"missing", map[string]any{}, "required"},
		{"not a list", map[string]any{"questions": "Which?"}, "must be a list"},
		{"empty", map[string]any{"questions": []any{}}, "ask 1 to 4"},
		{"five", map[string]any{"questions": five}, "ask 1 to 4"},
		{"not an object", map[string]any{"questions": []any{"Which?"}}, "must be an object"},
		{"one option", map[string]any{"questions": []any{question("a", "1")}}, "give 2 to 4 options"},
		{"five options", map[string]any{"questions": []any{question("a", "1", "2", "3", "4", "5")}}, "give 2 to 4 options"},
		{"options not a list", map[string]any{"questions": []any{map[string]any{"header": "a", "question": "q", "options": "1,2"}}}, "options must be a list"},
		{"blank option", map[string]any{"questions": []any{question("a", "1", " ")}}, "non-empty string"},
		{"number option", map[string]any{"questions": []any{question("a", "1", 2.0)}}, "non-empty string"},
		{"duplicate option", map[string]any{"questions": []any{question("a", "1", "1 ")}}, "given twice"},
		{"long option", map[string]any{"questions": []any{question("a", "1", strings.Repeat("x", 201))}}, "longer than 200"},
		{"duplicate header", map[string]any{"questions": []any{question("Size", "1", "2"), question("size", "1", "2")}}, "used twice"},
		{"long header", map[string]any{"questions": []any{question(strings.Repeat("h", 31), "1", "2")}}, "longer than 30"},
		{"blank header", map[string]any{"questions": []any{question("  ", "1", "2")}}, "header is required"},
		{"no question", map[string]any{"questions": []any{noQuestion}}, "question is required"},
		{"multiple not bool", map[string]any{"questions": []any{badMultiple}}, "multiple must be a boolean"},
		{"unknown key", map[string]any{"questions": []any{extra}}, "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, core.Deps{}, "core.AskUserQuestionTool", tools.Call{Operation: "ask", Args: tt.args})
			wantToolErr(t, err, tt.wantErr)
			if res.Pause != nil {
				t.Error("refused batch paused the task")
			}
		})
	}
}
