package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"

	agenttemplates "github.com/agentsvc/svc/agent-templates"
	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// tplVaultTool is a plugin tool with a password setting, a required plain setting, a url and a
// select (no core tool has those).
type tplVaultTool struct{}

const tplVault = "acme.VaultTool"

func (tplVaultTool) Spec() tools.Spec {
	return tools.Spec{
		Class: tplVault, Name: "vault", PluginSlug: "acme", Description: "Reads secrets from a vault.",
		Operations: []tools.Operation{
			{Name: "lookup", Description: "Look a secret up.", EnabledByDefault: true},
			{Name: "store", Description: "Store a secret.", RequiresApprovalByDefault: true},
		},
		Settings: []tools.Setting{
			{Key: "token", Label: "Token", Type: tools.SettingPassword, Required: true},
			{Key: "region", Label: "Region", Type: tools.SettingString, Required: true},
			{Key: "endpoint", Label: "Endpoint", Type: tools.SettingURL},
			{Key: "mode", Label: "Mode", Type: tools.SettingSelect, Options: []string{"read", "write"}, Default: "read"},
			{Key: "limit", Label: "Limit", Type: tools.SettingInteger},
		},
	}
}

// tplEnv starts a service with tplVaultTool registered.
func tplEnv(t *testing.T) *apitest.Env {
	t.Helper()
	env := apitest.New(t)
	if err := env.App.Tools.Register(tplVaultTool{}); err != nil {
		t.Fatal(err)
	}
	return env
}

// tplPost sends a template body with a content type.
func tplPost(c *apitest.Client, path, contentType, body string) *apitest.Response {
	return c.Do(apitest.Request{Method: http.MethodPost, Path: path, Body: body, ContentType: contentType})
}

func tplValidate(t *testing.T, c *apitest.Client, contentType, body string) gen.AgentTemplateValidationResponse {
	t.Helper()
	var out gen.AgentTemplateValidationResponse
	tplPost(c, "/agent-templates/validate", contentType, body).Expect(t, 200).Decode(t, &out)
	if out.Data.Valid != (len(out.Data.Errors) == 0) {
		t.Fatalf("valid = %v with errors %v", out.Data.Valid, out.Data.Errors)
	}
	return out
}

func tplImport(t *testing.T, c *apitest.Client, query, contentType, body string) gen.AgentTemplateImportResponse {
	t.Helper()
	var out gen.AgentTemplateImportResponse
	tplPost(c, "/agent-templates/import"+query, contentType, body).Expect(t, 201).Decode(t, &out)
	return out
}

// findings renders findings as "CODE path" for comparison.
func tplFindings(fs []gen.AgentTemplateFinding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, string(f.Code)+" "+f.Path)
	}
	return out
}

func tplJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tplAgentCount(t *testing.T, env *apitest.Env) int {
	t.Helper()
	list, err := env.App.Store.ListAgents(context.Background(), store.AgentQuery{All: true, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func TestAgentTemplateCatalog(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	c, _ := env.UserClient("root@example.com")
	u, _ := env.UserClient("user@example.com")
	anon := env.Client()
	anon.Get("/agent-templates").Expect(t, 401, "UNAUTHENTICATED")
	anon.Get("/agent-templates/core%2Fresearcher").Expect(t, 401, "UNAUTHENTICATED")

	var list gen.AgentTemplateCatalogResponse
	u.Get("/agent-templates").Expect(t, 200).Decode(t, &list)
	c.Get("/agent-templates").Expect(t, 200)
	entries, err := agenttemplate.LoadDir(agenttemplates.FS, agenttemplate.SourceCore)
	if err != nil {
		t.Fatal(err)
	}
	var ids, wantIDs []string
	for _, e := range list.Data.Templates {
		ids = append(ids, e.Id)
	}
	for _, e := range entries {
		wantIDs = append(wantIDs, e.Template.ID)
	}
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("ids = %v, want %v (ordered by id)", ids, wantIDs)
	}
	i := slices.Index(ids, "core/researcher")
	if i < 0 {
		t.Fatalf("no core/researcher in %v", ids)
	}
	r := list.Data.Templates[i]
	if r.Name != "Researcher" || r.Description == "" || r.Version != "1.0.0" || r.Source != gen.AgentTemplateCatalogEntrySourceCore ||
		r.PluginSlug != nil || r.Category == nil || *r.Category != "research" || r.Icon != "magnifier" ||
		!slices.Equal(r.ToolClasses, []string{"core.ReadURLTool", "core.TimeTool", "core.SkillTool"}) ||
		len(r.RequiredPlugins) != 0 || len(r.MissingPlugins) != 0 {
		t.Fatalf("core/researcher = %+v", r)
	}

	// Show: the id's slash is sent encoded; the document is the file as written.
	raw, err := agenttemplates.FS.ReadFile("core/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	var show struct {
		Data struct {
			Template map[string]any `json:"template"`
		} `json:"data"`
	}
	u.Get("/agent-templates/core%2Fresearcher").Expect(t, 200).Decode(t, &show)
	if diff := cmp.Diff(want, show.Data.Template); diff != "" {
		t.Fatalf("shown template differs from the file (-file +shown):\n%s", diff)
	}
	u.Get("/agent-templates/"+url.PathEscape("core/assistant")).Expect(t, 200)
	for _, path := range []string{"/agent-templates/core%2Fnope", "/agent-templates/researcher", "/agent-templates/acme%2Fresearcher"} {
		u.Get(path).Expect(t, 404, "NOT_FOUND")
	}
	// Ids the format cannot hold are refused by the contract's pattern.
	for _, path := range []string{"/agent-templates/CORE%2FRESEARCHER", "/agent-templates/core%2Fresearcher%2Fx", "/agent-templates/a%20b"} {
		u.Get(path).Expect(t, 422, "VALIDATION_ERROR")
	}
	// An unencoded slash is another path, which no operation has.
	u.Get("/agent-templates/core/researcher").Expect(t, 404, "NOT_FOUND")
	u.Get("/agent-templates/"+strings.Repeat("a", 131)).Expect(t, 422, "VALIDATION_ERROR")
}

func TestValidateAgentTemplate(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	c, _ := env.UserClient("root@example.com")

	const good = `{"id":"helper","name":"Helper","version":"1.0.0","agent":{"system_prompt":"Help."}}`
	brokenJSON := `{"id":"Bad ID","name":"","version":"1.0","agent":{"max_steps":0,"temprature":1},` +
		`"tools":[{"tool_class":"core.TimeTool","enabled":true,"operations":[{"name":"now","auto_approve":"yes"}],"settings":{"a/b~c":1}}],"colour":1}`
	brokenYAML := "id: Bad ID\nname: ''\nversion: '1.0'\nagent:\n  max_steps: 0\n  temprature: 1\ntools:\n" +
		"  - tool_class: core.TimeTool\n    enabled: yes\n    operations:\n      - name: now\n        auto_approve: 'yes'\ncolour: 1\n"
	catalogJSON := tplJSON(t, map[string]any{
		"id": "catalog", "name": "Catalog", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x"},
		"required_plugins": []string{"acme/vault"},
		"tools": []any{
			map[string]any{"tool_class": "ghost.GhostTool", "enabled": true, "operations": []any{}},
			map[string]any{"tool_class": "core.TimeTool", "enabled": true, "operations": []any{
				map[string]any{"name": "now", "auto_approve": true}, map[string]any{"name": "rewind"},
			}},
			map[string]any{"tool_class": "core.SkillTool", "enabled": true, "operations": []any{},
				"settings": map[string]any{"allowed_skills": []string{"web-research", "no-such-skill"}}},
			map[string]any{"tool_class": tplVault, "enabled": true, "operations": []any{}},
		},
		"metadata": map[string]any{"category": "gardening"},
	})
	settingsJSON := tplJSON(t, map[string]any{
		"id": "settings", "name": "Settings", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x"},
		"tools": []any{map[string]any{"tool_class": tplVault, "enabled": false, "operations": []any{}, "settings": map[string]any{
			"token": "s3cret", "region": "eu", "limit": "ten", "endpoint": "ftp://vault.example", "mode": "erase", "colour": "red",
		}}},
	})

	tests := []struct {
		name, contentType, body string
		errors, warnings        []string
	}{
		{name: "valid json", contentType: "application/json", body: good},
		{name: "valid yaml", contentType: "application/yaml", body: "id: helper\nname: Helper\nversion: 1.0.0\nagent:\n  system_prompt: Help.\n"},
		{name: "valid yaml as text", contentType: "text/plain", body: "id: helper\nname: Helper\nversion: 1.0.0\nagent:\n  system_prompt: Help.\n"},
		{name: "valid json as text", contentType: "text/plain; charset=utf-8", body: good},
		{name: "valid json with charset", contentType: "application/json; charset=utf-8", body: good},
		{name: "broken json", contentType: "application/json", body: brokenJSON,
			errors: []string{"ID_PATTERN /id", "NAME_INVALID /name", "VERSION_PATTERN /version", "MAX_STEPS_RANGE /agent/max_steps",
				"UNKNOWN_AGENT_KEY /agent/temprature", "AUTO_APPROVE_TYPE /tools/0/operations/0/auto_approve",
				"SETTINGS_UNKNOWN_KEY /tools/0/settings/a~1b~0c", "UNKNOWN_TOP_LEVEL_KEY /colour"},
			warnings: []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt"}},
		{name: "broken yaml", contentType: "application/yaml", body: brokenYAML,
			errors: []string{"ID_PATTERN /id", "NAME_INVALID /name", "VERSION_PATTERN /version", "MAX_STEPS_RANGE /agent/max_steps",
				"UNKNOWN_AGENT_KEY /agent/temprature", "TOOL_ENABLED_REQUIRED /tools/0/enabled",
				"AUTO_APPROVE_TYPE /tools/0/operations/0/auto_approve", "UNKNOWN_TOP_LEVEL_KEY /colour"},
			warnings: []string{"SYSTEM_PROMPT_MISSING /agent/system_prompt"}},
		{name: "missing keys", contentType: "text/plain", body: "{}",
			errors: []string{"ID_REQUIRED /id", "NAME_REQUIRED /name", "VERSION_REQUIRED /version", "AGENT_REQUIRED /agent"}},
		{name: "catalog warnings", contentType: "application/json", body: catalogJSON, warnings: []string{
			"TOOL_PLUGIN_MISSING /tools/0/tool_class", "OPERATION_UNKNOWN /tools/1/operations/1/name",
			"SKILL_MISSING /tools/2/settings/allowed_skills/1", "TOOL_NEEDS_CONFIGURATION /tools/3",
			"PLUGIN_MISSING /required_plugins/0", "METADATA_CATEGORY_UNKNOWN /metadata/category",
		}},
		{name: "settings checked", contentType: "application/json", body: settingsJSON, errors: []string{
			"SETTINGS_UNKNOWN_KEY /tools/0/settings/colour", "SETTINGS_INVALID_VALUE_TYPE /tools/0/settings/limit",
			"SETTINGS_PASSWORD_KEY_FORBIDDEN /tools/0/settings/token",
		}},
		{name: "empty text", contentType: "text/plain", body: "", errors: []string{"EMPTY_PAYLOAD "}},
		{name: "blank yaml", contentType: "application/yaml", body: "  \n# only a comment\n", errors: []string{"EMPTY_PAYLOAD "}},
		{name: "unparsable text", contentType: "text/plain", body: "{not json", errors: []string{"PARSE_ERROR "}},
		{name: "unparsable yaml", contentType: "application/yaml", body: "a: [1, 2", errors: []string{"PARSE_ERROR "}},
		{name: "duplicate json key", contentType: "application/json", body: `{"id":"a","id":"b"}`, errors: []string{"PARSE_ERROR "}},
		{name: "not a mapping", contentType: "text/plain", body: "[1]", errors: []string{"PARSE_ERROR "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tplValidate(t, c, tc.contentType, tc.body)
			if got := tplFindings(out.Data.Errors); !slices.Equal(got, append([]string{}, tc.errors...)) {
				t.Errorf("errors = %q, want %q", got, tc.errors)
			}
			if got := tplFindings(out.Data.Warnings); !slices.Equal(got, append([]string{}, tc.warnings...)) {
				t.Errorf("warnings = %q, want %q", got, tc.warnings)
			}
		})
	}

	// The tool framework's value rules apply once the document is otherwise valid.
	strict := tplJSON(t, map[string]any{
		"id": "strict", "name": "Strict", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x"},
		"tools": []any{map[string]any{"tool_class": tplVault, "enabled": true, "operations": []any{},
			"settings": map[string]any{"region": "eu", "endpoint": "ftp://vault.example", "mode": "erase"}}},
	})
	out := tplValidate(t, c, "application/json", strict)
	if got := tplFindings(out.Data.Errors); !slices.Equal(got, []string{
		"SETTINGS_INVALID_VALUE_TYPE /tools/0/settings/endpoint", "SETTINGS_INVALID_VALUE_TYPE /tools/0/settings/mode",
	}) {
		t.Fatalf("errors = %q", got)
	}

	// No body at all is an empty payload too.
	var empty gen.AgentTemplateValidationResponse
	c.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-templates/validate"}).Expect(t, 200).Decode(t, &empty)
	if tplFindings(empty.Data.Errors)[0] != "EMPTY_PAYLOAD " {
		t.Fatalf("no body: %+v", empty)
	}

	// What never reaches the validator.
	tplPost(c, "/agent-templates/validate", "application/json", "{bad").Expect(t, 400, "BAD_REQUEST")
	tplPost(c, "/agent-templates/validate", "application/json", "[]").Expect(t, 422, "VALIDATION_ERROR")
	huge := "id: x\nname: y\nversion: 1.0.0\nagent:\n  notes: " + strings.Repeat("n", 1<<20) + "\n"
	tplPost(c, "/agent-templates/validate", "application/yaml", huge).Expect(t, 413, "PAYLOAD_TOO_LARGE")
	tplPost(env.Client(), "/agent-templates/validate", "application/json", good).Expect(t, 401, "UNAUTHENTICATED")
	c.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-templates/validate", Body: good, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")

	if n := tplAgentCount(t, env); n != 0 {
		t.Fatalf("validation created %d agents", n)
	}
}

func TestImportAgentTemplate(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	admin, _ := env.UserClient("root@example.com")
	c, me := env.UserClient("owner@example.com")
	stranger, other := env.UserClient("stranger@example.com")

	doc := map[string]any{
		"$schema": "https://elsewhere.example/schemas/agent-template.schema.json",
		"id":      "importer", "name": "Importer", "description": "Template description.", "version": "2.1.0",
		"agent": map[string]any{
			"system_prompt": "You import.", "notes": "Some notes.", "max_steps": 30, "allow_followup": false,
			"retry_after_minutes": 5, "max_retries": 2,
		},
		"required_plugins": []string{"acme/vault"},
		"tools": []any{
			map[string]any{"tool_class": "ghost.GhostTool", "enabled": true, "operations": []any{map[string]any{"name": "boo"}}},
			map[string]any{"tool_class": "core.TimeTool", "enabled": true, "operations": []any{
				map[string]any{"name": "now", "auto_approve": true}, map[string]any{"name": "rewind", "enabled": true},
				map[string]any{"name": "format", "enabled": false},
			}},
			map[string]any{"tool_class": "core.SkillTool", "enabled": true, "operations": []any{},
				"settings": map[string]any{"allowed_skills": []string{"web-research", "no-such-skill"}}},
			map[string]any{"tool_class": tplVault, "enabled": true, "operations": []any{map[string]any{"name": "store", "auto_approve": true}},
				"settings": map[string]any{"limit": 7, "endpoint": nil}},
			map[string]any{"tool_class": "core.TodoTool", "enabled": false, "operations": []any{map[string]any{"name": "add", "enabled": false}},
				"settings": map[string]any{}},
		},
		"metadata": map[string]any{"category": "automation", "icon": "bolt", "archetype": "coder", "palette_key": "teal"},
	}
	body := tplJSON(t, doc)
	wantWarnings := []string{
		"TOOL_PLUGIN_MISSING /tools/0/tool_class", "OPERATION_UNKNOWN /tools/1/operations/1/name",
		"SKILL_MISSING /tools/2/settings/allowed_skills/1", "TOOL_NEEDS_CONFIGURATION /tools/3", "PLUGIN_MISSING /required_plugins/0",
	}
	// validate predicts the import's warnings.
	if got := tplFindings(tplValidate(t, c, "application/json", body).Data.Warnings); !slices.Equal(got, wantWarnings) {
		t.Fatalf("validate warnings = %q", got)
	}
	out := tplImport(t, c, "", "application/json", body)
	if got := tplFindings(out.Data.Warnings); !slices.Equal(got, wantWarnings) {
		t.Fatalf("import warnings = %q, want %q", got, wantWarnings)
	}
	for _, w := range out.Data.Warnings {
		if w.Code == "TOOL_NEEDS_CONFIGURATION" && (!strings.Contains(w.Message, "token") || !strings.Contains(w.Message, "region")) {
			t.Fatalf("needs-configuration message names no keys: %q", w.Message)
		}
	}
	ag := out.Data.Agent
	wantMeta := map[string]any{"category": "automation", "icon": "bolt", "archetype": "coder", "palette_key": "teal",
		"variant_key": agenttemplate.VariantKey("importer")}
	if ag.PrincipalId != me.PrincipalId || ag.Name != "Importer" || ag.Description != "Template description." ||
		ag.SystemPrompt != "You import." || ag.Notes != "Some notes." || ag.MaxSteps != 30 || ag.AllowFollowup ||
		ag.RetryAfterMinutes != 5 || ag.MaxRetries != 2 || !reflect.DeepEqual(ag.Metadata, wantMeta) {
		t.Fatalf("agent = %+v", ag)
	}
	if got := getAgent(t, c, ag.Id); !reflect.DeepEqual(got, ag) {
		t.Fatalf("GET agent = %+v, import answered %+v", got, ag)
	}

	// The tool records, as the agent tools API shows them.
	var statuses gen.AgentToolStatusListResponse
	c.Get(fmt.Sprintf("/agents/%d/tools/status", ag.Id)).Expect(t, 200).Decode(t, &statuses)
	enabled := map[string]gen.AgentToolStatus{}
	for _, s := range statuses.Data.Tools {
		if s.Enabled {
			enabled[s.ToolClass] = s
		}
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range enabled {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{tplVault, "core.SkillTool", "core.TimeTool"}) {
		t.Fatalf("enabled tools = %v", got)
	}
	if v := enabled[tplVault]; v.ReadyToEnable || !slices.Equal(v.MissingRequired, []string{"token", "region"}) {
		t.Fatalf("vault status = %+v", v)
	}
	var ops gen.AgentToolOperationListResponse
	c.Get(fmt.Sprintf("/agents/%d/tools/operations", ag.Id)).Expect(t, 200).Decode(t, &ops)
	overrides := map[string]string{}
	for _, o := range ops.Data.Operations {
		if o.Enabled != nil || o.AutoApprove != nil {
			overrides[o.ToolClass+"."+o.Operation] = fmt.Sprintf("enabled=%v auto=%v", tplBool(o.Enabled), tplBool(o.AutoApprove))
		}
	}
	wantOverrides := map[string]string{
		"core.TimeTool.now":    "enabled=nil auto=true",
		"core.TimeTool.format": "enabled=false auto=nil",
		tplVault + ".store":    "enabled=nil auto=true",
	}
	if !reflect.DeepEqual(overrides, wantOverrides) {
		t.Fatalf("operation overrides = %v", overrides)
	}
	override := func(class string) map[string]any {
		var r gen.AgentToolOverrideResponse
		c.Get(fmt.Sprintf("/agents/%d/tools/%s/override", ag.Id, class)).Expect(t, 200).Decode(t, &r)
		return r.Data.Override.Settings
	}
	if got := override("core.SkillTool"); !reflect.DeepEqual(got, map[string]any{"allowed_skills": []any{"web-research"}}) {
		t.Fatalf("skill settings = %v", got)
	}
	if got := override(tplVault); !reflect.DeepEqual(got, map[string]any{"limit": float64(7)}) {
		t.Fatalf("vault settings = %v", got)
	}
	if got := override("core.TimeTool"); len(got) != 0 {
		t.Fatalf("time settings = %v", got)
	}
	cfg, err := env.App.Store.AgentToolConfig(context.Background(), ag.Id)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Enabled["core.TodoTool"]; ok || len(cfg.Operations["core.TodoTool"]) != 0 || cfg.Enabled["ghost.GhostTool"] {
		t.Fatalf("a disabled or unregistered tool got records: %+v", cfg)
	}

	// YAML text, no metadata: the variant key is derived from the id, the icon defaults.
	yamlOut := tplImport(t, c, "", "application/yaml", "id: yaml-agent\nname: From YAML\nversion: 1.0.0\nagent:\n  system_prompt: Hi.\n")
	if md := yamlOut.Data.Agent.Metadata; !reflect.DeepEqual(md, map[string]any{"icon": "puzzle", "variant_key": agenttemplate.VariantKey("yaml-agent")}) ||
		len(yamlOut.Data.Warnings) != 0 || yamlOut.Data.Agent.MaxSteps != 10 || !yamlOut.Data.Agent.AllowFollowup {
		t.Fatalf("yaml import = %+v", yamlOut.Data)
	}
	given := tplImport(t, c, "", "text/plain", `{"id":"yaml-agent","name":"Given","version":"1.0.0","agent":{"system_prompt":"x"},"metadata":{"variant_key":"v2"}}`)
	if given.Data.Agent.Metadata["variant_key"] != "v2" {
		t.Fatalf("given variant key = %v", given.Data.Agent.Metadata)
	}
	variants := map[string]bool{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		variants[agenttemplate.VariantKey(id)] = true
	}
	if len(variants) != 3 {
		t.Fatalf("variant keys of 8 ids = %v", variants)
	}

	// Refusals write nothing.
	before := tplAgentCount(t, env)
	many := map[string]any{"id": "many", "name": "Many", "version": "1.0.0", "agent": map[string]any{}}
	for i := range 25 {
		many[fmt.Sprintf("k%02d", i)] = i
	}
	manyErrors := tplJSON(t, many)
	refusals := []struct {
		name, query, contentType, body string
		status                         int
		code                           string
		message                        []string
	}{
		{"template errors", "", "application/json", `{"id":"Bad ID","name":"x","version":"1","agent":{}}`, 422, "VALIDATION_ERROR",
			[]string{"ID_PATTERN at /id", "VERSION_PATTERN at /version"}},
		{"setting refused by the tool", "", "application/json",
			`{"id":"x","name":"x","version":"1.0.0","agent":{},"tools":[{"tool_class":"acme.VaultTool","enabled":true,"operations":[],"settings":{"mode":"erase"}}]}`,
			422, "VALIDATION_ERROR", []string{"SETTINGS_INVALID_VALUE_TYPE at /tools/0/settings/mode"}},
		{"password in template", "", "application/yaml",
			"id: x\nname: x\nversion: 1.0.0\nagent: {}\ntools:\n  - tool_class: acme.VaultTool\n    enabled: true\n    operations: []\n    settings:\n      token: s3cret\n",
			422, "VALIDATION_ERROR", []string{"SETTINGS_PASSWORD_KEY_FORBIDDEN at /tools/0/settings/token"}},
		{"unparsable", "", "text/plain", "{x", 422, "VALIDATION_ERROR", []string{"PARSE_ERROR (the template cannot be parsed"}},
		{"many errors", "", "application/json", manyErrors, 422, "VALIDATION_ERROR",
			[]string{"UNKNOWN_TOP_LEVEL_KEY at /k00", "UNKNOWN_TOP_LEVEL_KEY at /k19", "and 5 more"}},
		{"blank", "", "text/plain", "   \n", 422, "VALIDATION_ERROR", []string{"EMPTY_PAYLOAD"}},
		{"no body", "", "text/plain", "", 422, "VALIDATION_ERROR", nil},
		{"not json", "", "application/json", "{x", 400, "BAD_REQUEST", nil},
		{"stranger's principal", fmt.Sprintf("?principal_id=%d", other.PrincipalId), "application/json", body, 403, "FORBIDDEN", nil},
		{"unknown principal", "?principal_id=999999", "application/json", body, 403, "FORBIDDEN", nil},
		{"principal zero", "?principal_id=0", "application/json", body, 422, "VALIDATION_ERROR", nil},
		{"principal not a number", "?principal_id=me", "application/json", body, 422, "VALIDATION_ERROR", nil},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := tplPost(c, "/agent-templates/import"+tc.query, tc.contentType, tc.body).Expect(t, tc.status, tc.code)
			var env gen.TemplateImportRefusedError
			r.Decode(t, &env)
			for _, m := range tc.message {
				if !strings.Contains(env.Error.Message, m) {
					t.Errorf("message %q lacks %q", env.Error.Message, m)
				}
			}
			// A template refused for its findings carries them all beside the error, each
			// with its code and path, as validate reports them; other refusals carry none.
			if tc.message == nil || tc.status != 422 {
				if env.Details != nil {
					t.Errorf("details on a refusal without findings: %+v", env.Details)
				}
				return
			}
			if env.Details == nil || len(env.Details.Errors) == 0 {
				t.Fatalf("refused import without the findings: %s", r.Body)
			}
			var v gen.AgentTemplateValidationResponse
			tplPost(c, "/agent-templates/validate", tc.contentType, tc.body).Expect(t, 200).Decode(t, &v)
			if !reflect.DeepEqual(v.Data.Errors, env.Details.Errors) || !reflect.DeepEqual(v.Data.Warnings, env.Details.Warnings) {
				t.Errorf("details %+v differ from validate's %+v", env.Details, v.Data)
			}
			for _, f := range env.Details.Errors {
				if f.Code == "" || (f.Path == "" && f.Code != "PARSE_ERROR" && f.Code != "EMPTY_PAYLOAD") {
					t.Errorf("finding without code or path: %+v", f)
				}
			}
		})
	}
	tplPost(env.Client(), "/agent-templates/import", "application/json", body).Expect(t, 401, "UNAUTHENTICATED")
	c.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-templates/import", Body: body, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	tplPost(admin, "/agent-templates/import?principal_id=999999", "application/json", body).Expect(t, 422, "VALIDATION_ERROR")
	if n := tplAgentCount(t, env); n != before {
		t.Fatalf("refused imports changed the agent count from %d to %d", before, n)
	}

	// Groups: a plain member may not import into the group, its admin may; an administrator
	// may import into anyone's principal.
	_, gp := mkGroup(t, stranger, "Team", map[int64]string{me.Id: "member"})
	tplPost(c, fmt.Sprintf("/agent-templates/import?principal_id=%d", gp), "application/json", body).Expect(t, 403, "FORBIDDEN")
	gid2, gp2 := mkGroup(t, stranger, "Admins", map[int64]string{me.Id: "admin"})
	inGroup := tplImport(t, c, fmt.Sprintf("?principal_id=%d", gp2), "application/json", body)
	if inGroup.Data.Agent.PrincipalId != gp2 {
		t.Fatalf("group import owned by %d, want %d (group %d)", inGroup.Data.Agent.PrincipalId, gp2, gid2)
	}
	byAdmin := tplImport(t, admin, fmt.Sprintf("?principal_id=%d", other.PrincipalId), "application/json", body)
	if byAdmin.Data.Agent.PrincipalId != other.PrincipalId {
		t.Fatalf("admin import owned by %d", byAdmin.Data.Agent.PrincipalId)
	}
}

func tplBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// TestImportInheritedAndTargets: settings the owner already has count as configured, and
// allowed_target_agents keeps only agents of the new owner.
func TestImportInheritedAndTargets(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	env.UserClient("root@example.com")
	c, _ := env.UserClient("owner@example.com")
	stranger, _ := env.UserClient("stranger@example.com")
	mine := mkAgent(t, c, map[string]any{"name": "Mine"})
	theirs := mkAgent(t, stranger, map[string]any{"name": "Theirs"})

	vault := `{"id":"v","name":"V","version":"1.0.0","agent":{"system_prompt":"x"},"tools":[{"tool_class":"acme.VaultTool","enabled":true,"operations":[]}]}`
	if got := tplFindings(tplImport(t, c, "", "application/json", vault).Data.Warnings); !slices.Equal(got, []string{"TOOL_NEEDS_CONFIGURATION /tools/0"}) {
		t.Fatalf("warnings before configuration = %q", got)
	}
	c.Put("/tools/"+tplVault+"/user-settings", map[string]any{"settings": map[string]any{"token": "s3cret", "region": "eu"}}).Expect(t, 200)
	if got := tplImport(t, c, "", "application/json", vault).Data.Warnings; len(got) != 0 {
		t.Fatalf("warnings with the user layer set = %v", got)
	}
	// Another user's layer does not count for them.
	if got := tplFindings(tplValidate(t, stranger, "application/json", vault).Data.Warnings); !slices.Equal(got, []string{"TOOL_NEEDS_CONFIGURATION /tools/0"}) {
		t.Fatalf("stranger's warnings = %q", got)
	}

	targets := func(ids ...int64) string {
		return tplJSON(t, map[string]any{"id": "s", "name": "S", "version": "1.0.0", "agent": map[string]any{"system_prompt": "x"},
			"tools": []any{map[string]any{"tool_class": "core.SubAgentTool", "enabled": true, "operations": []any{},
				"settings": map[string]any{"allowed_target_agents": ids}}}})
	}
	override := func(agentID int64) map[string]any {
		var r gen.AgentToolOverrideResponse
		c.Get(fmt.Sprintf("/agents/%d/tools/core.SubAgentTool/override", agentID)).Expect(t, 200).Decode(t, &r)
		return r.Data.Override.Settings
	}
	out := tplImport(t, c, "", "application/json", targets(mine.Id, theirs.Id))
	if len(out.Data.Warnings) != 0 || !reflect.DeepEqual(override(out.Data.Agent.Id), map[string]any{"allowed_target_agents": []any{float64(mine.Id)}}) {
		t.Fatalf("mixed targets: warnings %v, settings %v", out.Data.Warnings, override(out.Data.Agent.Id))
	}
	out = tplImport(t, c, "", "application/json", targets(theirs.Id))
	if got := tplFindings(out.Data.Warnings); !slices.Equal(got, []string{"TOOL_NEEDS_CONFIGURATION /tools/0"}) || len(override(out.Data.Agent.Id)) != 0 {
		t.Fatalf("foreign targets: warnings %q, settings %v", got, override(out.Data.Agent.Id))
	}
}

func TestExportAgent(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	admin, _ := env.UserClient("root@example.com")
	c, _ := env.UserClient("owner@example.com")
	member, mu := env.UserClient("member@example.com")
	stranger, _ := env.UserClient("stranger@example.com")
	gid, gp := mkGroup(t, c, "Team", map[int64]string{mu.Id: "member"})
	ag := mkAgent(t, c, map[string]any{
		"name": "Export Me!", "principal_id": gp, "description": "Exported.", "system_prompt": "Be exported.", "max_steps": 12,
		"metadata": map[string]any{"category": "research", "archetype": "analyst", "palette_key": "nope", "extra": 1},
	})
	path := fmt.Sprintf("/agents/%d", ag.Id)
	c.Post(path+"/tools/"+tplVault+"/enable", nil).Expect(t, 200)
	c.Post(path+"/tools/core.TimeTool/enable", nil).Expect(t, 200)
	c.Post(path+"/tools/core.TodoTool/enable", nil).Expect(t, 200)
	c.Delete(path+"/tools/core.TodoTool/enable").Expect(t, 200)
	c.Patch(path+"/tools/core.TimeTool/operations/now", map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200)
	c.Patch(path+"/tools/core.TimeTool/operations/format", map[string]any{"enabled": nil, "auto_approve": false}).Expect(t, 200)
	c.Put(path+"/tools/"+tplVault+"/override", map[string]any{"settings": map[string]any{
		"token": "agent-secret", "region": "eu", "endpoint": "https://vault.example",
	}}).Expect(t, 200)
	// Inherited values never leave: the global layer and the owner's user layer.
	admin.Put("/tools/"+tplVault+"/settings", map[string]any{"settings": map[string]any{"limit": 99}}).Expect(t, 200)
	c.Put("/tools/"+tplVault+"/user-settings", map[string]any{"settings": map[string]any{"mode": "write"}}).Expect(t, 200)
	// A tool the group enables for its agents counts as enabled.
	c.Post(fmt.Sprintf("/groups/%d/tools/core.CalculatorTool", gid), map[string]any{}).Expect(t, 200)

	export := func(cl *apitest.Client, query string) gen.AgentTemplateDocument {
		t.Helper()
		var r gen.AgentExportResponse
		res := cl.Get(path+"/export"+query).Expect(t, 200)
		if strings.Contains(string(res.Body), "agent-secret") {
			t.Fatalf("export carries the secret: %s", res.Body)
		}
		res.Decode(t, &r)
		var raw struct {
			Data struct {
				Template json.RawMessage `json:"template"`
			} `json:"data"`
		}
		res.Decode(t, &raw)
		// The export validates without errors, exactly as sent.
		if v := tplValidate(t, cl, "application/json", string(raw.Data.Template)); !v.Data.Valid {
			t.Fatalf("exported template does not validate: %+v", v.Data.Errors)
		}
		return r.Data.Template
	}
	plain := export(c, "")
	if plain.Id != "export-me" || plain.Name != "Export Me!" || plain.Version != "1.0.0" || plain.Schema == nil ||
		!strings.HasSuffix(*plain.Schema, apitest.Prefix+"/schemas/agent-template.schema.json") ||
		tplDeref(plain.Description) != "Exported." || tplDeref(plain.Agent.Description) != "Exported." ||
		tplDeref(plain.Agent.SystemPrompt) != "Be exported." || tplDeref(plain.Agent.MaxSteps) != 12 || !tplDeref(plain.Agent.AllowFollowup) {
		t.Fatalf("export = %s", tplJSON(t, plain))
	}
	if md := plain.Metadata; md == nil || tplDeref(md.Category) != "research" || md.Archetype == nil || *md.Archetype != "analyst" ||
		md.PaletteKey != nil || md.Icon != nil || md.VariantKey != nil {
		t.Fatalf("metadata = %s", tplJSON(t, plain.Metadata))
	}
	wantTools := `[{"enabled":true,"operations":[],"tool_class":"acme.VaultTool"},` +
		`{"enabled":true,"operations":[],"tool_class":"core.CalculatorTool"},` +
		`{"enabled":true,"operations":[{"auto_approve":true,"enabled":true,"name":"now"},{"auto_approve":false,"name":"format"}],"tool_class":"core.TimeTool"}]`
	if got := tplJSON(t, plain.Tools); got != wantTools {
		t.Fatalf("tools = %s\nwant    %s", got, wantTools)
	}
	full := export(c, "?include_settings=true")
	if got := tplJSON(t, (*full.Tools)[0].Settings); got != `{"endpoint":"https://vault.example","region":"eu"}` {
		t.Fatalf("vault settings = %s", got)
	}
	if (*full.Tools)[1].Settings != nil || (*full.Tools)[2].Settings != nil {
		t.Fatalf("settings of tools without an agent layer: %s", tplJSON(t, full.Tools))
	}
	c.Get(path+"/export?include_settings=false").Expect(t, 200)

	// Visibility: a member sees the group's agent but may not read its settings.
	export(member, "")
	member.Get(path+"/export?include_settings=true").Expect(t, 403, "FORBIDDEN")
	export(admin, "?include_settings=true")
	stranger.Get(path+"/export").Expect(t, 404, "NOT_FOUND")
	stranger.Get(path+"/export?include_settings=true").Expect(t, 404, "NOT_FOUND")
	c.Get("/agents/999999/export").Expect(t, 404, "NOT_FOUND")
	c.Get("/agents/abc/export").Expect(t, 404, "NOT_FOUND")
	c.Get(path+"/export?include_settings=maybe").Expect(t, 422, "VALIDATION_ERROR")
	env.Client().Get(path+"/export").Expect(t, 401, "UNAUTHENTICATED")

	// An agent without tools or metadata.
	bare := mkAgent(t, c, map[string]any{"name": "???"})
	var r gen.AgentExportResponse
	c.Get(fmt.Sprintf("/agents/%d/export?include_settings=true", bare.Id)).Expect(t, 200).Decode(t, &r)
	if r.Data.Template.Id != "agent" || r.Data.Template.Tools != nil || r.Data.Template.Metadata != nil {
		t.Fatalf("bare export = %s", tplJSON(t, r.Data.Template))
	}
}

func tplDeref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// tplDefinition is what an agent is, without identity and timestamps: its fields, the
// status and operations of every tool, and the agent-level settings of its enabled tools.
type tplDefinition struct {
	Agent      gen.Agent
	Statuses   []gen.AgentToolStatus
	Operations []gen.AgentToolOperation
	Settings   map[string]map[string]any
}

func tplDefinitionOf(t *testing.T, c *apitest.Client, id int64) tplDefinition {
	t.Helper()
	d := tplDefinition{Agent: getAgent(t, c, id), Settings: map[string]map[string]any{}}
	var st gen.AgentToolStatusListResponse
	c.Get(fmt.Sprintf("/agents/%d/tools/status", id)).Expect(t, 200).Decode(t, &st)
	d.Statuses = st.Data.Tools
	var ops gen.AgentToolOperationListResponse
	c.Get(fmt.Sprintf("/agents/%d/tools/operations", id)).Expect(t, 200).Decode(t, &ops)
	d.Operations = ops.Data.Operations
	for _, s := range d.Statuses {
		if s.Enabled {
			var o gen.AgentToolOverrideResponse
			c.Get(fmt.Sprintf("/agents/%d/tools/%s/override", id, s.ToolClass)).Expect(t, 200).Decode(t, &o)
			d.Settings[s.ToolClass] = o.Data.Override.Settings
		}
	}
	return d
}

// TestTemplateRoundTrip: an agent exported with its settings and imported again is the same
// agent (the acceptance test).
func TestTemplateRoundTrip(t *testing.T) {
	t.Parallel()
	env := tplEnv(t)
	env.UserClient("root@example.com")
	c, _ := env.UserClient("owner@example.com")
	sibling := mkAgent(t, c, map[string]any{"name": "Sibling"})
	orig := mkAgent(t, c, map[string]any{
		"name": "Round Trip", "description": "Goes and comes back.", "system_prompt": "You travel.", "notes": "# Notes\nmarkdown",
		"max_steps": 42, "allow_followup": false, "retry_after_minutes": 15, "max_retries": 3,
		"metadata":  map[string]any{"category": "automation", "icon": "rocket", "archetype": "explorer", "variant_key": "v2", "palette_key": "violet"},
		"approvers": map[string]any{"owner": true, "managers": true, "user_ids": []int64{}}, "approval_timeout_seconds": 900, "approval_timeout_action": "abort",
		"compaction_enabled": false, "compaction_threshold_percent": 60, "compaction_answer_reserve": 512, "tool_result_max_chars": 20000,
	})
	path := fmt.Sprintf("/agents/%d", orig.Id)
	for _, class := range []string{"core.ReadURLTool", "core.TimeTool", "core.SkillTool", "core.SubAgentTool", tplVault} {
		c.Post(path+"/tools/"+class+"/enable", nil).Expect(t, 200)
	}
	c.Patch(path+"/tools/core.ReadURLTool/operations/fetch", map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200)
	c.Patch(path+"/tools/core.TimeTool/operations/format", map[string]any{"enabled": false, "auto_approve": nil}).Expect(t, 200)
	c.Patch(path+"/tools/"+tplVault+"/operations/store", map[string]any{"enabled": true, "auto_approve": false, "approval_timeout_seconds": 120}).Expect(t, 200)
	c.Patch(path+"/tools/core.TimeTool/operations/now", map[string]any{"enabled": nil, "auto_approve": false, "approval_timeout_seconds": 0}).Expect(t, 200)
	c.Put(path+"/tools/core.ReadURLTool/override", map[string]any{"settings": map[string]any{
		"allowed_domains": []string{"example.org", "example.net"}, "max_bytes": 2048, "user_agent": "round-trip/1.0",
	}}).Expect(t, 200)
	c.Put(path+"/tools/core.SkillTool/override", map[string]any{"settings": map[string]any{"allowed_skills": []string{"web-research", "scheduling"}}}).Expect(t, 200)
	c.Put(path+"/tools/core.SubAgentTool/override", map[string]any{"settings": map[string]any{"allowed_target_agents": []int64{sibling.Id}}}).Expect(t, 200)
	c.Put(path+"/tools/"+tplVault+"/override", map[string]any{"settings": map[string]any{"region": "eu", "limit": 5, "mode": "write"}}).Expect(t, 200)
	// The secret comes from the owner's layer, which both agents inherit (and no export carries).
	c.Put("/tools/"+tplVault+"/user-settings", map[string]any{"settings": map[string]any{"token": "s3cret"}}).Expect(t, 200)

	res := c.Get(path+"/export?include_settings=true").Expect(t, 200)
	var exp struct {
		Data struct {
			Template json.RawMessage `json:"template"`
		} `json:"data"`
	}
	res.Decode(t, &exp)
	if strings.Contains(string(exp.Data.Template), "s3cret") {
		t.Fatalf("export carries the secret: %s", exp.Data.Template)
	}
	out := tplImport(t, c, "", "application/json", string(exp.Data.Template))
	if len(out.Data.Warnings) != 0 {
		t.Fatalf("re-import warnings: %v", out.Data.Warnings)
	}
	copyID := out.Data.Agent.Id
	if copyID == orig.Id {
		t.Fatal("import did not create a new agent")
	}

	ignore := cmpopts.IgnoreFields(gen.Agent{}, "Id", "CreatedAt", "UpdatedAt")
	want, got := tplDefinitionOf(t, c, orig.Id), tplDefinitionOf(t, c, copyID)
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Fatalf("imported agent differs from the original (-original +imported):\n%s", diff)
	}
	if len(want.Settings) != 5 || len(want.Settings[tplVault]) != 3 {
		t.Fatalf("the round trip compared too little: %v", want.Settings)
	}
	timeouts := map[string]int{}
	for _, o := range want.Operations {
		if o.ApprovalTimeoutSeconds != nil {
			timeouts[o.ToolClass+"."+o.Operation] = *o.ApprovalTimeoutSeconds
		}
	}
	if len(timeouts) != 2 || timeouts[tplVault+".store"] != 120 || timeouts["core.TimeTool.now"] != 0 {
		t.Fatalf("operation approval timeouts of the original: %v", timeouts)
	}

	// The export of the copy is the export of the original.
	var again struct {
		Data struct {
			Template json.RawMessage `json:"template"`
		} `json:"data"`
	}
	c.Get(fmt.Sprintf("/agents/%d/export?include_settings=true", copyID)).Expect(t, 200).Decode(t, &again)
	if string(again.Data.Template) != string(exp.Data.Template) {
		t.Fatalf("exports differ:\n%s\n%s", exp.Data.Template, again.Data.Template)
	}
	// The YAML form of the export imports to the same agent too.
	var tpl agenttemplate.Template
	if err := json.Unmarshal(exp.Data.Template, &tpl); err != nil {
		t.Fatal(err)
	}
	y, err := tplYAML(&tpl)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML := tplImport(t, c, "", "application/yaml", y)
	if diff := cmp.Diff(want, tplDefinitionOf(t, c, fromYAML.Data.Agent.Id), ignore); diff != "" {
		t.Fatalf("YAML import differs (-original +imported):\n%s", diff)
	}
}

// tplYAML writes a template as YAML text.
func tplYAML(t *agenttemplate.Template) (string, error) {
	b, err := yaml.Marshal(t)
	return string(b), err
}

// TestRawBodyOperations: the gate keeps the raw body only for operations whose body may be raw
// text; today these are the two template uploads.
func TestRawBodyOperations(t *testing.T) {
	t.Parallel()
	doc := apitest.Contract(t)
	var got []string
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			content := op.RequestBody.Value.Content
			if content["application/yaml"] != nil || content["text/plain"] != nil {
				got = append(got, strings.ToLower(op.OperationID))
			}
		}
	}
	slices.Sort(got)
	if want := []string{"importagenttemplate", "validateagenttemplate"}; !slices.Equal(got, want) {
		t.Fatalf("operations with raw text bodies = %v, want %v", got, want)
	}
}
