package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
