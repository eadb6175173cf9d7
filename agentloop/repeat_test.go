package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// freezeFirst holds the first execution of the executor it wraps until released: the worker
// running it stands for one that died during the call (its lease expires, the reaper takes the
// task back), and, released, for the zombie it may also be (its late writes are refused).
type freezeFirst struct {
	inner   tools.Executor
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newFreezeFirst(inner tools.Executor) *freezeFirst {
	return &freezeFirst{inner: inner, entered: make(chan struct{}), release: make(chan struct{})}
}

func (f *freezeFirst) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	first := false
	f.once.Do(func() { first = true })
	if first {
		close(f.entered)
		<-f.release
	}
	return f.inner.Execute(ctx, call)
}

func todoAdd(id, content string) llm.ScriptToolCall {
	args, _ := json.Marshal(map[string]any{"action": "add", "content": content})
	return llm.ScriptToolCall{ID: id, Name: "todo", Arguments: args}
}

// crashDuring runs the first step of a new task on a worker "dead" whose executor of class
// frozen freezes in its first call; with that call in flight the worker's lease expires and the
// reaper queues the task again; the fixture's worker resumes it to the end; then the frozen
// worker wakes up, and its writes are refused. It returns the task's tool calls by provider id.
func crashDuring(t *testing.T, f *fixture, clock *testkit.Clock, frozen string) (*store.Task, map[string]store.ToolCall) {
	t.Helper()
	ctx := context.Background()
	freeze := newFreezeFirst(f.Loop.Executors[frozen])
	f.Loop.Executors[frozen] = freeze
	tk := f.NewTask("work", 10)
	dead := claimOne(t, f.Store, "dead", time.Minute)
	zombie := make(chan error, 1)
	go func() {
		_, err := f.Loop.Tick(ctx, dead.ID, "dead")
		zombie <- err
	}()
	<-freeze.entered
	if r, err := f.Store.ReapStale(ctx, clock.Advance(2*time.Minute)); err != nil || len(r.Requeued) != 1 {
		t.Fatalf("reap = %+v, %v", r, err)
	}
	f.Drain()
	close(freeze.release)
	if err := <-zombie; !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("the dead worker's step after it woke up: %v, want its lease lost", err)
	}
	calls, err := f.Store.ToolCalls(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.ToolCall{}
	for _, c := range calls {
		byID[c.ProviderCallID] = c
	}
	return f.Task(tk.ID), byID
}

// toolResultsSent are the tool results of the model's last request, "id=text".
func toolResultsSent(f *fixture) []string {
	reqs := f.Rec.Requests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.ToolCallID+"="+m.Text)
		}
	}
	return out
}

// TestInterruptedRepeatableCallRunsAgain: a call of a repeatable operation (the calculator)
// that a crash interrupted is run again by the worker that resumes the task, which completes
// with the call's real result; the restart is counted on the call (the transcript shows it).
// The call after it, never started, runs once.
func TestInterruptedRepeatableCallRunsAgain(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC))
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "2+3"), todoAdd("t1", "check")}},
		{Text: "5"},
	}, store.AgentFields{}, true, looptest.WithClock(clock.Now))
	todo := &countingExec{inner: f.Loop.Executors["core.TodoTool"]}
	f.Loop.Executors["core.TodoTool"] = todo
	tk, calls := crashDuring(t, f, clock, "core.CalculatorTool")

	if tk.Status != taskstate.Completed || tk.Answer == nil || *tk.Answer != "5" {
		t.Fatalf("task = %s %v %+v", tk.Status, tk.Answer, tk.Error)
	}
	c1, t1 := calls["c1"], calls["t1"]
	if c1.Status != store.ToolCallExecuted || !strings.Contains(string(c1.Result), "2+3 = 5") || c1.Restarts != 1 {
		t.Fatalf("interrupted repeatable call = %s %s, restarts %d", c1.Status, c1.Result, c1.Restarts)
	}
	if t1.Status != store.ToolCallExecuted || t1.Restarts != 0 || todo.n.Load() != 1 {
		t.Fatalf("the call after it = %s, restarts %d, executions %d", t1.Status, t1.Restarts, todo.n.Load())
	}
	if got := toolResultsSent(f); len(got) != 2 || got[0] != "c1=2+3 = 5" || !strings.Contains(got[1], "check") {
		t.Fatalf("tool results sent to the model: %q", got)
	}
	// The dead worker's execution and the resumed one: at least once.
	if n := f.calc.n.Load(); n != 2 {
		t.Fatalf("calculator ran %d times, want 2 (the interrupted run and the repeat)", n)
	}
}

// TestInterruptedCallWithEffectsIsNotRepeated: a call of an operation that is not repeatable
// (todo add writes) that a crash interrupted is never run again: it fails "interrupted … not
// repeated", the model is told, and the task goes on; it ran once, on the worker that died.
func TestInterruptedCallWithEffectsIsNotRepeated(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC))
	f := newFixture(t, []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{todoAdd("t1", "check"), calcCall("c1", "2+3")}},
		{Text: "noted"},
	}, store.AgentFields{}, true, looptest.WithClock(clock.Now))
	todo := &countingExec{inner: f.Loop.Executors["core.TodoTool"]}
	f.Loop.Executors["core.TodoTool"] = todo
	tk, calls := crashDuring(t, f, clock, "core.TodoTool")

	if tk.Status != taskstate.Completed {
		t.Fatalf("task = %s %+v", tk.Status, tk.Error)
	}
	t1, c1 := calls["t1"], calls["c1"]
	if t1.Status != store.ToolCallFailed || !strings.Contains(string(t1.Result), "interrupted by a worker restart and was not repeated") || t1.Restarts != 0 {
		t.Fatalf("interrupted call = %s %s, restarts %d", t1.Status, t1.Result, t1.Restarts)
	}
	if n := todo.n.Load(); n != 1 {
		t.Fatalf("todo add ran %d times, want 1 (on the worker that died)", n)
	}
	if c1.Status != store.ToolCallExecuted || c1.Restarts != 0 || f.calc.n.Load() != 1 {
		t.Fatalf("the call after it = %s, restarts %d, executions %d", c1.Status, c1.Restarts, f.calc.n.Load())
	}
	if got := toolResultsSent(f); len(got) != 2 || !strings.Contains(got[0], "not repeated") || got[1] != "c1=2+3 = 5" {
		t.Fatalf("tool results sent to the model: %q", got)
	}
}
