package agentloop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// repeatedIDs is a model that asks for two calls under one id.
type repeatedIDs struct{ call llm.ToolCall }

func (r repeatedIDs) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{ToolCalls: []llm.ToolCall{r.call, r.call}, StopReason: llm.StopToolUse}, nil
}

// TestAssistantTurnAndItsCallsAreOneWrite: when the rows of a turn's calls cannot be written
// (here the model repeated a call id), the turn is not written either: no assistant turn is
// left whose calls have no row (the model would be told they produced no result).
func TestAssistantTurnAndItsCallsAreOneWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, store.AgentFields{}, true)
	args := []byte(`{"expression": "1+1"}`)
	f.Rec.Driver = repeatedIDs{llm.ToolCall{ID: "c1", Name: "calculator", Arguments: args}}
	task := f.NewTask("x", 10)
	f.Drain()
	ctx := context.Background()
	msgs, err := f.Store.Messages(ctx, task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := f.Store.ToolCalls(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, c := range calls {
		rows[c.ProviderCallID] = true
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if !rows[c.ProviderCallID] {
				t.Fatalf("turn %d requests %s, which has no row", m.Sequence, c.ProviderCallID)
			}
		}
	}
	// Each failed step handed the task back counting a recovery; past the limit it fails.
	got := f.Task(task.ID)
	if got.Status != taskstate.Failed || got.Error == nil || got.Error.Code != taskstate.CodeOrphaned || f.calc.n.Load() != 0 {
		t.Fatalf("task = %s %+v, executions %d", got.Status, got.Error, f.calc.n.Load())
	}
}

// TestStopHandsTheTaskBack: a stop seen at a step boundary hands the task back (QUEUED, lease
// cleared, no recovery counted) after the step in flight finished; the next worker resumes it
// without running the finished step's call again.
func TestStopHandsTheTaskBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{ToolCalls: []llm.ScriptToolCall{calcCall("c1", "2+3")}}, {Text: "5"}}, store.AgentFields{}, true)
	stop := make(chan struct{})
	f.Rec.Driver = &hookDriver{d: f.Rec.Driver, before: func(context.Context, llm.Request) error {
		select {
		case <-stop:
		default:
			close(stop) // the shutdown begins during the first model call
		}
		return nil
	}}
	task := f.NewTask("x", 10)
	ctx := context.Background()
	claimed := claimOne(t, f.Store, "w1", time.Minute)
	f.Loop.Run(ctx, stop, claimed, "w1")
	got := f.Task(task.ID)
	if got.Status != taskstate.Queued || got.LeaseOwner != nil || got.LeaseExpiresAt != nil || got.Recoveries != 0 || got.StepsUsed != 1 || f.calc.n.Load() != 1 {
		t.Fatalf("handed back = %+v, executions %d", got, f.calc.n.Load())
	}
	f.Drain()
	if got := f.Task(task.ID); got.Status != taskstate.Completed || f.calc.n.Load() != 1 {
		t.Fatalf("resumed = %s, executions %d", got.Status, f.calc.n.Load())
	}
}

// TestCancelledStepIsHandedBack: a step cancelled mid-way (the shutdown could not wait) does not
// fail the task: it goes back to the queue with one recovery counted.
func TestCancelledStepIsHandedBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []llm.ScriptTurn{{Text: "done"}}, store.AgentFields{}, true)
	ctx, cancel := context.WithCancel(context.Background())
	f.Rec.Driver = &hookDriver{d: f.Rec.Driver, before: func(ctx context.Context, _ llm.Request) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	task := f.NewTask("x", 10)
	claimed := claimOne(t, f.Store, "w1", time.Minute)
	f.Loop.Run(ctx, nil, claimed, "w1")
	if got := f.Task(task.ID); got.Status != taskstate.Queued || got.Error != nil || got.Recoveries != 1 || got.LeaseOwner != nil {
		t.Fatalf("cancelled step left %+v", got)
	}
}

// TestHeartbeatKeepsTheLeaseOfALongStep: while a model call runs past the lease, the heartbeat
// extends it every third of a lease, so the step's writes are still accepted when it ends.
func TestHeartbeatKeepsTheLeaseOfALongStep(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC))
	f := newFixture(t, []llm.ScriptTurn{{Text: "done"}}, store.AgentFields{}, true, looptest.WithClock(clock.Now))
	f.Loop.Lease, f.Loop.Clock = 3*time.Minute, clock
	inModel, release := make(chan struct{}), make(chan struct{})
	f.Rec.Driver = &hookDriver{d: f.Rec.Driver, before: func(context.Context, llm.Request) error {
		close(inModel)
		<-release
		return nil
	}}
	task := f.NewTask("x", 10)
	ctx := context.Background()
	claimed := claimOne(t, f.Store, "w1", f.Loop.Lease)
	done := make(chan struct{})
	go func() { defer close(done); f.Loop.Run(ctx, nil, claimed, "w1") }()
	<-inModel
	for range 4 { // four minutes: past the claim's lease of three
		clock.WaitForTimers(t, 1)
		clock.Advance(time.Minute)
	}
	clock.WaitForTimers(t, 1) // the fourth extension was written: the heartbeat waits again
	if got := f.Task(task.ID); got.LeaseExpiresAt == nil || !got.LeaseExpiresAt.Equal(clock.Now().Add(f.Loop.Lease)) {
		t.Fatalf("lease = %v at %v", got.LeaseExpiresAt, clock.Now())
	}
	close(release)
	<-done
	if got := f.Task(task.ID); got.Status != taskstate.Completed {
		t.Fatalf("task = %s after a step longer than its first lease", got.Status)
	}
}

// TestBusyDatabaseNeverStrandsATask: when the writes of a step fail because the database is
// busy (SQLite's "database is locked", MySQL's lock wait timeout) and so do the first attempts
// to hand the task back, the hand-back is tried again until it lands: the task is QUEUED with
// its lease cleared (no recovery counted: the database, not the task, failed) and the next
// claim completes it. It never stays RUNNING under a lease nobody renews.
func TestBusyDatabaseNeverStrandsATask(t *testing.T) {
	t.Parallel()
	st, faults := storetest.NewFaulty(t)
	seed := seedAgent(t, st)
	var once sync.Once
	loop := newWorkerLoop(t, st, []llm.ScriptTurn{{Text: "done"}, {Text: "done"}}, func(llm.Request) {
		once.Do(func() { faults.FailWrites(true) }) // the database turns busy during the first model call
	})
	task := seed.createTasks(t, st, "busy", 1)[0]
	ctx := context.Background()
	claimed := claimOne(t, st, "w1", time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Run(ctx, nil, claimed, "w1")
	}()
	// The step's write failed, then two attempts to hand the task back; the database recovers.
	deadline := time.Now().Add(10 * time.Second)
	for faults.Failed() < 3 && time.Now().Before(deadline) {
		select {
		case <-done:
			deadline = time.Now() // Run gave up already
		case <-time.After(5 * time.Millisecond):
		}
	}
	faults.FailWrites(false)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	got, err := st.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != taskstate.Queued || got.LeaseOwner != nil || got.LeaseExpiresAt != nil || got.Recoveries != 0 {
		t.Fatalf("after the busy step: %s lease %v until %v, recoveries %d (failed writes %d)",
			got.Status, got.LeaseOwner, got.LeaseExpiresAt, got.Recoveries, faults.Failed())
	}
	claimed = claimOne(t, st, "w2", time.Minute)
	loop.Run(ctx, nil, claimed, "w2")
	if got, _ = st.Task(ctx, task.ID); got.Status != taskstate.Completed {
		t.Fatalf("after the second claim: %s", got.Status)
	}
}
