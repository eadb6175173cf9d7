package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
)

// EnvPrefix is prepended to a key's environment name.
const EnvPrefix = "SVC_"

// field describes one key of Config, read from its struct tags once.
type field struct {
	key      string // file key
	env      string // environment name with the prefix
	index    int    // struct field index
	kind     reflect.Kind
	secret   bool // redacted in output
	storable bool // may be set by stored settings
	flatOnly bool // the file key is only accepted at the top level (SVC_AGENT_API…)
}

var (
	fields   []*field
	byKey    = map[string]*field{}
	byGoName = map[string]*field{} // Go field name → field
)

func init() {
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		sf := t.Field(i)
		key := sf.Tag.Get("key")
		if key == "" {
			continue
		}
		f := &field{
			key:      key,
			env:      EnvPrefix + sf.Tag.Get("env"),
			index:    i,
			kind:     sf.Type.Kind(),
			secret:   sf.Tag.Get("secret") == "yes",
			storable: sf.Tag.Get("stored") != "no",
			flatOnly: key != strings.ToLower(key),
		}
		fields = append(fields, f)
		byKey[key] = f
		byGoName[sf.Name] = f
	}
}

// FileKeys returns every key the configuration file and the stored settings accept, sorted.
func FileKeys() []string {
	keys := make([]string, 0, len(fields))
	for _, f := range fields {
		keys = append(keys, f.key)
	}
	sort.Strings(keys)
	return keys
}

// Storable reports whether key may be set through the stored settings. Keys needed before the
// database is open (db_*, sqlite_busy_timeout, listen) and the master key (secret_key,
// key_path) are not: they come from the file or the environment only.
func Storable(key string) bool {
	f, ok := byKey[key]
	return ok && f.storable
}

// Value returns the value of key in c (a string, bool or int) and whether key is a key.
func (c *Config) Value(key string) (any, bool) {
	f, ok := byKey[key]
	if !ok {
		return nil, false
	}
	return f.get(c), true
}

// TypeOf names the type of key's values: "string", "boolean" or "integer" ("" for an unknown
// key).
func TypeOf(key string) string {
	f, ok := byKey[key]
	if !ok {
		return ""
	}
	switch f.kind {
	case reflect.Bool:
		return "boolean"
	case reflect.Int:
		return "integer"
	}
	return "string"
}

// Secret reports whether key holds a secret (never shown).
func Secret(key string) bool {
	f, ok := byKey[key]
	return ok && f.secret
}

func (f *field) get(c *Config) any {
	return reflect.ValueOf(c).Elem().Field(f.index).Interface()
}

func (f *field) set(c *Config, v any) {
	reflect.ValueOf(c).Elem().Field(f.index).Set(reflect.ValueOf(v))
}

// convert checks a value read from the file or the stored settings against the key's type and
// returns it as the field's Go type. Strings are never turned into numbers or booleans and
// numbers never into strings, so an unquoted password such as 0123 is refused rather than
// silently changed.
func (f *field) convert(v any) (any, error) {
	switch f.kind {
	case reflect.String:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("expected a string, got %s (quote the value)", describe(v))
	case reflect.Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("expected true or false, got %s", describe(v))
	case reflect.Int:
		if n, ok := toInt(v); ok {
			return n, nil
		}
		return nil, fmt.Errorf("expected an integer, got %s", describe(v))
	}
	return nil, fmt.Errorf("unsupported key type %s", f.kind)
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		if n >= math.MinInt && n <= math.MaxInt {
			return int(n), true
		}
	case uint64:
		if n <= math.MaxInt {
			return int(n), true
		}
	case float64:
		if n == math.Trunc(n) && n >= -(1<<53) && n <= 1<<53 {
			return int(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return toInt(i)
		}
		if fl, err := n.Float64(); err == nil {
			return toInt(fl)
		}
	}
	return 0, false
}

// describe names a value's type (and short scalars) for error messages.
func describe(v any) string {
	const maxLen = 40
	switch x := v.(type) {
	case string:
		if len(x) > maxLen {
			x = x[:maxLen] + "…"
		}
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case int, int64, uint64, json.Number:
		return fmt.Sprintf("the number %v", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case time.Time:
		return "a timestamp"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// suggest returns the known key closest to an unknown one, or "" when none is close.
func suggest(unknown string) string {
	best, bestDist := "", 4
	for _, f := range fields {
		d := levenshtein(strings.ToLower(unknown), strings.ToLower(f.key))
		if d < bestDist {
			best, bestDist = f.key, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
