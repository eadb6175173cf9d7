package agentloop_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// selfRunningTool is a plugin tool that is its own executor, as MCP tools are: it has no entry
// in Loop.Executors.
type selfRunningTool struct{ runs atomic.Int64 }

func (s *selfRunningTool) Spec() tools.Spec {
	return tools.Spec{
		Class: "demo.McpShout", Name: "shout", PluginSlug: "demo", Description: "Shouts.",
		Operations:  []tools.Operation{{Name: "shout", EnabledByDefault: true}},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
	}
}

func (s *selfRunningTool) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	s.runs.Add(1)
	text, _ := call.Args["text"].(string)
	return tools.Result{Content: text + "!"}, nil
}

func TestRegisteredToolRunsItselfWithoutExecutorEntry(t *testing.T) {
	t.Parallel()
	args, _ := json.Marshal(map[string]any{"text": "hi"})
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{{ID: "p1", Name: "demo:shout", Arguments: args}}},
		{Text: "done"},
	}, store.AgentFields{}, true)
	tool := &selfRunningTool{}
	if err := f.Loop.Registry.Register(tool); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Loop.Executors["demo.McpShout"]; ok {
		t.Fatal("the fixture has an executor for the plugin tool; the test would prove nothing")
	}
	f.States["demo.McpShout"] = tools.ToolState{Enabled: true}
	tk := f.NewTask("shout", 10)
	f.Drain()
	if got := f.Task(tk.ID); got.Status != taskstate.Completed {
		t.Fatalf("task = %s", got.Status)
	}
	if tool.runs.Load() != 1 {
		t.Fatalf("plugin tool ran %d times, want 1", tool.runs.Load())
	}
	var sent []string
	for _, m := range f.Rec.Requests()[1].Messages {
		if m.Role == llm.RoleTool {
			sent = append(sent, m.Text)
		}
	}
	if len(sent) != 1 || sent[0] != "hi!" {
		t.Fatalf("tool results sent to the model: %q", sent)
	}
	// The model was offered the tool with its raw schema.
	var offered *llm.ToolDef
	for i, d := range f.Rec.Requests()[0].Tools {
		if d.Name == "demo:shout" {
			offered = &f.Rec.Requests()[0].Tools[i]
		}
	}
	if offered == nil || string(offered.Parameters) != `{"properties":{"text":{"type":"string"}},"type":"object"}` {
		t.Fatalf("tool offered to the model: %+v", offered)
	}
}
