package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// tickSetup starts a client-worker-mode service with a scripted model (one auto-approved
// calculator call, then the answer) and an agent with one automatic retry; it returns the
// env, the owner's client and the agent id.
func tickSetup(t *testing.T) (*apitest.Env, *apitest.Client, int64) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}], "usage": {"input_tokens": 10, "output_tokens": 3}},
	  {"text": "The result is 42.", "usage": {"input_tokens": 20, "output_tokens": 5}}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")
	c, _ := env.UserClient("ada@example.com") // administrator: scripted configs need it
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	c.Post("/groups", map[string]any{"name": "Lab"}).Expect(t, 201).Decode(t, &g)
	c.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Calc", "system_prompt": "Compute.", "principal_id": g.Data.Group.PrincipalId,
		"max_retries": 1, "retry_after_minutes": 5}).Expect(t, 201).Decode(t, &a)
	ap := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", a.Data.Agent.Id)
	c.Post(ap+"/enable", nil).Expect(t, 200)
	c.Patch(ap+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": true}).Expect(t, 200)
	return env, c, a.Data.Agent.Id
}

func newTask(t *testing.T, c *apitest.Client, agentID int64) int64 {
	t.Helper()
	var r gen.TaskResponse
	c.Post("/tasks", map[string]any{"agent_id": agentID, "prompt": "What is 6*7?"}).Expect(t, 201).Decode(t, &r)
	return r.Data.Task.Id
}

func tick(t *testing.T, c *apitest.Client, id int64, status int, code ...string) gen.Task {
	t.Helper()
	res := c.Post(fmt.Sprintf("/tasks/%d/tick", id), nil).Expect(t, status, code...)
	var r gen.TaskResponse
	if status == 200 {
		res.Decode(t, &r)
	}
	return r.Data.Task
}

func TestTickClientMode(t *testing.T) {
	env, c, agentID := tickSetup(t)
	ctx := context.Background()

	// One model turn per tick: the tool call (task stays RUNNING), then the answer.
	id := newTask(t, c, agentID)
	got := tick(t, c, id, 200)
	if got.Status != gen.TaskStatusRUNNING || got.StepsUsed != 1 || got.Usage.InputTokens != 10 {
		t.Fatalf("after tick 1: %+v", got)
	}
	got = tick(t, c, id, 200)
	if got.Status != gen.TaskStatusCOMPLETED || got.StepsUsed != 2 || got.Answer == nil || *got.Answer != "The result is 42." {
		t.Fatalf("after tick 2: %+v", got)
	}
	tick(t, c, id, 409, "INVALID_STATE") // terminal

	// A stranger sees nothing; unknown and malformed ids are 404 too.
	stranger, _ := env.UserClient("eve@example.com")
	tick(t, stranger, id, 404, "NOT_FOUND")
	tick(t, c, id+1000, 404, "NOT_FOUND")
	c.Post("/tasks/abc/tick", nil).Expect(t, 404, "NOT_FOUND")

	// Paused (aborted) task: 409, nothing written.
	paused := newTask(t, c, agentID)
	c.Post(fmt.Sprintf("/tasks/%d/abort", paused), nil).Expect(t, 200)
	tick(t, c, paused, 409, "INVALID_STATE")
	if p := getTask(t, c, paused); p.Status != gen.TaskStatusABORTED || p.StepsUsed != 0 {
		t.Fatalf("paused task after refused tick: %+v", p)
	}

	// Another caller holds the lease: 409 and the task is untouched.
	held := newTask(t, c, agentID)
	if ts, err := env.App.Store.ClaimQueued(ctx, "other-worker", time.Minute, 1); err != nil || len(ts) != 1 || ts[0].ID != held {
		t.Fatalf("ClaimQueued = %v, %v", ts, err)
	}
	tick(t, c, held, 409, "INVALID_STATE")
	if h, _ := env.App.Store.Task(ctx, held); h.StepsUsed != 0 || *h.LeaseOwner != "other-worker" {
		t.Fatalf("held task after refused tick: %+v", h)
	}

	// Housekeeping reaps a task whose lease expired: WORKER_DISCONNECTED, retry scheduled.
	gone := newTask(t, c, agentID)
	if ts, err := env.App.Store.ClaimQueued(ctx, "gone-browser", time.Millisecond, 1); err != nil || len(ts) != 1 || ts[0].ID != gone {
		t.Fatalf("ClaimQueued = %v, %v", ts, err)
	}
	env.Clock.Advance(time.Second) // past the 1 ms lease
	var hk gen.WorkerHousekeepingResponse
	stranger.Post("/worker/housekeeping", nil).Expect(t, 200).Decode(t, &hk) // any signed-in user
	if hk.Data.OrphansReaped != 1 || hk.Data.ScheduledRunsDispatched != 0 {
		t.Fatalf("housekeeping = %+v", hk.Data)
	}
	g := getTask(t, c, gone)
	if g.Status != gen.TaskStatusFAILED || g.Error == nil || g.Error.Code != gen.TaskErrorCodeWORKERDISCONNECTED || g.NextRetryAt == nil {
		t.Fatalf("reaped task = %+v", g)
	}
	if h := getTask(t, c, held); h.Status != gen.TaskStatusRUNNING {
		t.Fatalf("live lease reaped: %+v", h)
	}
	// Housekeeping: 2 per minute per user.
	stranger.Post("/worker/housekeeping", nil).Expect(t, 200).Decode(t, &hk)
	if hk.Data.OrphansReaped != 0 {
		t.Fatalf("second pass reaped %d", hk.Data.OrphansReaped)
	}
	res := stranger.Post("/worker/housekeeping", nil).Expect(t, 429, "TOO_MANY_REQUESTS")
	if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
	c.Post("/worker/housekeeping", nil).Expect(t, 200) // per user
	env.Clock.Advance(2 * time.Minute)
	stranger.Post("/worker/housekeeping", nil).Expect(t, 200)

	// Tick: 120 per minute per user (the window of the stranger's earlier tick has passed).
	for range 120 {
		tick(t, stranger, id, 404, "NOT_FOUND")
	}
	res = stranger.Post(fmt.Sprintf("/tasks/%d/tick", id), nil).Expect(t, 429, "TOO_MANY_REQUESTS")
	if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
	tick(t, c, paused, 409, "INVALID_STATE") // the owner's own budget is untouched
}

func TestTickServerMode(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // server worker mode (the default)
	c, _ := env.UserClient("ada@example.com")
	c.Post("/tasks/1/tick", nil).Expect(t, 404, "NOT_FOUND")
	c.Post("/worker/housekeeping", nil).Expect(t, 404, "NOT_FOUND")
	env.Client().Post("/worker/housekeeping", nil).Expect(t, 401)
}
