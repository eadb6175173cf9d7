package toolconfig_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/toolconfig"
)

const forecast = "weather.ForecastTool"

func skillTool() specTool {
	return specTool{
		Class: toolconfig.SkillToolClass, Name: "skill", Description: "Load skills.",
		Operations: []tools.Operation{{Name: "read", EnabledByDefault: true}},
		Settings:   []tools.Setting{{Key: "allowed_skills", Type: tools.SettingStringList}},
	}
}

type agentEnv struct {
	st                 *store.Store
	svc                *toolconfig.Service
	user               *store.User
	caller, sib, other *store.Agent
}

func newAgentEnv(t *testing.T) *agentEnv {
	t.Helper()
	st := storetest.New(t)
	e := &agentEnv{st: st, svc: toolconfig.New(st, registry(t, weather(), skillTool()), index(t, "web-research", "scheduling"), box(t))}
	e.user = storetest.User(t, st)
	stranger := storetest.User(t, st)
	e.caller, e.sib, e.other = storetest.Agent(t, st, e.user.PrincipalID), storetest.Agent(t, st, e.user.PrincipalID), storetest.Agent(t, st, stranger.PrincipalID)
	return e
}

// configure decodes body as the model would send it and applies it.
func (e *agentEnv) configure(t *testing.T, target int64, body string) ([]toolconfig.Manifest, error) {
	t.Helper()
	var raw any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	entries, err := toolconfig.ParseToolEntries(raw)
	if err != nil {
		return nil, err
	}
	return e.svc.ConfigureAgentTools(context.Background(), e.caller.ID, e.user.ID, target, entries)
}

func (e *agentEnv) mustConfigure(t *testing.T, target int64, body string) {
	t.Helper()
	if _, err := e.configure(t, target, body); err != nil {
		t.Fatalf("configure %s: %v", body, err)
	}
}

func (e *agentEnv) config(t *testing.T, agentID int64) *store.AgentToolConfig {
	t.Helper()
	c, err := e.st.AgentToolConfig(context.Background(), agentID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func agentLayer(c *store.AgentToolConfig, class string) map[string]any {
	if ts := c.Agent[class]; ts != nil {
		return normalise(ts.Values)
	}
	return map[string]any{}
}

// normalise turns json.Number values into float64 (as the model's JSON decodes).
func normalise(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return out
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestAgentDiscoveryPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAgentEnv(t)
	e.mustConfigure(t, e.caller.ID, `[{"tool_class":"weather.ForecastTool","enabled":true,"settings":{"city":"Secretville"},
		"operations":[{"name":"alert","auto_approve":true}]},
		{"tool_class":"core.SkillTool","settings":{"allowed_skills":["scheduling"]}}]`)
	d, err := e.svc.AgentDiscovery(ctx, e.caller.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(d)
	if strings.Contains(string(raw), "Secretville") {
		t.Fatalf("payload shows a setting value: %s", raw)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	want := func(what string, got map[string]any, keys ...string) {
		t.Helper()
		sort.Strings(keys)
		if !reflect.DeepEqual(keysOf(got), keys) {
			t.Fatalf("%s keys = %v, want %v", what, keysOf(got), keys)
		}
	}
	want("payload", p, "version", "count", "tools", "skills")
	if p["version"] != float64(2) || p["count"] != float64(2) {
		t.Fatalf("version/count = %v/%v", p["version"], p["count"])
	}
	ts := p["tools"].([]any)
	byClass := map[string]map[string]any{}
	for _, x := range ts {
		m := x.(map[string]any)
		want("tool", m, "tool_class", "display_name", "description", "plugin_slug", "enabled", "ready_to_enable", "missing_required", "operations")
		for _, o := range m["operations"].([]any) {
			want("operation", o.(map[string]any), "name", "description", "enabled", "requires_approval")
		}
		byClass[m["tool_class"].(string)] = m
	}
	w, sk := byClass[forecast], byClass[toolconfig.SkillToolClass]
	if w["plugin_slug"] != "weather" || sk["plugin_slug"] != nil || w["enabled"] != true || sk["enabled"] != false {
		t.Fatalf("tools = %v", ts)
	}
	if w["ready_to_enable"] != false || !reflect.DeepEqual(w["missing_required"], []any{"api_key"}) ||
		sk["ready_to_enable"] != true || !reflect.DeepEqual(sk["missing_required"], []any{}) {
		t.Fatalf("readiness = %v / %v", w, sk)
	}
	ops := w["operations"].([]any)
	alert := ops[1].(map[string]any)
	if alert["name"] != "alert" || alert["enabled"] != true || alert["requires_approval"] != false {
		t.Fatalf("alert = %v (naming an operation enables it)", alert)
	}
	skills := p["skills"].(map[string]any)
	want("skills", skills, "allowed", "visible")
	if !reflect.DeepEqual(skills["allowed"], []any{"scheduling"}) {
		t.Fatalf("allowed = %v", skills["allowed"])
	}
	vis := skills["visible"].([]any)
	if len(vis) != 2 {
		t.Fatalf("visible = %v", vis)
	}
	for _, v := range vis {
		m := v.(map[string]any)
		want("visible skill", m, "name", "description", "active")
		if m["active"] != (m["name"] == "scheduling") {
			t.Fatalf("visible = %v", vis)
		}
	}

	// A sibling agent of the same owner is visible; another owner's is not found.
	if d, err := e.svc.AgentDiscovery(ctx, e.caller.ID, e.sib.ID); err != nil || d.Tools[0].Enabled || len(d.Skills.Allowed) != 0 {
		t.Fatalf("sibling discovery = %+v, %v", d, err)
	}
	if _, err := e.svc.AgentDiscovery(ctx, e.caller.ID, e.other.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("other owner's agent: %v", err)
	}
	if _, err := e.svc.AgentDiscovery(ctx, e.caller.ID, 999999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestConfigureAgentToolsRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newAgentEnv(t)
	a := e.caller.ID

	// Rule 3: the write lands at the agent level, above the owner's user layer.
	if _, err := e.svc.PutUserSettings(ctx, e.user, forecast, map[string]any{"city": "Oslo"}); err != nil {
		t.Fatal(err)
	}
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","settings":{"city":"Bergen","units":"imperial","allowed_skills":["scheduling","web-research"]}}]`)
	c := e.config(t, a)
	if got := agentLayer(c, forecast); !reflect.DeepEqual(got, map[string]any{"city": "Bergen", "units": "imperial", "allowed_skills": []any{"scheduling", "web-research"}}) {
		t.Fatalf("agent layer = %v", got)
	}
	if c.User[forecast].Values["city"] != "Oslo" {
		t.Fatalf("user layer changed: %v", c.User[forecast].Values)
	}

	// Rule 2: a key is replaced wholesale; other keys stay.
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","settings":{"allowed_skills":["web-research"]}}]`)
	if got := agentLayer(e.config(t, a), forecast); !reflect.DeepEqual(got, map[string]any{"city": "Bergen", "units": "imperial", "allowed_skills": []any{"web-research"}}) {
		t.Fatalf("after replace: %v", got)
	}

	// Rule 3: null and "" delete the agent-level value; inheritance resumes.
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","settings":{"city":null,"units":""}}]`)
	c = e.config(t, a)
	if got := agentLayer(c, forecast); !reflect.DeepEqual(got, map[string]any{"allowed_skills": []any{"web-research"}}) {
		t.Fatalf("after delete: %v", got)
	}
	states, _ := e.svc.AgentToolStates(ctx, a)
	if eff, _ := tools.Cascade(tools.Spec(weather()), states[forecast].Layers...); eff["city"] != "Oslo" || eff["units"] != "metric" {
		t.Fatalf("effective after delete = %v", eff)
	}

	// Rule 1: omitted keys change nothing.
	before := agentLayer(e.config(t, a), forecast)
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool"}]`)
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","settings":{}}]`)
	c = e.config(t, a)
	if got := agentLayer(c, forecast); !reflect.DeepEqual(got, before) || len(c.Enabled) != 0 || len(c.Operations) != 0 {
		t.Fatalf("omitted keys changed something: %v %v %v", got, c.Enabled, c.Operations)
	}

	// Rule 4: allowed_target_agents takes integer ids of the same owner.
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","settings":{"allowed_target_agents":[`+itoa(e.sib.ID)+`]}}]`)
	if got := agentLayer(e.config(t, a), forecast)["allowed_target_agents"]; !reflect.DeepEqual(got, []any{float64(e.sib.ID)}) {
		t.Fatalf("allowed_target_agents = %v", got)
	}

	// Rule 5: enabled is tri-state; a blank string is absent.
	enabled := func() (bool, bool) { c := e.config(t, a); v, ok := c.Enabled[forecast]; return v, ok }
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","enabled":true}]`)
	if v, ok := enabled(); !v || !ok {
		t.Fatal("enabled:true did not enable")
	}
	for _, blank := range []string{`""`, `"  "`, `null`} {
		e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","enabled":`+blank+`}]`)
		if v, _ := enabled(); !v {
			t.Fatalf("enabled:%s changed the tool", blank)
		}
	}
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","enabled":false}]`)
	if v, ok := enabled(); v || !ok {
		t.Fatal("enabled:false did not disable")
	}

	// Rule 6: naming an operation turns it on; false switches it off; auto_approve is kept
	// when not sent.
	op := func(name string) store.ToolOperationOverride { return e.config(t, a).Operations[forecast][name] }
	ms, err := e.configure(t, a, `[{"tool_class":"weather.ForecastTool","operations":[{"name":"alert","auto_approve":true}]}]`)
	if err != nil {
		t.Fatal(err)
	}
	if o := op("alert"); o.Enabled == nil || !*o.Enabled || o.AutoApprove == nil || !*o.AutoApprove {
		t.Fatalf("alert = %+v", o)
	}
	if len(ms) != 1 || ms[0].ToolClass != forecast || ms[0].Enabled || ms[0].Operations[1] != (toolconfig.ManifestOperation{Name: "alert", Enabled: true}) {
		t.Fatalf("manifest = %+v", ms)
	}
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","operations":[{"name":"alert","enabled":false}]}]`)
	if o := op("alert"); o.Enabled == nil || *o.Enabled || o.AutoApprove == nil || !*o.AutoApprove {
		t.Fatalf("alert after enabled:false = %+v", o)
	}
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","operations":[{"name":"alert"}]}]`)
	if o := op("alert"); o.Enabled == nil || !*o.Enabled {
		t.Fatalf("alert after naming it = %+v", o)
	}
	if o := op("today"); o.Enabled != nil || o.AutoApprove != nil {
		t.Fatalf("an operation not named changed: %+v", o)
	}

	// Rule 7 and the owner rule are in TestConfigureAgentToolsRefusals. A sibling can be
	// configured; the writes land on it only.
	e.mustConfigure(t, e.sib.ID, `[{"tool_class":"core.SkillTool","enabled":true,"settings":{"allowed_skills":["scheduling"]}}]`)
	if c := e.config(t, e.sib.ID); !c.Enabled[toolconfig.SkillToolClass] {
		t.Fatalf("sibling = %+v", c.Enabled)
	}
	if c := e.config(t, a); c.Enabled[toolconfig.SkillToolClass] || c.Agent[toolconfig.SkillToolClass] != nil {
		t.Fatalf("caller changed by a sibling write: %+v", c)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestConfigureAgentToolsRefusals(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t)
	a := e.caller.ID
	e.mustConfigure(t, a, `[{"tool_class":"weather.ForecastTool","enabled":true,"settings":{"city":"Bergen","allowed_skills":["scheduling"]},"operations":[{"name":"alert","auto_approve":false}]}]`)
	before, beforeSib := e.config(t, a), e.config(t, e.sib.ID)

	// Each call starts with a valid entry that would change things, so a partial write shows.
	good := `{"tool_class":"core.SkillTool","enabled":true,"settings":{"allowed_skills":["web-research"]},"operations":[{"name":"read","enabled":false}]}`
	cases := map[string]string{
		"unknown tool class":      `{"tool_class":"nope.Tool","enabled":true}`,
		"unknown setting key":     `{"tool_class":"weather.ForecastTool","settings":{"colour":"red"}}`,
		"password setting":        `{"tool_class":"weather.ForecastTool","settings":{"api_key":"s3cret"}}`,
		"password mask":           `{"tool_class":"weather.ForecastTool","settings":{"api_key":"********"}}`,
		"password delete":         `{"tool_class":"weather.ForecastTool","settings":{"api_key":null}}`,
		"skill outside visible":   `{"tool_class":"weather.ForecastTool","settings":{"allowed_skills":["scheduling","nope"]}}`,
		"skill not a string":      `{"tool_class":"weather.ForecastTool","settings":{"allowed_skills":[3]}}`,
		"skills not a list":       `{"tool_class":"weather.ForecastTool","settings":{"allowed_skills":"scheduling"}}`,
		"target not an integer":   `{"tool_class":"weather.ForecastTool","settings":{"allowed_target_agents":["1"]}}`,
		"target fractional":       `{"tool_class":"weather.ForecastTool","settings":{"allowed_target_agents":[1.5]}}`,
		"target of other owner":   `{"tool_class":"weather.ForecastTool","settings":{"allowed_target_agents":[` + itoa(e.other.ID) + `]}}`,
		"wrong value type":        `{"tool_class":"weather.ForecastTool","settings":{"units":"kelvin"}}`,
		"settings not an object":  `{"tool_class":"weather.ForecastTool","settings":["city"]}`,
		"enabled a word":          `{"tool_class":"weather.ForecastTool","enabled":"yes"}`,
		"enabled a number":        `{"tool_class":"weather.ForecastTool","enabled":1}`,
		"unknown operation":       `{"tool_class":"weather.ForecastTool","operations":[{"name":"hail"}]}`,
		"operation without name":  `{"tool_class":"weather.ForecastTool","operations":[{"enabled":true}]}`,
		"operation enabled blank": `{"tool_class":"weather.ForecastTool","operations":[{"name":"alert","enabled":""}]}`,
		"auto_approve a string":   `{"tool_class":"weather.ForecastTool","operations":[{"name":"alert","auto_approve":"true"}]}`,
		"operations not a list":   `{"tool_class":"weather.ForecastTool","operations":{"name":"alert"}}`,
		"duplicate operation":     `{"tool_class":"weather.ForecastTool","operations":[{"name":"alert"},{"name":"alert","enabled":false}]}`,
		"duplicate tool":          `{"tool_class":"core.SkillTool"}`,
		"missing tool_class":      `{"enabled":true}`,
		"unknown entry key":       `{"tool_class":"weather.ForecastTool","icon":"sun"}`,
		"entry not an object":     `"weather.ForecastTool"`,
	}
	for name, bad := range cases {
		_, err := e.configure(t, a, "["+good+","+bad+"]")
		if !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	var raw any = map[string]any{"tool_class": forecast}
	if _, err := toolconfig.ParseToolEntries(raw); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("tools not a list: %v", err)
	}
	// The owner rule: another owner's agent, or an unknown one, is not found.
	for _, target := range []int64{e.other.ID, 999999} {
		if _, err := e.configure(t, target, "["+good+"]"); !errors.Is(err, svcerr.ErrNotFound) {
			t.Errorf("target %d: err = %v, want ErrNotFound", target, err)
		}
	}
	if after := e.config(t, a); !reflect.DeepEqual(after, before) {
		t.Fatalf("a refused call wrote something:\nbefore %+v\nafter  %+v", before, after)
	}
	if after := e.config(t, e.sib.ID); !reflect.DeepEqual(after, beforeSib) {
		t.Fatalf("sibling changed: %+v", after)
	}
	if c := e.config(t, e.other.ID); len(c.Enabled)+len(c.Agent)+len(c.Operations) != 0 {
		t.Fatalf("other owner's agent changed: %+v", c)
	}
}
