package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// fakeSubAgents is a core.SubAgents over maps; Spawn records the children it starts.
type fakeSubAgents struct {
	agents   map[int64]*store.Agent
	tasks    map[int64]*store.Task
	spawnErr error
	spawned  []store.Task
}

func (f *fakeSubAgents) Agent(_ context.Context, id, _ int64) (*store.Agent, error) {
	if a, ok := f.agents[id]; ok {
		return a, nil
	}
	return nil, svcerr.New(svcerr.ErrNotFound, "agent not found")
}

func (f *fakeSubAgents) Spawn(_ context.Context, parentID int64, a *store.Agent, prompt string, maxSteps int) (*store.Task, error) {
	if f.spawnErr != nil {
		return nil, f.spawnErr
	}
	t := store.Task{ID: 100 + int64(len(f.spawned)), AgentID: a.ID, ParentTaskID: &parentID, Prompt: prompt, MaxSteps: maxSteps}
	f.spawned = append(f.spawned, t)
	return &t, nil
}

func (f *fakeSubAgents) Task(_ context.Context, id int64) (*store.Task, error) {
	if t, ok := f.tasks[id]; ok {
		return t, nil
	}
	return nil, svcerr.New(svcerr.ErrNotFound, "task not found")
}

// TestSubAgentExecutor: the tool's own rules (allowed targets, same owner, step budget) and
// what it asks of the loop, without a loop; agentloop/subagent_test.go runs it in the loop.
func TestSubAgentExecutor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &fakeSubAgents{agents: map[int64]*store.Agent{
		1: {ID: 1, PrincipalID: 10, MaxSteps: 5},
		2: {ID: 2, PrincipalID: 10, MaxSteps: 7, Name: "Helper"},
		3: {ID: 3, PrincipalID: 11},
	}}
	x := core.Executors(core.Deps{SubAgents: f})["core.SubAgentTool"]
	allowed := map[string]any{"allowed_target_agents": []any{2.0, 3.0, 4.0}}
	call := func(op string, args map[string]any) tools.Call {
		return tools.Call{Operation: op, Args: args, Settings: allowed, TaskID: 50, AgentID: 1, UserID: 9}
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no agent", map[string]any{"prompt": "go"}, "agent_id must be a positive integer"},
		{"no prompt", map[string]any{"agent_id": 2.0}, "prompt is required"},
		{"not allowed", map[string]any{"agent_id": 5.0, "prompt": "go"}, "not among this agent's allowed target agents"},
		{"unknown", map[string]any{"agent_id": 4.0, "prompt": "go"}, "there is no agent 4"},
		{"other owner", map[string]any{"agent_id": 3.0, "prompt": "go"}, "belongs to another owner"},
	} {
		_, err := x.Execute(ctx, call("sub_agent", c.args))
		wantToolErr(t, err, c.want)
	}
	if len(f.spawned) != 0 {
		t.Fatalf("refused calls spawned %v", f.spawned)
	}
	f.spawnErr = svcerr.New(svcerr.ErrInvalid, "prompt too long")
	_, err := x.Execute(ctx, call("sub_agent", map[string]any{"agent_id": 2.0, "prompt": "go"}))
	wantToolErr(t, err, "the sub-agent task could not be created: prompt too long")
	f.spawnErr = errors.New("database down")
	if _, err := x.Execute(ctx, call("sub_agent", map[string]any{"agent_id": 2.0, "prompt": "go"})); err == nil || errors.As(err, new(*tools.ToolError)) {
		t.Fatalf("an infrastructure failure = %v, want it returned as is", err)
	}
	f.spawnErr = nil

	res, err := x.Execute(ctx, call("handover", map[string]any{"agent_id": 2.0, "prompt": "take over", "max_steps": 3.0}))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.spawned) != 1 || f.spawned[0].MaxSteps != 3 || *f.spawned[0].ParentTaskID != 50 || f.spawned[0].Prompt != "take over" {
		t.Fatalf("spawned %+v", f.spawned)
	}
	if res.Content != "Started task 100 on agent 2 (Helper)." || string(res.Data) != `{"child_task_ids":[100],"handover":true}` {
		t.Fatalf("result %q %s", res.Content, res.Data)
	}
	if p := res.Pause; p == nil || p.Kind != tools.PauseSubAgent || !p.Handover || len(p.AgentIDs) != 1 || p.AgentIDs[0] != 2 {
		t.Fatalf("pause %+v", res.Pause)
	}
	if _, err := x.Execute(ctx, call("sub_agent", map[string]any{"agent_id": 2.0, "prompt": "go", "max_steps": 500.0})); err != nil || f.spawned[1].MaxSteps != 7 {
		t.Fatalf("an out-of-range max_steps: %v, %d steps; want the agent's own 7", err, f.spawned[1].MaxSteps)
	}

	d, ok := x.(tools.Delegator)
	if !ok {
		t.Fatal("the sub-agent executor is no tools.Delegator")
	}
	got, ok := d.Delegated(res.Data)
	if !ok || !got.Handover || len(got.ChildTaskIDs) != 1 || got.ChildTaskIDs[0] != 100 {
		t.Fatalf("Delegated = %+v %v", got, ok)
	}
	for _, raw := range []string{``, `{}`, `{"child_task_ids":[]}`, `"x"`} {
		if _, ok := d.Delegated(json.RawMessage(raw)); ok {
			t.Errorf("Delegated(%q) reports children", raw)
		}
	}
	answer := "done"
	f.tasks = map[int64]*store.Task{
		100: {ID: 100, AgentID: 2, Status: "COMPLETED", Answer: &answer},
		101: {ID: 101, AgentID: 2, Status: "FAILED", Error: &store.TaskError{Code: "MAX_STEPS", Message: "out of steps"}},
	}
	text, err := d.Describe(ctx, tools.Delegation{ChildTaskIDs: []int64{100, 101, 102}})
	want := `{"sub_agents":[{"task_id":100,"agent_id":2,"status":"COMPLETED","answer":"done"},` +
		`{"task_id":101,"agent_id":2,"status":"FAILED","error":"MAX_STEPS: out of steps"},{"task_id":102,"agent_id":0,"status":"DELETED"}]}`
	if err != nil || text != want {
		t.Fatalf("Describe = %s, %v\nwant %s", text, err, want)
	}

	none := core.Executors(core.Deps{})["core.SubAgentTool"]
	_, err = none.Execute(ctx, call("sub_agent", map[string]any{"agent_id": 2.0, "prompt": "go"}))
	wantToolErr(t, err, "not available")
}
