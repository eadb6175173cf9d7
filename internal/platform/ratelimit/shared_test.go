package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// countingBackend counts the decisions that reached the database.
type countingBackend struct {
	ratelimit.Backend
	calls atomic.Int64
}

func (b *countingBackend) RateLimitHit(ctx context.Context, key string, start, window int64, allow func(prev, curr uint64) bool) (uint64, uint64, bool, error) {
	b.calls.Add(1)
	return b.Backend.RateLimitHit(ctx, key, start, window, allow)
}

// TestSharedAcrossProcesses: two stores on one database (two processes) hammer one key from
// many goroutines; exactly the limit is allowed in the window, the refusals carry a wait, and
// once refused the limiters answer further refusals from memory.
func TestSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	twin := storetest.Twin(t, st)
	now := time.Date(2030, 1, 1, 12, 0, 10, 0, time.UTC)
	clock := func() time.Time { return now }
	backs := []*countingBackend{{Backend: st}, {Backend: twin}}
	lims := []*ratelimit.Shared{
		ratelimit.NewShared(backs[0], "test", 25, time.Minute, clock),
		ratelimit.NewShared(backs[1], "test", 25, time.Minute, clock),
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				ok, wait, err := lims[g%2].Check(context.Background(), "k")
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					allowed.Add(1)
				} else if wait < time.Second || wait > 2*time.Minute {
					t.Errorf("wait %s", wait)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 25 {
		t.Fatalf("allowed %d of 80, want 25", allowed.Load())
	}
	before := backs[0].calls.Load() + backs[1].calls.Load()
	for _, l := range lims {
		if ok, _, _ := l.Check(context.Background(), "k"); ok {
			t.Fatal("allowed past the limit")
		}
	}
	if after := backs[0].calls.Load() + backs[1].calls.Load(); after != before {
		t.Fatalf("refusals reached the database %d times", after-before)
	}
	// Another key and another name have their own budgets.
	if ok, _, _ := lims[0].Check(context.Background(), "other"); !ok {
		t.Fatal("other key refused")
	}
	if ok, _, _ := ratelimit.NewShared(st, "else", 1, time.Minute, clock).Check(context.Background(), "k"); !ok {
		t.Fatal("other name refused")
	}
	// Two windows later the key starts afresh; the expired windows are swept.
	now = now.Add(2 * time.Minute)
	if ok, _, err := lims[1].Check(context.Background(), "k"); !ok || err != nil {
		t.Fatalf("after two windows: %v %v", ok, err)
	}
	if n, err := st.DeleteRateLimitWindowsBefore(context.Background(), now); err != nil || n != 3 {
		t.Fatalf("swept %d, %v; want the 3 windows of the first minute", n, err)
	}
}

// TestSharedSlidingEstimate: the previous window's count weighs in as the in-memory limiter's
// does (a full window refuses early in the next one), and a long key is stored hashed.
func TestSharedSlidingEstimate(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	key := string(make([]byte, 300)) // beyond the stored key's length
	l := ratelimit.NewShared(st, "test", 4, time.Minute, clock)
	m := ratelimit.New(4, time.Minute, clock)
	for range 4 {
		if ok, _, err := l.Check(context.Background(), key); !ok || err != nil {
			t.Fatalf("refused within the limit: %v", err)
		}
		m.Allow(key)
	}
	for _, step := range []time.Duration{30 * time.Second, 30 * time.Second, 15 * time.Second, 15 * time.Second, 15 * time.Second} {
		now = now.Add(step)
		ok, wait, err := l.Check(context.Background(), key)
		mok, mwait := m.Allow(key)
		if err != nil || ok != mok || wait != mwait {
			t.Fatalf("at +%s: shared %v %s %v, in memory %v %s", step, ok, wait, err, mok, mwait)
		}
	}
}

// TestPendingFoldedIntoAWrite: an event left pending (Defer) and counted by a write's own
// transaction (store.LimitHit) is not counted again by Settle; one whose write failed before
// counting it is counted by Settle; a write refused by the verdict stores nothing, returns its
// refusal and leaves the counts it read for the refusals from memory.
func TestPendingFoldedIntoAWrite(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	now := time.Date(2030, 1, 1, 12, 0, 10, 0, time.UTC)
	back := &countingBackend{Backend: st}
	l := ratelimit.NewShared(back, "test", 2, time.Minute, func() time.Time { return now })
	ctx := context.Background()
	refused := errors.New("refused")
	hit := func(p *ratelimit.Pending) *store.LimitHit {
		return &store.LimitHit{Key: p.Key(), Start: p.Start(), Window: p.Window(), Allow: p.Decide,
			Refused: func() error { return refused }, Done: p.Done}
	}
	p, ok, _ := l.Defer("k")
	if !ok {
		t.Fatal("first event refused")
	}
	if err := st.CountLimitHit(ctx, hit(p)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := p.Settle(ctx); !ok || err != nil || back.calls.Load() != 0 {
		t.Fatalf("settle after the write: %v %v, %d decisions of its own", ok, err, back.calls.Load())
	}
	p, _, _ = l.Defer("k")
	p.Done(errors.New("the write failed before counting"))
	if ok, _, err := p.Settle(ctx); !ok || err != nil || back.calls.Load() != 1 {
		t.Fatalf("settle of an uncounted event: %v %v, %d decisions", ok, err, back.calls.Load())
	}
	if _, ok, wait := l.Defer("k"); ok || wait < time.Second {
		t.Fatalf("third event: ok %v wait %s; want refused from memory", ok, wait)
	}
	// Another process (no cached counts) takes the third event into a write: refused there.
	other := ratelimit.NewShared(st, "test", 2, time.Minute, func() time.Time { return now })
	p, ok, _ = other.Defer("k")
	if !ok {
		t.Fatal("refused from an empty cache")
	}
	if err := st.CountLimitHit(ctx, hit(p)); !errors.Is(err, refused) {
		t.Fatalf("write of a refused event: %v", err)
	}
	if ok, wait, err := p.Settle(ctx); ok || err != nil || wait < time.Second {
		t.Fatalf("settle of a refused event: %v %s %v", ok, wait, err)
	}
	if _, ok, _ := other.Defer("k"); ok {
		t.Fatal("the refusal's counts were not kept")
	}
}
