package core

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/tools"
)

// CalculatorTool evaluates arithmetic expressions exactly where a model would guess.
type CalculatorTool struct{}

// Spec declares the tool.
func (CalculatorTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.CalculatorTool",
		Name:        "calculator",
		DisplayName: "Calculator",
		Description: "Evaluate an arithmetic expression: + - * / % ^, parentheses and functions such as sqrt, abs, round, min, max, log, sin, cos.",
		Category:    tools.CategoryData,
		Icon:        "calculator",
		Operations:  []tools.Operation{readOp("calculate", "Evaluate the expression.")},
		Params: []tools.Param{
			{Name: "expression", Type: tools.TypeString, Description: "The expression, for example (17.5 * 3) / 4."},
			{
				Name: "precision", Type: tools.TypeInteger, Description: "Decimal places of the result.",
				Default: 10, Minimum: tools.Float(0), Maximum: tools.Float(20),
			},
		},
	}
}

// Calculator limits.
const (
	maxExprLen   = 1000 // bytes
	maxExprDepth = 64   // nesting of parentheses, unary operators and powers
	maxFuncArgs  = 100
)

type calcExec struct{}

// Execute evaluates the expression argument (see Evaluate) and rounds to precision decimal places
// (default 10, 0..20). Bad expressions and non-finite results are ToolErrors.
func (calcExec) Execute(_ context.Context, call tools.Call) (tools.Result, error) {
	if call.Operation != "calculate" {
		return tools.Result{}, unknownOp(call.Operation)
	}
	expr, err := requiredString(call.Args, "expression")
	if err != nil {
		return tools.Result{}, err
	}
	prec, _, err := intArg(call.Args, "precision", 10)
	if err != nil {
		return tools.Result{}, err
	}
	if prec < 0 || prec > 20 {
		return tools.Result{}, toolErr("precision must be between 0 and 20")
	}
	v, err := Evaluate(expr)
	if err != nil {
		return tools.Result{}, &tools.ToolError{Msg: err.Error()}
	}
	out := formatNumber(v, int(prec))
	return tools.Result{
		Content: strings.TrimSpace(expr) + " = " + out,
		Data:    jsonData(map[string]any{"expression": expr, "result": out, "value": v}),
	}, nil
}

// formatNumber rounds v to prec decimal places without trailing zeros; very large or very small
// magnitudes use exponent notation.
func formatNumber(v float64, prec int) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	if a >= 1e21 || a < math.Pow10(-prec) && a < 1e-6 {
		return strconv.FormatFloat(v, 'g', min(prec+1, 17), 64)
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// CalcError is an expression the calculator refuses; Pos is the byte offset of the problem.
type CalcError struct {
	Pos int
	Msg string
}

func (e *CalcError) Error() string {
	return "calculator: " + e.Msg + " at position " + strconv.Itoa(e.Pos+1)
}

// Evaluate computes an arithmetic expression in float64: numbers (1, 2.5, .5, 1e3), + - * / %
// (remainder) and ^ (power, right-associative, binding tighter than unary minus: -2^2 = -4),
// parentheses, unary + and -, the constants pi and e, and the functions sqrt, abs, min, max
// (one or more arguments), round (round(x) or round(x, digits)), floor, ceil, ln, log10, log
// (log(x) is log10, log(x, base)), sin, cos and tan (radians). Anything else — unknown names,
// assignment, strings, expressions over 1000 bytes or nested deeper than 64 — is refused with a
// *CalcError, as are division by zero and results that are not finite numbers.
func Evaluate(expr string) (float64, error) {
	if len(expr) > maxExprLen {
		return 0, &CalcError{Pos: maxExprLen, Msg: "expression longer than 1000 characters"}
	}
	p := &calcParser{src: expr}
	p.next()
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if p.tok.kind != tokEOF {
		return 0, p.errf("unexpected %q", p.tok.text)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &CalcError{Pos: 0, Msg: "the result is not a finite number"}
	}
	return v, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp // + - * / % ^ ( ) ,
	tokBad
)

type token struct {
	kind tokKind
	text string
	num  float64
	pos  int
}

type calcParser struct {
	src string
	off int
	tok token
}

func (p *calcParser) errf(format string, args ...any) error {
	msg := format
	if len(args) > 0 {
		msg = sprintf(format, args...)
	}
	return &CalcError{Pos: p.tok.pos, Msg: msg}
}

func (p *calcParser) next() {
	for p.off < len(p.src) && (p.src[p.off] == ' ' || p.src[p.off] == '\t' || p.src[p.off] == '\n' || p.src[p.off] == '\r') {
		p.off++
	}
	start := p.off
	if p.off >= len(p.src) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := p.src[p.off]
	switch {
	case c >= '0' && c <= '9' || c == '.':
		end := p.off
		for end < len(p.src) && (p.src[end] >= '0' && p.src[end] <= '9' || p.src[end] == '.') {
			end++
		}
		if end < len(p.src) && (p.src[end] == 'e' || p.src[end] == 'E') {
			e := end + 1
			if e < len(p.src) && (p.src[e] == '+' || p.src[e] == '-') {
				e++
			}
			if e < len(p.src) && p.src[e] >= '0' && p.src[e] <= '9' {
				for e < len(p.src) && p.src[e] >= '0' && p.src[e] <= '9' {
					e++
				}
				end = e
			}
		}
		text := p.src[start:end]
		p.off = end
		n, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) || strings.Count(text, ".") > 1 {
			p.tok = token{kind: tokBad, text: text, pos: start}
			return
		}
		p.tok = token{kind: tokNum, text: text, num: n, pos: start}
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		end := p.off
		for end < len(p.src) && (p.src[end] >= 'a' && p.src[end] <= 'z' || p.src[end] >= 'A' && p.src[end] <= 'Z' || p.src[end] >= '0' && p.src[end] <= '9' || p.src[end] == '_') {
			end++
		}
		p.off = end
		p.tok = token{kind: tokIdent, text: strings.ToLower(p.src[start:end]), pos: start}
	case strings.IndexByte("+-*/%^(),", c) >= 0:
		p.off++
		p.tok = token{kind: tokOp, text: string(c), pos: start}
	case c == 0xc3 && p.off+1 < len(p.src) && (p.src[p.off+1] == 0x97 || p.src[p.off+1] == 0xb7): // × ÷
		p.off += 2
		op := "*"
		if p.src[start+1] == 0xb7 {
			op = "/"
		}
		p.tok = token{kind: tokOp, text: op, pos: start}
	default:
		_, size := firstRune(p.src[p.off:])
		p.off += size
		p.tok = token{kind: tokBad, text: p.src[start:p.off], pos: start}
	}
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func binaryPrec(op string) int {
	switch op {
	case "+", "-":
		return 1
	case "*", "/", "%":
		return 2
	}
	return 0
}

// expr parses a sum/product chain (precedence climbing); depth bounds recursion.
func (p *calcParser) expr(depth int) (float64, error) {
	if depth > maxExprDepth {
		return 0, p.errf("expression nested too deeply")
	}
	return p.binary(depth, 1)
}

func (p *calcParser) binary(depth, minPrec int) (float64, error) {
	lhs, err := p.unary(depth)
	if err != nil {
		return 0, err
	}
	for p.tok.kind == tokOp && binaryPrec(p.tok.text) >= minPrec {
		op := p.tok.text
		prec := binaryPrec(op)
		opTok := p.tok
		p.next()
		rhs, err := p.binary(depth, prec+1)
		if err != nil {
			return 0, err
		}
		switch op {
		case "+":
			lhs += rhs
		case "-":
			lhs -= rhs
		case "*":
			lhs *= rhs
		case "/":
			if rhs == 0 {
				return 0, &CalcError{Pos: opTok.pos, Msg: "division by zero"}
			}
			lhs /= rhs
		case "%":
			if rhs == 0 {
				return 0, &CalcError{Pos: opTok.pos, Msg: "division by zero"}
			}
			lhs = math.Mod(lhs, rhs)
		}
	}
	return lhs, nil
}

func (p *calcParser) unary(depth int) (float64, error) {
	if depth > maxExprDepth {
		return 0, p.errf("expression nested too deeply")
	}
	if p.tok.kind == tokOp && (p.tok.text == "-" || p.tok.text == "+") {
		neg := p.tok.text == "-"
		p.next()
		v, err := p.unary(depth + 1)
		if neg {
			v = -v
		}
		return v, err
	}
	return p.power(depth)
}

func (p *calcParser) power(depth int) (float64, error) {
	base, err := p.primary(depth)
	if err != nil {
		return 0, err
	}
	if p.tok.kind == tokOp && p.tok.text == "^" {
		p.next()
		exp, err := p.unary(depth + 1) // right-associative; 2^-1 allowed
		if err != nil {
			return 0, err
		}
		return math.Pow(base, exp), nil
	}
	return base, nil
}

func (p *calcParser) primary(depth int) (float64, error) {
	switch p.tok.kind {
	case tokNum:
		v := p.tok.num
		p.next()
		return v, nil
	case tokOp:
		if p.tok.text == "(" {
			p.next()
			v, err := p.expr(depth + 1)
			if err != nil {
				return 0, err
			}
			if p.tok.kind != tokOp || p.tok.text != ")" {
				return 0, p.errf("missing )")
			}
			p.next()
			return v, nil
		}
		return 0, p.errf("unexpected %q", p.tok.text)
	case tokIdent:
		name, at := p.tok.text, p.tok
		p.next()
		switch name {
		case "pi":
			return math.Pi, nil
		case "e":
			return math.E, nil
		}
		if _, ok := calcFuncs[name]; !ok {
			return 0, &CalcError{Pos: at.pos, Msg: "unknown name " + strconv.Quote(name) + " (functions: sqrt, abs, min, max, round, floor, ceil, ln, log10, log, sin, cos, tan; constants: pi, e)"}
		}
		if p.tok.kind != tokOp || p.tok.text != "(" {
			return 0, &CalcError{Pos: at.pos, Msg: "function " + name + " needs (arguments)"}
		}
		p.next()
		var args []float64
		if !(p.tok.kind == tokOp && p.tok.text == ")") {
			for {
				if len(args) == maxFuncArgs {
					return 0, p.errf("too many arguments")
				}
				v, err := p.expr(depth + 1)
				if err != nil {
					return 0, err
				}
				args = append(args, v)
				if p.tok.kind == tokOp && p.tok.text == "," {
					p.next()
					continue
				}
				break
			}
		}
		if p.tok.kind != tokOp || p.tok.text != ")" {
			return 0, p.errf("missing ) after the arguments of %s", name)
		}
		p.next()
		return callFunc(name, args, at.pos)
	case tokEOF:
		return 0, p.errf("unexpected end of expression")
	}
	return 0, p.errf("unexpected %q", p.tok.text)
}

// calcFuncs maps each function to its accepted argument counts (max -1: any number ≥ min).
var calcFuncs = map[string][2]int{
	"sqrt": {1, 1}, "abs": {1, 1}, "floor": {1, 1}, "ceil": {1, 1}, "ln": {1, 1}, "log10": {1, 1},
	"sin": {1, 1}, "cos": {1, 1}, "tan": {1, 1}, "round": {1, 2}, "log": {1, 2}, "min": {1, -1}, "max": {1, -1},
}

func callFunc(name string, args []float64, pos int) (float64, error) {
	n := calcFuncs[name]
	if len(args) < n[0] || n[1] >= 0 && len(args) > n[1] {
		want := strconv.Itoa(n[0])
		if n[1] < 0 {
			want = "at least " + want
		} else if n[1] != n[0] {
			want += " or " + strconv.Itoa(n[1])
		}
		return 0, &CalcError{Pos: pos, Msg: name + " takes " + want + " argument(s)"}
	}
	x := args[0]
	domain := func(ok bool) error {
		if ok {
			return nil
		}
		return &CalcError{Pos: pos, Msg: name + " is not defined for " + strconv.FormatFloat(x, 'g', -1, 64)}
	}
	switch name {
	case "sqrt":
		return math.Sqrt(x), domain(x >= 0)
	case "abs":
		return math.Abs(x), nil
	case "floor":
		return math.Floor(x), nil
	case "ceil":
		return math.Ceil(x), nil
	case "ln":
		return math.Log(x), domain(x > 0)
	case "log10":
		return math.Log10(x), domain(x > 0)
	case "log":
		if len(args) == 2 {
			b := args[1]
			if b <= 0 || b == 1 {
				return 0, &CalcError{Pos: pos, Msg: "log base must be positive and not 1"}
			}
			return math.Log(x) / math.Log(b), domain(x > 0)
		}
		return math.Log10(x), domain(x > 0)
	case "sin":
		return math.Sin(x), nil
	case "cos":
		return math.Cos(x), nil
	case "tan":
		return math.Tan(x), nil
	case "round":
		if len(args) == 2 {
			d := args[1]
			if d != math.Trunc(d) || d < -15 || d > 15 {
				return 0, &CalcError{Pos: pos, Msg: "round digits must be a whole number between -15 and 15"}
			}
			f := math.Pow10(int(d))
			return math.Round(x*f) / f, nil
		}
		return math.Round(x), nil
	case "min":
		m := x
		for _, a := range args[1:] {
			m = math.Min(m, a)
		}
		return m, nil
	case "max":
		m := x
		for _, a := range args[1:] {
			m = math.Max(m, a)
		}
		return m, nil
	}
	return 0, &CalcError{Pos: pos, Msg: "unknown function " + name}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func firstRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
