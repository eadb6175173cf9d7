package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/task"
	"github.com/agentsvc/svc/internal/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// recorder wraps a driver and keeps every request it saw.
type recorder struct {
	mu   sync.Mutex
	d    llm.Driver
	reqs []llm.Request
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.d.Complete(ctx, req)
}

// countingExec counts executions of a wrapped executor.
type countingExec struct {
	inner tools.Executor
	n     atomic.Int64
	args  []map[string]any
	mu    sync.Mutex
}

func (c *countingExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.args = append(c.args, call.Args)
	c.mu.Unlock()
	return c.inner.Execute(ctx, call)
}

type fixture struct {
	t      *testing.T
	st     *store.Store
	loop   *agentloop.Loop
	rec    *recorder
	calc   *countingExec
	user   *store.User
	agent  *store.Agent
	states map[string]tools.ToolState
}

func newFixture(t *testing.T, turns []llm.ScriptTurn, agentFields store.AgentFields, withConfig bool) *fixture {
	t.Helper()
	return newFixtureAt(t, turns, agentFields, withConfig, nil)
}

// newFixtureAt is newFixture with the store on clock (nil: the real time).
func newFixtureAt(t *testing.T, turns []llm.ScriptTurn, agentFields store.AgentFields, withConfig bool, clock func() time.Time) *fixture {
	t.Helper()
	st := storetest.NewWithClock(t, clock)
	u := storetest.User(t, st)
	g := storetest.Group(t, st, u)
	if withConfig {
		storetest.LLMConfig(t, st, g.ID)
	}
	a := storetest.Agent(t, st, g.PrincipalID, func(f *store.AgentFields) {
		name := "Bot"
		*f, f.Name = agentFields, &name
	})
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		t.Fatal(err)
	}
	scripted, err := llm.NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	board := &agentloop.TodoBoard{}
	execs := core.Executors(core.Deps{Todos: board, SubAgents: agentloop.SubAgents{Store: st}})
	f := &fixture{t: t, st: st, rec: &recorder{d: scripted}, user: u, agent: a,
		calc: &countingExec{inner: execs["core.CalculatorTool"]},
		states: map[string]tools.ToolState{
			"core.CalculatorTool":      {Enabled: true},
			"core.AskUserQuestionTool": {Enabled: true},
			"core.TodoTool":            {Enabled: true},
		}}
	execs["core.CalculatorTool"] = f.calc
	f.loop = &agentloop.Loop{
		Store: st, Registry: reg, Executors: execs, Lease: time.Minute, Todos: board,
		ToolStates: func(context.Context, int64) (map[string]tools.ToolState, error) { return f.states, nil },
		Driver:     func(*store.LLMConfig) (llm.Driver, error) { return f.rec, nil },
		Retry:      task.New(st, reg).ScheduleRetryAfter,
	}
	return f
}

func (f *fixture) newTask(prompt string, maxSteps int) *store.Task {
	f.t.Helper()
	return storetest.Task(f.t, f.st, f.agent, f.user.ID, func(nt *store.NewTask) { nt.Prompt, nt.MaxSteps = prompt, maxSteps })
}

// drain claims and runs every QUEUED task until nothing is claimable, like the daemon.
func (f *fixture) drain() {
	f.t.Helper()
	for {
		claimed, err := f.st.ClaimQueued(context.Background(), "w1", time.Minute, 10)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(claimed) == 0 {
			return
		}
		for i := range claimed {
			f.loop.Run(context.Background(), nil, &claimed[i], "w1")
		}
	}
}

func (f *fixture) task(id int64) *store.Task {
	f.t.Helper()
	task, err := f.st.Task(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

func calcCall(id, expr string) llm.ScriptToolCall {
	args, _ := json.Marshal(map[string]any{"expression": expr})
	return llm.ScriptToolCall{ID: id, Name: "calculator", Arguments: args}
}

func TestToolCallThenAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "2+3"), calcCall("c2", "10*4")}, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 5}},
		{Text: "5 and 40", Usage: &llm.Usage{InputTokens: 20, OutputTokens: 3}},
	}, store.AgentFields{}, true)
	task := f.newTask("compute", 10)
	f.drain()
	got := f.task(task.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "5 and 40" {
		t.Fatalf("task = %s %v", got.Status, got.Answer)
	}
	if got.StepsUsed != 2 || got.InputTokens != 30 || got.OutputTokens != 8 {
		t.Fatalf("steps %d tokens %d/%d", got.StepsUsed, got.InputTokens, got.OutputTokens)
	}
	if f.calc.n.Load() != 2 {
		t.Fatalf("calculator ran %d times, want 2 (two calls in one turn)", f.calc.n.Load())
	}
	second := f.rec.reqs[1]
	var results []string
	for _, m := range second.Messages {
		if m.Role == llm.RoleTool {
			results = append(results, m.ToolCallID+"="+m.Text)
		}
	}
	if strings.Join(results, ",") != "c1=2+3 = 5,c2=10*4 = 40" {
		t.Fatalf("tool results sent to the model: %v", results)
	}
	if len(second.Tools) != 3 {
		t.Fatalf("tools offered: %d, want the three enabled ones", len(second.Tools))
	}
}

func TestApprovalWithEditedArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}},
		{Text: "done"},
	}, store.AgentFields{}, true)
	no := false
	f.states["core.CalculatorTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
	task := f.newTask("compute", 10)
	f.drain()
	if got := f.task(task.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL", got.Status)
	}
	if f.calc.n.Load() != 0 {
		t.Fatal("a call needing approval ran before it was approved")
	}
	if _, err := f.st.DecideToolCalls(context.Background(), task.ID, f.user.ID, []store.ToolDecision{
		{ProviderCallID: "c1", Approve: true, Arguments: map[string]any{"expression": "6*7"}},
	}); err != nil {
		t.Fatal(err)
	}
	f.drain()
	got := f.task(task.ID)
	if got.Status != taskstate.Completed {
		t.Fatalf("status %s after approval", got.Status)
	}
	if f.calc.n.Load() != 1 || f.calc.args[0]["expression"] != "6*7" {
		t.Fatalf("executed %d times with %v; the approved arguments must run", f.calc.n.Load(), f.calc.args)
	}
	calls, _ := f.st.ToolCalls(context.Background(), task.ID)
	if calls[0].ProposedArguments["expression"] != "1+1" || calls[0].ApprovedArguments["expression"] != "6*7" || calls[0].DecidedBy == nil {
		t.Fatalf("transcript lost the proposal or the decision: %+v", calls[0])
	}
	if tool := f.rec.reqs[1].Messages[2]; tool.Role != llm.RoleTool || tool.Text != "6*7 = 42" {
		t.Fatalf("model saw %+v", tool)
	}
}

func TestRejectionReasonReachesTheModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}}, {Text: "ok"}}, store.AgentFields{}, true)
	no := false
	f.states["core.CalculatorTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
	task := f.newTask("compute", 10)
	f.drain()
	if _, err := f.st.RejectToolCalls(context.Background(), task.ID, f.user.ID, "not now"); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if got := f.task(task.ID); got.Status != taskstate.Completed || f.calc.n.Load() != 0 {
		t.Fatalf("status %s, executions %d", got.Status, f.calc.n.Load())
	}
	if tool := f.rec.reqs[1].Messages[2]; !strings.Contains(tool.Text, "not now") || !tool.IsError {
		t.Fatalf("model saw %+v", tool)
	}
}

func TestQuestionWaitsForTheAnswer(t *testing.T) {
	t.Parallel()
	ask, _ := json.Marshal(map[string]any{"questions": []map[string]any{{
		"question": "Which colour?", "header": "Colour", "options": []string{"red", "blue"}, "multiple": false, "allowFreeText": false}}})
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{{ID: "q1", Name: "ask_user_question", Arguments: ask}}},
		{Text: "blue it is"},
	}, store.AgentFields{}, true)
	task := f.newTask("pick", 10)
	f.drain()
	if got := f.task(task.ID); got.Status != taskstate.AwaitingInput {
		t.Fatalf("status %s, want AWAITING_INPUT", got.Status)
	}
	if _, err := f.st.AnswerQuestions(context.Background(), task.ID, "q1", []store.QuestionAnswer{{Header: "Colour", Selections: []string{"blue"}}}, nil); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if got := f.task(task.ID); got.Status != taskstate.Completed {
		t.Fatalf("status %s after the answer", got.Status)
	}
	if tool := f.rec.reqs[1].Messages[2]; !strings.Contains(tool.Text, "blue") {
		t.Fatalf("model saw %+v", tool)
	}
}

func TestStepBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1")}}, {ToolCalls: []llm.ScriptToolCall{calcCall("c2", "2")}}}, store.AgentFields{}, true)
	task := f.newTask("loop", 1)
	f.drain()
	got := f.task(task.ID)
	if got.Status != taskstate.Aborted || got.Data["max_steps_reached"] != true || got.StepsUsed != 1 {
		t.Fatalf("status %s data %v steps %d", got.Status, got.Data, got.StepsUsed)
	}
}

func TestFailuresAndRetry(t *testing.T) {
	t.Parallel()
	retries, after := 2, 5
	f := newFixture(t, []llm.ScriptTurn{{Error: &llm.ScriptError{Code: "RATE_LIMIT", Message: "slow down"}}}, store.AgentFields{MaxRetries: &retries, RetryAfterMinutes: &after}, true)
	task := f.newTask("x", 10)
	f.drain()
	got := f.task(task.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != "RATE_LIMIT" || got.NextRetryAt == nil {
		t.Fatalf("status %s error %+v next retry %v", got.Status, got.Error, got.NextRetryAt)
	}

	g := newFixture(t, []llm.ScriptTurn{{Text: "never"}}, store.AgentFields{}, false)
	task = g.newTask("x", 10)
	g.drain()
	if got := g.task(task.ID); got.Status != taskstate.Failed || got.Error.Code != "NO_LLM_CONFIGURATION" {
		t.Fatalf("without a configuration: %s %+v", got.Status, got.Error)
	}
}

// TestInterruptedCallIsNotRepeated: a call started before a crash is never run again.
func TestInterruptedCallIsNotRepeated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}}, {Text: "ok"}}, store.AgentFields{}, true)
	no := false
	f.states["core.CalculatorTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
	ctx := context.Background()
	task := f.newTask("x", 10)
	f.drain()
	if _, err := f.st.DecideToolCalls(ctx, task.ID, f.user.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.st.ClaimQueued(ctx, "crashy", time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %d", err, len(claimed))
	}
	calls, _ := f.st.ToolCalls(ctx, task.ID)
	if err := f.st.BeginToolCall(ctx, task.ID, "crashy", calls[0].ID); err != nil {
		t.Fatal(err)
	}
	// The worker dies here. Its lease expires; the reaper fails the task; a retry re-queues it.
	f.loop.Run(ctx, nil, &claimed[0], "crashy")
	calls, _ = f.st.ToolCalls(ctx, task.ID)
	if calls[0].Status != store.ToolCallFailed || f.calc.n.Load() != 0 {
		t.Fatalf("interrupted call: %s, executions %d", calls[0].Status, f.calc.n.Load())
	}
}

// TestTickRefusesForeignLease: a tick by a worker that does not hold the lease writes nothing.
func TestTickRefusesForeignLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{Text: "hi"}}, store.AgentFields{}, true)
	task := f.newTask("x", 10)
	if _, err := f.loop.Tick(context.Background(), task.ID, "w1"); err == nil {
		t.Fatal("tick of a QUEUED task accepted")
	}
	if _, err := f.st.ClaimQueued(context.Background(), "w1", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.loop.Tick(context.Background(), task.ID, "w2"); err == nil {
		t.Fatal("tick under another worker's lease accepted")
	}
	if got := f.task(task.ID); got.StepsUsed != 0 {
		t.Fatal("a refused tick wrote")
	}
}

// claimOne claims exactly one task for worker and fails the test otherwise.
func claimOne(t testing.TB, st *store.Store, worker string, lease time.Duration) *store.Task {
	t.Helper()
	claimed, err := st.ClaimQueued(context.Background(), worker, lease, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim for %s = %+v, %v", worker, claimed, err)
	}
	return &claimed[0]
}
