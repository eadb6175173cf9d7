package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// fakeQueue hands out ids 1..n once each.
type fakeQueue struct {
	mu   sync.Mutex
	next int64
	last int64
}

func (q *fakeQueue) claim(_ context.Context, n int) ([]int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []int64
	for len(ids) < n && q.next < q.last {
		q.next++
		ids = append(ids, q.next)
	}
	return ids, nil
}

// TestDaemonDrainsWithBoundedConcurrency: the first three runs hold their slots until all three
// run at once; a fourth run meanwhile would exceed MaxWorkers. The clock never moves, so the
// queue drains only through the wake-ups of freed slots.
func TestDaemonDrainsWithBoundedConcurrency(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 40}
	var inFlight, peak, finished atomic.Int64
	seen := sync.Map{}
	three, done := make(chan struct{}), make(chan struct{})
	var threeOnce sync.Once // three in flight happens again later, once the first three returned
	d := &Daemon[int64]{
		Claim:      q.claim,
		MaxWorkers: 3,
		Clock:      testkit.NewClock(t0),
		Run: func(_ context.Context, _ <-chan struct{}, id int64) {
			if _, dup := seen.LoadOrStore(id, true); dup {
				t.Errorf("task %d run twice", id)
			}
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == 3 {
				threeOnce.Do(func() { close(three) })
			}
			if id <= 3 {
				<-three
			}
			inFlight.Add(-1)
			if finished.Add(1) == 40 {
				close(done)
			}
		},
	}
	d.Start(context.Background())
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("ran %d of 40 tasks", finished.Load())
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency %d, want MaxWorkers 3", peak.Load())
	}
}

// TestStopWaitsForInFlightRuns: Stop closes the runs' stop channel and returns only after the
// run returned (a step boundary sees the stop; the step still has work to finish first).
func TestStopWaitsForInFlightRuns(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 1}
	started, sawStop, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	d := &Daemon[int64]{
		Claim: q.claim,
		Clock: testkit.NewClock(t0),
		Run: func(ctx context.Context, stop <-chan struct{}, _ int64) {
			close(started)
			<-stop
			close(sawStop)
			<-release
			if ctx.Err() != nil {
				t.Error("the run's context ended although Stop's had not")
			}
			finished.Store(true)
		},
	}
	d.Start(context.Background())
	<-started
	errc := make(chan error, 1)
	go func() { errc <- d.Stop(context.Background()) }()
	<-sawStop
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Stop returned before the in-flight run finished")
	}
}

// TestStopCancelsStepsPastItsContext: when Stop's context ends with a run in flight, the run's
// context is cancelled (its step fails and hands the task back), Stop waits for it and reports
// the timeout.
func TestStopCancelsStepsPastItsContext(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 1}
	started := make(chan struct{})
	var cancelled atomic.Bool
	d := &Daemon[int64]{
		Claim: q.claim,
		Clock: testkit.NewClock(t0),
		Run: func(ctx context.Context, _ <-chan struct{}, _ int64) {
			close(started)
			<-ctx.Done() // a step that would run for ever
			cancelled.Store(true)
		},
	}
	d.Start(context.Background())
	<-started
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	err := d.Stop(expired)
	if err == nil || !strings.Contains(err.Error(), "handed back") {
		t.Fatalf("Stop = %v, want the timeout reported", err)
	}
	if !cancelled.Load() {
		t.Fatal("Stop returned before the cancelled run returned")
	}
}

// TestChoresAndNotify: the chores run at start and again once ChoresEvery elapsed on the clock;
// an idle daemon claims again on Notify and on the poll.
func TestChoresAndNotify(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(t0)
	claims, chores := make(chan struct{}, 10), make(chan time.Time, 10)
	d := &Daemon[int64]{
		Claim:       func(context.Context, int) ([]int64, error) { claims <- struct{}{}; return nil, nil },
		Run:         func(context.Context, <-chan struct{}, int64) {},
		Chores:      func(context.Context) error { chores <- clock.Now(); return nil },
		Clock:       clock,
		Poll:        time.Second,
		ChoresEvery: time.Minute,
	}
	d.Start(context.Background())
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	if at := <-chores; !at.Equal(t0) {
		t.Fatalf("first chores at %v, want at start", at)
	}
	<-claims
	d.Notify()
	<-claims
	for range 59 { // each poll claims once; the chores wait for the minute
		clock.WaitForTimers(t, 2) // the poll and the chores
		clock.Advance(time.Second)
		<-claims
	}
	if len(chores) != 0 {
		t.Fatalf("chores ran again before a minute passed (at %v)", <-chores)
	}
	clock.WaitForTimers(t, 2)
	clock.Advance(time.Second)
	if at := <-chores; !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("second chores at %v, want a minute after start", at)
	}
	<-claims
}

// TestNoClaimOnceStopBegan: once Stop began, the claimer never claims again, not even when a
// run that finishes its step frees a slot and wakes it (issue 23: a worker kept claiming while
// its process stopped). The wiring that calls Stop at the signal is checked against the real
// binary by server.TestOperationsDrill.
func TestNoClaimOnceStopBegan(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 10}
	var stopping atomic.Bool
	var after atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	d := &Daemon[int64]{
		Claim: func(ctx context.Context, n int) ([]int64, error) {
			if stopping.Load() {
				after.Add(1)
			}
			return q.claim(ctx, n)
		},
		MaxWorkers: 1,
		Clock:      testkit.NewClock(t0),
		Run: func(_ context.Context, stop <-chan struct{}, _ int64) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-stop
			<-release // the step finishes after the stop began, freeing the slot
		},
	}
	d.Start(context.Background())
	<-started
	stopping.Store(true)
	errc := make(chan error, 1)
	go func() { errc <- d.Stop(context.Background()) }()
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := after.Load(); n != 0 {
		t.Fatalf("%d claims after Stop began", n)
	}
}

// TestHaltEndsClaimingWithoutWaitingForRuns: Halt returns while two runs still hold their
// slots, the claim loop has ended by then (LastPoll is zero), and the slots those runs free
// afterwards, each with its wake-up, are not claimed again; Stop then waits for the runs.
func TestHaltEndsClaimingWithoutWaitingForRuns(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 10}
	var halted atomic.Bool
	var after atomic.Int64
	started, release := make(chan struct{}, 2), make(chan struct{})
	d := &Daemon[int64]{
		Claim: func(ctx context.Context, n int) ([]int64, error) {
			if halted.Load() {
				after.Add(1)
			}
			return q.claim(ctx, n)
		},
		MaxWorkers: 2,
		Clock:      testkit.NewClock(t0),
		Run: func(context.Context, <-chan struct{}, int64) {
			started <- struct{}{}
			<-release
		},
	}
	d.Start(context.Background())
	<-started
	<-started
	done := make(chan struct{})
	go func() { d.Halt(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Halt waited for the runs")
	}
	halted.Store(true)
	if !d.LastPoll().IsZero() {
		t.Fatal("the claim loop still runs after Halt returned")
	}
	close(release)
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := after.Load(); n != 0 {
		t.Fatalf("%d claims after Halt", n)
	}
	if len(started) != 0 {
		t.Fatalf("%d runs started after Halt", len(started))
	}
}

// TestClaimLingerGathersWakeUps: with ClaimLinger set, a wake-up does not claim until the
// linger has passed on the clock, and the wake-ups that arrive meanwhile go in that one claim.
func TestClaimLingerGathersWakeUps(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(t0)
	claims := make(chan int, 10)
	d := &Daemon[int64]{
		Claim:       func(_ context.Context, n int) ([]int64, error) { claims <- n; return nil, nil },
		Run:         func(context.Context, <-chan struct{}, int64) {},
		Clock:       clock,
		Poll:        time.Hour,
		ClaimLinger: 10 * time.Millisecond,
		MaxWorkers:  4,
	}
	d.Start(context.Background())
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	<-claims // at start
	quiet := func(what string) {
		t.Helper()
		select {
		case <-claims:
			t.Fatalf("claimed %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for range 3 {
		d.Notify()
	}
	quiet("before the linger passed")
	clock.WaitForTimers(t, 1)
	clock.Advance(10 * time.Millisecond)
	if n := <-claims; n != 4 {
		t.Fatalf("claimed %d, want the 4 free slots", n)
	}
	quiet("again for the wake-ups the linger gathered")
}
