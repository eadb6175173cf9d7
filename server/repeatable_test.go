package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestInterruptedCallsInTheTranscript: after a worker crash that left the first call of a turn
// started and unfinished, the task's event log shows which rule applied: the calculator's call
// (repeatable) was run again, its result the real one and `restarts` 1; the to-do call (it
// writes) was not, FAILED "interrupted … not repeated" with `restarts` 0. Both tasks complete.
// Not parallel: the scripted driver reads its script from the working directory.
func TestInterruptedCallsInTheTranscript(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	for name, call := range map[string]string{
		"calc.json": `{"id": "k1", "name": "calculator", "arguments": {"expression": "6*7"}}`,
		"todo.json": `{"id": "k1", "name": "todo", "arguments": {"action": "add", "content": "check"}}`,
	} {
		script := fmt.Sprintf(`[{"tool_calls": [%s]}, {"text": "Done."}]`, call)
		if err := os.WriteFile(filepath.Join(work, name), []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	ctx := context.Background()
	for _, tt := range []struct {
		script, class, op, tool string
		args                    map[string]any
		status                  gen.TaskToolCallStatus
		result                  string
		restarts                int64
	}{
		{"calc.json", "core.CalculatorTool", "calculate", "calculator", map[string]any{"expression": "6*7"},
			gen.TaskToolCallStatusEXECUTED, "6*7 = 42", 1},
		{"todo.json", "core.TodoTool", "add", "todo", map[string]any{"action": "add", "content": "check"},
			gen.TaskToolCallStatusFAILED, "interrupted by a worker restart and was not repeated", 0},
	} {
		a := scriptedAgent(t, c, "Crash "+tt.tool, tt.script, tt.class, tt.op, true)
		var created gen.TaskResponse
		c.Post("/tasks", map[string]any{"agent_id": a.Id, "prompt": "Work."}).Expect(t, 201).Decode(t, &created)
		id := created.Data.Task.Id

		// The state a worker killed after recording the model's turn leaves: the turn and its
		// call, recorded as started with it, no result; its lease then expires.
		dead, err := env.App.Store.ClaimQueued(ctx, "dead", time.Minute, 1)
		if err != nil || len(dead) != 1 || dead[0].ID != id {
			t.Fatalf("claim = %+v, %v", dead, err)
		}
		raw, _ := json.Marshal(tt.args)
		if _, _, err := env.App.Store.AppendAssistantTurn(ctx, id, "dead",
			store.NewTaskMessage{Role: store.RoleAssistant, ToolCalls: []store.MessageToolCall{{ProviderCallID: "k1", Name: tt.tool, Arguments: raw}}},
			[]store.NewToolCall{{ProviderCallID: "k1", ToolClass: tt.class, Name: tt.tool, Operation: tt.op,
				Status: store.ToolCallPending, Arguments: tt.args, Started: true}}); err != nil {
			t.Fatal(err)
		}
		if r, err := env.App.Store.ReapStale(ctx, time.Now().Add(2*time.Minute)); err != nil || len(r.Requeued) != 1 {
			t.Fatalf("reap = %+v, %v", r, err)
		}
		if tk := runQueued(t, env.App); tk.Status != taskstate.Completed {
			t.Fatalf("%s: task %s %+v", tt.tool, tk.Status, tk.Error)
		}

		var executed *gen.TranscriptToolCall
		for _, ev := range parseSSE(t, string(c.Get(fmt.Sprintf("/tasks/%d/events", id)).Expect(t, 200).Body)) {
			if ev.Data.Type == gen.TaskEventTypeToolCallExecuted {
				executed = ev.Data.ToolCall
			}
		}
		if executed == nil || executed.Status != tt.status || executed.Result == nil ||
			!strings.Contains(*executed.Result, tt.result) || executed.Restarts != tt.restarts {
			t.Fatalf("%s: executed event = %+v", tt.tool, executed)
		}
	}
}
