package agenttemplate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

func TestSchemaJSON(t *testing.T) {
	t.Parallel()
	for _, url := range []string{testSchemaURL, "http://localhost:8080/svc/schemas/agent-template.schema.json", `https://h.example/a&b"c/schemas/agent-template.schema.json`} {
		var doc map[string]any
		if err := json.Unmarshal(agenttemplate.SchemaJSON(url), &doc); err != nil {
			t.Fatal(err)
		}
		if doc["$id"] != url || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("$id %v, $schema %v", doc["$id"], doc["$schema"])
		}
	}
	raw := agenttemplate.SchemaJSON("")
	if bytes.Count(raw, []byte(`"$id"`)) != 1 || !bytes.Contains(raw, []byte(`"$id": "https://svc.example.com/svc/schemas/agent-template.schema.json"`)) {
		t.Error("the schema file must hold exactly one placeholder $id")
	}
	// Fresh slices: callers may not corrupt the embedded schema.
	a := agenttemplate.SchemaJSON("")
	a[0] = 'x'
	if agenttemplate.SchemaJSON("")[0] != '{' {
		t.Error("SchemaJSON shares its buffer")
	}
	compileSchema(t)
}

// openAPI reads the contract next to the module root.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCodesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	schemas := openAPI(t)["components"].(map[string]any)["schemas"].(map[string]any)
	var enum []string
	for _, v := range schemas["AgentTemplateFindingCode"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	if diff := cmp.Diff(enum, append(agenttemplate.ErrorCodes(), agenttemplate.WarningCodes()...)); diff != "" {
		t.Errorf("codes differ from openapi.yaml (-openapi +package):\n%s", diff)
	}
}

// TestSchemaMatchesOpenAPI compares the template schema with openapi.yaml's
// AgentTemplateDocument keyword by keyword (types, lengths, patterns, ranges, enums, required
// and allowed keys), so the two descriptions of the format cannot drift apart unnoticed. The
// known differences are listed and explained.
func TestSchemaMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	schemas := openAPI(t)["components"].(map[string]any)["schemas"].(map[string]any)
	var ours map[string]any
	if err := json.Unmarshal(agenttemplate.SchemaJSON(""), &ours); err != nil {
		t.Fatal(err)
	}
	resolveOAS := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		}
		return s
	}
	resolveOurs := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return ours["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		return s
	}
	var diffs []string
	var walk func(path string, o, a map[string]any)
	walk = func(path string, o, a map[string]any) {
		o, a = resolveOurs(o), resolveOAS(a)
		for _, kw := range []string{"type", "minLength", "maxLength", "pattern", "minimum", "maximum", "enum", "required", "additionalProperties"} {
			ov, av := norm(o[kw]), norm(a[kw])
			if kw == "additionalProperties" && av == "true" {
				av = "<nil>" // the default
			}
			if kw == "type" && ov == "<nil>" && o["enum"] != nil {
				ov = "string" // an enum of strings needs no type
			}
			if ov != av {
				diffs = append(diffs, fmt.Sprintf("%s %s: schema %s, openapi %s", path, kw, ov, av))
			}
		}
		op, _ := o["properties"].(map[string]any)
		ap, _ := a["properties"].(map[string]any)
		for _, k := range sortedUnion(op, ap) {
			if op[k] == nil || ap[k] == nil {
				diffs = append(diffs, fmt.Sprintf("%s/%s: only in one of them", path, k))
				continue
			}
			walk(path+"/"+k, op[k].(map[string]any), ap[k].(map[string]any))
		}
		if oi, ok := o["items"].(map[string]any); ok {
			ai, _ := a["items"].(map[string]any)
			walk(path+"/items", oi, ai)
		}
	}
	walk("", ours, schemas["AgentTemplateDocument"].(map[string]any))
	known := []string{
		// openapi.yaml sets no upper bound; the schema bounds both counts to what every
		// database integer column holds, so an import can always be stored.
		"/agent/max_retries maximum: schema 2147483647, openapi <nil>",
		"/agent/retry_after_minutes maximum: schema 2147483647, openapi <nil>",
	}
	sort.Strings(diffs)
	if diff := cmp.Diff(known, diffs); diff != "" {
		t.Errorf("schema and openapi.yaml differ (-known +found):\n%s", diff)
	}
}

func norm(v any) string {
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case []any:
		var s []string
		for _, e := range x {
			s = append(s, fmt.Sprint(e))
		}
		return "[" + strings.Join(s, " ") + "]"
	case float64:
		return fmt.Sprint(int64(x))
	case int:
		return fmt.Sprint(x)
	}
	if reflect.TypeOf(v).Kind() == reflect.Map {
		return "object"
	}
	return fmt.Sprint(v)
}

func sortedUnion(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
