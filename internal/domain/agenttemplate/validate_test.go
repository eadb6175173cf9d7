package agenttemplate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

// codeCase is one broken (or warned-about) template and the exact findings it must give.
type codeCase struct {
	name   string
	mut    func(m map[string]any) // applied to baseDoc; ignored when raw is set
	raw    string
	ct     string // content type, default application/json
	source string
	errs   []string // "CODE path", in order
	warns  []string
}

func (c codeCase) input(t testing.TB) agenttemplate.Input {
	ct := c.ct
	if ct == "" {
		ct = "application/json"
	}
	raw := []byte(c.raw)
	if c.raw == "" && c.mut != nil {
		m := baseDoc()
		c.mut(m)
		raw = mustJSON(t, m)
	}
	return agenttemplate.Input{Raw: raw, ContentType: ct, Source: c.source}
}

func long(n int) string { return strings.Repeat("é", n) } // multi-byte: lengths count characters

func tool(m map[string]any, i int) map[string]any { return sub(m, "tools", i) }

var codeCases = []codeCase{
	{name: "valid base", mut: func(map[string]any) {}},
	// Parsing.
	{name: "empty", raw: "", ct: "text/plain", errs: []string{"EMPTY_PAYLOAD "}},
	{name: "whitespace", raw: " \n\t\r\n", ct: "application/yaml", errs: []string{"EMPTY_PAYLOAD "}},
	{name: "whitespace json", raw: "  \n", errs: []string{"EMPTY_PAYLOAD "}},
	{name: "yaml comments only", raw: "# nothing here\n", ct: "application/yaml", errs: []string{"EMPTY_PAYLOAD "}},
	{name: "byte order mark only", raw: "\xef\xbb\xbf", ct: "text/plain", errs: []string{"EMPTY_PAYLOAD "}},
	{name: "truncated json", raw: `{"id": "x",`, errs: []string{"PARSE_ERROR "}},
	{name: "json trailing data", raw: `{"id": "x"} {}`, errs: []string{"PARSE_ERROR "}},
	{name: "json trailing comma", raw: `{"id": "x", "tools": [1,]}`, errs: []string{"PARSE_ERROR "}},
	{name: "json missing comma", raw: `{"id": "x" "name": "y"}`, errs: []string{"PARSE_ERROR "}},
	{name: "json duplicate key", raw: `{"id": "x", "id": "y"}`, errs: []string{"PARSE_ERROR "}},
	{name: "yaml as json", raw: "id: x\n", errs: []string{"PARSE_ERROR "}},
	{name: "broken yaml", raw: "id: [x\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml duplicate key", raw: "id: x\nid: y\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml two documents", raw: "id: x\n---\nid: y\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml merge key", raw: "base: &b {x: 1}\n<<: *b\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml infinity", raw: "id: x\nagent: {max_steps: .inf}\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml binary tag", raw: "id: !!binary aGVsbG8=\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "yaml recursive alias", raw: "a: &a [*a]\n", ct: "application/yaml", errs: []string{"PARSE_ERROR "}},
	{name: "root array", raw: `[1, 2]`, errs: []string{"PARSE_ERROR "}},
	{name: "root null", raw: `null`, errs: []string{"PARSE_ERROR "}},
	{name: "root string yaml", raw: "just words", ct: "text/plain", errs: []string{"PARSE_ERROR "}},
	{name: "too deep", raw: strings.Repeat("[", 100) + strings.Repeat("]", 100), errs: []string{"PARSE_ERROR "}},
	{name: "empty object", raw: `{}`, errs: []string{"ID_REQUIRED /id", "NAME_REQUIRED /name", "VERSION_REQUIRED /version", "AGENT_REQUIRED /agent"}},

	// Top level.
	{name: "id missing", mut: func(m map[string]any) { delete(m, "id") }, errs: []string{"ID_REQUIRED /id"}},
	{name: "id null", mut: func(m map[string]any) { m["id"] = nil }, errs: []string{"ID_REQUIRED /id"}},
	{name: "id number", mut: func(m map[string]any) { m["id"] = 5 }, errs: []string{"ID_INVALID /id"}},
	{name: "id empty", mut: func(m map[string]any) { m["id"] = "" }, errs: []string{"ID_INVALID /id"}},
	{name: "id too long", mut: func(m map[string]any) { m["id"] = strings.Repeat("a", 131) }, errs: []string{"ID_INVALID /id"}},
	{name: "id uppercase", mut: func(m map[string]any) { m["id"] = "Core/x" }, errs: []string{"ID_PATTERN /id"}},
	{name: "id three parts", mut: func(m map[string]any) { m["id"] = "a/b/c" }, errs: []string{"ID_PATTERN /id"}},
	{name: "id part of 65", mut: func(m map[string]any) { m["id"] = "a/" + strings.Repeat("b", 65) }, errs: []string{"ID_PATTERN /id"}},
	{name: "id parts of 64", mut: func(m map[string]any) { m["id"] = strings.Repeat("a", 64) + "/" + strings.Repeat("b", 64) }},
	{name: "name missing", mut: func(m map[string]any) { delete(m, "name") }, errs: []string{"NAME_REQUIRED /name"}},
	{name: "name empty", mut: func(m map[string]any) { m["name"] = "" }, errs: []string{"NAME_INVALID /name"}},
	{name: "name object", mut: func(m map[string]any) { m["name"] = map[string]any{} }, errs: []string{"NAME_INVALID /name"}},
	{name: "name 200 characters", mut: func(m map[string]any) { m["name"] = long(200) }},
	{name: "name 201 characters", mut: func(m map[string]any) { m["name"] = long(201) }, errs: []string{"NAME_INVALID /name"}},
	{name: "description too long", mut: func(m map[string]any) { m["description"] = long(1001) }, errs: []string{"NAME_INVALID /description"}},
	{name: "description null", mut: func(m map[string]any) { m["description"] = nil }, errs: []string{"NAME_INVALID /description"}},
	{name: "schema number", mut: func(m map[string]any) { m["$schema"] = 1 }, errs: []string{"UNKNOWN_TOP_LEVEL_KEY /$schema"}},
	{name: "version missing", mut: func(m map[string]any) { delete(m, "version") }, errs: []string{"VERSION_REQUIRED /version"}},
	{name: "version number", mut: func(m map[string]any) { m["version"] = 1.5 }, errs: []string{"VERSION_INVALID /version"}},
	{name: "version two parts", mut: func(m map[string]any) { m["version"] = "1.0" }, errs: []string{"VERSION_PATTERN /version"}},
	{name: "version prerelease", mut: func(m map[string]any) { m["version"] = "1.0.0-beta.1+build" }},
	{name: "version newline", mut: func(m map[string]any) { m["version"] = "1.0.0-a\nb" }, errs: []string{"VERSION_PATTERN /version"}},
	{name: "unknown top-level key", mut: func(m map[string]any) { m["temperature"] = 1 }, errs: []string{"UNKNOWN_TOP_LEVEL_KEY /temperature"}},
	{name: "unknown key escaped", mut: func(m map[string]any) { m["a/b~c"] = 1 }, errs: []string{"UNKNOWN_TOP_LEVEL_KEY /a~1b~0c"}},

	// Agent.
	{name: "agent missing", mut: func(m map[string]any) { delete(m, "agent") }, errs: []string{"AGENT_REQUIRED /agent"}},
	{name: "agent string", mut: func(m map[string]any) { m["agent"] = "x" }, errs: []string{"AGENT_REQUIRED /agent"}},
	{name: "agent empty", mut: func(m map[string]any) { m["agent"] = map[string]any{} }, warns: []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt"}},
	{name: "system prompt blank", mut: func(m map[string]any) { sub(m, "agent")["system_prompt"] = " \n" }, warns: []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt"}},
	{name: "system prompt number", mut: func(m map[string]any) { sub(m, "agent")["system_prompt"] = 1 }, errs: []string{"AGENT_REQUIRED /agent/system_prompt"}},
	{name: "agent description too long", mut: func(m map[string]any) { sub(m, "agent")["description"] = long(2001) }, errs: []string{"AGENT_REQUIRED /agent/description"}},
	{name: "notes too long", mut: func(m map[string]any) { sub(m, "agent")["notes"] = long(200001) }, errs: []string{"AGENT_REQUIRED /agent/notes"}},
	{name: "allow_followup string", mut: func(m map[string]any) { sub(m, "agent")["allow_followup"] = "yes" }, errs: []string{"AGENT_REQUIRED /agent/allow_followup"}},
	{name: "max_steps 0", mut: func(m map[string]any) { sub(m, "agent")["max_steps"] = 0 }, errs: []string{"MAX_STEPS_RANGE /agent/max_steps"}},
	{name: "max_steps 101", mut: func(m map[string]any) { sub(m, "agent")["max_steps"] = 101 }, errs: []string{"MAX_STEPS_RANGE /agent/max_steps"}},
	{name: "max_steps fraction", mut: func(m map[string]any) { sub(m, "agent")["max_steps"] = 1.5 }, errs: []string{"MAX_STEPS_RANGE /agent/max_steps"}},
	{name: "max_steps string", mut: func(m map[string]any) { sub(m, "agent")["max_steps"] = "10" }, errs: []string{"MAX_STEPS_RANGE /agent/max_steps"}},
	{name: "max_steps 10.0 is an integer", raw: `{"id":"a","name":"A","version":"1.0.0","agent":{"system_prompt":"p","max_steps":10.0,"max_retries":1e1}}`},
	{name: "max_steps 1e400", raw: `{"id":"a","name":"A","version":"1.0.0","agent":{"system_prompt":"p","max_steps":1e400}}`, errs: []string{"MAX_STEPS_RANGE /agent/max_steps"}},
	{name: "retry negative", mut: func(m map[string]any) { sub(m, "agent")["retry_after_minutes"] = -1 }, errs: []string{"MAX_STEPS_RANGE /agent/retry_after_minutes"}},
	{name: "max_retries too large", mut: func(m map[string]any) { sub(m, "agent")["max_retries"] = 2147483648 }, errs: []string{"MAX_STEPS_RANGE /agent/max_retries"}},
	{name: "unknown agent key", mut: func(m map[string]any) { sub(m, "agent")["temprature"] = 1 }, errs: []string{"UNKNOWN_AGENT_KEY /agent/temprature"}},

	// Tools.
	{name: "tools object", mut: func(m map[string]any) { m["tools"] = map[string]any{} }, errs: []string{"TOOLS_NOT_LIST /tools"}},
	{name: "tools null", mut: func(m map[string]any) { m["tools"] = nil }, errs: []string{"TOOLS_NOT_LIST /tools"}},
	{name: "tools empty", mut: func(m map[string]any) { m["tools"] = []any{} }},
	{name: "tool entry string", mut: func(m map[string]any) { m["tools"] = []any{"core.TimeTool"} }, errs: []string{"TOOL_CLASS_REQUIRED /tools/0"}},
	{name: "tool_class missing", mut: func(m map[string]any) { delete(tool(m, 0), "tool_class") }, errs: []string{"TOOL_CLASS_REQUIRED /tools/0/tool_class"}},
	{name: "tool_class empty", mut: func(m map[string]any) { tool(m, 0)["tool_class"] = "" }, errs: []string{"TOOL_CLASS_REQUIRED /tools/0/tool_class"}},
	{name: "tool_class duplicate", mut: func(m map[string]any) { tool(m, 1)["tool_class"] = "core.TimeTool"; delete(tool(m, 1), "settings") },
		errs: []string{"TOOL_CLASS_DUPLICATE /tools/1/tool_class"}},
	{name: "enabled missing", mut: func(m map[string]any) { delete(tool(m, 0), "enabled") }, errs: []string{"TOOL_ENABLED_REQUIRED /tools/0/enabled"}},
	{name: "enabled string", mut: func(m map[string]any) { tool(m, 0)["enabled"] = "true" }, errs: []string{"TOOL_ENABLED_REQUIRED /tools/0/enabled"}},
	{name: "operations missing", mut: func(m map[string]any) { delete(tool(m, 0), "operations") }, errs: []string{"OPERATIONS_NOT_LIST /tools/0/operations"}},
	{name: "operations object", mut: func(m map[string]any) { tool(m, 0)["operations"] = map[string]any{"name": "now"} }, errs: []string{"OPERATIONS_NOT_LIST /tools/0/operations"}},
	{name: "operation string", mut: func(m map[string]any) { tool(m, 0)["operations"] = []any{"now"} }, errs: []string{"OPERATION_NOT_OBJECT /tools/0/operations/0"}},
	{name: "operation name missing", mut: func(m map[string]any) { delete(sub(m, "tools", 0, "operations", 1), "name") }, errs: []string{"OPERATION_NAME_REQUIRED /tools/0/operations/1/name"}},
	{name: "operation name number", mut: func(m map[string]any) { sub(m, "tools", 0, "operations", 1)["name"] = 3 }, errs: []string{"OPERATION_NAME_REQUIRED /tools/0/operations/1/name"}},
	{name: "auto_approve string", mut: func(m map[string]any) { sub(m, "tools", 0, "operations", 0)["auto_approve"] = "yes" }, errs: []string{"AUTO_APPROVE_TYPE /tools/0/operations/0/auto_approve"}},
	{name: "operation enabled null", mut: func(m map[string]any) { sub(m, "tools", 0, "operations", 0)["enabled"] = nil }, errs: []string{"OPERATION_ENABLED_TYPE /tools/0/operations/0/enabled"}},
	{name: "unknown tool key", mut: func(m map[string]any) { tool(m, 0)["enable"] = true }, errs: []string{"UNKNOWN_AGENT_KEY /tools/0/enable"}},
	{name: "unknown operation key", mut: func(m map[string]any) { sub(m, "tools", 0, "operations", 0)["approve"] = true }, errs: []string{"UNKNOWN_AGENT_KEY /tools/0/operations/0/approve"}},
	{name: "operation unknown", mut: func(m map[string]any) { sub(m, "tools", 0, "operations", 1)["name"] = "tomorrow" }, warns: []string{"OPERATION_UNKNOWN /tools/0/operations/1/name"}},
	{name: "tool class not registered", mut: func(m map[string]any) {
		tool(m, 0)["tool_class"] = "ghost.Tool"
		tool(m, 0)["settings"] = map[string]any{"whatever": 1}
	}, warns: []string{"TOOL_PLUGIN_MISSING /tools/0/tool_class"}},
	{name: "tool needs configuration", mut: func(m map[string]any) { delete(sub(m, "tools", 1, "settings"), "endpoint") }, warns: []string{"TOOL_NEEDS_CONFIGURATION /tools/1"}},
	{name: "disabled tool needs no configuration", mut: func(m map[string]any) {
		delete(sub(m, "tools", 1, "settings"), "endpoint")
		tool(m, 1)["enabled"] = false
	}},
	{name: "empty string leaves a required setting unset", mut: func(m map[string]any) { sub(m, "tools", 1, "settings")["endpoint"] = "" }, warns: []string{"TOOL_NEEDS_CONFIGURATION /tools/1"}},

	// Approval policies.
	{name: "approval policy", mut: func(m map[string]any) {
		tool(m, 0)["approval_policy"] = map[string]any{"format": []any{map[string]any{"when": map[string]any{"layout": map[string]any{"in": []any{"unix"}}}, "action": "deny"}}}
	}},
	{name: "approval policy not an object", mut: func(m map[string]any) { tool(m, 0)["approval_policy"] = []any{} }, errs: []string{"APPROVAL_POLICY_INVALID /tools/0/approval_policy"}},
	{name: "approval policy bad rule", mut: func(m map[string]any) {
		tool(m, 0)["approval_policy"] = map[string]any{"now": []any{map[string]any{"action": "sometimes"}}}
	}, errs: []string{"APPROVAL_POLICY_INVALID /tools/0/approval_policy"}},
	{name: "approval policy unknown operation", mut: func(m map[string]any) {
		tool(m, 0)["approval_policy"] = map[string]any{"explode": []any{map[string]any{"action": "ask"}}}
	}, errs: []string{"APPROVAL_POLICY_INVALID /tools/0/approval_policy"}},

	// Settings.
	{name: "settings list", mut: func(m map[string]any) { tool(m, 1)["settings"] = []any{} }, errs: []string{"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings"},
		warns: []string{"TOOL_NEEDS_CONFIGURATION /tools/1"}},
	{name: "settings unknown key", mut: func(m map[string]any) { sub(m, "tools", 1, "settings")["colour"] = "red" }, errs: []string{"SETTINGS_UNKNOWN_KEY /tools/1/settings/colour"}},
	{name: "settings password", mut: func(m map[string]any) { sub(m, "tools", 1, "settings")["api_key"] = "sk-123" }, errs: []string{"SETTINGS_PASSWORD_KEY_FORBIDDEN /tools/1/settings/api_key"}},
	{name: "settings types", mut: func(m map[string]any) {
		s := sub(m, "tools", 1, "settings")
		s["days"] = 1.5
		s["ratio"] = "1"
		s["verbose"] = 1
		s["cities"] = []any{"Oslo", 2}
		s["ids"] = []any{1, "2"}
		s["units"] = true
		s["notes"] = []any{}
		s["region"] = map[string]any{}
		s["endpoint"] = 7
	}, errs: []string{
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/cities",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/days",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/endpoint",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/ids",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/notes",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/ratio",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/region",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/units",
		"SETTINGS_INVALID_VALUE_TYPE /tools/1/settings/verbose",
	}, warns: []string{"TOOL_NEEDS_CONFIGURATION /tools/1"}},
	{name: "settings good types", mut: func(m map[string]any) {
		s := sub(m, "tools", 1, "settings")
		s["days"] = 2.0
		s["ratio"] = 7
		s["verbose"] = false
		s["ids"] = []any{1, 2.0}
		s["units"] = "metric"
		s["notes"] = "x"
		s["region"] = "eu"
		s["extra"] = map[string]any{"anything": []any{1, "x", nil}}
		s["cities"] = nil
	}},
	{name: "settings number too large", raw: `{"id":"a","name":"A","version":"1.0.0","agent":{"system_prompt":"p"},"tools":[{"tool_class":"core.TimeTool","enabled":false,"operations":[],"settings":{"x":1e999}}]}`,
		errs: []string{"SETTINGS_INVALID_VALUE_TYPE /tools/0/settings/x"}},
	{name: "skill missing", mut: func(m map[string]any) {
		m["tools"] = append(m["tools"].([]any), map[string]any{"tool_class": "core.SkillTool", "enabled": true, "operations": []any{},
			"settings": map[string]any{"allowed_skills": []any{"pdf", "ghost", "summarize", "nope"}}})
	}, warns: []string{"SKILL_MISSING /tools/2/settings/allowed_skills/1", "SKILL_MISSING /tools/2/settings/allowed_skills/3"}},

	// Required plugins.
	{name: "required_plugins string", mut: func(m map[string]any) { m["required_plugins"] = "acme/weather" }, errs: []string{"REQUIRED_PLUGINS_NOT_LIST /required_plugins"}},
	{name: "required_plugins invalid", mut: func(m map[string]any) { m["required_plugins"] = []any{"acme/weather", "Acme/x", "a/b.", 3, "ab"} },
		errs: []string{"REQUIRED_PLUGINS_INVALID /required_plugins/1", "REQUIRED_PLUGINS_INVALID /required_plugins/2", "REQUIRED_PLUGINS_INVALID /required_plugins/3", "REQUIRED_PLUGINS_INVALID /required_plugins/4"}},
	{name: "plugin missing", mut: func(m map[string]any) { m["required_plugins"] = []any{"acme/weather", "acme/news"} }, warns: []string{"PLUGIN_MISSING /required_plugins/1"}},

	// Metadata.
	{name: "metadata list", mut: func(m map[string]any) { m["metadata"] = []any{} }, errs: []string{"METADATA_NOT_OBJECT /metadata"}},
	{name: "metadata icon number", mut: func(m map[string]any) { sub(m, "metadata")["icon"] = 3 }, errs: []string{"METADATA_ICON_TYPE /metadata/icon"}},
	{name: "metadata icon too long", mut: func(m map[string]any) { sub(m, "metadata")["icon"] = long(65) }, errs: []string{"METADATA_ICON_TYPE /metadata/icon"}},
	{name: "metadata enums", mut: func(m map[string]any) {
		md := sub(m, "metadata")
		md["archetype"], md["variant_key"], md["palette_key"] = "wizard", "v3", "beige"
	}, errs: []string{"METADATA_NOT_OBJECT /metadata/archetype", "METADATA_NOT_OBJECT /metadata/variant_key", "METADATA_NOT_OBJECT /metadata/palette_key"}},
	{name: "metadata category unknown", mut: func(m map[string]any) { sub(m, "metadata")["category"] = "fun" }, warns: []string{"METADATA_CATEGORY_UNKNOWN /metadata/category"}},
	{name: "metadata category empty", mut: func(m map[string]any) { sub(m, "metadata")["category"] = "" }},
	{name: "metadata category number", mut: func(m map[string]any) { sub(m, "metadata")["category"] = 1 }, errs: []string{"METADATA_NOT_OBJECT /metadata/category"}},
	{name: "unknown metadata key", mut: func(m map[string]any) { sub(m, "metadata")["colour"] = "red" }, errs: []string{"UNKNOWN_METADATA_KEY /metadata/colour"}},

	// Namespaces.
	{name: "namespace mismatch", mut: func(m map[string]any) {}, source: "weather", warns: []string{"NAMESPACE_MISMATCH /id"}},
	{name: "namespace other prefix", mut: func(m map[string]any) { m["id"] = "other/x" }, source: "weather", warns: []string{"NAMESPACE_MISMATCH /id"}},
	{name: "namespace ok", mut: func(m map[string]any) { m["id"] = "weather/x" }, source: "weather"},
	{name: "namespace exempt core", mut: func(m map[string]any) {}, source: "core"},
	{name: "namespace exempt uploaded", mut: func(m map[string]any) {}, source: "uploaded"},

	// Everything at once: all findings are collected.
	{name: "collects everything", raw: `{"id": 1, "name": "", "version": "x", "agent": {"max_steps": 0, "bogus": 1},
		"tools": [{"tool_class": "core.TimeTool", "enabled": true, "operations": [{"name": "never"}, 7]}, {"tool_class": "core.TimeTool"}],
		"required_plugins": ["nope"], "metadata": {"icon": false, "x": 1}, "extra": true}`,
		errs: []string{
			"ID_INVALID /id", "NAME_INVALID /name", "VERSION_PATTERN /version",
			"MAX_STEPS_RANGE /agent/max_steps", "UNKNOWN_AGENT_KEY /agent/bogus",
			"OPERATION_NOT_OBJECT /tools/0/operations/1",
			"TOOL_CLASS_DUPLICATE /tools/1/tool_class", "TOOL_ENABLED_REQUIRED /tools/1/enabled", "OPERATIONS_NOT_LIST /tools/1/operations",
			"REQUIRED_PLUGINS_INVALID /required_plugins/0",
			"METADATA_ICON_TYPE /metadata/icon", "UNKNOWN_METADATA_KEY /metadata/x",
			"UNKNOWN_TOP_LEVEL_KEY /extra",
		},
		warns: []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt", "OPERATION_UNKNOWN /tools/0/operations/0/name"}},
}

func summarize(fs []agenttemplate.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Code+" "+f.Path)
	}
	return out
}

func TestValidateCodes(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	for _, tc := range codeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := agenttemplate.Validate(tc.input(t), cat)
			want := tc.errs
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, summarize(rep.Errors)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, rep.Errors)
			}
			wantW := tc.warns
			if wantW == nil {
				wantW = []string{}
			}
			if diff := cmp.Diff(wantW, summarize(rep.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s\n%v", diff, rep.Warnings)
			}
			if rep.Valid != (len(rep.Errors) == 0) {
				t.Errorf("Valid = %v with %d errors", rep.Valid, len(rep.Errors))
			}
			for _, f := range append(rep.Errors, rep.Warnings...) {
				if f.Message == "" {
					t.Errorf("%s has no message", f.Code)
				}
			}
		})
	}
}

// TestEveryCodeCovered keeps the table honest: every code of document 2 is triggered by some
// case.
func TestEveryCodeCovered(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, tc := range codeCases {
		for _, s := range append(append([]string{}, tc.errs...), tc.warns...) {
			seen[strings.Fields(s)[0]] = true
		}
	}
	for _, code := range append(agenttemplate.ErrorCodes(), agenttemplate.WarningCodes()...) {
		if !seen[code] {
			t.Errorf("no case triggers %s", code)
		}
	}
	for code := range seen {
		if !agenttemplate.IsError(code) && !agenttemplate.IsWarning(code) {
			t.Errorf("case expects unknown code %s", code)
		}
	}
}

// TestSeverity checks that the table's expectations put every code in its severity list.
func TestSeverity(t *testing.T) {
	t.Parallel()
	for _, tc := range codeCases {
		for _, s := range tc.errs {
			if code := strings.Fields(s)[0]; !agenttemplate.IsError(code) {
				t.Errorf("%s: %s expected as error but is not one", tc.name, code)
			}
		}
		for _, s := range tc.warns {
			if code := strings.Fields(s)[0]; !agenttemplate.IsWarning(code) {
				t.Errorf("%s: %s expected as warning but is not one", tc.name, code)
			}
		}
	}
	if len(agenttemplate.ErrorCodes()) != 32 || len(agenttemplate.WarningCodes()) != 8 {
		t.Errorf("got %d error and %d warning codes", len(agenttemplate.ErrorCodes()), len(agenttemplate.WarningCodes()))
	}
}

// TestNilCatalog: without a catalog only structural findings and catalog-free warnings remain.
func TestNilCatalog(t *testing.T) {
	t.Parallel()
	m := baseDoc()
	tool(m, 0)["tool_class"] = "ghost.Tool"
	sub(m, "tools", 1, "settings")["api_key"] = "secret"
	m["required_plugins"] = []any{"x/y"}
	sub(m, "metadata")["category"] = "fun"
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: mustJSON(t, m), ContentType: "application/json"}, nil)
	if diff := cmp.Diff([]string{"METADATA_CATEGORY_UNKNOWN /metadata/category"}, summarize(rep.Warnings)); diff != "" || !rep.Valid {
		t.Errorf("valid %v, errors %v; warnings (-want +got):\n%s", rep.Valid, rep.Errors, diff)
	}
}

// TestJSONAndYAML: the same template as JSON text and as YAML text gives the same findings;
// application/json refuses YAML text while text/plain and application/yaml accept both.
func TestJSONAndYAML(t *testing.T) {
	t.Parallel()
	yamlDoc := `
id: research-helper
name: Research helper
version: 1.2.3
agent:
  system_prompt: |
    You research.
  max_steps: 20
  allow_followup: false
  bogus: 1
tools:
  - tool_class: core.TimeTool
    enabled: true
    operations:
      - name: now
        auto_approve: yes   # YAML 1.1 "yes" is a string here, so this is an error
      - {name: later}
metadata: {category: fun}
`
	jsonDoc := `{"id": "research-helper", "name": "Research helper", "version": "1.2.3",
	"agent": {"system_prompt": "You research.\n", "max_steps": 20, "allow_followup": false, "bogus": 1},
	"tools": [{"tool_class": "core.TimeTool", "enabled": true, "operations": [{"name": "now", "auto_approve": "yes"}, {"name": "later"}]}],
	"metadata": {"category": "fun"}}`
	cat := testCatalog()
	var reports []agenttemplate.Report
	for _, in := range []agenttemplate.Input{
		{Raw: []byte(yamlDoc), ContentType: "application/yaml"},
		{Raw: []byte(yamlDoc), ContentType: "text/plain; charset=utf-8"},
		{Raw: []byte(jsonDoc), ContentType: "application/json; charset=utf-8"},
		{Raw: []byte(jsonDoc), ContentType: "application/yaml"},
		{Raw: []byte(jsonDoc), ContentType: "text/plain"},
		{Raw: []byte(jsonDoc)},
	} {
		reports = append(reports, agenttemplate.Validate(in, cat))
	}
	want := []string{"AUTO_APPROVE_TYPE /tools/0/operations/0/auto_approve", "UNKNOWN_AGENT_KEY /agent/bogus"}
	for i, rep := range reports {
		got := summarize(rep.Errors)
		if diff := cmp.Diff(want, sortedCopy(got)); diff != "" {
			t.Errorf("input %d errors (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(reports[0], rep); diff != "" {
			t.Errorf("input %d differs from YAML (-yaml +this):\n%s", i, diff)
		}
	}
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: []byte(yamlDoc), ContentType: "application/json"}, cat)
	if diff := cmp.Diff([]string{"PARSE_ERROR "}, summarize(rep.Errors)); diff != "" {
		t.Errorf("YAML as application/json (-want +got):\n%s", diff)
	}
	// JSON-looking text that is only valid as YAML (a flow mapping) is read as YAML.
	rep = agenttemplate.Validate(agenttemplate.Input{Raw: []byte(`{id: a, name: A, version: 1.0.0, agent: {system_prompt: p}}`), ContentType: "text/plain"}, cat)
	if !rep.Valid || len(rep.Warnings) != 0 {
		t.Errorf("YAML flow mapping: %+v", rep)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestMessagesStayShort: a finding never echoes a huge value.
func TestMessagesStayShort(t *testing.T) {
	t.Parallel()
	m := baseDoc()
	m["version"] = strings.Repeat("x", 100000)
	m[strings.Repeat("k", 100000)] = 1
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: mustJSON(t, m), ContentType: "application/json"}, nil)
	if len(rep.Errors) != 2 {
		t.Fatalf("errors: %d", len(rep.Errors))
	}
	for _, f := range rep.Errors {
		if len(f.Message) > 400 {
			t.Errorf("%s message has %d bytes", f.Code, len(f.Message))
		}
	}
}

// TestFindingsAreBounded: a document with thousands of problems lists at most 500 of each.
func TestFindingsAreBounded(t *testing.T) {
	t.Parallel()
	m := baseDoc()
	for i := range 2000 {
		m[fmt.Sprintf("k%d", i)] = i
	}
	rep := agenttemplate.Validate(agenttemplate.Input{Raw: mustJSON(t, m), ContentType: "application/json"}, nil)
	if len(rep.Errors) != 500 || rep.Valid {
		t.Errorf("errors: %d, valid %v", len(rep.Errors), rep.Valid)
	}
}
