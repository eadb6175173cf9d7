package server_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// toolCast is one service (weatherTool registered) with: an administrator (root); owner with two
// personal agents (mine, sibling); a group "team" owned by owner, with gadmin as admin and
// member as member, owning the agent shared; a stranger with a personal agent (theirs).
type toolCast struct {
	env                                   *apitest.Env
	root, owner, gadmin, member, stranger *apitest.Client
	ownerU                                gen.User
	team                                  gen.Group
	mine, sibling, shared, theirs         gen.Agent
}

func newToolCast(t *testing.T) *toolCast {
	t.Helper()
	c := &toolCast{env: toolsEnv(t)}
	c.root, _ = c.env.UserClient("root@example.com")
	c.owner, c.ownerU = c.env.UserClient("owner@example.com")
	var gadminU, memberU gen.User
	c.gadmin, gadminU = c.env.UserClient("gadmin@example.com")
	c.member, memberU = c.env.UserClient("member@example.com")
	c.stranger, _ = c.env.UserClient("stranger@example.com")
	c.team = toolGroup(t, c.owner, "Team", map[int64]string{gadminU.Id: "admin", memberU.Id: "member"})
	c.mine = toolAgent(t, c.owner, map[string]any{"name": "Mine"})
	c.sibling = toolAgent(t, c.owner, map[string]any{"name": "Sibling"})
	c.shared = toolAgent(t, c.owner, map[string]any{"name": "Shared", "principal_id": c.team.PrincipalId})
	c.theirs = toolAgent(t, c.stranger, map[string]any{"name": "Theirs"})
	return c
}

func toolAgent(t *testing.T, c *apitest.Client, body map[string]any) gen.Agent {
	t.Helper()
	var r gen.AgentResponse
	c.Post("/agents", body).Expect(t, 201).Decode(t, &r)
	return r.Data.Agent
}

func agentTools(a gen.Agent) string { return fmt.Sprintf("/agents/%d/tools", a.Id) }

func toolStatus(t *testing.T, c *apitest.Client, a gen.Agent, class string) gen.AgentToolStatus {
	t.Helper()
	var r gen.AgentToolStatusResponse
	c.Get(agentTools(a)+"/"+class+"/status").Expect(t, 200).Decode(t, &r)
	return r.Data.Tool
}

func toolStatuses(t *testing.T, c *apitest.Client, a gen.Agent) map[string]gen.AgentToolStatus {
	t.Helper()
	var r gen.AgentToolStatusListResponse
	c.Get(agentTools(a)+"/status").Expect(t, 200).Decode(t, &r)
	out := map[string]gen.AgentToolStatus{}
	var classes []string
	for _, s := range r.Data.Tools {
		out[s.ToolClass] = s
		classes = append(classes, s.ToolClass)
	}
	if !sortedStrings(classes) {
		t.Fatalf("statuses not ordered by class: %v", classes)
	}
	return out
}

func toolOp(t *testing.T, c *apitest.Client, a gen.Agent, class, op string) gen.AgentToolOperation {
	t.Helper()
	var r gen.AgentToolOperationResponse
	c.Get(fmt.Sprintf("%s/%s/operations/%s", agentTools(a), class, op)).Expect(t, 200).Decode(t, &r)
	return r.Data.Operation
}

func toolOverride(t *testing.T, r *apitest.Response) gen.AgentToolOverride {
	t.Helper()
	var out gen.AgentToolOverrideResponse
	r.Decode(t, &out)
	return out.Data.Override
}

func TestAgentToolStatus(t *testing.T) {
	t.Parallel()
	c := newToolCast(t)
	all := toolStatuses(t, c.owner, c.mine)
	if len(all) != len(c.env.App.Tools.Specs()) {
		t.Fatalf("%d statuses for %d tools", len(all), len(c.env.App.Tools.Specs()))
	}
	for class, s := range all {
		if s.Enabled {
			t.Errorf("%s enabled on a fresh agent", class)
		}
	}
	w := all[weatherClass]
	wantOps := []gen.AgentToolStatusOperation{
		{Name: "today", Description: "Today's weather.", Enabled: true, RequiresApproval: false},
		{Name: "alert", Description: "Send an alert.", Enabled: false, RequiresApproval: true},
	}
	if w.ReadyToEnable || !reflect.DeepEqual(w.MissingRequired, []string{"api_key"}) || w.Icon != "puzzle" ||
		w.PluginSlug == nil || *w.PluginSlug != "weather" || w.DisplayName != "ForecastTool" || !reflect.DeepEqual(w.Operations, wantOps) {
		t.Fatalf("weather status = %+v", w)
	}
	if s := all["core.ReadURLTool"]; s.PluginSlug != nil || !s.ReadyToEnable || s.MissingRequired == nil || len(s.MissingRequired) != 0 {
		t.Fatalf("read_url status = %+v", s)
	}

	// Who may read: anyone who sees the agent.
	toolStatuses(t, c.member, c.shared)
	toolStatuses(t, c.root, c.mine)
	c.stranger.Get(agentTools(c.mine)+"/status").Expect(t, 404, "NOT_FOUND")
	c.member.Get(agentTools(c.mine)+"/status").Expect(t, 404, "NOT_FOUND")
	c.stranger.Get(agentTools(c.mine)+"/core.TimeTool/status").Expect(t, 404, "NOT_FOUND")
	for _, id := range []string{"999999", "abc", "0", "-1", "01"} {
		c.owner.Get("/agents/"+id+"/tools/status").Expect(t, 404, "NOT_FOUND")
		c.owner.Get("/agents/"+id+"/tools/core.TimeTool/status").Expect(t, 404, "NOT_FOUND")
	}
	c.owner.Get(agentTools(c.mine)+"/core.NoSuchTool/status").Expect(t, 404, "NOT_FOUND")
	c.env.Client().Get(agentTools(c.mine)+"/status").Expect(t, 401, "UNAUTHENTICATED")

	// Enabling needs the manage right; missing settings do not stop it.
	enable := agentTools(c.mine) + "/" + weatherClass + "/enable"
	c.stranger.Post(enable, nil).Expect(t, 404, "NOT_FOUND")
	c.member.Post(agentTools(c.shared)+"/core.TimeTool/enable", nil).Expect(t, 403, "FORBIDDEN")
	c.owner.Post(agentTools(c.mine)+"/core.NoSuchTool/enable", nil).Expect(t, 404, "NOT_FOUND")
	c.owner.Post("/agents/999999/tools/core.TimeTool/enable", nil).Expect(t, 404, "NOT_FOUND")
	c.owner.Do(apitest.Request{Method: "POST", Path: enable, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
	if toolStatus(t, c.owner, c.mine, weatherClass).Enabled || toolStatus(t, c.gadmin, c.shared, "core.TimeTool").Enabled {
		t.Fatal("refused enables wrote")
	}
	for i := 0; i < 2; i++ { // idempotent
		var r gen.AgentToolStatusResponse
		c.owner.Post(enable, nil).Expect(t, 200).Decode(t, &r)
		if !r.Data.Tool.Enabled || r.Data.Tool.ReadyToEnable || !reflect.DeepEqual(r.Data.Tool.MissingRequired, []string{"api_key"}) {
			t.Fatalf("enabled status = %+v", r.Data.Tool)
		}
	}
	c.gadmin.Post(agentTools(c.shared)+"/core.TimeTool/enable", nil).Expect(t, 200)
	c.root.Post(agentTools(c.theirs)+"/core.TimeTool/enable", nil).Expect(t, 200)

	// A global secret makes the tool ready everywhere.
	c.root.Put("/tools/"+weatherClass+"/settings", map[string]any{"settings": map[string]any{"api_key": "sk-1"}}).Expect(t, 200)
	if s := toolStatus(t, c.owner, c.mine, weatherClass); !s.ReadyToEnable || len(s.MissingRequired) != 0 {
		t.Fatalf("after the global secret: %+v", s)
	}

	// Disabling keeps operation overrides and settings; enabling again restores them.
	opPath := agentTools(c.mine) + "/" + weatherClass + "/operations/alert"
	c.owner.Patch(opPath, map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200)
	c.owner.Put(agentTools(c.mine)+"/"+weatherClass+"/override", map[string]any{"settings": map[string]any{"city": "Oslo"}}).Expect(t, 200)
	c.member.Delete(agentTools(c.shared)+"/core.TimeTool/enable").Expect(t, 403, "FORBIDDEN")
	c.stranger.Delete(enable).Expect(t, 404, "NOT_FOUND")
	c.owner.Delete(agentTools(c.mine)+"/core.NoSuchTool/enable").Expect(t, 404, "NOT_FOUND")
	c.owner.Delete(enable).Expect(t, 200)
	c.owner.Delete(enable).Expect(t, 200)
	if s := toolStatus(t, c.owner, c.mine, weatherClass); s.Enabled || !s.Operations[1].Enabled || s.Operations[1].RequiresApproval {
		t.Fatalf("disabled status = %+v", s)
	}
	c.owner.Post(enable, nil).Expect(t, 200)
	if o := toolOverride(t, c.owner.Get(agentTools(c.mine)+"/"+weatherClass+"/override").Expect(t, 200)); o.Settings["city"] != "Oslo" {
		t.Fatalf("settings lost across disable: %+v", o)
	}

	// A group's entry enables the tool for its agents; the agent's own choice wins.
	c.owner.Post(fmt.Sprintf("/groups/%d/tools/core.CalculatorTool", c.team.Id), map[string]any{}).Expect(t, 200)
	if !toolStatus(t, c.member, c.shared, "core.CalculatorTool").Enabled || toolStatus(t, c.owner, c.mine, "core.CalculatorTool").Enabled {
		t.Fatal("the group entry does not decide for the group's agents only")
	}
	c.gadmin.Delete(agentTools(c.shared)+"/core.CalculatorTool/enable").Expect(t, 200)
	if toolStatus(t, c.member, c.shared, "core.CalculatorTool").Enabled {
		t.Fatal("the agent's disable lost to the group entry")
	}
	c.owner.Post(fmt.Sprintf("/groups/%d/tools/core.MediaTool", c.team.Id), map[string]any{"enabled": false}).Expect(t, 200)
	if toolStatus(t, c.member, c.shared, "core.MediaTool").Enabled {
		t.Fatal("a disabled group entry enabled the tool")
	}
}

func TestAgentToolOperations(t *testing.T) {
	t.Parallel()
	c := newToolCast(t)
	base := agentTools(c.mine) + "/" + weatherClass + "/operations/"

	o := toolOp(t, c.owner, c.mine, weatherClass, "alert")
	want := gen.AgentToolOperation{
		ToolClass: weatherClass, Operation: "alert", Description: "Send an alert.", ToolEnabled: false,
		EnabledByDefault: false, RequiresApprovalByDefault: true, EffectiveEnabled: false, RequiresApproval: true,
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("fresh operation = %+v", o)
	}
	c.owner.Get(base+"nope").Expect(t, 404, "NOT_FOUND")
	c.owner.Get(agentTools(c.mine)+"/core.NoSuchTool/operations/alert").Expect(t, 404, "NOT_FOUND")
	c.owner.Get(agentTools(c.mine)+"/core.TimeTool/operations/alert").Expect(t, 404, "NOT_FOUND") // another tool's
	c.stranger.Get(base+"alert").Expect(t, 404, "NOT_FOUND")
	toolOp(t, c.member, c.shared, "core.TimeTool", "now")
	c.owner.Get(base+strings.Repeat("o", 101)).Expect(t, 422, "VALIDATION_ERROR")

	// Set both overrides.
	var r gen.AgentToolOperationResponse
	c.owner.Patch(base+"alert", map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200).Decode(t, &r)
	got := r.Data.Operation
	if got.Enabled == nil || !*got.Enabled || got.AutoApprove == nil || !*got.AutoApprove || !got.EffectiveEnabled || got.RequiresApproval {
		t.Fatalf("after setting = %+v", got)
	}
	// false overrides too, and null gives a key back to the default.
	r = gen.AgentToolOperationResponse{}
	c.owner.Patch(base+"today", map[string]any{"enabled": false, "auto_approve": false}).Expect(t, 200).Decode(t, &r)
	if got := r.Data.Operation; got.EffectiveEnabled || !got.RequiresApproval {
		t.Fatalf("today = %+v", got)
	}
	r = gen.AgentToolOperationResponse{}
	c.owner.Patch(base+"today", map[string]any{"enabled": nil, "auto_approve": false}).Expect(t, 200).Decode(t, &r)
	if got := r.Data.Operation; got.Enabled != nil || !got.EffectiveEnabled || got.AutoApprove == nil || !got.RequiresApproval {
		t.Fatalf("today after null = %+v", got)
	}

	// Refusals change nothing.
	for name, tc := range map[string]struct {
		cl     *apitest.Client
		path   string
		body   any
		status int
		code   string
	}{
		"missing key":    {c.owner, base + "alert", map[string]any{"enabled": false}, 422, "VALIDATION_ERROR"},
		"empty body":     {c.owner, base + "alert", map[string]any{}, 422, "VALIDATION_ERROR"},
		"wrong type":     {c.owner, base + "alert", map[string]any{"enabled": "no", "auto_approve": nil}, 422, "VALIDATION_ERROR"},
		"extra key":      {c.owner, base + "alert", map[string]any{"enabled": false, "auto_approve": nil, "x": 1}, 422, "VALIDATION_ERROR"},
		"not JSON":       {c.owner, base + "alert", "{", 400, "BAD_REQUEST"},
		"unknown op":     {c.owner, base + "nope", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
		"unknown class":  {c.owner, agentTools(c.mine) + "/core.NoSuchTool/operations/alert", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
		"invisible":      {c.stranger, base + "alert", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
		"plain member":   {c.member, agentTools(c.shared) + "/core.TimeTool/operations/now", map[string]any{"enabled": false, "auto_approve": nil}, 403, "FORBIDDEN"},
		"unknown agent":  {c.owner, "/agents/999999/tools/core.TimeTool/operations/now", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
		"agent id text":  {c.owner, "/agents/abc/tools/core.TimeTool/operations/now", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
		"unknown op 404": {c.owner, base + "Alert", map[string]any{"enabled": false, "auto_approve": nil}, 404, "NOT_FOUND"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cl.Patch(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if got := toolOp(t, c.owner, c.mine, weatherClass, "alert"); got.Enabled == nil || !*got.Enabled || got.AutoApprove == nil || !*got.AutoApprove {
		t.Fatalf("refused patches changed alert: %+v", got)
	}
	if got := toolOp(t, c.member, c.shared, "core.TimeTool", "now"); got.Enabled != nil || got.AutoApprove != nil {
		t.Fatalf("refused patch changed the group agent: %+v", got)
	}

	// The list covers every operation of every tool in order, with the overrides.
	var l gen.AgentToolOperationListResponse
	c.member.Get(agentTools(c.shared)+"/operations").Expect(t, 200) // members may read
	c.owner.Get(agentTools(c.mine)+"/operations").Expect(t, 200).Decode(t, &l)
	n := 0
	for _, spec := range c.env.App.Tools.Specs() {
		for _, op := range spec.Operations {
			if n >= len(l.Data.Operations) || l.Data.Operations[n].ToolClass != spec.Class || l.Data.Operations[n].Operation != op.Name {
				t.Fatalf("operation %d: %+v, want %s.%s", n, l.Data.Operations[n], spec.Class, op.Name)
			}
			n++
		}
	}
	if n != len(l.Data.Operations) {
		t.Fatalf("%d operations listed, want %d", len(l.Data.Operations), n)
	}
	for _, o := range l.Data.Operations {
		if o.ToolClass == weatherClass && o.Operation == "alert" && (!o.EffectiveEnabled || o.RequiresApproval) {
			t.Fatalf("listed alert = %+v", o)
		}
	}
	c.stranger.Get(agentTools(c.mine)+"/operations").Expect(t, 404, "NOT_FOUND")

	// Both null removes the override; the status follows the overrides and the tool's enablement.
	c.owner.Patch(base+"alert", map[string]any{"enabled": nil, "auto_approve": nil}).Expect(t, 200)
	if got := toolOp(t, c.owner, c.mine, weatherClass, "alert"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after removing = %+v", got)
	}
	c.owner.Post(agentTools(c.mine)+"/"+weatherClass+"/enable", nil).Expect(t, 200)
	if got := toolOp(t, c.owner, c.mine, weatherClass, "today"); !got.ToolEnabled || !got.RequiresApproval {
		t.Fatalf("today with the tool enabled = %+v", got)
	}
}

func TestAgentToolOverride(t *testing.T) {
	t.Parallel()
	c := newToolCast(t)
	wpath := agentTools(c.mine) + "/" + weatherClass + "/override"
	const secret = "sk-agent-override-9999"

	o := toolOverride(t, c.owner.Get(wpath).Expect(t, 200))
	if o.ToolClass != weatherClass || len(o.Settings) != 0 || o.UpdatedAt != nil {
		t.Fatalf("empty override = %+v", o)
	}
	// Reading needs the manage right.
	c.member.Get(agentTools(c.shared)+"/"+weatherClass+"/override").Expect(t, 403, "FORBIDDEN")
	c.gadmin.Get(agentTools(c.shared)+"/"+weatherClass+"/override").Expect(t, 200)
	c.stranger.Get(wpath).Expect(t, 404, "NOT_FOUND")
	c.owner.Get(agentTools(c.mine)+"/core.NoSuchTool/override").Expect(t, 404, "NOT_FOUND")
	c.root.Get(wpath).Expect(t, 200)

	// Replace: the secret is sealed and masked.
	o = toolOverride(t, noSecret(t, c.owner.Put(wpath, map[string]any{"settings": map[string]any{"api_key": secret, "city": "Oslo", "days": 2}}).Expect(t, 200), secret))
	if !reflect.DeepEqual(o.Settings, map[string]any{"api_key": tools.Mask, "city": "Oslo", "days": float64(2)}) || o.UpdatedAt == nil {
		t.Fatalf("override = %+v", o)
	}
	raw := storedLayer(t, c.env, store.AgentToolScope(c.mine.Id), weatherClass)
	if strings.Contains(raw, secret) || !strings.Contains(raw, `"api_key":"v1:`) {
		t.Fatalf("stored override = %s", raw)
	}
	noSecret(t, c.owner.Get(wpath).Expect(t, 200), secret)
	noSecret(t, c.owner.Get(agentTools(c.mine)+"/status").Expect(t, 200), secret)
	noSecret(t, c.owner.Get(agentTools(c.mine)+"/"+weatherClass+"/status").Expect(t, 200), secret)
	noSecret(t, c.owner.Post(agentTools(c.mine)+"/"+weatherClass+"/enable", nil).Expect(t, 200), secret)
	if s := toolStatus(t, c.owner, c.mine, weatherClass); !s.ReadyToEnable {
		t.Fatalf("the agent's secret does not count: %+v", s)
	}

	// A replacement: keys left out go, the mask keeps the secret.
	o = toolOverride(t, c.owner.Put(wpath, map[string]any{"settings": map[string]any{"api_key": tools.Mask, "units": "imperial", "city": ""}}).Expect(t, 200))
	if !reflect.DeepEqual(o.Settings, map[string]any{"api_key": tools.Mask, "units": "imperial"}) {
		t.Fatalf("replaced override = %+v", o)
	}
	if !strings.Contains(storedLayer(t, c.env, store.AgentToolScope(c.mine.Id), weatherClass), rawSealed(t, raw)) {
		t.Fatal("the mask replaced the stored secret")
	}

	// Whole-call refusals.
	before := storedLayer(t, c.env, store.AgentToolScope(c.mine.Id), weatherClass)
	sub := agentTools(c.mine) + "/core.SubAgentTool/override"
	skills := agentTools(c.mine) + "/core.SkillTool/override"
	for name, tc := range map[string]struct {
		cl     *apitest.Client
		path   string
		body   any
		status int
		code   string
	}{
		"unknown key":        {c.owner, wpath, map[string]any{"settings": map[string]any{"units": "metric", "colour": "red"}}, 422, "VALIDATION_ERROR"},
		"wrong type":         {c.owner, wpath, map[string]any{"settings": map[string]any{"units": "metric", "days": true}}, 422, "VALIDATION_ERROR"},
		"settings missing":   {c.owner, wpath, map[string]any{}, 422, "VALIDATION_ERROR"},
		"extra field":        {c.owner, wpath, map[string]any{"settings": map[string]any{}, "enabled": true}, 422, "VALIDATION_ERROR"},
		"not JSON":           {c.owner, wpath, "[", 400, "BAD_REQUEST"},
		"foreign target":     {c.owner, sub, map[string]any{"settings": map[string]any{"allowed_target_agents": []any{c.sibling.Id, c.theirs.Id}}}, 422, "VALIDATION_ERROR"},
		"group target":       {c.owner, sub, map[string]any{"settings": map[string]any{"allowed_target_agents": []any{c.shared.Id}}}, 422, "VALIDATION_ERROR"},
		"missing target":     {c.owner, sub, map[string]any{"settings": map[string]any{"allowed_target_agents": []any{999999}}}, 422, "VALIDATION_ERROR"},
		"target not integer": {c.owner, sub, map[string]any{"settings": map[string]any{"allowed_target_agents": []any{"x"}}}, 422, "VALIDATION_ERROR"},
		"unknown skill":      {c.owner, skills, map[string]any{"settings": map[string]any{"allowed_skills": []any{"web-research", "no-such-skill"}}}, 422, "VALIDATION_ERROR"},
		"skill not a string": {c.owner, skills, map[string]any{"settings": map[string]any{"allowed_skills": []any{1}}}, 422, "VALIDATION_ERROR"},
		"plain member":       {c.member, agentTools(c.shared) + "/" + weatherClass + "/override", map[string]any{"settings": map[string]any{"city": "X"}}, 403, "FORBIDDEN"},
		"member, bad body":   {c.member, agentTools(c.shared) + "/" + weatherClass + "/override", map[string]any{"settings": map[string]any{"colour": "X"}}, 403, "FORBIDDEN"},
		"invisible":          {c.stranger, wpath, map[string]any{"settings": map[string]any{"city": "X"}}, 404, "NOT_FOUND"},
		"unknown class":      {c.owner, agentTools(c.mine) + "/core.NoSuchTool/override", map[string]any{"settings": map[string]any{}}, 404, "NOT_FOUND"},
		"unknown agent":      {c.owner, "/agents/999999/tools/" + weatherClass + "/override", map[string]any{"settings": map[string]any{}}, 404, "NOT_FOUND"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cl.Put(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if after := storedLayer(t, c.env, store.AgentToolScope(c.mine.Id), weatherClass); after != before {
		t.Fatalf("refused writes changed the override: %s → %s", before, after)
	}
	for _, class := range []string{"core.SubAgentTool", "core.SkillTool"} {
		if s := storedLayer(t, c.env, store.AgentToolScope(c.mine.Id), class); s != "{}" {
			t.Fatalf("refused writes stored %s for %s", s, class)
		}
	}
	if s := storedLayer(t, c.env, store.AgentToolScope(c.shared.Id), weatherClass); s != "{}" {
		t.Fatalf("a member wrote %s", s)
	}

	// The same-owner and visible-skill rules accept what they should.
	o = toolOverride(t, c.owner.Put(sub, map[string]any{"settings": map[string]any{"allowed_target_agents": []any{c.sibling.Id}}}).Expect(t, 200))
	if !reflect.DeepEqual(o.Settings, map[string]any{"allowed_target_agents": []any{float64(c.sibling.Id)}}) {
		t.Fatalf("targets = %+v", o.Settings)
	}
	if s := toolStatus(t, c.owner, c.mine, "core.SubAgentTool"); !s.ReadyToEnable {
		t.Fatalf("sub_agent with targets = %+v", s)
	}
	c.gadmin.Put(agentTools(c.shared)+"/core.SubAgentTool/override", map[string]any{"settings": map[string]any{"allowed_target_agents": []any{c.shared.Id}}}).Expect(t, 200)
	c.owner.Put(skills, map[string]any{"settings": map[string]any{"allowed_skills": []any{"web-research", "scheduling"}}}).Expect(t, 200)

	// Delete: manage right; idempotent; enablement and operation overrides stay.
	c.owner.Patch(agentTools(c.mine)+"/"+weatherClass+"/operations/alert", map[string]any{"enabled": true, "auto_approve": nil}).Expect(t, 200)
	c.member.Delete(agentTools(c.shared)+"/core.SubAgentTool/override").Expect(t, 403, "FORBIDDEN")
	c.stranger.Delete(wpath).Expect(t, 404, "NOT_FOUND")
	c.owner.Delete(agentTools(c.mine)+"/core.NoSuchTool/override").Expect(t, 404, "NOT_FOUND")
	c.owner.Delete(wpath).Expect(t, 200)
	c.owner.Delete(wpath).Expect(t, 200)
	if o := toolOverride(t, c.owner.Get(wpath).Expect(t, 200)); len(o.Settings) != 0 || o.UpdatedAt != nil {
		t.Fatalf("after delete = %+v", o)
	}
	s := toolStatus(t, c.owner, c.mine, weatherClass)
	if !s.Enabled || !s.Operations[1].Enabled || s.ReadyToEnable {
		t.Fatalf("status after deleting the override = %+v", s)
	}
	if s := storedLayer(t, c.env, store.AgentToolScope(c.shared.Id), "core.SubAgentTool"); s == "{}" {
		t.Fatal("a refused delete removed the group agent's override")
	}
}

func TestAgentToolCascade(t *testing.T) {
	t.Parallel()
	c := newToolCast(t)
	missing := func(cl *apitest.Client, a gen.Agent) []string {
		return toolStatus(t, cl, a, weatherClass).MissingRequired
	}
	if m := missing(c.owner, c.mine); !reflect.DeepEqual(m, []string{"api_key"}) {
		t.Fatalf("fresh: %v", m)
	}
	// The owner's user layer counts for the owner's personal agents, whoever looks.
	c.owner.Put("/tools/"+weatherClass+"/user-settings", map[string]any{"settings": map[string]any{"api_key": "sk-owner"}}).Expect(t, 200)
	if m := missing(c.root, c.mine); len(m) != 0 {
		t.Fatalf("owner's user layer ignored: %v", m)
	}
	// A group's agent has no user layer: neither its creator's nor the viewer's.
	c.gadmin.Put("/tools/"+weatherClass+"/user-settings", map[string]any{"settings": map[string]any{"api_key": "sk-gadmin"}}).Expect(t, 200)
	for _, cl := range []*apitest.Client{c.owner, c.gadmin, c.member} {
		if m := missing(cl, c.shared); !reflect.DeepEqual(m, []string{"api_key"}) {
			t.Fatalf("a user layer reached the group's agent: %v", m)
		}
	}
	// The group layer does, and only for the group's agents.
	c.owner.Post(fmt.Sprintf("/groups/%d/tools/%s", c.team.Id, weatherClass), map[string]any{"enabled": false, "settings": map[string]any{"api_key": "sk-team"}}).Expect(t, 200)
	if m := missing(c.member, c.shared); len(m) != 0 {
		t.Fatalf("group layer ignored: %v", m)
	}
	if m := missing(c.stranger, c.theirs); !reflect.DeepEqual(m, []string{"api_key"}) {
		t.Fatalf("group layer reached another agent: %v", m)
	}
	// Deleting the user layer brings the requirement back for the personal agent.
	c.owner.Delete("/tools/"+weatherClass+"/user-settings").Expect(t, 200)
	if m := missing(c.owner, c.mine); !reflect.DeepEqual(m, []string{"api_key"}) {
		t.Fatalf("after deleting the user layer: %v", m)
	}
}
