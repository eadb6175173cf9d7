package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestGroupCommit: steps of many tasks finishing at once share commits, and a step whose lease
// was lost in such a group fails alone while the others are recorded as they would be alone.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s, f := storetest.NewCounted(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	const n = 16
	round := func(lost int) (map[int]error, storetest.Counts) {
		t.Helper()
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = storetest.Task(t, s, a, u.ID).ID
		}
		got, err := s.ClaimQueued(ctx, "w", time.Minute, n)
		if err != nil || len(got) != n {
			t.Fatalf("ClaimQueued = %d tasks, %v", len(got), err)
		}
		// The first step's transaction waits until every step has been asked for, so that the
		// others wait for its commit together.
		var asked sync.WaitGroup
		asked.Add(n)
		var once sync.Once
		f.Trace(func(q string) {
			if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(q)), "UPDATE") {
				once.Do(func() { asked.Wait(); time.Sleep(20 * time.Millisecond) })
			}
		})
		defer f.Trace(nil)
		before := f.Counts()
		errs := make(map[int]error)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker, answer := "w", "done"
				if i == lost {
					worker = "someone else"
				}
				asked.Done()
				_, err := s.FinishStep(ctx, id, worker, store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1,
					Call: &store.ModelCall{Model: "m", InputTokens: 1, OutputTokens: 1}})
				mu.Lock()
				errs[i] = err
				mu.Unlock()
			}()
		}
		wg.Wait()
		for i, id := range ids {
			tk, err := s.Task(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := taskstate.Completed; i == lost {
				want = taskstate.Running
				if tk.Status != want {
					t.Errorf("task %d (lease lost) is %s, want %s", i, tk.Status, want)
				}
			} else if tk.Status != want || tk.Answer == nil || *tk.Answer != "done" {
				t.Errorf("task %d is %s (%v), want %s", i, tk.Status, tk.Answer, want)
			}
		}
		return errs, f.Counts().Sub(before)
	}

	errs, counts := round(-1)
	for i, err := range errs {
		if err != nil {
			t.Errorf("step %d: %v", i, err)
		}
	}
	if counts.WriteTxs >= n {
		t.Errorf("%d steps finishing at once took %d write transactions; want them grouped", n, counts.WriteTxs)
	}
	t.Logf("%d steps at once: %d write transactions", n, counts.WriteTxs)

	errs, _ = round(3)
	for i, err := range errs {
		if i == 3 {
			if !errors.Is(err, svcerr.ErrInvalidState) {
				t.Errorf("the step of a lost lease: %v, want ErrInvalidState", err)
			}
		} else if err != nil {
			t.Errorf("step %d beside a lost lease: %v", i, err)
		}
	}
	// The usage of the steps that committed, and only theirs, is recorded.
	day := s.Day(time.Now())
	rows, err := s.Usage(ctx, store.UsageQuery{From: day, To: day, All: true})
	if err != nil || len(rows) != 1 || rows[0].Calls != 2*n-1 {
		t.Fatalf("usage = %+v, %v; want %d calls", rows, err, 2*n-1)
	}
}

// TestGroupRunsInKeyOrder: the writes that waited while every lane was busy run in one group in
// the order of their keys, not of their arrival, so that two lanes' groups take shared rows (a
// step's rollup shard) in one order and cannot deadlock on them.
func TestGroupRunsInKeyOrder(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := context.Background()
	// Every lane busy with a write that waits for its release.
	lanes := s.CommitLanesForTest()
	entered, release := make(chan struct{}, lanes), make([]chan struct{}, lanes)
	var busy sync.WaitGroup
	for i := range lanes {
		release[i] = make(chan struct{})
		busy.Add(1)
		go func() {
			defer busy.Done()
			err := s.GroupTxForTest(ctx, 0, func(*gorm.DB) error {
				entered <- struct{}{}
				<-release[i]
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		<-entered // alone on a lane of its own, before the next one asks
	}
	type ran struct {
		group any // the group's transaction
		key   int64
	}
	var mu sync.Mutex
	var order []ran
	keys := []int64{5, 1, 3, 1, 4}
	var writes sync.WaitGroup
	for i, key := range keys {
		writes.Add(1)
		go func() {
			defer writes.Done()
			err := s.GroupTxForTest(ctx, key, func(tx *gorm.DB) error {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, ran{tx.Statement.ConnPool, key})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		for s.WaitingWritesForTest() != i+1 { // arrived, in this order
			time.Sleep(time.Millisecond)
		}
	}
	close(release[0]) // one lane frees: the first waiting write leads all of them
	writes.Wait()
	for _, r := range release[1:] {
		close(r)
	}
	busy.Wait()
	got := make([]int64, len(order))
	for i, r := range order {
		got[i] = r.key
		if r.group != order[0].group {
			t.Fatalf("the waiting writes ran in more than one transaction: %+v", order)
		}
	}
	if want := []int64{1, 1, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("the group ran its writes in the key order %v, want %v", got, want)
	}
}

// TestGroupCommitFails: when the commit of a group fails, its writes are neither lost nor
// recorded twice: each runs again alone (a write that commits alone sees its own commit's
// error, as before group commit). The commit after the first step's is refused; on SQLite (one
// lane) that is the group's, whose steps all succeed; with several lanes it may be another lone
// step's, which fails with nothing recorded.
func TestGroupCommitFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault storetest.Fault
	}{{"busy", storetest.FaultBusy}, {"disk full", storetest.FaultFull}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, f := storetest.NewCounted(t)
			ctx := context.Background()
			u := storetest.User(t, s)
			a := storetest.Agent(t, s, u.PrincipalID)
			const n = 8
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = storetest.Task(t, s, a, u.ID).ID
			}
			if got, err := s.ClaimQueued(ctx, "w", time.Minute, n); err != nil || len(got) != n {
				t.Fatalf("ClaimQueued = %d tasks, %v", len(got), err)
			}
			// The first step's transaction waits until every step has been asked for, so that the
			// others form a group behind it; the commit after its own is refused.
			var asked sync.WaitGroup
			asked.Add(n)
			var gate, arm sync.Once
			f.Trace(func(q string) {
				switch strings.TrimSpace(strings.ToUpper(q)) {
				case "COMMIT":
					arm.Do(func() { f.FailCommits(1, c.fault) })
				default:
					if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(q)), "UPDATE") {
						gate.Do(func() { asked.Wait(); time.Sleep(20 * time.Millisecond) })
					}
				}
			})
			defer f.Trace(nil)
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answer := "done"
					asked.Done()
					_, errs[i] = s.FinishStep(ctx, id, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer, Steps: 1,
						Call: &store.ModelCall{Model: "m", InputTokens: 1, OutputTokens: 1}})
				}()
			}
			wg.Wait()
			if f.Failed() != 1 {
				t.Fatalf("%d commits refused, want 1", f.Failed())
			}
			done := 0
			for i, id := range ids {
				tk, err := s.Task(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case errs[i] == nil && tk.Status == taskstate.Completed && tk.StepsUsed == 1:
					done++
				case errs[i] != nil && s.Dialect() != store.DialectSQLite && tk.Status == taskstate.Running && tk.StepsUsed == 0:
				default:
					t.Fatalf("step %d: %v; task %s, %d steps", i, errs[i], tk.Status, tk.StepsUsed)
				}
			}
			if done < n-1 {
				t.Fatalf("%d of %d steps recorded", done, n)
			}
			day := s.Day(time.Now())
			rows, err := s.Usage(ctx, store.UsageQuery{From: day, To: day, All: true})
			if err != nil || len(rows) != 1 || rows[0].Calls != int64(done) {
				t.Fatalf("usage = %+v, %v; want %d calls", rows, err, done)
			}
		})
	}
}
