package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestStatementsPreparedOnce pins that statements run inside transactions (every statement of
// a task's claim and steps) are prepared once per connection and kept, not compiled again on
// every run: database/sql re-prepares a statement first prepared inside a transaction each time
// another transaction uses it, which is what GORM's own statement cache did.
func TestStatementsPreparedOnce(t *testing.T) {
	t.Parallel()
	s, f := storetest.NewCounted(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	cycle := func(i int) {
		t.Helper()
		tk := storetest.Task(t, s, a, u.ID)
		w := fmt.Sprintf("w%d", i)
		got, err := s.ClaimQueued(ctx, w, time.Minute, 1)
		if err != nil || len(got) != 1 || got[0].ID != tk.ID {
			t.Fatalf("claim = %v, %v", got, err)
		}
		answer := "done"
		if _, err := s.FinishStep(ctx, tk.ID, w, store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up: the first runs prepare (in the background when first met inside a transaction).
	for i := range 5 {
		cycle(i)
	}
	time.Sleep(50 * time.Millisecond)
	before := f.Counts()
	const runs = 40
	for i := range runs {
		cycle(100 + i)
	}
	got := f.Counts().Sub(before)
	perRun := float64(got.Statements) / runs
	t.Logf("%d runs: %d statements, %d prepares", runs, got.Statements, got.Prepares)
	if perRun < 5 {
		t.Fatalf("a cycle ran %.1f statements; the test expects a create, a claim and a step (≥ 5)", perRun)
	}
	// A statement is prepared again only on a connection that has not run it yet: a cycle's
	// statements once for each connection the pool opens meanwhile (a few on a loaded machine,
	// where background reads hold one: 20 prepares on PostgreSQL in a full make test beside a
	// benchmark), at most five connections' worth here, where compiling on every run prepares
	// each statement run.
	if got.Prepares > int64(5*perRun) {
		t.Fatalf("%d prepares for %d statements in %d runs: statements are compiled again on every run", got.Prepares, got.Statements, runs)
	}
}
