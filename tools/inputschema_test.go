package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

func rawSchemaSpec() tools.Spec {
	return tools.Spec{
		Class: "weather.McpForecast", Name: "forecast", PluginSlug: "weather",
		Operations: []tools.Operation{{Name: "forecast", RequiresApprovalByDefault: true}},
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":  map[string]any{"type": "string", "description": "City <name>."},
				"days":  map[string]any{"type": "integer", "minimum": 1},
				"units": map[string]any{"oneOf": []any{map[string]any{"const": "metric"}, map[string]any{"const": "imperial"}}},
			},
			"required":             []any{"city"},
			"additionalProperties": false,
		},
	}
}

func TestSchemaInputSchemaIsSentAsGiven(t *testing.T) {
	t.Parallel()
	spec := rawSchemaSpec()
	if err := tools.Validate(spec); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got := tools.Schema(spec)
	want := `{"additionalProperties":false,"properties":{"city":{"description":"City <name>.","type":"string"},"days":{"minimum":1,"type":"integer"},"units":{"oneOf":[{"const":"metric"},{"const":"imperial"}]}},"required":["city"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("schema:\n got %s\nwant %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	// Round trip through JSON: nothing added, nothing dropped.
	orig, _ := json.Marshal(spec.InputSchema)
	var origBack map[string]any
	_ = json.Unmarshal(orig, &origBack)
	if !reflect.DeepEqual(back, origBack) {
		t.Fatalf("schema changed the input schema: %v", back)
	}
}

func TestInputSchemaRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*tools.Spec)
	}{
		{"with params", func(s *tools.Spec) {
			s.Params = []tools.Param{{Name: "x", Type: tools.TypeString}}
		}},
		{"with inherited params", func(s *tools.Spec) {
			s.Base = &tools.Spec{Params: []tools.Param{{Name: "x", Type: tools.TypeString}}}
		}},
		{"two operations", func(s *tools.Spec) {
			s.Operations = append(s.Operations, tools.Operation{Name: "other"})
		}},
		{"not an object", func(s *tools.Spec) { s.InputSchema = map[string]any{"type": "string"} }},
		{"no type", func(s *tools.Spec) { s.InputSchema = map[string]any{"properties": map[string]any{}} }},
		{"unencodable", func(s *tools.Spec) { s.InputSchema = map[string]any{"type": "object", "x": func() {}} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := rawSchemaSpec()
			tc.change(&spec)
			err := tools.NewRegistry().Register(fake{spec})
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("Register = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestRegistryReplaceAndUnregister(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	a := rawSchemaSpec()
	if err := r.Register(fake{a}); err != nil {
		t.Fatal(err)
	}

	// Replace keeps the class, may rename the tool: the old model name disappears.
	b := a
	b.Name, b.Description = "forecast2", "new"
	if err := r.Replace(fake{b}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if _, ok := r.LookupModelName("weather:forecast"); ok {
		t.Fatal("old model name still resolves after Replace")
	}
	if tool, ok := r.LookupModelName("weather:forecast2"); !ok || tool.Spec().Description != "new" {
		t.Fatalf("LookupModelName after Replace = %v, %v", tool, ok)
	}
	if spec, _ := r.Spec(a.Class); spec.Description != "new" {
		t.Fatalf("Spec after Replace = %+v", spec)
	}

	// Replace of an unknown class registers it; a model name of another class is a conflict.
	c := a
	c.Class, c.Name = "weather.McpOther", "other"
	if err := r.Replace(fake{c}); err != nil {
		t.Fatalf("Replace new: %v", err)
	}
	clash := c
	clash.Name = "forecast2"
	if err := r.Replace(fake{clash}); !errors.Is(err, svcerr.ErrConflict) {
		t.Fatalf("Replace clash = %v, want ErrConflict", err)
	}
	if _, ok := r.LookupModelName("weather:other"); !ok {
		t.Fatal("refused Replace changed the registry")
	}
	bad := c
	bad.Name = "Bad Name"
	if err := r.Replace(fake{bad}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("Replace invalid = %v, want ErrInvalid", err)
	}

	if !r.Unregister(a.Class) {
		t.Fatal("Unregister of a registered class = false")
	}
	if r.Unregister(a.Class) {
		t.Fatal("second Unregister = true")
	}
	if _, ok := r.Lookup(a.Class); ok {
		t.Fatal("class still registered")
	}
	if _, ok := r.LookupModelName("weather:forecast2"); ok {
		t.Fatal("model name still registered")
	}
	// The freed name and class can be registered again.
	if err := r.Register(fake{a}); err != nil {
		t.Fatalf("Register after Unregister: %v", err)
	}
	if got := len(r.All()); got != 2 {
		t.Fatalf("All() has %d tools, want 2", got)
	}
}

// ModelTools is cached, and follows every change of the registry: a registered, replaced or
// unregistered tool is offered (or not) from the next call on, with its current description
// and schema, ordered by class.
func TestRegistryModelToolsFollowChanges(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	names := func() []string {
		var out []string
		for _, mt := range r.ModelTools() {
			out = append(out, mt.Class+"="+mt.Name+":"+mt.Description)
		}
		return out
	}
	a := rawSchemaSpec()
	if err := r.Register(fake{a}); err != nil {
		t.Fatal(err)
	}
	first := r.ModelTools()
	if len(first) != 1 || string(first[0].Parameters) != string(tools.Schema(a)) || first[0].Name != tools.ModelName(a) {
		t.Fatalf("ModelTools = %+v", first)
	}
	if again := r.ModelTools(); &again[0] != &first[0] {
		t.Fatal("ModelTools was built again without a change")
	}
	c := a
	c.Class, c.Name = "weather.AaaFirst", "first"
	if err := r.Register(fake{c}); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Description = "new"
	if err := r.Replace(fake{b}); err != nil {
		t.Fatal(err)
	}
	want := []string{"weather.AaaFirst=weather:first:" + a.Description, a.Class + "=weather:forecast:new"}
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("after Register and Replace: %v, want %v", got, want)
	}
	r.Unregister(c.Class)
	if got := names(); !slices.Equal(got, want[1:]) {
		t.Fatalf("after Unregister: %v, want %v", got, want[1:])
	}
}
