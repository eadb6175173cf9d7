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

// bigResult is a tool that answers with n characters.
type bigResult struct{ n int }

func (b bigResult) Execute(context.Context, tools.Call) (tools.Result, error) {
	return tools.Result{Content: strings.Repeat("é", b.n)}, nil
}

// TestToolResultBudget: a result over its budget is stored whole but sent cut with a note, and
// the cut is recorded with the call (sent_chars); the tool's own result_max_chars setting
// comes before the agent's tool_result_max_chars, and a result within budget is sent whole.
func TestToolResultBudget(t *testing.T) {
	t.Parallel()
	url, _ := json.Marshal(map[string]any{"url": "https://example.com/"})
	calc, _ := json.Marshal(map[string]any{"expression": "1+1"})
	f := looptest.New(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{{ID: "c1", Name: "calculator", Arguments: calc}, {ID: "r1", Name: "read_url", Arguments: url}}},
		{ToolCalls: []llm.ScriptToolCall{{ID: "c2", Name: "calculator", Arguments: calc}}},
		{Text: "done"},
	}, store.AgentFields{ToolResultMaxChars: ptr(100)}, true)
	f.States["core.ReadURLTool"] = tools.ToolState{Enabled: true, Layers: []map[string]any{{tools.SettingResultMaxChars: 50}},
		Overrides: map[string]tools.OperationOverride{"fetch": {AutoApprove: ptr(true)}}}
	f.Loop.Executors["core.ReadURLTool"] = bigResult{n: 5000}
	f.Loop.Executors["core.CalculatorTool"] = bigResult{n: 5000}
	tk := f.NewTask("read", 10)
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.Completed {
		t.Fatalf("task %s %+v", got.Status, got.Error)
	}
	sent := looptest.ToolResults(f.Rec.Requests()[1])
	for id, want := range map[string]int{"c1": 100, "r1": 50} {
		m := sent[id]
		if !strings.HasPrefix(m.Text, strings.Repeat("é", want)+"\n\n[Result cut") || strings.Contains(m.Text, strings.Repeat("é", want+1)) ||
			!strings.Contains(m.Text, "first "+itoa(int64(want))+" of 5000 characters") {
			t.Fatalf("%s sent as %q", id, text80(m.Text))
		}
	}
	// Later requests send the same cut text.
	if again := looptest.ToolResults(f.Rec.Requests()[2])["r1"].Text; again != sent["r1"].Text {
		t.Fatalf("r1 sent differently later: %q", text80(again))
	}
	calls, err := f.Store.ToolCalls(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		var rec struct{ Content string }
		_ = json.Unmarshal(c.Result, &rec)
		sc := chat.SentChars(c.Result)
		if len([]rune(rec.Content)) != 5000 || sc == nil || (c.ProviderCallID == "r1") != (*sc == 50) {
			t.Fatalf("%s stored %d characters, sent_chars %v", c.ProviderCallID, len([]rune(rec.Content)), sc)
		}
	}

	// Within budget: sent whole, nothing recorded.
	g := looptest.New(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{{ID: "c1", Name: "calculator", Arguments: calc}}}, {Text: "ok"}},
		store.AgentFields{ToolResultMaxChars: ptr(5000)}, true)
	g.Loop.Executors["core.CalculatorTool"] = bigResult{n: 5000}
	tk = g.NewTask("calc", 5)
	g.Drain()
	if m := looptest.ToolResults(g.Rec.Requests()[1])["c1"]; m.Text != strings.Repeat("é", 5000) {
		t.Fatalf("a result within budget was cut: %q", text80(m.Text))
	}
	calls, _ = g.Store.ToolCalls(context.Background(), tk.ID)
	if sc := chat.SentChars(calls[0].Result); sc != nil {
		t.Fatalf("sent_chars %d for a result within budget", *sc)
	}
}
