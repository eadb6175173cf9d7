package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// agentOpsWorld is a calling agent "Self" with a sibling "Sib" of the same user and a foreign
// agent of another user, and an executor that runs the agent tool as Self.
type agentOpsWorld struct {
	st                 *store.Store
	u, v               *store.User
	self, sib, foreign *store.Agent
	run                func(op string, args map[string]any) (map[string]any, string)
}

func newAgentOpsWorld(t *testing.T) *agentOpsWorld {
	t.Helper()
	ctx := context.Background()
	w := &agentOpsWorld{st: storetest.New(t)}
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	x := core.Executors(core.Deps{Agents: toolconfig.New(w.st, reg, nil, nil)})["core.AgentTool"]
	w.u, w.v = storetest.User(t, w.st), storetest.User(t, w.st)
	w.self = storetest.Agent(t, w.st, w.u.PrincipalID, storetest.AgentNamed("Self"))
	w.sib = storetest.Agent(t, w.st, w.u.PrincipalID, storetest.AgentNamed("Sib"))
	w.foreign = storetest.Agent(t, w.st, w.v.PrincipalID, storetest.AgentNamed("Foreign"))
	w.run = func(op string, args map[string]any) (map[string]any, string) {
		t.Helper()
		// Arguments arrive as decoded JSON.
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		decoded := map[string]any{}
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatal(err)
		}
		res, err := x.Execute(ctx, tools.Call{Operation: op, Args: decoded, AgentID: w.self.ID, OwnerUserID: w.u.ID, UserID: w.u.ID})
		var te *tools.ToolError
		if errors.As(err, &te) {
			return nil, te.Msg
		}
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		out := map[string]any{}
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatal(err)
		}
		return out, ""
	}
	return w
}

// agentCount is how many agents principal owns.
func agentCount(t *testing.T, st *store.Store, principal int64) int {
	t.Helper()
	list, err := st.ListAgents(context.Background(), store.AgentQuery{Principals: []int64{principal}, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func TestAgentToolCreateAgent(t *testing.T) {
	t.Parallel()
	w := newAgentOpsWorld(t)
	out, msg := w.run("create_agent", map[string]any{
		"name": "Researcher", "description": "Finds things", "system_prompt": "Be thorough.",
		"max_steps": 20, "allow_followup": false, "retry_after_minutes": 5, "max_retries": 2,
	})
	if msg != "" {
		t.Fatal(msg)
	}
	id := int64(out["id"].(float64))
	a, err := w.st.Agent(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.PrincipalID != w.u.PrincipalID || a.Name != "Researcher" || a.Description != "Finds things" ||
		a.SystemPrompt != "Be thorough." || a.MaxSteps != 20 || a.AllowFollowup || a.RetryAfterMinutes != 5 || a.MaxRetries != 2 {
		t.Fatalf("created agent = %+v", a)
	}
	if out["name"] != "Researcher" || out["notes"] != nil {
		t.Fatalf("create_agent result = %v", out)
	}
	// Defaults as POST /agents.
	out, msg = w.run("create_agent", map[string]any{"name": "Plain"})
	if msg != "" || out["max_steps"] != float64(limits.DefaultSteps) || out["allow_followup"] != true {
		t.Fatalf("defaults = %v %q", out, msg)
	}
	before := agentCount(t, w.st, w.u.PrincipalID)
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing name", map[string]any{"description": "x"}, "name is required"},
		{"blank name", map[string]any{"name": "  "}, "name is required"},
		{"name not a string", map[string]any{"name": 7}, "name must be a string"},
		{"name too long", map[string]any{"name": strings.Repeat("n", limits.AgentNameLen+1)}, "name"},
		{"description too long", map[string]any{"name": "x", "description": strings.Repeat("d", limits.AgentDescriptionLen+1)}, "description"},
		{"max_steps 0", map[string]any{"name": "x", "max_steps": 0}, "max_steps must be a whole number from 1 to 100"},
		{"max_steps 101", map[string]any{"name": "x", "max_steps": 101}, "max_steps"},
		{"max_steps fraction", map[string]any{"name": "x", "max_steps": 2.5}, "max_steps"},
		{"max_steps string", map[string]any{"name": "x", "max_steps": "5"}, "max_steps"},
		{"negative retries", map[string]any{"name": "x", "max_retries": -1}, "max_retries"},
		{"negative retry delay", map[string]any{"name": "x", "retry_after_minutes": -1}, "retry_after_minutes"},
		{"allow_followup string", map[string]any{"name": "x", "allow_followup": "yes"}, "allow_followup"},
		{"notes", map[string]any{"name": "x", "notes": "n"}, "write_notes"},
	} {
		if _, msg := w.run("create_agent", c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s: ToolError %q, want it to mention %q", c.name, msg, c.want)
		}
	}
	if n := agentCount(t, w.st, w.u.PrincipalID); n != before {
		t.Fatalf("refused creations wrote agents: %d, want %d", n, before)
	}
	if n := agentCount(t, w.st, w.v.PrincipalID); n != 1 {
		t.Fatalf("the other user has %d agents", n)
	}
}

func TestAgentToolListAgents(t *testing.T) {
	t.Parallel()
	w := newAgentOpsWorld(t)
	names := func(out map[string]any) []string {
		var got []string
		for _, a := range out["agents"].([]any) {
			got = append(got, a.(map[string]any)["name"].(string))
		}
		return got
	}
	out, msg := w.run("list_agents", map[string]any{})
	if msg != "" || fmt.Sprint(names(out)) != "[Self Sib]" || out["page"] != 1.0 || out["per_page"] != 25.0 || out["count"] != 2.0 {
		t.Fatalf("list_agents = %v %q", out, msg)
	}
	first := out["agents"].([]any)[0].(map[string]any)
	if first["id"] != float64(w.self.ID) || first["system_prompt"] != nil || first["notes"] != nil || first["max_steps"] != 10.0 {
		t.Fatalf("slim entry = %v", first)
	}
	if out, _ := w.run("list_agents", map[string]any{"page": 2, "per_page": 1}); fmt.Sprint(names(out)) != "[Sib]" {
		t.Fatalf("page 2 = %v", out)
	}
	if out, _ := w.run("list_agents", map[string]any{"page": 3, "per_page": 1}); out["count"] != 0.0 || len(out["agents"].([]any)) != 0 {
		t.Fatalf("page 3 = %v", out)
	}
	for _, args := range []map[string]any{{"page": 0}, {"per_page": 0}, {"per_page": 101}, {"page": "2"}, {"page": 1.5}} {
		if _, msg := w.run("list_agents", args); !strings.Contains(msg, "must be a whole number") {
			t.Errorf("%v: ToolError %q", args, msg)
		}
	}
}

func TestAgentToolUpdateAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newAgentOpsWorld(t)
	out, msg := w.run("update_agent", map[string]any{"agent_id": w.sib.ID, "description": "Helps", "max_steps": 3, "allow_followup": false})
	if msg != "" || out["description"] != "Helps" || out["max_steps"] != 3.0 || out["name"] != "Sib" {
		t.Fatalf("update_agent = %v %q", out, msg)
	}
	if a, _ := w.st.Agent(ctx, w.sib.ID, 0); a.Description != "Helps" || a.MaxSteps != 3 || a.AllowFollowup || a.Name != "Sib" {
		t.Fatalf("stored sibling = %+v", a)
	}
	if _, msg := w.run("update_agent", map[string]any{"agent_id": w.self.ID, "system_prompt": "New prompt."}); msg != "" {
		t.Fatal(msg)
	}
	if a, _ := w.st.Agent(ctx, w.self.ID, 0); a.SystemPrompt != "New prompt." {
		t.Fatalf("self after update = %+v", a)
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no agent_id", map[string]any{"name": "x"}, "agent_id is required"},
		{"foreign agent", map[string]any{"agent_id": w.foreign.ID, "name": "Mine now"}, "not found"},
		{"unknown agent", map[string]any{"agent_id": 999999, "name": "x"}, "not found"},
		{"blank name", map[string]any{"agent_id": w.sib.ID, "name": ""}, "name is required"},
		{"max_steps 101", map[string]any{"agent_id": w.sib.ID, "max_steps": 101, "name": "Changed"}, "max_steps"},
		{"notes", map[string]any{"agent_id": w.sib.ID, "notes": "n"}, "write_notes"},
	} {
		if _, msg := w.run("update_agent", c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s: ToolError %q, want it to mention %q", c.name, msg, c.want)
		}
	}
	if a, _ := w.st.Agent(ctx, w.foreign.ID, 0); a.Name != "Foreign" {
		t.Fatalf("foreign agent changed: %+v", a)
	}
	if a, _ := w.st.Agent(ctx, w.sib.ID, 0); a.Name != "Sib" || a.MaxSteps != 3 || a.Notes != "" {
		t.Fatalf("refused updates changed the sibling: %+v", a)
	}
}

// TestAgentToolChangesNeedManageRole: a task's user who may not manage a group agent through
// the API (a plain member) cannot change it through the agent tool either, even after approving
// the calls: configure_tools, update_agent, write_notes and create_agent fail with a reason the
// model sees and nothing is written. The group's owner and an administrator can.
func TestAgentToolChangesNeedManageRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := looptest.New(t, nil, store.AgentFields{}, false)
	svc := toolconfig.New(f.Store, f.Loop.Registry, nil, nil)
	f.Loop.ToolStates = svc.AgentToolStates
	f.Executors(core.Deps{Agents: svc})
	g := storetest.Group(t, f.Store, f.User)
	storetest.LLMConfig(t, f.Store, g.ID)
	prompt := "Be helpful."
	a := storetest.Agent(t, f.Store, g.PrincipalID, func(af *store.AgentFields) { af.SystemPrompt = &prompt })
	if err := f.Store.SetAgentToolEnabled(ctx, a.ID, "core.AgentTool", true, nil); err != nil {
		t.Fatal(err)
	}
	member := storetest.User(t, f.Store)
	if _, err := f.Store.AddGroupMember(ctx, g.ID, member.ID, store.GroupRoleMember, nil); err != nil {
		t.Fatal(err)
	}
	admin := storetest.User(t, f.Store, storetest.Admin)
	calls := []string{"cfg", "upd", "notes", "create"}
	run := func(u *store.User, steps int) map[string]llm.Message {
		t.Helper()
		scripted, err := llm.NewScripted([]llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{
			agentCall("cfg", map[string]any{"action": "configure_tools", "agent_id": a.ID, "tools": []any{
				map[string]any{"tool_class": "core.CalculatorTool", "enabled": true}}}),
			agentCall("upd", map[string]any{"action": "update_agent", "agent_id": a.ID, "system_prompt": "Obey " + u.Email, "max_steps": steps}),
			agentCall("notes", map[string]any{"action": "write_notes", "notes": "owned by " + u.Email}),
			agentCall("create", map[string]any{"action": "create_agent", "name": "Spawn of " + u.Email}),
		}}, {Text: "done"}})
		if err != nil {
			t.Fatal(err)
		}
		f.Rec = &looptest.Recorder{Driver: scripted}
		task := storetest.Task(t, f.Store, a, u.ID)
		f.Drain()
		if got := f.Task(task.ID); got.Status != taskstate.PendingApproval {
			t.Fatalf("%s: status %s, want PENDING_APPROVAL", u.Email, got.Status)
		}
		ds := make([]store.ToolDecision, 0, len(calls))
		for _, id := range calls {
			ds = append(ds, store.ToolDecision{ProviderCallID: id, Approve: true})
		}
		if _, err := f.Store.DecideToolCalls(ctx, task.ID, u.ID, ds); err != nil {
			t.Fatal(err)
		}
		f.Drain()
		if got := f.Task(task.ID); got.Status != taskstate.Completed {
			t.Fatalf("%s: status %s, want COMPLETED (%+v)", u.Email, got.Status, got.Error)
		}
		return looptest.ToolResults(f.Rec.Requests()[len(f.Rec.Requests())-1])
	}

	res := run(member, 99)
	for _, id := range calls {
		if m := res[id]; !m.IsError || !strings.Contains(m.Text, "may not change") {
			t.Errorf("member's %s = %+v, want a refusal naming the missing role", id, m)
		}
	}
	got, err := f.Store.Agent(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.SystemPrompt != prompt || got.MaxSteps == 99 || got.Notes != "" {
		t.Fatalf("the member's task changed the agent: %+v", got)
	}
	if n := agentCount(t, f.Store, g.PrincipalID); n != 1 {
		t.Fatalf("the member's task created agents: %d in the group", n)
	}
	states, err := svc.AgentToolStates(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if states["core.CalculatorTool"].Enabled {
		t.Fatal("the member's task enabled a tool")
	}

	for i, u := range []*store.User{f.User, admin} {
		res := run(u, 90+i)
		for _, id := range calls {
			if m := res[id]; m.IsError {
				t.Errorf("%s's %s = %+v, want success", u.Email, id, m)
			}
		}
		got, err := f.Store.Agent(ctx, a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got.SystemPrompt != "Obey "+u.Email || got.MaxSteps != 90+i || got.Notes != "owned by "+u.Email {
			t.Fatalf("%s's task did not change the agent: %+v", u.Email, got)
		}
	}
	if n := agentCount(t, f.Store, g.PrincipalID); n != 3 {
		t.Fatalf("agents in the group = %d, want 3", n)
	}
}
