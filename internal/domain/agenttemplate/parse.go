package agenttemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/platform/yamldoc"
)

const (
	// MaxSize bounds a template document; larger input is a PARSE_ERROR (the API refuses
	// bodies over 1 MiB before they get here).
	MaxSize = 1 << 20
	// maxDepth bounds nesting; real templates are about five levels deep.
	maxDepth = 64
	// maxNodes bounds the values of one document, which also bounds YAML alias expansion.
	maxNodes = 1 << 18
)

// kind is the JSON type of a node.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// node is one value of the JSON data model. JSON and YAML input both become nodes, so every
// rule is checked once, on the same model, with keys in document order.
type node struct {
	kind kind
	b    bool
	s    string // string value, or the number as a JSON number literal
	arr  []*node
	keys []string // object keys in document order, unique
	vals []*node  // parallel to keys
}

// get returns the value of key in an object node.
func (n *node) get(key string) (*node, bool) {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// syntax selects the parser.
type syntax int

const (
	syntaxJSON    syntax = iota // application/json: JSON text only
	syntaxJSONish               // application/yaml, text/plain, unknown: JSON or YAML text
)

func syntaxOf(contentType string) syntax {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(contentType))
	}
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		return syntaxJSON
	}
	return syntaxJSONish
}

// errEmpty means the text holds no document at all (whitespace, or only YAML comments).
var errEmpty = errors.New("the template is empty")

// parseDocument turns raw text into a node. errEmpty means EMPTY_PAYLOAD; any other error is a
// PARSE_ERROR with a message fit for the caller.
func parseDocument(raw []byte, syn syntax) (root *node, err error) {
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errEmpty
	}
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("the template is larger than %d bytes", MaxSize)
	}
	if syn == syntaxJSON {
		return parseJSON(raw)
	}
	// JSON text is tried first so that JSON keeps JSON's exact semantics (YAML reads some JSON
	// subtly differently); anything else is YAML.
	trimmed := bytes.TrimSpace(raw)
	if trimmed[0] == '{' || trimmed[0] == '[' || trimmed[0] == '"' {
		root, jerr := parseJSON(raw)
		if jerr == nil {
			return root, nil
		}
		root, yerr := parseYAML(raw)
		if yerr == nil {
			return root, nil
		}
		if trimmed[0] == '"' {
			return nil, yerr
		}
		return nil, jerr // it looked like JSON: the JSON error is the useful one
	}
	return parseYAML(raw)
}

// builder counts nodes and checks depth for both parsers.
type builder struct{ nodes int }

func (b *builder) add(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("values nested more than %d levels deep", maxDepth)
	}
	b.nodes++
	if b.nodes > maxNodes {
		return fmt.Errorf("more than %d values", maxNodes)
	}
	return nil
}

// parseJSON reads exactly one JSON value with encoding/json's tokenizer (so syntax is exactly
// JSON's), keeping key order and refusing duplicate keys.
func parseJSON(raw []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	b := &builder{}
	root, err := b.jsonValue(dec, raw, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := position(raw, dec.InputOffset())
		return nil, fmt.Errorf("line %d column %d: unexpected data after the top-level value", line, col)
	}
	return root, nil
}

func (b *builder) jsonValue(dec *json.Decoder, raw []byte, depth int) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(raw, dec, err)
	}
	if err := b.add(depth); err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, b: t}, nil
	case json.Number:
		return &node{kind: kindNumber, s: t.String()}, nil
	case string:
		return &node{kind: kindString, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kindArray, arr: []*node{}}
			for dec.More() {
				v, err := b.jsonValue(dec, raw, depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(raw, dec, err)
			}
			return n, nil
		case '{':
			n := &node{kind: kindObject}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, jsonError(raw, dec, err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("an object key is not a string")
				}
				if seen[key] {
					line, col := position(raw, dec.InputOffset())
					return nil, fmt.Errorf("line %d column %d: duplicate key %s", line, col, quote(key))
				}
				seen[key] = true
				v, err := b.jsonValue(dec, raw, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(raw, dec, err)
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func jsonError(raw []byte, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		line, col := position(raw, syn.Offset-1)
		return fmt.Errorf("line %d column %d: %v", line, col, syn)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := position(raw, int64(len(raw)))
		return fmt.Errorf("line %d column %d: unexpected end of JSON input", line, col)
	}
	line, col := position(raw, dec.InputOffset())
	return fmt.Errorf("line %d column %d: %v", line, col, err)
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// parseYAML reads exactly one YAML document into the JSON data model. Anything without a JSON
// equivalent (non-string keys that are not scalars, merge keys, custom or binary tags,
// infinities) is refused rather than guessed at.
func parseYAML(raw []byte) (*node, error) {
	n, err := yamldoc.Decode(raw)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, errEmpty
	}
	b := &builder{}
	return b.yamlValue(n, 1)
}

func (b *builder) yamlValue(n *yaml.Node, depth int) (*node, error) {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > maxDepth {
			return nil, fmt.Errorf("line %d: alias chain too long", n.Line)
		}
		n = n.Alias
	}
	if n == nil {
		return nil, errors.New("dangling YAML alias")
	}
	if err := b.add(depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := &node{kind: kindObject}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			for j := 0; k != nil && k.Kind == yaml.AliasNode && j <= maxDepth; j++ {
				k = k.Alias
			}
			if k == nil || k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a plain string", n.Content[i].Line)
			}
			if k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if seen[k.Value] {
				return nil, fmt.Errorf("line %d: duplicate key %s", k.Line, quote(k.Value))
			}
			seen[k.Value] = true
			v, err := b.yamlValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out.keys = append(out.keys, k.Value)
			out.vals = append(out.vals, v)
		}
		return out, nil
	case yaml.SequenceNode:
		out := &node{kind: kindArray, arr: make([]*node, 0, len(n.Content))}
		for _, c := range n.Content {
			v, err := b.yamlValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			out.arr = append(out.arr, v)
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func yamlScalar(n *yaml.Node) (*node, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return &node{kind: kindNull}, nil
	case "!!str", "!!timestamp":
		return &node{kind: kindString, s: n.Value}, nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, yamldoc.Error(err))
		}
		return &node{kind: kindBool, b: v}, nil
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, yamldoc.Error(err))
		}
		var lit string
		switch x := v.(type) {
		case int:
			lit = strconv.Itoa(x)
		case int64:
			lit = strconv.FormatInt(x, 10)
		case uint64:
			lit = strconv.FormatUint(x, 10)
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, fmt.Errorf("line %d: %s has no JSON equivalent", n.Line, n.Value)
			}
			lit = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			return nil, fmt.Errorf("line %d: unsupported number %s", n.Line, n.Value)
		}
		return &node{kind: kindNumber, s: lit}, nil
	default:
		return nil, fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, tag)
	}
}

// decimal is a JSON number literal, exactly: value = ±digits × 10^exp, where digits has no
// leading or trailing zeros ("" is zero). It decides integer-ness and ranges the way JSON
// Schema does (10.0 and 1e1 are integers) without building huge numbers.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

const expLimit = 1 << 40 // exponents are clamped here; nothing that large fits anything anyway

func parseDecimal(lit string) (decimal, bool) {
	var d decimal
	s := lit
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return d, false
	}
	if !allDigits(intPart) || !allDigits(frac) {
		return d, false
	}
	var exp int64
	if hasExp {
		e := expPart
		neg := false
		if strings.HasPrefix(e, "-") {
			neg = true
			e = e[1:]
		} else if strings.HasPrefix(e, "+") {
			e = e[1:]
		}
		if e == "" || !allDigits(e) {
			return d, false
		}
		for _, c := range e {
			exp = exp*10 + int64(c-'0')
			if exp > expLimit {
				exp = expLimit
				break
			}
		}
		if neg {
			exp = -exp
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	if d.digits == "" {
		d.neg, exp = false, 0
	}
	d.exp = exp
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d decimal) isInt() bool { return d.digits == "" || d.exp >= 0 }

// int64 returns the value when it is an integer that fits an int64.
func (d decimal) int64() (int64, bool) {
	if !d.isInt() {
		return 0, false
	}
	if d.digits == "" {
		return 0, true
	}
	if int64(len(d.digits))+d.exp > 19 {
		return 0, false
	}
	s := d.digits + strings.Repeat("0", int(d.exp))
	if d.neg {
		s = "-" + s
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// intIn reports whether the number literal is an integer within [lo, hi].
func intIn(lit string, lo, hi int64) (int64, bool) {
	d, ok := parseDecimal(lit)
	if !ok {
		return 0, false
	}
	v, ok := d.int64()
	if !ok || v < lo || v > hi {
		return 0, false
	}
	return v, true
}

// plain converts a node into a plain Go value: nil, bool, string, int64 (integers within int64),
// float64 (other numbers), []any, map[string]any. ok is false when a number does not fit a
// float64.
func plain(n *node) (v any, ok bool) {
	switch n.kind {
	case kindNull:
		return nil, true
	case kindBool:
		return n.b, true
	case kindString:
		return n.s, true
	case kindNumber:
		return plainNumber(n.s)
	case kindArray:
		out := make([]any, len(n.arr))
		ok := true
		for i, c := range n.arr {
			var cok bool
			out[i], cok = plain(c)
			ok = ok && cok
		}
		return out, ok
	default:
		out := make(map[string]any, len(n.keys))
		ok := true
		for i, k := range n.keys {
			var cok bool
			out[k], cok = plain(n.vals[i])
			ok = ok && cok
		}
		return out, ok
	}
}

func plainNumber(lit string) (any, bool) {
	d, ok := parseDecimal(lit)
	if !ok {
		return nil, false
	}
	if v, ok := d.int64(); ok {
		return v, true
	}
	f, _ := strconv.ParseFloat(lit, 64) // an underflow rounds to zero, which is fine
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	return f, true
}

// quote renders s for a message, shortened so a finding never echoes a huge value.
func quote(s string) string {
	const limit = 80
	n := 0
	for i := range s {
		if n == limit {
			s = s[:i] + "…"
			break
		}
		n++
	}
	return strconv.Quote(s)
}
