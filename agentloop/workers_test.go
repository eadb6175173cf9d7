package agentloop_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// seeded is the owner and agent that tasks of the worker tests and benchmarks run under.
type seeded struct {
	user  *store.User
	agent *store.Agent
}

// seedAgent creates a user, a group with a default scripted model configuration, and an agent.
func seedAgent(tb testing.TB, st *store.Store) seeded {
	tb.Helper()
	u := storetest.User(tb, st)
	g := storetest.Group(tb, st, u)
	storetest.LLMConfig(tb, st, g.ID)
	return seeded{user: u, agent: storetest.Agent(tb, st, g.PrincipalID)}
}

func (s seeded) createTasks(tb testing.TB, st *store.Store, prefix string, n int) []*store.Task {
	tb.Helper()
	out := make([]*store.Task, 0, n)
	for i := range n {
		out = append(out, storetest.Task(tb, st, s.agent, s.user.ID, func(nt *store.NewTask) { nt.Prompt = fmt.Sprintf("%s %d", prefix, i) }))
	}
	return out
}

// hookDriver calls before (when set) ahead of every model turn of the wrapped driver; an error
// from it is the turn's.
type hookDriver struct {
	d      llm.Driver
	before func(ctx context.Context, req llm.Request) error
}

func (h *hookDriver) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if h.before != nil {
		if err := h.before(ctx, req); err != nil {
			return nil, err
		}
	}
	return h.d.Complete(ctx, req)
}

// newWorkerLoop builds a loop over st with the core tools (calculator enabled) and a scripted
// model; before runs ahead of each model turn.
func newWorkerLoop(tb testing.TB, st *store.Store, turns []llm.ScriptTurn, before func(llm.Request)) *agentloop.Loop {
	tb.Helper()
	reg := tools.NewRegistry()
	if err := core.Register(reg); err != nil {
		tb.Fatal(err)
	}
	scripted, err := llm.NewScripted(turns)
	if err != nil {
		tb.Fatal(err)
	}
	board := &agentloop.TodoBoard{}
	drv := &hookDriver{d: scripted}
	if before != nil {
		drv.before = func(_ context.Context, req llm.Request) error { before(req); return nil }
	}
	states := map[string]tools.ToolState{"core.CalculatorTool": {Enabled: true}}
	return &agentloop.Loop{
		Store: st, Registry: reg, CacheConfig: true, Executors: core.Executors(core.Deps{Todos: board, SubAgents: agentloop.SubAgents{Store: st}}), Lease: time.Hour, Todos: board,
		ToolStates: func(context.Context, int64) (map[string]tools.ToolState, error) { return states, nil },
		Driver:     func(*store.LLMConfig) (llm.Driver, error) { return drv, nil },
	}
}

// newDaemon wires a daemon the way server/runtime.go does (Claim through the store, Run
// through the loop), except that a finished run wakes the claimer when notify is set.
// after, when set, is told each task whose run returned.
func newDaemon(st *store.Store, loop *agentloop.Loop, workerID string, maxWorkers int, notify bool, after func(id int64)) *worker.Daemon[*store.Task] {
	d := &worker.Daemon[*store.Task]{MaxWorkers: maxWorkers}
	d.Claim = func(ctx context.Context, n int) ([]*store.Task, error) {
		ts, err := st.ClaimQueued(ctx, workerID, loop.Lease, n)
		out := make([]*store.Task, len(ts))
		for i := range ts {
			out[i] = &ts[i]
		}
		return out, err
	}
	d.Run = func(ctx context.Context, stop <-chan struct{}, t *store.Task) {
		loop.Run(ctx, stop, t, workerID)
		if after != nil {
			after(t.ID)
		}
		if notify {
			d.Notify()
		}
	}
	return d
}

// TestTwoDaemonsNeverShareATask runs two daemons, each with its own store (connection pool),
// loop and worker id, on ONE database — as two server processes would — over 60 queued
// two-step tasks, and checks that every task completed, that each was run by exactly one
// worker, and that no task's run intervals of different workers overlap.
func TestTwoDaemonsNeverShareATask(t *testing.T) {
	t.Parallel()
	const n = 60
	sts := storetest.NewShared(t, 2)
	seed := seedAgent(t, sts[0])
	tasks := seed.createTasks(t, sts[0], "task", n)
	byPrompt := map[string]int64{}
	for _, tk := range tasks {
		byPrompt[tk.Prompt] = tk.ID
	}

	type span struct {
		worker     string
		start, end time.Time
	}
	var (
		mu    sync.Mutex
		steps = map[int64][]string{} // task -> worker of each model turn
		runs  = map[int64][]span{}   // task -> Run intervals
	)
	turns := []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "6*7")}}, {Text: "42"}}
	workers := []string{"host-a:1:1", "host-b:2:2"}
	var finished atomic.Int64
	done := make(chan struct{})
	daemons := make([]*worker.Daemon[*store.Task], len(workers))
	for i, wid := range workers {
		loop := newWorkerLoop(t, sts[i], turns, func(req llm.Request) {
			id := byPrompt[req.Messages[0].Text]
			mu.Lock()
			steps[id] = append(steps[id], wid)
			mu.Unlock()
			time.Sleep(time.Millisecond) // widen the window in which a second runner would show
		})
		d := newDaemon(sts[i], loop, wid, 2, true, nil)
		run := d.Run
		d.Run = func(ctx context.Context, stop <-chan struct{}, t *store.Task) {
			start := time.Now()
			run(ctx, stop, t)
			mu.Lock()
			runs[t.ID] = append(runs[t.ID], span{worker: wid, start: start, end: time.Now()})
			mu.Unlock()
			if finished.Add(1) == n {
				close(done)
			}
		}
		d.Poll = 10 * time.Millisecond
		daemons[i] = d
	}
	ctx := context.Background()
	for _, d := range daemons {
		d.Start(ctx)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Errorf("only %d of %d runs returned within 2 minutes", finished.Load(), n)
	}
	for _, d := range daemons {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := d.Stop(stopCtx); err != nil {
			t.Error(err)
		}
		cancel()
	}

	mu.Lock()
	defer mu.Unlock()
	perWorker := map[string]int{}
	for _, tk := range tasks {
		got, err := sts[1].Task(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "42" || got.StepsUsed != 2 {
			t.Errorf("task %d: %s answer %v steps %d, want COMPLETED 42 in 2 steps", tk.ID, got.Status, got.Answer, got.StepsUsed)
		}
		rs := runs[tk.ID]
		if len(rs) != 1 {
			t.Errorf("task %d was run %d times (%v), want once", tk.ID, len(rs), rs)
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			if rs[i].worker != rs[i-1].worker && rs[i].start.Before(rs[i-1].end) {
				t.Errorf("task %d run by %s and %s at once", tk.ID, rs[i-1].worker, rs[i].worker)
			}
		}
		if len(steps[tk.ID]) != 2 {
			t.Errorf("task %d: %d model turns, want 2", tk.ID, len(steps[tk.ID]))
		}
		for _, w := range steps[tk.ID] {
			if len(rs) > 0 && w != rs[0].worker {
				t.Errorf("task %d: a step ran on %s, its run on %s", tk.ID, w, rs[0].worker)
			}
		}
		if len(rs) > 0 {
			perWorker[rs[0].worker]++
		}
	}
	t.Logf("%s: tasks per worker %v", sts[0].Dialect(), perWorker)
	for _, w := range workers {
		if perWorker[w] == 0 {
			t.Errorf("worker %s ran no task (%v): the test did not exercise two claimers", w, perWorker)
		}
	}
}

// TestStaleWriterOnOtherStoreFails: a worker process that does not hold a task's lease cannot
// tick it or write its step, even through its own connection pool.
func TestStaleWriterOnOtherStoreFails(t *testing.T) {
	t.Parallel()
	sts := storetest.NewShared(t, 2)
	seed := seedAgent(t, sts[0])
	tk := seed.createTasks(t, sts[0], "lease", 1)[0]
	ctx := context.Background()
	if claimed, err := sts[0].ClaimQueued(ctx, "host-a", time.Minute, 5); err != nil || len(claimed) != 1 {
		t.Fatalf("claim by a: %v %d", err, len(claimed))
	}
	if claimed, err := sts[1].ClaimQueued(ctx, "host-b", time.Minute, 5); err != nil || len(claimed) != 0 {
		t.Fatalf("claim by b: %v %d, want nothing left", err, len(claimed))
	}
	loopB := newWorkerLoop(t, sts[1], []llm.ScriptTurn{{Text: "stolen"}}, nil)
	if _, err := loopB.Tick(ctx, tk.ID, "host-b"); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("tick by b: %v, want ErrInvalidState", err)
	}
	answer := "stolen"
	if _, err := sts[1].FinishStep(ctx, tk.ID, "host-b", store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("finish step by b: %v, want ErrInvalidState", err)
	}
	got, err := sts[0].Task(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != taskstate.Running || got.StepsUsed != 0 || got.Answer != nil || got.LeaseOwner == nil || *got.LeaseOwner != "host-a" {
		t.Fatalf("after refused writes: %s steps %d answer %v owner %v", got.Status, got.StepsUsed, got.Answer, got.LeaseOwner)
	}
}
