package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/outbox"
	"github.com/agentsvc/svc/internal/testkit"
)

// queue is an in-memory outbox: items are ints, claimed in order, each once.
type queue struct {
	mu        sync.Mutex
	items     []int
	delivered []int
	claims    int
}

func (q *queue) add(n ...int) { q.mu.Lock(); q.items = append(q.items, n...); q.mu.Unlock() }

func (q *queue) claim(_ context.Context, _ string, limit int, _ time.Duration) ([]int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims++
	n := min(limit, len(q.items))
	out := append([]int(nil), q.items[:n]...)
	q.items = q.items[n:]
	return out, nil
}

func (q *queue) deliver(_ context.Context, item int) {
	q.mu.Lock()
	q.delivered = append(q.delivered, item)
	q.mu.Unlock()
}

func (q *queue) count() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.delivered) }

func TestDrainTakesEveryDueBatch(t *testing.T) {
	t.Parallel()
	q := &queue{}
	for i := range 60 {
		q.add(i)
	}
	l := &outbox.Loop[int]{Name: "test", Claim: q.claim, Deliver: q.deliver, BatchSize: 25, Concurrency: 3}
	n, err := l.Drain(context.Background())
	if err != nil || n != 60 || q.count() != 60 || q.claims != 4 {
		t.Fatalf("Drain = %d, %v; delivered %d in %d claims", n, err, q.count(), q.claims)
	}
}

// TestNotifyWakesTheLoop: an idle loop waits on its poll timer; Notify delivers at once
// without the clock moving, the poll delivers once the clock reaches it, and Stop ends it.
func TestNotifyWakesTheLoop(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q := &queue{}
	l := &outbox.Loop[int]{Name: "test", Claim: q.claim, Deliver: q.deliver, Clock: clock, Poll: time.Minute}
	l.Start(context.Background())
	clock.WaitForTimers(t, 1)
	q.add(1)
	l.Notify()
	waitFor(t, func() bool { return q.count() == 1 })
	clock.WaitForTimers(t, 1)
	q.add(2)
	clock.Advance(time.Minute)
	waitFor(t, func() bool { return q.count() == 2 })
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
