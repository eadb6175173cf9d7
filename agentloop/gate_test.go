package agentloop_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

func rawCall(id, name string, args map[string]any) llm.ScriptToolCall {
	b, _ := json.Marshal(args)
	return llm.ScriptToolCall{ID: id, Name: name, Arguments: b}
}

// TestUnresolvableCallRefusedBeforeApproval is issue 26 item 5: a call whose operation is
// missing or unknown (or whose tool is unknown or off) never passes the approval gate as
// approved: it is refused before approval, the model is told why, nothing runs, and the event
// log shows a refusal.
func TestUnresolvableCallRefusedBeforeApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{
			rawCall("c1", "time", map[string]any{}),
			rawCall("c2", "time", map[string]any{"action": "explode"}),
			rawCall("c3", "no_such_tool", map[string]any{}),
			rawCall("c4", "read_url", map[string]any{"url": "https://example.com"}),
		}},
		{Text: "sorry"},
	}, store.AgentFields{}, true)
	f.States["core.TimeTool"] = tools.ToolState{Enabled: true}
	tk := f.NewTask("what time is it", 10)
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.Completed {
		t.Fatalf("status %s, want COMPLETED (the refusals go back to the model)", got.Status)
	}
	ctx := context.Background()
	calls, err := f.Store.ToolCalls(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c1": `missing argument "action"`, "c2": `unknown operation "explode"`,
		"c3": `no tool named "no_such_tool"`, "c4": "not enabled"}
	for _, c := range calls {
		if c.Status != store.ToolCallRejected || c.ExecutedAt != nil {
			t.Errorf("%s: status %s executed %v, want REJECTED and never run", c.ProviderCallID, c.Status, c.ExecutedAt)
		}
		if by := chat.DecidedBy(&c); by == nil || *by != "refused" {
			t.Errorf("%s: decided_by %v, want refused", c.ProviderCallID, by)
		}
		if c.Reason == nil || !strings.Contains(*c.Reason, want[c.ProviderCallID]) {
			t.Errorf("%s: reason %v, want it to mention %q", c.ProviderCallID, c.Reason, want[c.ProviderCallID])
		}
	}
	results := looptest.ToolResults(f.Rec.Requests()[1])
	for id, w := range want {
		if r := results[id]; !r.IsError || !strings.Contains(r.Text, "refused") || !strings.Contains(r.Text, w) {
			t.Errorf("model told for %s: %+v", id, r)
		}
	}
	evs, err := f.Store.TaskEvents(ctx, tk.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.ToolCall == nil {
			continue
		}
		if by := chat.DecidedBy(ev.ToolCall); ev.ToolCall.Status != store.ToolCallRejected || by == nil || *by != "refused" {
			t.Errorf("event %s of %s: status %s decided_by %v, want a refusal", ev.Type, ev.ToolCall.ProviderCallID, ev.ToolCall.Status, by)
		}
	}
}

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// calcStates enables the calculator with its calculate operation asked by its approval flag and
// the given settings layers (global, user, group, agent).
func calcStates(f *fixture, group, agent map[string]any) {
	no := false
	f.States["core.CalculatorTool"] = tools.ToolState{Enabled: true, Layers: []map[string]any{nil, nil, group, agent},
		Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
}

func callsByID(t *testing.T, f *fixture, taskID int64) map[string]store.ToolCall {
	t.Helper()
	calls, err := f.Store.ToolCalls(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.ToolCall{}
	for _, c := range calls {
		out[c.ProviderCallID] = c
	}
	return out
}

// TestPolicyAllowsDeniesAsksByArgument: the first matching rule of the operation's policy
// decides before anyone is asked; no match leaves the approval flag to decide.
func TestPolicyAllowsDeniesAsksByArgument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1"), calcCall("c2", "9/0"), calcCall("c3", "2*2"), calcCall("c4", "5-1")}},
		{Text: "done"},
	}, store.AgentFields{}, true)
	calcStates(f, nil, mustJSON(t, `{"approval_policy": {"calculate": [
		{"when": {"expression": {"prefix": "1+"}}, "action": "allow"},
		{"when": {"expression": {"pattern": "/0$"}}, "action": "deny", "reason": "no division by zero"},
		{"when": {"expression": {"in": ["2*2", "3*3"]}}, "action": "ask"}
	]}}`))
	tk := f.NewTask("compute", 10)
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL (c3 and c4 are asked)", got.Status)
	}
	calls := callsByID(t, f, tk.ID)
	check := func(id, status, by string, rule int64) {
		t.Helper()
		c := calls[id]
		gotBy, gotRule := chat.DecidedBy(&c), chat.PolicyRule(&c)
		if c.Status != status || (by == "") != (gotBy == nil) || gotBy != nil && *gotBy != by ||
			(rule == 0) != (gotRule == nil) || gotRule != nil && *gotRule != rule {
			t.Errorf("%s: %s by %v rule %v, want %s by %q rule %d", id, c.Status, gotBy, gotRule, status, by, rule)
		}
	}
	check("c1", store.ToolCallExecuted, "policy", 1)
	check("c2", store.ToolCallRejected, "policy", 2)
	check("c3", store.ToolCallPendingApproval, "", 3)
	check("c4", store.ToolCallPendingApproval, "", 0)
	if f.calc.n.Load() != 1 {
		t.Fatalf("calculator ran %d times, want once (c1)", f.calc.n.Load())
	}
	if r := calls["c2"].Reason; r == nil || *r != "no division by zero" {
		t.Fatalf("deny reason %v", r)
	}
	if _, err := f.Store.DecideToolCalls(context.Background(), tk.ID, f.User.ID, []store.ToolDecision{
		{ProviderCallID: "c3", Approve: true}, {ProviderCallID: "c4", Approve: true},
	}); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.Completed {
		t.Fatalf("status %s after approval", got.Status)
	}
	res := looptest.ToolResults(f.Rec.Requests()[1])
	if r := res["c2"]; !r.IsError || !strings.Contains(r.Text, "denied by the agent's approval policy (rule 2)") || !strings.Contains(r.Text, "no division by zero") {
		t.Fatalf("model told for c2: %+v", r)
	}
	calls = callsByID(t, f, tk.ID)
	check("c3", store.ToolCallExecuted, "user:"+itoa(f.User.ID), 3)
}

// TestPolicyCascadeGroupToAgent: an operation's rules at the agent layer replace the group's;
// without agent rules the group's apply.
func TestPolicyCascadeGroupToAgent(t *testing.T) {
	t.Parallel()
	group := mustJSON(t, `{"approval_policy": {"calculate": [{"when": {"expression": {"prefix": "1+"}}, "action": "allow"}]}}`)
	agent := mustJSON(t, `{"approval_policy": {"calculate": [{"action": "deny", "reason": "agent says no"}]}}`)
	for _, c := range []struct {
		name         string
		group, agent map[string]any
		status       string
	}{
		{"group only", group, nil, store.ToolCallExecuted},
		{"agent over group", group, agent, store.ToolCallRejected},
		{"agent layer without rules for the operation", group, mustJSON(t, `{"approval_policy": {}}`), store.ToolCallExecuted},
		{"neither", nil, nil, store.ToolCallPendingApproval},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}}, {Text: "done"}}, store.AgentFields{}, true)
			calcStates(f, c.group, c.agent)
			tk := f.NewTask("compute", 10)
			f.Drain()
			if got := callsByID(t, f, tk.ID)["c1"]; got.Status != c.status {
				t.Fatalf("c1 is %s, want %s", got.Status, c.status)
			}
		})
	}
}

// TestAllowForTask: an approval with AllowForTask lets later calls of the operation in the
// same task — a continuation included — run without asking, recorded as such; another task
// still asks, and an ask rule still asks.
func TestAllowForTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}},
		{ToolCalls: []llm.ScriptToolCall{calcCall("c2", "2+2")}},
		{Text: "four"},
		{ToolCalls: []llm.ScriptToolCall{calcCall("c3", "3+3"), calcCall("c4", "7*7")}},
		{Text: "six"},
	}, store.AgentFields{}, true)
	calcStates(f, nil, mustJSON(t, `{"approval_policy": {"calculate": [{"when": {"expression": {"equals": "7*7"}}, "action": "ask"}]}}`))
	ctx := context.Background()
	tk := f.NewTask("compute", 10)
	f.Drain()
	if _, err := f.Store.DecideToolCalls(ctx, tk.ID, f.User.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true, AllowForTask: true}}); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.Completed {
		t.Fatalf("status %s, want COMPLETED without a second approval", got.Status)
	}
	if _, err := f.Store.TransitionTask(ctx, tk.ID, store.TaskTransition{Action: taskstate.Continue, To: taskstate.Queued,
		GrantSteps: 5, UserMessage: &store.NewTaskMessage{Role: store.RoleUser, Text: "and 3+3?"}}); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL for c4 (an ask rule)", got.Status)
	}
	calls := callsByID(t, f, tk.ID)
	if c := calls["c1"]; !c.AllowForTask || c.Gate != "" {
		t.Fatalf("c1: allow_for_task %v gate %q", c.AllowForTask, c.Gate)
	}
	for _, id := range []string{"c2", "c3"} {
		c := calls[id]
		if by := chat.DecidedBy(&c); c.Status != store.ToolCallExecuted || by == nil || *by != "task" {
			t.Fatalf("%s: %s by %v, want EXECUTED by task", id, c.Status, by)
		}
	}
	if c := calls["c4"]; c.Status != store.ToolCallPendingApproval {
		t.Fatalf("c4: %s", c.Status)
	}
	// Another task of the same agent is asked again.
	other := f.NewTask("compute", 10)
	f.Rec.Driver, _ = llm.NewScripted([]llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("d1", "1+1")}}})
	f.Drain()
	if got := f.Task(other.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("another task: %s, want PENDING_APPROVAL", got.Status)
	}
	// A rejection cannot carry allow_for_task.
	if _, err := f.Store.DecideToolCalls(ctx, other.ID, f.User.ID, []store.ToolDecision{{ProviderCallID: "d1", AllowForTask: true}}); err == nil {
		t.Fatal("a rejection with allow_for_task was accepted")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestOperationApprovalTimeout is issue 26 item 3 per operation: a call held for approval
// carries its operation's approval timeout override, which the expiry sweep prefers to the
// agent's; an override of 0 waits forever whatever the agent says, and an operation without
// one keeps the agent's.
func TestOperationApprovalTimeout(t *testing.T) {
	t.Parallel()
	agentTimeout := 600
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{
			calcCall("c1", "1+1"),
			rawCall("t1", "time", map[string]any{"action": "now"}),
			rawCall("t2", "time", map[string]any{"action": "format", "timestamp": "0"}),
		}},
		{Text: "done"},
	}, store.AgentFields{ApprovalTimeoutSeconds: &agentTimeout}, true)
	no := false
	thirty, never := 30, 0
	f.States["core.CalculatorTool"] = tools.ToolState{Enabled: true,
		Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no, ApprovalTimeoutSeconds: &thirty}}}
	f.States["core.TimeTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{
		"now":    {AutoApprove: &no},
		"format": {AutoApprove: &no, ApprovalTimeoutSeconds: &never},
	}}
	tk := f.NewTask("compute", 10)
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL", got.Status)
	}
	held := callsByID(t, f, tk.ID)["c1"].CreatedAt
	expired := func(after time.Duration) map[string]int {
		t.Helper()
		calls, err := f.Store.ExpiredApprovals(context.Background(), held.Add(after), 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, c := range calls {
			out[c.ProviderCallID] = c.TimeoutSeconds
		}
		return out
	}
	if got := expired(29 * time.Second); len(got) != 0 {
		t.Fatalf("after 29 s: %v expired, want none", got)
	}
	if got := expired(31 * time.Second); len(got) != 1 || got["c1"] != 30 {
		t.Fatalf("after 31 s: %v expired, want c1 by its operation's 30 s", got)
	}
	if got := expired(601 * time.Second); len(got) != 2 || got["c1"] != 30 || got["t1"] != 600 {
		t.Fatalf("after 601 s: %v expired, want c1 and t1 (the agent's 600 s), never t2", got)
	}
}
