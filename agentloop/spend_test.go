package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/jobs/worker"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestBudgetStopsModelCalls: each model call is recorded in the ledger with the configuration's
// prices; once the agent's budget is used up, the next step fails BUDGET_EXCEEDED before calling
// the model, naming the budget and its reset.
func TestBudgetStopsModelCalls(t *testing.T) {
	t.Parallel()
	in, out := int64(1_000_000), int64(2_000_000)
	turn := func(id string) llm.ScriptTurn {
		return llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{calcCall(id, "1+1")}, Usage: &llm.Usage{InputTokens: 40, OutputTokens: 10}}
	}
	f := newFixture(t, []llm.ScriptTurn{turn("c1"), turn("c2"), turn("c3"), {Text: "done"}}, store.AgentFields{}, true,
		looptest.WithLLMConfig(func(c *store.LLMConfig) { c.Prices = store.LLMPrices{Input: &in, Output: &out} }))
	ctx := context.Background()
	limit, soft := int64(100), 50
	b, err := f.Store.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeAgent, ScopeID: f.Agent.ID, Period: store.BudgetPeriodDay,
		LimitTokens: &limit, SoftPercent: &soft})
	if err != nil {
		t.Fatal(err)
	}
	tk := f.NewTask("compute", 10)
	f.Drain()
	got := f.Task(tk.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeBudgetExceeded {
		t.Fatalf("task = %s %+v", got.Status, got.Error)
	}
	if !strings.Contains(got.Error.Message, "budget ") || !strings.Contains(got.Error.Message, "resets at ") {
		t.Fatalf("error message %q names neither the budget nor its reset", got.Error.Message)
	}
	if be, ok := got.Data["budget_exceeded"].(map[string]any); !ok || fmt.Sprint(be["budget_id"]) != fmt.Sprint(b.ID) || be["resets_at"] == "" {
		t.Fatalf("task data = %v", got.Data)
	}
	if n := len(f.Rec.Requests()); n != 2 {
		t.Fatalf("model called %d times, want 2 (the third step is over budget)", n)
	}
	// The soft threshold (50 tokens, after the first call) told the agent's group owner once.
	ns, err := f.Store.Notifications(ctx, store.NotificationQuery{UserID: f.User.ID, Page: 1, PerPage: 10})
	if err != nil || len(ns) != 1 || ns[0].Kind != store.NotificationKindBudgetThreshold || !strings.Contains(ns[0].Body, "50 tokens of 100") {
		t.Fatalf("notifications = %+v, %v", ns, err)
	}
	day := f.Store.Day(got.CreatedAt)
	rows, err := f.Store.Usage(ctx, store.UsageQuery{From: day, To: day, TaskID: &tk.ID, All: true})
	// 80 input tokens at 1.00/M and 20 output at 2.00/M: 80 + 40 micro-units.
	if err != nil || len(rows) != 1 || rows[0].Calls != 2 || rows[0].InputTokens != 80 || rows[0].OutputTokens != 20 || rows[0].Cost != 120 {
		t.Fatalf("ledger of the task = %+v, %v", rows, err)
	}
}

// TestBudgetAcrossTwoProcesses: two daemons, each with its own store (connection pool) and one
// worker, on ONE database — as two server processes would — race tasks of one agent to its
// budget. Each checks the budget before a model call and records the call with its step, so the
// budget is overshot by at most one model call per process (docs/reliability.md).
func TestBudgetAcrossTwoProcesses(t *testing.T) {
	t.Parallel()
	const perCall, limit = 10, 100
	sts := storetest.NewShared(t, 2)
	seed := seedAgent(t, sts[0])
	lim := int64(limit)
	if _, err := sts[0].CreateBudget(context.Background(), store.Budget{ScopeKind: store.BudgetScopeAgent, ScopeID: seed.agent.ID,
		Period: store.BudgetPeriodDay, LimitTokens: &lim}); err != nil {
		t.Fatal(err)
	}
	var turns []llm.ScriptTurn
	for i := range 30 {
		turns = append(turns, llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{calcCall(fmt.Sprintf("c%d", i), "1+1")},
			Usage: &llm.Usage{InputTokens: perCall - 2, OutputTokens: 2}})
	}
	turns = append(turns, llm.ScriptTurn{Text: "done"})
	tasks := make([]*store.Task, 0, 6)
	for i := range 6 {
		tasks = append(tasks, storetest.Task(t, sts[0], seed.agent, seed.user.ID, func(nt *store.NewTask) {
			nt.Prompt, nt.MaxSteps = fmt.Sprintf("task %d", i), 50
		}))
	}
	var calls atomic.Int64
	var finished atomic.Int64
	done := make(chan struct{})
	daemons := make([]*worker.Daemon[*store.Task], 2)
	for i, wid := range []string{"host-a:1:1", "host-b:2:2"} {
		loop := newWorkerLoop(t, sts[i], turns, func(llm.Request) {
			calls.Add(1)
			time.Sleep(2 * time.Millisecond) // a model call takes time: both processes are in one at once
		})
		d := newDaemon(sts[i], loop, wid, 1, true, func(int64) {
			if finished.Add(1) == int64(len(tasks)) {
				close(done)
			}
		})
		d.Poll = 5 * time.Millisecond
		daemons[i] = d
	}
	ctx := context.Background()
	for _, d := range daemons {
		d.Start(ctx)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Errorf("only %d of %d runs returned within 2 minutes", finished.Load(), len(tasks))
	}
	for _, d := range daemons {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := d.Stop(stopCtx); err != nil {
			t.Error(err)
		}
		cancel()
	}
	for _, tk := range tasks {
		got, err := sts[1].Task(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeBudgetExceeded {
			t.Errorf("task %d: %s %+v, want FAILED BUDGET_EXCEEDED", tk.ID, got.Status, got.Error)
		}
	}
	day := sts[0].Day(time.Now())
	rows, err := sts[0].Usage(ctx, store.UsageQuery{From: day, To: day, All: true})
	if err != nil || len(rows) != 1 {
		t.Fatalf("usage = %+v, %v", rows, err)
	}
	spent := rows[0].InputTokens + rows[0].OutputTokens
	t.Logf("%s: %d model calls, %d tokens spent of %d", sts[0].Dialect(), calls.Load(), spent, limit)
	if spent < limit || spent > limit+2*perCall {
		t.Fatalf("spent %d tokens: want the limit %d reached and overshot by at most one call per process (%d)", spent, limit, limit+2*perCall)
	}
	if rows[0].Calls != calls.Load() {
		t.Fatalf("ledger has %d calls, the model answered %d", rows[0].Calls, calls.Load())
	}
}
