package limits_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/limits"
)

// bound is what the contract must say of one schema: each non-nil field is compared with the
// keyword of the same name, and a keyword that is expected must be present.
type bound struct {
	Minimum, Maximum, Default, MaxLength, MaxItems *int
}

func (b bound) String() string {
	var parts []string
	for _, f := range b.fields() {
		if f.want != nil {
			parts = append(parts, fmt.Sprintf("%s %d", f.key, *f.want))
		}
	}
	return strings.Join(parts, ", ")
}

type field struct {
	key  string
	want *int
}

func (b bound) fields() []field {
	return []field{{"minimum", b.Minimum}, {"maximum", b.Maximum}, {"default", b.Default},
		{"maxLength", b.MaxLength}, {"maxItems", b.MaxItems}}
}

func n(v int) *int { return &v }

// steps is the bound of every step budget; an agent's max_steps also states its default.
var steps = bound{Minimum: n(limits.MinSteps), Maximum: n(limits.MaxSteps)}

// byName holds the bounds that apply to every schema property, and every parameter, of that
// name wherever it appears in either document: the default is checked where the contract
// states one.
var byName = map[string]bound{
	"max_steps":          steps,
	"additional_steps":   steps,
	"max_steps_override": steps,
	"per_page":           {Minimum: n(1), Maximum: n(limits.MaxPerPage), Default: n(limits.DefaultPerPage)},
}

// optionalDefault lists the names of byName whose default the contract may leave out (a
// request's max_steps defaults to the agent's, not to a constant).
var optionalDefault = map[string]bool{"max_steps": true, "additional_steps": true, "max_steps_override": true}

// defaults are the defaults byName's optional ones must have where the contract states them.
var defaults = map[string]int{"max_steps": limits.DefaultSteps}

// clamped are the step budgets of the per-agent API, which are clamped to the bounds, never
// refused: their schemas carry no bound, their descriptions say "clamped to MinSteps..MaxSteps".
var clamped = []string{
	"StartAgentChatRequest/properties/max_steps",
	"StartAgentChatRequest/properties/additional_steps",
	"SendAgentChatMessageRequest/properties/additional_steps",
}

// unbounded are the sites of byName's names that carry none of its bounds, and why.
var unbounded = map[string]string{
	"Task/properties/max_steps": "a task's budget grows with each continuation (steps_used + additional_steps)",
}

// component returns the key of clamped or unbounded that names s, or "".
func component(s site, keys []string) string {
	for _, k := range keys {
		if strings.HasSuffix(s.where, "/schemas/"+k) {
			return k
		}
	}
	return ""
}

// site is one schema the walk found: the name it carries (property or parameter) and where.
type site struct {
	name, where string
	schema      map[string]any
}

// sites walks doc and returns every schema property (at any depth) and every parameter's
// schema, named by the property or parameter name.
func sites(doc any, where string) []site {
	var out []site
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name, p := range props {
					if s, ok := p.(map[string]any); ok {
						out = append(out, site{name, path + "/properties/" + name, s})
					}
				}
			}
			if name, ok := v["name"].(string); ok {
				if s, ok := v["schema"].(map[string]any); ok && v["in"] != nil {
					out = append(out, site{name, path + "/schema", s})
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k != "example" && k != "examples" {
					walk(v[k], path+"/"+k)
				}
			}
		case []any:
			for i, e := range v {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	walk(doc, where)
	return out
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func load(t *testing.T, name string) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil { // JSON is YAML too
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// check compares the keywords of s with want and reports every difference.
func check(t *testing.T, s site, want bound, defaultOptional bool) {
	t.Helper()
	for _, f := range want.fields() {
		if f.want == nil {
			continue
		}
		got, ok := s.schema[f.key]
		if !ok {
			if f.key == "default" && defaultOptional {
				continue
			}
			t.Errorf("%s: no %s (the code uses %d)", s.where, f.key, *f.want)
			continue
		}
		if i, isInt := got.(int); !isInt || i != *f.want {
			t.Errorf("%s: %s is %v, the code uses %d", s.where, f.key, got, *f.want)
		}
	}
}

// TestContractSaysTheSame fails when openapi.yaml or agent-template.schema.json states a bound
// of byName differently from the constant the code uses, or no longer states it at all.
func TestContractSaysTheSame(t *testing.T) {
	found := map[string]int{}
	for _, name := range []string{"openapi.yaml", "agent-template.schema.json"} {
		for _, s := range sites(load(t, name), name+"#") {
			want, ok := byName[s.name]
			if !ok {
				continue
			}
			found[s.name]++
			if component(s, clamped) != "" {
				desc, _ := s.schema["description"].(string)
				if say := fmt.Sprintf("clamped to %d..%d", limits.MinSteps, limits.MaxSteps); !strings.Contains(desc, say) {
					t.Errorf("%s: the description does not say %q: %q", s.where, say, desc)
				}
				continue
			}
			if component(s, keysOf(unbounded)) != "" {
				continue
			}
			if d, ok := defaults[s.name]; ok {
				want.Default = n(d)
			}
			check(t, s, want, optionalDefault[s.name])
		}
	}
	for name := range byName {
		if found[name] == 0 {
			t.Errorf("the contract states no %s any more: update byName", name)
		}
	}
}
