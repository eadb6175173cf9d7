package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

func TestDaemonDrainsWithBoundedConcurrency(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 40}
	var inFlight, peak, done atomic.Int64
	seen := sync.Map{}
	d := &Daemon{
		Claim:      q.claim,
		MaxWorkers: 3,
		Poll:       5 * time.Millisecond,
		Run: func(_ context.Context, id int64) {
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
			time.Sleep(time.Millisecond) // hold the slot so runs overlap
			inFlight.Add(-1)
			done.Add(1)
		},
	}
	d.Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for done.Load() < 40 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if done.Load() != 40 {
		t.Fatalf("ran %d of 40 tasks", done.Load())
	}
	if peak.Load() > 3 {
		t.Fatalf("peak concurrency %d exceeds MaxWorkers 3", peak.Load())
	}
}

// TestStopWaitsForInFlightRuns: Stop cancels the run's stop context and returns only after the
// run returned.
func TestStopWaitsForInFlightRuns(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{last: 1}
	started := make(chan struct{})
	var finished atomic.Bool
	d := &Daemon{
		Claim: q.claim,
		Poll:  5 * time.Millisecond,
		Run: func(stop context.Context, _ int64) {
			close(started)
			<-stop.Done() // a step boundary notices the stop
			finished.Store(true)
		},
	}
	d.Start(context.Background())
	<-started
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Stop returned before the in-flight run finished")
	}
}

func TestReaperRunsAndNotifyWakes(t *testing.T) {
	t.Parallel()
	var reaps atomic.Int64
	var claims atomic.Int64
	d := &Daemon{
		Claim:     func(context.Context, int) ([]int64, error) { claims.Add(1); return nil, nil },
		Run:       func(context.Context, int64) {},
		Reap:      func(context.Context) error { reaps.Add(1); return nil },
		Poll:      time.Hour, // only Notify can wake it
		ReapEvery: time.Hour,
	}
	d.Start(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for claims.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	d.Notify()
	for claims.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if claims.Load() < 2 || reaps.Load() != 1 {
		t.Fatalf("claims %d (want ≥2 after Notify), reaps %d (want 1)", claims.Load(), reaps.Load())
	}
}
