package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func i64(v int64) *int64 { return &v }

func TestModelCallCost(t *testing.T) {
	t.Parallel()
	p := store.LLMPrices{Input: i64(3_000_000), Output: i64(15_000_000), CachedInput: i64(300_000)}
	for _, c := range []struct {
		call store.ModelCall
		want int64
	}{
		{store.ModelCall{InputTokens: 1_000_000, OutputTokens: 1_000_000, Prices: p}, 18_000_000},
		// 1000 uncached at 3/M, 1000 cached at 0.3/M, 100 out at 15/M: 3000 + 300 + 1500 micro-units.
		{store.ModelCall{InputTokens: 2000, CachedInputTokens: 1000, OutputTokens: 100, Prices: p}, 4800},
		// One token at 3/M is 3 micro-units; a third of a micro-unit rounds up to one.
		{store.ModelCall{InputTokens: 1, Prices: store.LLMPrices{Input: i64(333_333)}}, 1},
		// Cached tokens without a cached price pay the input price.
		{store.ModelCall{InputTokens: 10, CachedInputTokens: 10, Prices: store.LLMPrices{Input: i64(1_000_000)}}, 10},
		{store.ModelCall{InputTokens: 500, OutputTokens: 500}, 0}, // not priced
		// Large counts and the largest price do not overflow.
		{store.ModelCall{InputTokens: 5_000_000, Prices: store.LLMPrices{Input: i64(1_000_000_000_000)}}, 5_000_000_000_000},
	} {
		if got := c.call.Cost(); got != c.want {
			t.Errorf("Cost(%+v) = %d, want %d", c.call, got, c.want)
		}
	}
}

// TestUsageLedgerAndRollup: a step's model call is written to the ledger and the daily rollup in
// the step's transaction; a step whose lease was lost writes neither; Usage groups the rollup.
func TestUsageLedgerAndRollup(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	a := f.claimOne(t, "w1")
	call := &store.ModelCall{LLMConfigID: 7, Model: "m1", InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 50,
		Prices: store.LLMPrices{Input: i64(2_000_000), Output: i64(10_000_000)}}
	if _, err := f.s.FinishStep(ctx, a.ID, "w1", store.StepOutcome{Status: taskstate.Running, InputTokens: 1000, OutputTokens: 50, Steps: 1, Call: call, Lease: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// A lost lease writes nothing (the ledger is in the step's transaction).
	if _, err := f.s.FinishStep(ctx, a.ID, "other", store.StepOutcome{Status: taskstate.Running, Call: call}); err == nil {
		t.Fatal("FinishStep under another worker succeeded")
	}
	f.clock.Advance(24 * time.Hour)
	answer := "done"
	if _, err := f.s.FinishStep(ctx, a.ID, "w1", store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1,
		Call: &store.ModelCall{Model: "m2", InputTokens: 10, OutputTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	// An invalid call report is refused before anything is written.
	b := f.claimOne(t, "w2")
	_, err := f.s.FinishStep(ctx, b.ID, "w2", store.StepOutcome{Status: taskstate.Running, Call: &store.ModelCall{Model: "m", InputTokens: 1, CachedInputTokens: 2}})
	wantErr(t, err, svcerr.ErrInvalid)

	day0, day1 := f.s.Day(t0), f.s.Day(t0.Add(24*time.Hour))
	rows, err := f.s.Usage(ctx, store.UsageQuery{From: day0, To: day1, GroupBy: []string{store.UsageByDay, store.UsageByModel}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	// 800 x 2 + 200 x 2 (no cached price) + 50 x 10 = 2500 micro-units.
	if len(rows) != 2 || *rows[0].Day != day0 || *rows[0].Model != "m1" || rows[0].Calls != 1 || rows[0].InputTokens != 1000 ||
		rows[0].CachedInputTokens != 200 || rows[0].OutputTokens != 50 || rows[0].Cost != 2500 ||
		*rows[1].Day != day1 || *rows[1].Model != "m2" || rows[1].Cost != 0 || rows[1].InputTokens != 10 {
		t.Fatalf("Usage by day and model = %+v", rows)
	}
	// The task's own calls, from the ledger.
	rows, err = f.s.Usage(ctx, store.UsageQuery{From: day0, To: day1, TaskID: &a.ID, All: true})
	if err != nil || len(rows) != 1 || rows[0].Calls != 2 || rows[0].InputTokens != 1010 || rows[0].Cost != 2500 {
		t.Fatalf("Usage of task = %+v, %v", rows, err)
	}
	// Visibility: another user sees nothing of it; the owner sees it by user.
	rows, err = f.s.Usage(ctx, store.UsageQuery{From: day0, To: day1, Viewer: f.other.ID})
	if err != nil || len(rows) != 0 {
		t.Fatalf("Usage of another user = %+v, %v", rows, err)
	}
	rows, err = f.s.Usage(ctx, store.UsageQuery{From: day0, To: day0, GroupBy: []string{store.UsageByUser, store.UsageByAgent, store.UsageByKey}, Viewer: f.user.ID})
	if err != nil || len(rows) != 1 || *rows[0].UserID != f.user.ID || *rows[0].AgentID != f.agent.ID || rows[0].KeyID != nil || rows[0].Calls != 1 {
		t.Fatalf("Usage of the owner = %+v, %v", rows, err)
	}
	_, err = f.s.Usage(ctx, store.UsageQuery{From: day0, To: day0, GroupBy: []string{"nope"}})
	wantErr(t, err, svcerr.ErrInvalid)
}

// TestUsageRollupShards: tasks running side by side for one user and agent add their calls to
// different rows of the day's rollup, so a step never waits for another task's step to commit
// (on MySQL and PostgreSQL a held row lock would stop it; SQLite has one writer anyway), and
// the readers still see one sum.
func TestUsageRollupShards(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	a, b := f.claimOne(t, "w1"), f.claimOne(t, "w2")
	call := store.ModelCall{Model: "m", InputTokens: 100, OutputTokens: 10}
	step := func(ctx context.Context, tk *store.Task, w string) error {
		c := call
		_, err := f.s.FinishStep(ctx, tk.ID, w, store.StepOutcome{Status: taskstate.Running, Steps: 1, Call: &c, Lease: time.Hour})
		return err
	}
	if err := step(ctx, a, "w1"); err != nil {
		t.Fatal(err)
	}
	if f.s.Dialect() != store.DialectSQLite {
		// Another task's step in flight: its transaction holds a's rollup row.
		tx := f.s.GormDBForTest().Begin()
		defer tx.Rollback()
		err := tx.Exec("UPDATE usage_daily SET calls = calls + 0 WHERE day = ? AND agent_id = ? AND principal_id = ? AND user_id = ? AND api_key_id = 0 AND llm_config_id = 0 AND model = ? AND shard = ?",
			f.s.Day(t0), f.agent.ID, f.agent.PrincipalID, f.user.ID, "m", a.ID%32).Error
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := step(short, b, "w2"); err != nil {
			t.Fatalf("a step beside another task's step in flight: %v", err)
		}
		tx.Rollback()
	} else if err := step(ctx, b, "w2"); err != nil {
		t.Fatal(err)
	}
	if err := step(ctx, b, "w2"); err != nil {
		t.Fatal(err)
	}
	var rollup int64
	if err := f.s.GormDBForTest().Raw("SELECT COUNT(*) FROM usage_daily").Scan(&rollup).Error; err != nil || rollup != 2 {
		t.Fatalf("rollup rows = %d, %v; want one per task", rollup, err)
	}
	day := f.s.Day(t0)
	rows, err := f.s.Usage(ctx, store.UsageQuery{From: day, To: day, GroupBy: []string{store.UsageByAgent}, All: true})
	if err != nil || len(rows) != 1 || rows[0].Calls != 3 || rows[0].InputTokens != 300 || rows[0].OutputTokens != 30 {
		t.Fatalf("Usage by agent = %+v, %v", rows, err)
	}
}

func TestPeriodBounds(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	// Saturday 2026-11-28 23:30 UTC is Sunday 00:30 in Paris.
	now := time.Date(2026, 11, 28, 23, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		period     string
		start, end string
	}{
		{store.BudgetPeriodDay, "2026-11-29T00:00:00+01:00", "2026-11-30T00:00:00+01:00"},
		{store.BudgetPeriodWeek, "2026-11-23T00:00:00+01:00", "2026-11-30T00:00:00+01:00"},
		{store.BudgetPeriodMonth, "2026-11-01T00:00:00+01:00", "2026-12-01T00:00:00+01:00"},
	} {
		s, e := store.PeriodBounds(c.period, now, paris)
		if s.Format(time.RFC3339) != c.start || e.Format(time.RFC3339) != c.end {
			t.Errorf("PeriodBounds(%s) = %s, %s; want %s, %s", c.period, s.Format(time.RFC3339), e.Format(time.RFC3339), c.start, c.end)
		}
	}
}

// TestBudgets: CRUD rules, and a budget's use in its period from the rollup by scope.
func TestBudgets(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t)
	ctx := context.Background()
	g := storetest.Group(t, f.s, f.user)
	ga := storetest.Agent(t, f.s, g.PrincipalID)

	_, err := f.s.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeUser, ScopeID: f.user.ID, Period: store.BudgetPeriodDay})
	wantErr(t, err, svcerr.ErrInvalid) // no limit
	if has, err := f.s.HasBudgets(ctx); err != nil || has {
		t.Fatalf("HasBudgets before any = %v, %v", has, err)
	}
	v0, err := f.s.ConfigVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ub, err := f.s.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeUser, ScopeID: f.user.ID, Period: store.BudgetPeriodDay, LimitTokens: i64(100)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.s.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeUser, ScopeID: f.user.ID, Period: store.BudgetPeriodDay, LimitCost: i64(1)})
	wantErr(t, err, svcerr.ErrConflict)
	gb, err := f.s.CreateBudget(ctx, store.Budget{ScopeKind: store.BudgetScopeGroup, ScopeID: g.ID, Period: store.BudgetPeriodMonth, LimitCost: i64(1000)})
	if err != nil {
		t.Fatal(err)
	}
	// A budget is part of the step's configuration: setting one moves the version the loops'
	// caches check, so every process sees HasBudgets turn true.
	if v1, err := f.s.ConfigVersion(ctx); err != nil || v1 == v0 {
		t.Fatalf("config version after a budget = %d (before %d), %v", v1, v0, err)
	}
	if has, err := f.s.HasBudgets(ctx); err != nil || !has {
		t.Fatalf("HasBudgets = %v, %v", has, err)
	}

	tk := storetest.Task(t, f.s, ga, f.user.ID)
	if _, err := f.s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	sc := store.BudgetScope{UserID: f.user.ID, AgentID: ga.ID, PrincipalID: g.PrincipalID}
	uses, err := f.s.BudgetsFor(ctx, sc)
	if err != nil || len(uses) != 2 || uses[0].Exceeded() || uses[1].Exceeded() {
		t.Fatalf("BudgetsFor before use = %+v, %v", uses, err)
	}
	_, err = f.s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Running, Call: &store.ModelCall{Model: "m",
		InputTokens: 90, OutputTokens: 10, Prices: store.LLMPrices{Input: i64(1_000_000_000), Output: i64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	uses, err = f.s.BudgetsFor(ctx, sc)
	if err != nil || len(uses) != 2 {
		t.Fatalf("BudgetsFor = %+v, %v", uses, err)
	}
	if u := uses[0]; u.ID != ub.ID || u.SpentTokens != 100 || !u.Exceeded() {
		t.Fatalf("user budget use = %+v", u)
	}
	if u := uses[1]; u.ID != gb.ID || u.SpentCost != 90_001 || !u.Exceeded() {
		t.Fatalf("group budget use = %+v", u)
	}
	// Another user's scope is not limited by them.
	uses, err = f.s.BudgetsFor(ctx, store.BudgetScope{UserID: f.other.ID, AgentID: f.agent.ID, PrincipalID: f.user.PrincipalID})
	if err != nil || len(uses) != 0 {
		t.Fatalf("BudgetsFor(other) = %+v, %v", uses, err)
	}
	// The next day the daily budget starts again; the monthly one does not.
	f.clock.Advance(24 * time.Hour)
	uses, _ = f.s.BudgetsFor(ctx, sc)
	if uses[0].Exceeded() || uses[0].SpentTokens != 0 || !uses[1].Exceeded() {
		t.Fatalf("BudgetsFor next day = %+v", uses)
	}
	// The soft threshold notifies the group's owner (its only manager) once per period.
	for i, want := range []int{1, 0} {
		if n, err := f.s.NotifyBudgetThreshold(ctx, uses[1], "Budget", "80 %"); err != nil || n != want {
			t.Fatalf("NotifyBudgetThreshold #%d = %d, %v; want %d", i, n, err, want)
		}
	}
	ns, err := f.s.Notifications(ctx, store.NotificationQuery{UserID: f.user.ID, PerPage: 10, Page: 1})
	if err != nil || len(ns) != 1 || ns[0].Kind != store.NotificationKindBudgetThreshold || ns[0].Body != "80 %" {
		t.Fatalf("notifications = %+v, %v", ns, err)
	}
	gb.LimitCost = i64(200_000)
	if got, err := f.s.UpdateBudget(ctx, *gb); err != nil || *got.LimitCost != 200_000 {
		t.Fatalf("UpdateBudget = %+v, %v", got, err)
	}
	if err := f.s.DeleteBudget(ctx, ub.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.s.DeleteBudget(ctx, ub.ID), svcerr.ErrNotFound)
	list, err := f.s.Budgets(ctx, "", 0)
	if err != nil || len(list) != 1 || list[0].ID != gb.ID {
		t.Fatalf("Budgets = %+v, %v", list, err)
	}
}
