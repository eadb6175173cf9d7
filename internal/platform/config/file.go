package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/platform/yamldoc"
)

const (
	// maxFileSize bounds the configuration file; anything larger is certainly a mistake.
	maxFileSize = 1 << 20
	// maxDepth bounds nesting of keys in the file and the stored settings.
	maxDepth = 16
	// maxNodes bounds the work of walking a YAML document (aliases can multiply it).
	maxNodes = 10_000
	// maxUnknownListed bounds the unknown keys named in one error.
	maxUnknownListed = 20
)

// entry is one raw value of a file or stored layer, before type checking.
type entry struct {
	val   any
	line  int // line in the file, 0 when unknown (JSON, stored settings)
	depth int // 1 for a flat key, more for each level of nesting
}

// rawLayer maps flattened keys to raw values.
type rawLayer map[string]entry

// typedLayer maps known keys to values of the field's Go type. Keys set to null are absent.
type typedLayer struct {
	values map[string]any
	lines  map[string]int
}

// parseFile parses the configuration file named name (the extension selects JSON or YAML) and
// type-checks its keys. A syntax error, or a structure that cannot be flattened, is returned as
// err; unknown keys and values of the wrong type are returned as problems, so they are reported
// together with the other configuration problems.
func parseFile(name string, data []byte) (layer typedLayer, problems []string, err error) {
	defer func() {
		// The parsers are not supposed to panic (FuzzLoadFile checks parseFileUnguarded); if one
		// does anyway, a bad file must not take the process down.
		if r := recover(); r != nil {
			layer, problems, err = typedLayer{}, nil, fmt.Errorf("config file %s: cannot parse: %v", name, r)
		}
	}()
	return parseFileUnguarded(name, data)
}

func parseFileUnguarded(name string, data []byte) (typedLayer, []string, error) {
	if len(data) > maxFileSize {
		return typedLayer{}, nil, fmt.Errorf("config file %s: larger than %d bytes", name, maxFileSize)
	}
	var (
		raw rawLayer
		err error
	)
	if strings.EqualFold(filepath.Ext(name), ".json") {
		raw, err = parseJSON(data)
	} else {
		raw, err = parseYAML(data)
	}
	if err != nil {
		return typedLayer{}, nil, fmt.Errorf("config file %s: %w", name, err)
	}
	layer, problems := typeCheck(raw, func(e entry) string {
		if e.line > 0 {
			return fmt.Sprintf("config file %s line %d", name, e.line)
		}
		return "config file " + name
	})
	return layer, problems, nil
}

// typeCheck resolves a raw layer against the known keys: unknown keys are listed in one
// problem, wrong types each get one, nulls are dropped.
func typeCheck(raw rawLayer, where func(entry) string) (typedLayer, []string) {
	out := typedLayer{values: map[string]any{}, lines: map[string]int{}}
	var problems, unknown []string
	unknownCount := 0
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := raw[k]
		f, ok := byKey[k]
		if ok && f.flatOnly && e.depth > 1 {
			problems = append(problems, fmt.Sprintf("%s: %s must be written flat, at the top level", where(e), k))
			continue
		}
		if !ok {
			if e.val == nil && isKeyPrefix(k) {
				continue // an empty section such as "mail:" with everything commented out
			}
			unknownCount++
			if unknownCount > maxUnknownListed {
				continue
			}
			u := fmt.Sprintf("%q", k)
			var notes []string
			if e.line > 0 {
				notes = append(notes, fmt.Sprintf("line %d", e.line))
			}
			if s := suggest(k); s != "" {
				notes = append(notes, "did you mean "+s+"?")
			}
			if len(notes) > 0 {
				u += " (" + strings.Join(notes, ", ") + ")"
			}
			unknown = append(unknown, u)
			continue
		}
		if e.val == nil {
			continue
		}
		v, err := f.convert(e.val)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", where(e), k, err))
			continue
		}
		out.values[k] = v
		if e.line > 0 {
			out.lines[k] = e.line
		}
	}
	if unknownCount > maxUnknownListed {
		unknown = append(unknown, fmt.Sprintf("and %d more", unknownCount-maxUnknownListed))
	}
	if len(unknown) > 0 {
		where := where(entry{})
		word := "key"
		if unknownCount > 1 {
			word = "keys"
		}
		problems = append([]string{fmt.Sprintf("%s: unknown %s %s", where, word, strings.Join(unknown, ", "))}, problems...)
	}
	return out, problems
}

// isKeyPrefix reports whether k followed by "_" starts a known key ("db" for db_driver…).
func isKeyPrefix(k string) bool {
	for _, f := range fields {
		if strings.HasPrefix(f.key, k+"_") {
			return true
		}
	}
	return false
}

// put records a flattened value. The flatter spelling wins; two spellings at the same depth
// (a duplicate key, or mail_from: {name: …} beside mail: {from_name: …}) are an error.
func put(out rawLayer, key string, e entry) error {
	old, ok := out[key]
	switch {
	case !ok || e.depth < old.depth:
		out[key] = e
	case e.depth == old.depth:
		if e.line > 0 && old.line > 0 {
			return fmt.Errorf("key %s is defined twice (lines %d and %d)", key, old.line, e.line)
		}
		return fmt.Errorf("key %s is defined twice", key)
	}
	return nil
}

// parseYAML walks the YAML node tree (rather than decoding into a map) to keep line numbers.
func parseYAML(data []byte) (rawLayer, error) {
	out := rawLayer{}
	root, err := yamldoc.Decode(data)
	if err != nil || root == nil { // an empty file sets nothing
		return out, err
	}
	w := yamlWalker{out: out}
	root, err = w.deref(root)
	if err != nil {
		return nil, err
	}
	switch {
	case root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null":
		return out, nil
	case root.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("line %d: the top level must be a mapping of keys to values", root.Line)
	}
	if err := w.mapping(root, "", 1); err != nil {
		return nil, err
	}
	return out, nil
}

type yamlWalker struct {
	out   rawLayer
	nodes int
}

func (w *yamlWalker) deref(n *yaml.Node) (*yaml.Node, error) {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > maxDepth {
			return nil, fmt.Errorf("line %d: alias chain too long", n.Line)
		}
		n = n.Alias
	}
	if n == nil {
		return nil, errors.New("dangling alias")
	}
	w.nodes++
	if w.nodes > maxNodes {
		return nil, errors.New("document too complex (too many nodes after alias expansion)")
	}
	return n, nil
}

func (w *yamlWalker) mapping(n *yaml.Node, prefix string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("line %d: keys nested more than %d levels deep", n.Line, maxDepth)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := w.deref(n.Content[i])
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a key must be a plain name", k.Line)
		}
		if k.ShortTag() == "!!merge" {
			return fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
		}
		key := prefix + k.Value
		v, err := w.deref(n.Content[i+1])
		if err != nil {
			return err
		}
		var val any
		switch v.Kind {
		case yaml.MappingNode:
			if err := w.mapping(v, key+"_", depth+1); err != nil {
				return err
			}
			continue
		case yaml.SequenceNode:
			val = []any{}
		case yaml.ScalarNode:
			if err := v.Decode(&val); err != nil {
				return fmt.Errorf("line %d: %s: %v", v.Line, key, yamldoc.Error(err))
			}
		default:
			return fmt.Errorf("line %d: %s: unsupported value", v.Line, key)
		}
		if err := put(w.out, key, entry{val: val, line: k.Line, depth: depth}); err != nil {
			return fmt.Errorf("line %d: %w", k.Line, err)
		}
	}
	return nil
}

// parseJSON decodes a JSON object, reporting syntax errors with their line and column.
func parseJSON(data []byte) (rawLayer, error) {
	out := rawLayer{}
	if len(bytes.TrimSpace(data)) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		line, col := position(data, dec.InputOffset())
		return nil, fmt.Errorf("line %d column %d: unexpected data after the top-level object", line, col)
	}
	switch m := v.(type) {
	case nil:
		return out, nil
	case map[string]any:
		if err := flatten(out, m, "", 1); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, errors.New("the top level must be an object of keys to values")
}

func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the offending byte itself.
		line, col := position(data, syn.Offset-1)
		return fmt.Errorf("line %d column %d: %v", line, col, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := position(data, int64(len(data)))
		return fmt.Errorf("line %d column %d: unexpected end of JSON input", line, col)
	}
	return err
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// flatten records the values of a decoded mapping (JSON, stored settings), joining nested keys
// with "_".
func flatten(out rawLayer, m map[string]any, prefix string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("keys nested more than %d levels deep", maxDepth)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := prefix + k
		switch v := m[k].(type) {
		case map[string]any:
			if err := flatten(out, v, key+"_", depth+1); err != nil {
				return err
			}
		default:
			if err := put(out, key, entry{val: v, depth: depth}); err != nil {
				return err
			}
		}
	}
	return nil
}
