package agenttemplate_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

// fakeCatalog is a hand-written Catalog for tests.
type fakeCatalog struct {
	tools   map[string]agenttemplate.ToolInfo
	skills  []string
	plugins []string
	// anyTool makes every class known, with the settings of "acme.WeatherTool" (the
	// differential test's catalog, so catalog warnings never depend on generated classes).
	anyTool bool
}

var _ agenttemplate.Catalog = (*fakeCatalog)(nil)

func (c *fakeCatalog) Tool(class string) (agenttemplate.ToolInfo, bool) {
	info, ok := c.tools[class]
	if !ok && c.anyTool {
		return c.tools["acme.WeatherTool"], true
	}
	return info, ok
}
func (c *fakeCatalog) SkillExists(name string) bool    { return slices.Contains(c.skills, name) }
func (c *fakeCatalog) PluginInstalled(pkg string) bool { return slices.Contains(c.plugins, pkg) }

func testCatalog() *fakeCatalog {
	return &fakeCatalog{
		tools: map[string]agenttemplate.ToolInfo{
			"core.TimeTool":       {Operations: []string{"now", "format"}},
			"core.CalculatorTool": {Operations: []string{"calculate"}},
			"core.SkillTool": {
				Operations:       []string{"read", "files"},
				Settings:         map[string]agenttemplate.SettingInfo{"allowed_skills": {Type: "string_list"}},
				SkillSettingKeys: []string{"allowed_skills"},
			},
			"acme.WeatherTool": {
				Operations: []string{"forecast", "current"},
				Settings: map[string]agenttemplate.SettingInfo{
					"api_key":  {Type: "password", Required: true, Provided: true},
					"endpoint": {Type: "url", Required: true},
					"region":   {Type: "string", Required: true, Provided: true},
					"units":    {Type: "select"},
					"notes":    {Type: "text"},
					"days":     {Type: "integer"},
					"ratio":    {Type: "number"},
					"verbose":  {Type: "boolean"},
					"cities":   {Type: "string_list"},
					"ids":      {Type: "integer_list"},
					"extra":    {Type: "json"},
				},
			},
		},
		skills:  []string{"pdf", "summarize"},
		plugins: []string{"acme/weather"},
	}
}

// baseDoc is a valid template with every kind of field, as a fresh map.
func baseDoc() map[string]any {
	var m map[string]any
	err := json.Unmarshal([]byte(`{
		"$schema": "https://svc.example.com/svc/schemas/agent-template.schema.json",
		"id": "research-helper",
		"name": "Research helper",
		"description": "Finds things.",
		"version": "1.2.3",
		"agent": {
			"description": "Finds things.",
			"system_prompt": "You research.",
			"notes": "# Notes",
			"max_steps": 20,
			"allow_followup": false,
			"retry_after_minutes": 5,
			"max_retries": 2
		},
		"tools": [
			{"tool_class": "core.TimeTool", "enabled": true, "operations": [{"name": "now", "enabled": true, "auto_approve": true}, {"name": "format"}]},
			{"tool_class": "acme.WeatherTool", "enabled": true, "operations": [], "settings": {"endpoint": "https://w.example", "days": 3, "cities": ["Oslo"]}}
		],
		"required_plugins": ["acme/weather"],
		"metadata": {"category": "research", "icon": "book", "archetype": "researcher", "variant_key": "v1", "palette_key": "teal"}
	}`), &m)
	if err != nil {
		panic(err)
	}
	return m
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sub returns the object at the path of keys and indexes inside m.
func sub(m any, path ...any) map[string]any {
	cur := m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur.(map[string]any)
}
