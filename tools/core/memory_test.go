package core_test

import (
	"context"
	"encoding/json"
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
)

func memoryCall(id string, args map[string]any) llm.ScriptToolCall {
	b, _ := json.Marshal(args)
	return llm.ScriptToolCall{ID: id, Name: "memory", Arguments: b}
}

// runChat runs one new task (a new chat) of agent a for user userID, the model answering with
// turns, to its end and returns the tool calls it made.
func runChat(t *testing.T, f *looptest.Fixture, a *store.Agent, userID int64, turns ...llm.ScriptTurn) (*store.Task, []store.ToolCall) {
	t.Helper()
	scripted, err := llm.NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	f.Rec.Driver = scripted
	tk := storetest.Task(t, f.Store, a, userID, func(nt *store.NewTask) { nt.Prompt, nt.MaxSteps = "chat", 5 })
	f.Drain()
	tk = f.Task(tk.ID)
	if tk.Status != taskstate.Completed {
		t.Fatalf("task %d ended %s", tk.ID, tk.Status)
	}
	calls, err := f.Store.ToolCalls(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tk, calls
}

// recalled are the memory texts of a recall call's result.
func recalled(t *testing.T, c store.ToolCall) []string {
	t.Helper()
	var res struct {
		Data struct {
			Memories []struct{ Text string } `json:"memories"`
		} `json:"data"`
	}
	if err := json.Unmarshal(c.Result, &res); err != nil {
		t.Fatalf("recall result %s: %v", c.Result, err)
	}
	var out []string
	for _, m := range res.Data.Memories {
		out = append(out, m.Text)
	}
	return out
}

// TestMemoryRoundTrip is issue 25's memory check: a fact remembered in one chat is recalled in a
// new chat of the same agent and user, and not in another agent's chat nor, with the default
// scope agent_user, in another user's chat of the same agent. The memory records the task and
// the message it came from. With scope agent, the other user recalls it.
func TestMemoryRoundTrip(t *testing.T) {
	t.Parallel()
	remember := []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{memoryCall("m1", map[string]any{"action": "remember", "text": "The user drinks their coffee black."})}},
		{Text: "Noted."},
	}
	recall := []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{memoryCall("r1", map[string]any{"action": "recall", "query": "Which coffee does the user drink?"})}},
		{Text: "Done."},
	}
	f := looptest.New(t, nil, store.AgentFields{}, true)
	f.States["core.MemoryTool"] = tools.ToolState{Enabled: true}
	ctx := context.Background()

	first, calls := runChat(t, f, f.Agent, f.User.ID, remember...)
	if len(calls) != 1 || calls[0].Status != store.ToolCallExecuted {
		t.Fatalf("remember calls = %+v", calls)
	}
	ms, _, err := f.Store.RecallMemories(ctx, store.MemoryQuery{AgentID: f.Agent.ID, AllUsers: true, Limit: 5})
	if err != nil || len(ms) != 1 {
		t.Fatalf("stored memories = %+v, %v", ms, err)
	}
	if m := ms[0]; m.UserID == nil || *m.UserID != f.User.ID || m.TaskID == nil || *m.TaskID != first.ID ||
		m.MessageSequence == nil || *m.MessageSequence != calls[0].MessageSequence {
		t.Errorf("memory origin = user %v task %v message %v, want user %d task %d message %d",
			m.UserID, m.TaskID, m.MessageSequence, f.User.ID, first.ID, calls[0].MessageSequence)
	}

	_, calls = runChat(t, f, f.Agent, f.User.ID, recall...)
	if got := recalled(t, calls[0]); len(got) != 1 || got[0] != "The user drinks their coffee black." {
		t.Fatalf("recall in a new chat = %q", got)
	}
	other := storetest.Agent(t, f.Store, f.Agent.PrincipalID)
	if _, calls = runChat(t, f, other, f.User.ID, recall...); len(recalled(t, calls[0])) != 0 {
		t.Fatalf("another agent recalled %q", recalled(t, calls[0]))
	}
	stranger := storetest.User(t, f.Store)
	if _, calls = runChat(t, f, f.Agent, stranger.ID, recall...); len(recalled(t, calls[0])) != 0 {
		t.Fatalf("another user recalled %q", recalled(t, calls[0]))
	}
	// Scope agent shares the agent-wide memories: the fact remembered per user stays the user's.
	f.States["core.MemoryTool"] = tools.ToolState{Enabled: true, Layers: []map[string]any{{"scope": "agent"}}}
	if _, err := f.Store.Remember(ctx, store.NewMemory{AgentID: f.Agent.ID, Text: "Team coffee is black."}, nil); err != nil {
		t.Fatal(err)
	}
	if _, calls = runChat(t, f, f.Agent, stranger.ID, recall...); strings.Join(recalled(t, calls[0]), "|") != "Team coffee is black." {
		t.Fatalf("scope agent recalled %q", recalled(t, calls[0]))
	}
}

func TestMemoryArguments(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	deps := core.Deps{Memories: s}
	call := func(op string, args map[string]any, settings map[string]any) (tools.Result, error) {
		return exec(t, deps, "core.MemoryTool", tools.Call{Operation: op, Args: args, AgentID: a.ID, UserID: u.ID, Settings: settings})
	}
	_, err := call("remember", map[string]any{"text": "  "}, nil)
	wantToolErr(t, err, `argument "text" is required`)
	_, err = call("remember", map[string]any{"text": strings.Repeat("x", limits.MemoryTextLen+1)}, nil)
	wantToolErr(t, err, "longer than 2000 characters")
	_, err = call("recall", map[string]any{"limit": 51.0}, nil)
	wantToolErr(t, err, "limit must be between 1 and 50")
	_, err = call("forget", map[string]any{"id": 999.0}, nil)
	wantToolErr(t, err, "memory not found")
	_, err = call("recall", nil, map[string]any{"scope": "everyone"})
	wantToolErr(t, err, `scope setting "everyone"`)
	_, err = exec(t, deps, "core.MemoryTool", tools.Call{Operation: "recall", AgentID: a.ID})
	wantToolErr(t, err, "this task has no user")

	res, err := call("remember", map[string]any{"text": " Prefers short answers. "}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Remembered struct {
			ID   int64
			Text string
		}
	}
	if err := json.Unmarshal(res.Data, &got); err != nil || got.Remembered.Text != "Prefers short answers." {
		t.Fatalf("remember = %s, %v", res.Data, err)
	}
	// forget works within the scope only: the agent-wide scope does not see the user's memory
	_, err = call("forget", map[string]any{"id": float64(got.Remembered.ID)}, map[string]any{"scope": "agent"})
	wantToolErr(t, err, "memory not found")
	if _, err = call("forget", map[string]any{"id": float64(got.Remembered.ID)}, nil); err != nil {
		t.Fatal(err)
	}
	res, err = call("recall", map[string]any{"query": "short"}, nil)
	if err != nil || !strings.Contains(res.Content, `"memories":[]`) {
		t.Fatalf("recall after forget = %s, %v", res.Content, err)
	}
}
