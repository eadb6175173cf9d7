package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

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

// fixture is the loop test kit's fixture with the calculator's executions counted (calc) and
// Loop.Retry set to the task service's ScheduleRetry.
type fixture struct {
	*looptest.Fixture
	calc *countingExec
}

func newFixture(t *testing.T, turns []llm.ScriptTurn, agentFields store.AgentFields, withConfig bool, opts ...looptest.Option) *fixture {
	t.Helper()
	f := &fixture{Fixture: looptest.New(t, turns, agentFields, withConfig, opts...)}
	f.calc = &countingExec{inner: f.Loop.Executors["core.CalculatorTool"]}
	f.Loop.Executors["core.CalculatorTool"] = f.calc
	f.Loop.Retry = task.New(f.Store, f.Loop.Registry).ScheduleRetryAfter
	return f
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
	task := f.NewTask("compute", 10)
	f.Drain()
	got := f.Task(task.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "5 and 40" {
		t.Fatalf("task = %s %v", got.Status, got.Answer)
	}
	if got.StepsUsed != 2 || got.InputTokens != 30 || got.OutputTokens != 8 {
		t.Fatalf("steps %d tokens %d/%d", got.StepsUsed, got.InputTokens, got.OutputTokens)
	}
	if f.calc.n.Load() != 2 {
		t.Fatalf("calculator ran %d times, want 2 (two calls in one turn)", f.calc.n.Load())
	}
	second := f.Rec.Requests()[1]
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
	f.States["core.CalculatorTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
	task := f.NewTask("compute", 10)
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.PendingApproval {
		t.Fatalf("status %s, want PENDING_APPROVAL", got.Status)
	}
	if f.calc.n.Load() != 0 {
		t.Fatal("a call needing approval ran before it was approved")
	}
	if _, err := f.Store.DecideToolCalls(context.Background(), task.ID, f.User.ID, []store.ToolDecision{
		{ProviderCallID: "c1", Approve: true, Arguments: map[string]any{"expression": "6*7"}},
	}); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	got := f.Task(task.ID)
	if got.Status != taskstate.Completed {
		t.Fatalf("status %s after approval", got.Status)
	}
	if f.calc.n.Load() != 1 || f.calc.args[0]["expression"] != "6*7" {
		t.Fatalf("executed %d times with %v; the approved arguments must run", f.calc.n.Load(), f.calc.args)
	}
	calls, _ := f.Store.ToolCalls(context.Background(), task.ID)
	if calls[0].ProposedArguments["expression"] != "1+1" || calls[0].ApprovedArguments["expression"] != "6*7" || calls[0].DecidedBy == nil {
		t.Fatalf("transcript lost the proposal or the decision: %+v", calls[0])
	}
	if tool := f.Rec.Requests()[1].Messages[2]; tool.Role != llm.RoleTool || tool.Text != "6*7 = 42" {
		t.Fatalf("model saw %+v", tool)
	}
}

func TestRejectionReasonReachesTheModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1+1")}}, {Text: "ok"}}, store.AgentFields{}, true)
	no := false
	f.States["core.CalculatorTool"] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{"calculate": {AutoApprove: &no}}}
	task := f.NewTask("compute", 10)
	f.Drain()
	if _, err := f.Store.RejectToolCalls(context.Background(), task.ID, f.User.ID, "not now"); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.Completed || f.calc.n.Load() != 0 {
		t.Fatalf("status %s, executions %d", got.Status, f.calc.n.Load())
	}
	if tool := f.Rec.Requests()[1].Messages[2]; !strings.Contains(tool.Text, "not now") || !tool.IsError {
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
	task := f.NewTask("pick", 10)
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.AwaitingInput {
		t.Fatalf("status %s, want AWAITING_INPUT", got.Status)
	}
	if _, err := f.Store.AnswerQuestions(context.Background(), task.ID, "q1", []store.QuestionAnswer{{Header: "Colour", Selections: []string{"blue"}}}, nil); err != nil {
		t.Fatal(err)
	}
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.Completed {
		t.Fatalf("status %s after the answer", got.Status)
	}
	if tool := f.Rec.Requests()[1].Messages[2]; !strings.Contains(tool.Text, "blue") {
		t.Fatalf("model saw %+v", tool)
	}
}

func TestStepBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "1")}}, {ToolCalls: []llm.ScriptToolCall{calcCall("c2", "2")}}}, store.AgentFields{}, true)
	task := f.NewTask("loop", 1)
	f.Drain()
	got := f.Task(task.ID)
	if got.Status != taskstate.Aborted || got.Data["max_steps_reached"] != true || got.StepsUsed != 1 {
		t.Fatalf("status %s data %v steps %d", got.Status, got.Data, got.StepsUsed)
	}
}

func TestFailuresAndRetry(t *testing.T) {
	t.Parallel()
	retries, after := 2, 5
	f := newFixture(t, []llm.ScriptTurn{{Error: &llm.ScriptError{Code: "RATE_LIMIT", Message: "slow down"}}}, store.AgentFields{MaxRetries: &retries, RetryAfterMinutes: &after}, true)
	task := f.NewTask("x", 10)
	f.Drain()
	got := f.Task(task.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != "RATE_LIMIT" || got.NextRetryAt == nil {
		t.Fatalf("status %s error %+v next retry %v", got.Status, got.Error, got.NextRetryAt)
	}

	g := newFixture(t, []llm.ScriptTurn{{Text: "never"}}, store.AgentFields{}, false)
	task = g.NewTask("x", 10)
	g.Drain()
	if got := g.Task(task.ID); got.Status != taskstate.Failed || got.Error.Code != "NO_LLM_CONFIGURATION" {
		t.Fatalf("without a configuration: %s %+v", got.Status, got.Error)
	}
}

// TestInterruptedApprovedCall: an approved call started before a crash is never run again when
// its operation is not repeatable (todo add), and is run again, its restart counted, when it is
// (the calculator).
func TestInterruptedApprovedCall(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, class, op string
		call            llm.ScriptToolCall
		status          string
		runs, restarts  int
	}{
		{"not repeatable", "core.TodoTool", "add", todoAdd("c1", "check"), store.ToolCallFailed, 0, 0},
		{"repeatable", "core.CalculatorTool", "calculate", calcCall("c1", "1+1"), store.ToolCallExecuted, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{tt.call}}, {Text: "ok"}}, store.AgentFields{}, true)
			counted := &countingExec{inner: f.Loop.Executors[tt.class]}
			f.Loop.Executors[tt.class] = counted
			no := false
			f.States[tt.class] = tools.ToolState{Enabled: true, Overrides: map[string]tools.OperationOverride{tt.op: {AutoApprove: &no}}}
			ctx := context.Background()
			task := f.NewTask("x", 10)
			f.Drain()
			if _, err := f.Store.DecideToolCalls(ctx, task.ID, f.User.ID, []store.ToolDecision{{ProviderCallID: "c1", Approve: true}}); err != nil {
				t.Fatal(err)
			}
			claimed, err := f.Store.ClaimQueued(ctx, "crashy", time.Minute, 1)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("claim: %v %d", err, len(claimed))
			}
			calls, _ := f.Store.ToolCalls(ctx, task.ID)
			if err := f.Store.BeginToolCall(ctx, task.ID, "crashy", calls[0].ID); err != nil {
				t.Fatal(err)
			}
			// The worker dies here, before the call runs; the step resumes the task.
			f.Loop.Run(ctx, nil, &claimed[0], "crashy")
			calls, _ = f.Store.ToolCalls(ctx, task.ID)
			if calls[0].Status != tt.status || int(counted.n.Load()) != tt.runs || calls[0].Restarts != tt.restarts {
				t.Fatalf("interrupted call: %s, executions %d, restarts %d", calls[0].Status, counted.n.Load(), calls[0].Restarts)
			}
			if got := f.Task(task.ID); got.Status != taskstate.Completed {
				t.Fatalf("task = %s", got.Status)
			}
		})
	}
}

// TestTickRefusesForeignLease: a tick by a worker that does not hold the lease writes nothing.
func TestTickRefusesForeignLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{Text: "hi"}}, store.AgentFields{}, true)
	task := f.NewTask("x", 10)
	if _, err := f.Loop.Tick(context.Background(), task.ID, "w1"); err == nil {
		t.Fatal("tick of a QUEUED task accepted")
	}
	if _, err := f.Store.ClaimQueued(context.Background(), "w1", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Loop.Tick(context.Background(), task.ID, "w2"); err == nil {
		t.Fatal("tick under another worker's lease accepted")
	}
	if got := f.Task(task.ID); got.StepsUsed != 0 {
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
