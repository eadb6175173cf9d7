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

func agentCall(id string, args map[string]any) llm.ScriptToolCall {
	raw, _ := json.Marshal(args)
	return llm.ScriptToolCall{ID: id, Name: "agent", Arguments: raw}
}

// TestAgentToolConfigureThenDiscover: the model configures its own tools (after approval),
// then sees the change in get_available_tools and in the tools it is offered and lists its
// owner's agents; refusals fail visibly.
func TestAgentToolConfigureThenDiscover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := looptest.New(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{
			agentCall("cfg", map[string]any{"action": "configure_tools", "agent_id": 0, "tools": []any{
				map[string]any{"tool_class": "core.TimeTool", "enabled": true, "operations": []any{map[string]any{"name": "format", "enabled": false}}},
			}}),
			agentCall("foreign", map[string]any{"action": "configure_tools", "agent_id": 999999, "tools": []any{
				map[string]any{"tool_class": "core.TimeTool", "enabled": true},
			}}),
			agentCall("bad", map[string]any{"action": "configure_tools", "agent_id": 0, "tools": []any{
				map[string]any{"tool_class": "core.CalculatorTool", "enabled": true},
				map[string]any{"tool_class": "core.SkillTool", "settings": map[string]any{"allowed_skills": []any{"nope"}}},
			}}),
		}},
		{ToolCalls: []llm.ScriptToolCall{
			agentCall("disc", map[string]any{"action": "get_available_tools"}),
			agentCall("list", map[string]any{"action": "list_agents"}),
		}},
		{Text: "done"},
	}, store.AgentFields{}, true)
	// The fixture's agent id is only known now: point the configure calls at it.
	svc := toolconfig.New(f.Store, f.Loop.Registry, nil, nil)
	f.Loop.ToolStates = svc.AgentToolStates
	f.Executors(core.Deps{Agents: svc})
	if err := f.Store.SetAgentToolEnabled(ctx, f.Agent.ID, "core.AgentTool", true, nil); err != nil {
		t.Fatal(err)
	}

	task := f.NewTask("set yourself up", 10)
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL (configure_tools needs approval)", got.Status)
	}
	self := float64(f.Agent.ID)
	if _, err := f.Store.DecideToolCalls(ctx, task.ID, f.User.ID, []store.ToolDecision{
		{ProviderCallID: "cfg", Approve: true, Arguments: map[string]any{"action": "configure_tools", "agent_id": self, "tools": []any{
			map[string]any{"tool_class": "core.TimeTool", "enabled": true, "operations": []any{map[string]any{"name": "format", "enabled": false}}},
		}}},
		{ProviderCallID: "foreign", Approve: true},
		{ProviderCallID: "bad", Approve: true, Arguments: map[string]any{"action": "configure_tools", "agent_id": self, "tools": []any{
			map[string]any{"tool_class": "core.CalculatorTool", "enabled": true},
			map[string]any{"tool_class": "core.SkillTool", "settings": map[string]any{"allowed_skills": []any{"nope"}}},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	got := f.Task(task.ID)
	if got.Status != taskstate.Completed {
		t.Fatalf("status %s, want COMPLETED (%+v)", got.Status, got.Error)
	}
	if len(f.Rec.Requests()) != 3 {
		t.Fatalf("model turns = %d", len(f.Rec.Requests()))
	}
	res := looptest.ToolResults(f.Rec.Requests()[2])
	if m := res["cfg"]; m.IsError || !strings.Contains(m.Text, `"tool_class":"core.TimeTool"`) {
		t.Fatalf("configure result = %+v", m)
	}
	if m := res["foreign"]; !m.IsError || !strings.Contains(m.Text, "999999") {
		t.Fatalf("foreign configure = %+v", m)
	}
	if m := res["bad"]; !m.IsError || !strings.Contains(m.Text, "nope") {
		t.Fatalf("bad configure = %+v", m)
	}
	if m := res["list"]; m.IsError || !strings.Contains(m.Text, fmt.Sprintf(`"id":%d`, f.Agent.ID)) {
		t.Fatalf("list_agents = %+v", m)
	}
	var d tools.Discovery
	if m := res["disc"]; m.IsError || json.Unmarshal([]byte(m.Text), &d) != nil {
		t.Fatalf("discovery = %+v", m)
	}
	for _, tl := range d.Tools {
		switch tl.ToolClass {
		case "core.TimeTool":
			if !tl.Enabled || tl.Operations[0].Name != "now" || !tl.Operations[0].Enabled || tl.Operations[1].Enabled {
				t.Fatalf("time tool = %+v", tl)
			}
		case "core.CalculatorTool":
			if tl.Enabled {
				t.Fatal("the refused call enabled the calculator")
			}
		}
	}
	if d.Version != 2 || d.Count != len(d.Tools) {
		t.Fatalf("discovery = %+v", d)
	}
	offered := map[string]bool{}
	for _, td := range f.Rec.Requests()[2].Tools {
		offered[td.Name] = true
	}
	if !offered["time"] || offered["calculator"] || !offered["agent"] {
		t.Fatalf("tools offered after configure: %v", offered)
	}
}

func TestAgentToolNotesAndReadAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	x := core.Executors(core.Deps{Agents: toolconfig.New(st, reg, nil, nil)})["core.AgentTool"]
	u, v := storetest.User(t, st), storetest.User(t, st)
	self := storetest.Agent(t, st, u.PrincipalID, storetest.AgentNamed("Self"))
	sib := storetest.Agent(t, st, u.PrincipalID, storetest.AgentNamed("Sib"))
	foreign := storetest.Agent(t, st, v.PrincipalID, storetest.AgentNamed("Foreign"))
	run := func(op string, args map[string]any) (map[string]any, string) {
		t.Helper()
		res, err := x.Execute(ctx, tools.Call{Operation: op, Args: args, AgentID: self.ID, OwnerUserID: u.ID, UserID: u.ID})
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
	if out, msg := run("read_notes", map[string]any{}); msg != "" || out["notes"] != "" || out["agent_id"] != float64(self.ID) {
		t.Fatalf("read_notes = %v %q", out, msg)
	}
	if _, msg := run("write_notes", map[string]any{"agent_id": float64(sib.ID), "notes": "remember"}); msg != "" {
		t.Fatal(msg)
	}
	if out, _ := run("read_notes", map[string]any{"agent_id": float64(sib.ID)}); out["notes"] != "remember" {
		t.Fatalf("sibling notes = %v", out)
	}
	if out, msg := run("read_agent", map[string]any{"agent_id": float64(sib.ID)}); msg != "" || out["name"] != "Sib" || out["notes"] != nil {
		t.Fatalf("read_agent = %v %q", out, msg)
	}
	for _, c := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"read_agent", map[string]any{}, "agent_id is required"},
		{"read_agent", map[string]any{"agent_id": float64(foreign.ID)}, "not found"},
		{"read_notes", map[string]any{"agent_id": 1.5}, "positive integer"},
		{"write_notes", map[string]any{"agent_id": float64(foreign.ID), "notes": "x"}, "not found"},
		{"write_notes", map[string]any{"notes": 3}, "must be a string"},
		{"write_notes", map[string]any{"notes": strings.Repeat("n", limits.AgentNotesLen+1)}, "notes"},
		{"configure_tools", map[string]any{"agent_id": float64(self.ID), "tools": "all"}, "list"},
		{"delete_agent", map[string]any{"agent_id": float64(self.ID)}, "no operation"},
	} {
		if _, msg := run(c.op, c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: ToolError %q, want it to mention %q", c.op, c.args, msg, c.want)
		}
	}
	if a, _ := st.Agent(ctx, foreign.ID, 0); a.Notes != "" {
		t.Fatalf("foreign notes written: %q", a.Notes)
	}
	if a, _ := st.Agent(ctx, self.ID, 0); a.Notes != "" {
		t.Fatalf("self notes written by a refused call: %q", a.Notes)
	}
}
