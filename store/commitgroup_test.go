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
	round := func(lost int) ([]error, storetest.Counts) {
		t.Helper()
		ids := claimTasks(t, s, a, u.ID, n)
		before := f.Counts()
		errs := finishTogether(t, s, f, ids, func(i int) string {
			if i == lost {
				return "someone else"
			}
			return "w"
		}, nil)
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
	if calls := usageCalls(t, s); calls != 2*n-1 {
		t.Fatalf("%d model calls recorded, want %d", calls, 2*n-1)
	}
}

// TestGroupSendsItsHeldWritesTogether: on MySQL/MariaDB the steps of a commit group send their
// blind writes (ledger, rollup, events) in one text at the group's end, one round trip a group,
// and groups run on one lane;
// elsewhere each step sends its own (PostgreSQL one WITH a step; SQLite holds none). A step
// whose status event collides with a row written under it fails alone, and the other steps of
// its group are recorded as they would be alone.
func TestGroupSendsItsHeldWritesTogether(t *testing.T) {
	t.Parallel()
	s, f := storetest.NewCounted(t)
	ctx := context.Background()
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	const n = 16
	var mu sync.Mutex
	var texts []string
	ledgerTexts := func(q string) {
		if strings.Contains(q, "INSERT INTO usage_ledger") {
			mu.Lock()
			texts = append(texts, q)
			mu.Unlock()
		}
	}

	ids := claimTasks(t, s, a, u.ID, n)
	before := f.Counts()
	for i, err := range finishTogether(t, s, f, ids, func(int) string { return "w" }, ledgerTexts) {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	txs := f.Counts().Sub(before).WriteTxs
	ledgers := 0
	for _, q := range texts {
		ledgers += strings.Count(q, "INSERT INTO usage_ledger")
	}
	if ledgers != n {
		t.Fatalf("%d ledger rows sent for %d steps", ledgers, n)
	}
	if s.Dialect() == store.DialectMySQL {
		if int64(len(texts)) != txs || len(texts) >= n {
			t.Fatalf("%d steps in %d transactions sent %d texts of held writes; want one a transaction", n, txs, len(texts))
		}
		// One lane: the steps that arrive while the first one's group runs wait for it and go
		// together (a straggler may make a third group); four lanes took five transactions.
		if txs > 3 {
			t.Fatalf("%d steps at once took %d transactions; MySQL/MariaDB groups run on one lane", n, txs)
		}
	} else if len(texts) != n {
		t.Fatalf("%d steps sent %d ledger statements; want one a step", n, len(texts))
	}
	t.Logf("%d steps in %d transactions: %d texts of held writes", n, txs, len(texts))
	if calls := usageCalls(t, s); calls != n {
		t.Fatalf("%d model calls recorded, want %d", calls, n)
	}

	// Past the bound on its held text a group sends it at the end of the step that crossed it.
	s.SetMaxGroupHeldForTest(1)
	ids = claimTasks(t, s, a, u.ID, n)
	texts = nil
	for i, err := range finishTogether(t, s, f, ids, func(int) string { return "w" }, ledgerTexts) {
		if err != nil {
			t.Fatalf("step %d (bounded): %v", i, err)
		}
	}
	if len(texts) != n {
		t.Fatalf("with a one-byte bound %d steps sent %d texts of held writes; want one a step", n, len(texts))
	}
	if calls := usageCalls(t, s); calls != 2*n {
		t.Fatalf("%d model calls recorded, want %d", calls, 2*n)
	}
	s.SetMaxGroupHeldForTest(1 << 20) // the default bound again: the collision below fails the group's text

	ids = claimTasks(t, s, a, u.ID, n)
	const lost = 3
	evs, err := s.TaskEvents(ctx, ids[lost], 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.GormDBForTest().Exec("INSERT INTO task_events (task_id, sequence, type, data, created_at) VALUES (?, ?, ?, ?, ?)",
		ids[lost], evs[len(evs)-1].Sequence+1, store.EventStatus, `{"status":"RUNNING"}`, time.Now()).Error; err != nil {
		t.Fatal(err)
	}
	errs := finishTogether(t, s, f, ids, func(int) string { return "w" }, nil)
	for i, id := range ids {
		tk, err := s.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if i == lost {
			if errs[i] == nil || tk.Status != taskstate.Running || tk.StepsUsed != 0 {
				t.Fatalf("the colliding step: %v; task %s, %d steps", errs[i], tk.Status, tk.StepsUsed)
			}
		} else if errs[i] != nil || tk.Status != taskstate.Completed || tk.StepsUsed != 1 {
			t.Fatalf("step %d beside the colliding one: %v; task %s, %d steps", i, errs[i], tk.Status, tk.StepsUsed)
		}
	}
	if calls := usageCalls(t, s); calls != 3*n-1 {
		t.Fatalf("%d model calls recorded, want %d", calls, 3*n-1)
	}
}

// claimTasks queues n tasks of agent a for user userID and claims them for worker "w".
func claimTasks(t *testing.T, s *store.Store, a *store.Agent, userID int64, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = storetest.Task(t, s, a, userID).ID
	}
	if got, err := s.ClaimQueued(context.Background(), "w", time.Minute, n); err != nil || len(got) != n {
		t.Fatalf("ClaimQueued = %d tasks, %v", len(got), err)
	}
	return ids
}

// finishTogether completes the step of each task of ids at once (answer "done", one model
// call) as worker(i), and returns each step's error. The first step's transaction waits at its
// first UPDATE until every step has been asked for, so that the others wait for its commit
// together; also, when set, is told every statement too.
func finishTogether(t *testing.T, s *store.Store, f *storetest.Faults, ids []int64, worker func(i int) string, also func(q string)) []error {
	t.Helper()
	var asked sync.WaitGroup
	asked.Add(len(ids))
	var gate sync.Once
	f.Trace(func(q string) {
		if also != nil {
			also(q)
		}
		if strings.HasPrefix(strings.TrimSpace(strings.ToUpper(q)), "UPDATE") {
			gate.Do(func() { asked.Wait(); time.Sleep(20 * time.Millisecond) })
		}
	})
	defer f.Trace(nil)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer := "done"
			asked.Done()
			_, errs[i] = s.FinishStep(context.Background(), id, worker(i), store.StepOutcome{Status: taskstate.Completed,
				Answer: &answer, Steps: 1, Call: &store.ModelCall{Model: "m", InputTokens: 1, OutputTokens: 1}})
		}()
	}
	wg.Wait()
	return errs
}

// usageCalls is how many model calls today's usage holds.
func usageCalls(t *testing.T, s *store.Store) int64 {
	t.Helper()
	day := s.Day(time.Now())
	rows, err := s.Usage(context.Background(), store.UsageQuery{From: day, To: day, All: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, r := range rows {
		calls += r.Calls
	}
	return calls
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
			ids := claimTasks(t, s, a, u.ID, n)
			// The commit after the first step's, which the others wait for, is refused.
			var arm sync.Once
			errs := finishTogether(t, s, f, ids, func(int) string { return "w" }, func(q string) {
				if q == "COMMIT" {
					arm.Do(func() { f.FailCommits(1, c.fault) })
				}
			})
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
			if calls := usageCalls(t, s); calls != int64(done) {
				t.Fatalf("%d model calls recorded, want %d", calls, done)
			}
		})
	}
}

// TestGroupLingersUnderLoad: on SQLite, after a group of several writes, the next leader waits
// for more writes than that group held (up to the linger) and commits them in one transaction;
// after a lone write, a write does not wait.
func TestGroupLingersUnderLoad(t *testing.T) {
	t.Parallel()
	s, f := storetest.NewCounted(t)
	if s.Dialect() != store.DialectSQLite {
		t.Skip("only SQLite's one lane lingers")
	}
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	ids := claimTasks(t, s, a, u.ID, 4)
	finish := func(id int64) <-chan error {
		done := make(chan error, 1)
		go func() {
			answer := "done"
			_, err := s.FinishStep(context.Background(), id, "w", store.StepOutcome{Status: taskstate.Completed,
				Answer: &answer, Steps: 1, Call: &store.ModelCall{Model: "m", InputTokens: 1, OutputTokens: 1}})
			done <- err
		}()
		return done
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %s within 10 s", what)
			}
		}
	}

	// The last group held two writes: the next leader waits for a third, however long it
	// takes within the linger (a minute here), and commits the three together.
	s.SetCommitLingerForTest(time.Minute, 2)
	start, before := time.Now(), f.Counts()
	first := finish(ids[0])
	waitFor("lingering leader", s.LingeringForTest)
	second := finish(ids[1])
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-first:
		t.Fatalf("the leader committed (%v) with two writes pending, want it to wait for a third", err)
	default:
	}
	third := finish(ids[2])
	for i, done := range []<-chan error{first, second, third} {
		if err := <-done; err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if n := f.Counts().Sub(before).WriteTxs; n != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("three writes under a load took %d write transactions in %s, want one, well within the linger", n, time.Since(start))
	}

	// After a lone write, a write commits at once.
	s.SetCommitLingerForTest(time.Minute, 1)
	start = time.Now()
	if err := <-finish(ids[3]); err != nil || time.Since(start) > 30*time.Second {
		t.Fatalf("a write after a lone one: %v after %s, want it at once", err, time.Since(start))
	}
}
