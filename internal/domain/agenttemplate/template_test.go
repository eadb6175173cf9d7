package agenttemplate_test

import (
	"encoding/json"
	"hash/fnv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/vocab/limits"
)

func TestVariantKey(t *testing.T) {
	t.Parallel()
	// Known values: FNV-1a 32 of "" is the offset basis 2166136261, of "a" 0xe40c292c.
	for id, want := range map[string]string{
		"":                   "v1", // 2166136261 % 3 == 1
		"a":                  "v1", // 3826002220 % 3 == 1
		"core/assistant":     "v0", // 4235208321
		"core/analyst":       "v2", // 359335283
		"research-helper":    "v2", // 1058118887
		"weather/forecaster": "v1", // 2667999730
	} {
		if got := agenttemplate.VariantKey(id); got != want {
			t.Errorf("VariantKey(%q) = %s, want %s", id, got, want)
		}
	}
	for _, id := range []string{"core/researcher", "core/writer", "x", strings.Repeat("z", 129)} {
		h := fnv.New32a()
		_, _ = h.Write([]byte(id))
		if got, want := agenttemplate.VariantKey(id), []string{"v0", "v1", "v2"}[h.Sum32()%3]; got != want {
			t.Errorf("VariantKey(%q) = %s, want %s", id, got, want)
		}
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Research assistant":           "research-assistant",
		"  --Hello, World!!  ":         "hello-world",
		"Café Bot 2":                   "caf-bot-2",
		"":                             "agent",
		"!!!":                          "agent",
		"日本語":                          "agent",
		strings.Repeat("ab ", 40):      strings.Repeat("ab-", 21) + "a",
		strings.Repeat("x", 70):        strings.Repeat("x", 64),
		strings.Repeat("a", 63) + " b": strings.Repeat("a", 63),
	} {
		got := agenttemplate.Slug(in)
		if got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
		rep := agenttemplate.Validate(agenttemplate.Input{Raw: mustJSON(t, map[string]any{"id": got, "name": "n", "version": "1.0.0", "agent": map[string]any{"system_prompt": "p"}})}, nil)
		if !rep.Valid {
			t.Errorf("Slug(%q) = %q is not a valid id: %v", in, got, rep.Errors)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	yamlDoc := `
id: acme/helper
name: Helper
version: 1.0.0
agent:
  system_prompt: Help.
  max_steps: 1e1
  allow_followup: false
tools:
  - tool_class: acme.WeatherTool
    enabled: true
    operations:
      - name: forecast
        auto_approve: true
    settings:
      days: 3.0
      ratio: 0.5
      cities: [Oslo, Bergen]
      since: 2024-01-01
      big: 12345678901234567890
required_plugins: [acme/weather]
metadata: {icon: cloud}
`
	tpl, rep := agenttemplate.Parse(agenttemplate.Input{Raw: []byte(yamlDoc), ContentType: "application/yaml", Source: "acme"})
	if !rep.Valid || tpl == nil {
		t.Fatalf("report %+v", rep)
	}
	want := &agenttemplate.Template{
		ID: "acme/helper", Name: "Helper", Version: "1.0.0",
		Agent: agenttemplate.Agent{SystemPrompt: "Help.", MaxSteps: ptr(10), AllowFollowup: ptr(false)},
		Tools: []agenttemplate.Tool{{
			ToolClass: "acme.WeatherTool", Enabled: true,
			Operations: []agenttemplate.Operation{{Name: "forecast", AutoApprove: ptr(true)}},
			Settings: map[string]any{
				"days": int64(3), "ratio": 0.5, "cities": []any{"Oslo", "Bergen"}, "since": "2024-01-01",
				"big": float64(12345678901234567890),
			},
		}},
		RequiredPlugins: []string{"acme/weather"},
		Metadata:        &agenttemplate.Metadata{Icon: "cloud"},
	}
	if diff := cmp.Diff(want, tpl); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}

	// Defaults fill what the document left out, without touching what it set.
	tpl.ApplyDefaults()
	if *tpl.Agent.MaxSteps != 10 || *tpl.Agent.AllowFollowup || *tpl.Agent.RetryAfterMinutes != 0 || *tpl.Agent.MaxRetries != 0 ||
		tpl.Metadata.Icon != "cloud" || tpl.Metadata.VariantKey != agenttemplate.VariantKey("acme/helper") {
		t.Errorf("defaults: %+v %+v", tpl.Agent, tpl.Metadata)
	}
	bare, _ := agenttemplate.Parse(agenttemplate.Input{Raw: []byte(`{"id":"x","name":"X","version":"1.0.0","agent":{}}`)})
	bare.ApplyDefaults()
	if *bare.Agent.MaxSteps != limits.DefaultSteps || !*bare.Agent.AllowFollowup || bare.Metadata.Icon != "puzzle" ||
		bare.Metadata.VariantKey != agenttemplate.VariantKey("x") || bare.Tools != nil {
		t.Errorf("defaults of a bare template: %+v %+v", bare.Agent, bare.Metadata)
	}

	// Errors give no template.
	if tpl, rep := agenttemplate.Parse(agenttemplate.Input{Raw: []byte(`{"id":"x"}`)}); tpl != nil || rep.Valid {
		t.Errorf("broken template parsed: %v %+v", tpl, rep)
	}
}

func ptr[T any](v T) *T { return &v }

func TestToolMarshalsOperationsAsList(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(agenttemplate.Tool{ToolClass: "core.TimeTool"})
	if err != nil || string(b) != `{"tool_class":"core.TimeTool","enabled":false,"operations":[]}` {
		t.Errorf("%s %v", b, err)
	}
}

func exportInput() agenttemplate.ExportInput {
	return agenttemplate.ExportInput{
		SchemaURL:         testSchemaURL,
		Name:              "Research Assistant (EU)",
		Description:       "Finds & summarises sources.\nLine two.",
		SystemPrompt:      "You are careful.\n\n- cite\n- check \"quotes\"",
		Notes:             "# Notes\n\t* tab",
		MaxSteps:          20,
		AllowFollowup:     true,
		RetryAfterMinutes: 5,
		MaxRetries:        1,
		Metadata:          map[string]any{"category": "research", "icon": "book", "archetype": "researcher", "variant_key": "v9", "palette_key": "teal", "favorite_color": "red"},
		Tools: []agenttemplate.ExportTool{
			{ToolClass: "core.TimeTool", Enabled: true, Operations: []agenttemplate.Operation{{Name: "now", AutoApprove: ptr(true)}, {Name: "format", Enabled: ptr(false)}}},
			{ToolClass: "core.CalculatorTool", Enabled: false, Operations: []agenttemplate.Operation{{Name: "calculate"}}},
			{ToolClass: "acme.WeatherTool", Enabled: true, Settings: map[string]any{
				"days": 3.0, "ratio": 0.25, "verbose": true, "cities": []string{"Oslo", "Bergen"}, "ids": []int{1, 2},
				"api_key": "sk-secret", "colour": "red", "units": nil, "extra": map[string]any{"n": float64(7), "f": 1.5},
			}},
			{ToolClass: "core.TimeTool", Enabled: true},
		},
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	got := agenttemplate.Export(exportInput(), testCatalog())
	want := &agenttemplate.Template{
		Schema: testSchemaURL, ID: "research-assistant-eu", Name: "Research Assistant (EU)",
		Description: "Finds & summarises sources.\nLine two.", Version: "1.0.0",
		Agent: agenttemplate.Agent{
			Description: "Finds & summarises sources.\nLine two.", SystemPrompt: "You are careful.\n\n- cite\n- check \"quotes\"",
			Notes: "# Notes\n\t* tab", MaxSteps: ptr(20), AllowFollowup: ptr(true), RetryAfterMinutes: ptr(5), MaxRetries: ptr(1),
		},
		Tools: []agenttemplate.Tool{
			{ToolClass: "core.TimeTool", Enabled: true, Operations: []agenttemplate.Operation{{Name: "now", AutoApprove: ptr(true)}, {Name: "format", Enabled: ptr(false)}}},
			{ToolClass: "acme.WeatherTool", Enabled: true, Operations: []agenttemplate.Operation{}, Settings: map[string]any{
				"days": int64(3), "ratio": 0.25, "verbose": true, "cities": []any{"Oslo", "Bergen"}, "ids": []any{int64(1), int64(2)},
				"extra": map[string]any{"n": int64(7), "f": 1.5},
			}},
		},
		Metadata: &agenttemplate.Metadata{Category: "research", Icon: "book", Archetype: "researcher", PaletteKey: "teal"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}

	// Out-of-range input is brought into the format.
	odd := agenttemplate.Export(agenttemplate.ExportInput{Name: strings.Repeat("n", 300), Description: strings.Repeat("d", 3000),
		MaxSteps: 500, RetryAfterMinutes: -4, MaxRetries: 1 << 40, Tools: []agenttemplate.ExportTool{{ToolClass: "", Enabled: true}}}, nil)
	raw := mustJSON(t, odd)
	if rep := agenttemplate.Validate(agenttemplate.Input{Raw: raw, ContentType: "application/json"}, nil); len(rep.Errors) > 0 {
		t.Errorf("export of odd input is invalid: %v\n%s", rep.Errors, raw)
	}
	if odd.Name != strings.Repeat("n", 200) || len(odd.Description) != 1000 || len(odd.Agent.Description) != 2000 ||
		*odd.Agent.MaxSteps != 100 || *odd.Agent.RetryAfterMinutes != 0 || *odd.Agent.MaxRetries != 1<<31-1 || odd.Tools != nil {
		t.Errorf("odd export: %+v", odd)
	}
}

// TestExportRoundTrip: export → marshal (JSON and YAML) → Parse gives back the exported
// template, and the import plan of the parsed template writes what the agent had.
func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	in := exportInput()
	in.Tools[2].Settings["endpoint"] = "https://w.example"
	exported := agenttemplate.Export(in, cat)
	yamlText, err := yaml.Marshal(exported)
	if err != nil {
		t.Fatal(err)
	}
	for _, input := range []agenttemplate.Input{
		{Raw: mustJSON(t, exported), ContentType: "application/json"},
		{Raw: yamlText, ContentType: "application/yaml"},
	} {
		parsed, rep := agenttemplate.Parse(input)
		if !rep.Valid || len(rep.Warnings) > 0 {
			t.Fatalf("%s: %+v\n%s", input.ContentType, rep, input.Raw)
		}
		if diff := cmp.Diff(exported, parsed); diff != "" {
			t.Errorf("%s round trip (-exported +parsed):\n%s\n%s", input.ContentType, diff, input.Raw)
		}
		if rep := agenttemplate.Validate(input, cat); !rep.Valid || len(rep.Warnings) > 0 {
			t.Errorf("%s: with the catalog: %+v", input.ContentType, rep)
		}
		plan, findings := agenttemplate.Plan(parsed, cat)
		if len(findings) > 0 {
			t.Errorf("plan findings: %v", findings)
		}
		if plan.Agent.Name != in.Name || plan.Agent.SystemPrompt != in.SystemPrompt || plan.Agent.MaxSteps != in.MaxSteps ||
			plan.Agent.Description != in.Description || len(plan.Tools) != 2 {
			t.Errorf("plan: %+v", plan)
		}
	}
}

// TestLoadDir scans a plugin's template folder.
func TestLoadDir(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.json":             {Data: []byte(`{"id":"weather/a","name":"A","version":"1.0.0","agent":{"system_prompt":"p"}}`)},
		"sub/b.yaml":         {Data: []byte("id: b\nname: B\nversion: 1.0.0\nagent: {system_prompt: p}\n")},
		"sub/c.yml":          {Data: []byte("id: weather/c\nname: [\n")},
		"d.JSON":             {Data: []byte(`id: weather/d`)}, // YAML in a .json file is a parse error
		"README.md":          {Data: []byte("# not a template")},
		"huge.json":          {Data: make([]byte, agenttemplate.MaxSize+1)},
		"nested/deep/e.json": {Data: []byte(`{"id":"weather/e","name":"E","version":"1.0.0","agent":{}}`)},
	}
	entries, err := agenttemplate.LoadDir(fsys, "weather")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Path   string
		HasTpl bool
		Errors []string
		Warns  []string
	}
	var got []row
	for _, e := range entries {
		got = append(got, row{e.Path, e.Template != nil, summarize(e.Report.Errors), summarize(e.Report.Warnings)})
	}
	want := []row{
		{"a.json", true, []string{}, []string{}},
		{"d.JSON", false, []string{"PARSE_ERROR "}, []string{}},
		{"huge.json", false, []string{"PARSE_ERROR "}, []string{}},
		{"nested/deep/e.json", true, []string{}, []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt"}},
		{"sub/b.yaml", true, []string{}, []string{"NAMESPACE_MISMATCH /id"}},
		{"sub/c.yml", false, []string{"PARSE_ERROR "}, []string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}
