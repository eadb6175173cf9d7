package ratelimit_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/ratelimit"
	"github.com/agentsvc/svc/internal/testkit"
)

func newClock() *testkit.Clock {
	// Deliberately not aligned to a minute: windows start at a key's first event.
	return testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 7, 123_000_000, time.UTC))
}

func allowN(t *testing.T, l *ratelimit.Limiter, key string, n int) {
	t.Helper()
	for i := range n {
		if ok, ra := l.Allow(key); !ok {
			t.Fatalf("event %d of %d for %q refused (retryAfter %s)", i+1, n, key, ra)
		}
	}
}

func expectRefused(t *testing.T, l *ratelimit.Limiter, key string, wantRetry time.Duration) {
	t.Helper()
	ok, ra := l.Allow(key)
	if ok {
		t.Fatalf("event for %q allowed, want refused", key)
	}
	if ra != wantRetry {
		t.Fatalf("retryAfter = %s, want %s", ra, wantRetry)
	}
}

func TestLimitReached(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(3, time.Minute, clk.Now)
	allowN(t, l, "k", 3)
	for range 5 {
		ok, ra := l.Allow("k")
		if ok {
			t.Fatal("event over the limit allowed")
		}
		if ra <= 0 || ra%time.Second != 0 {
			t.Fatalf("retryAfter = %s, want a positive whole number of seconds", ra)
		}
	}
	clk.Advance(30 * time.Second)
	if ok, _ := l.Allow("k"); ok {
		t.Fatal("allowed again within the same window")
	}
}

func TestRetryAfterIsExactAndHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		limit     int
		window    time.Duration
		setup     func(*testing.T, *ratelimit.Limiter, *testkit.Clock)
		wantRetry time.Duration
		exact     time.Duration // earliest instant (after setup) an event is allowed again
	}{
		{
			// Current window full: wait for it to end (60 s) plus one event's share of the
			// next (60/3 = 20 s) while the previous count decays.
			name: "current window full", limit: 3, window: time.Minute,
			setup:     func(t *testing.T, l *ratelimit.Limiter, _ *testkit.Clock) { allowN(t, l, "k", 3) },
			wantRetry: 80 * time.Second, exact: 80 * time.Second,
		},
		{
			// Previous window full, new window empty: 4*(60-t)/60 + 1 <= 4 needs t >= 15 s.
			name: "previous window decaying", limit: 4, window: time.Minute,
			setup: func(t *testing.T, l *ratelimit.Limiter, c *testkit.Clock) {
				allowN(t, l, "k", 4)
				c.Advance(time.Minute)
			},
			wantRetry: 15 * time.Second, exact: 15 * time.Second,
		},
		{
			// 10 s + ceil(10 s / 7) = 11.428571429 s, rounded up to whole seconds.
			name: "rounded up to whole seconds", limit: 7, window: 10 * time.Second,
			setup:     func(t *testing.T, l *ratelimit.Limiter, _ *testkit.Clock) { allowN(t, l, "k", 7) },
			wantRetry: 12 * time.Second, exact: 11*time.Second + 428_571_429,
		},
		{
			// 10*(1-t)/1 + 1 <= 10 needs t >= 0.1 s: reported as the 1 s minimum.
			name: "at least one second", limit: 10, window: time.Second,
			setup: func(t *testing.T, l *ratelimit.Limiter, c *testkit.Clock) {
				allowN(t, l, "k", 10)
				c.Advance(time.Second)
			},
			wantRetry: time.Second, exact: 100 * time.Millisecond,
		},
		{
			// A limit of one waits out the full next window.
			name: "limit one", limit: 1, window: time.Minute,
			setup: func(t *testing.T, l *ratelimit.Limiter, c *testkit.Clock) {
				allowN(t, l, "k", 1)
				c.Advance(20 * time.Second)
			},
			wantRetry: 100 * time.Second, exact: 100 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			l := ratelimit.New(tt.limit, tt.window, clk.Now)
			tt.setup(t, l, clk)
			expectRefused(t, l, "k", tt.wantRetry)

			// One nanosecond early is still refused; the exact instant is allowed.
			clk.Advance(tt.exact - time.Nanosecond)
			if ok, _ := l.Allow("k"); ok {
				t.Fatalf("allowed %s before the computed instant", time.Nanosecond)
			}
			clk.Advance(time.Nanosecond)
			if ok, ra := l.Allow("k"); !ok {
				t.Fatalf("refused at the computed instant (retryAfter %s)", ra)
			}
		})
	}
}

func TestRetryAfterIsAlwaysEnough(t *testing.T) {
	t.Parallel()
	// Whatever the history, waiting retryAfter must make the next event pass.
	for _, limit := range []int{1, 2, 3, 5, 10, 60} {
		clk := newClock()
		l := ratelimit.New(limit, time.Minute, clk.Now)
		for step := range 400 {
			ok, ra := l.Allow("k")
			if !ok {
				clk.Advance(ra)
				if ok2, ra2 := l.Allow("k"); !ok2 {
					t.Fatalf("limit %d step %d: refused again after waiting %s (now %s)", limit, step, ra, ra2)
				}
			}
			clk.Advance(time.Duration(step%7) * 700 * time.Millisecond)
		}
	}
}

func TestWindowRollover(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(2, time.Minute, clk.Now)
	allowN(t, l, "k", 2)
	expectRefused(t, l, "k", 90*time.Second)

	// One window later the previous window still weighs fully: nothing is allowed yet.
	clk.Advance(time.Minute)
	if ok, _ := l.Allow("k"); ok {
		t.Fatal("allowed right at the rollover although the last minute was full")
	}
	// Halfway through, half of the previous count has decayed: one event fits (1 + 1 <= 2).
	clk.Advance(30 * time.Second)
	allowN(t, l, "k", 1)
	if ok, _ := l.Allow("k"); ok {
		t.Fatal("second event allowed while the previous window still weighs one")
	}
	// Two idle windows later the full limit is available again.
	clk.Advance(2 * time.Minute)
	allowN(t, l, "k", 2)
	if ok, _ := l.Allow("k"); ok {
		t.Fatal("over the limit after a full reset")
	}
}

func TestNoBurstAcrossWindowBoundary(t *testing.T) {
	t.Parallel()
	// A fixed window would allow 2*limit around a boundary; the sliding estimate does not.
	clk := newClock()
	l := ratelimit.New(10, time.Minute, clk.Now)
	clk.Advance(0)
	allowN(t, l, "k", 1)
	clk.Advance(59 * time.Second)
	allowN(t, l, "k", 9)
	clk.Advance(2 * time.Second) // just past the boundary
	allowed := 0
	for range 20 {
		if ok, _ := l.Allow("k"); ok {
			allowed++
		}
	}
	if allowed > 1 {
		t.Fatalf("%d events allowed right after the boundary, want at most 1", allowed)
	}
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(2, time.Minute, clk.Now)
	allowN(t, l, "alice", 2)
	if ok, _ := l.Allow("alice"); ok {
		t.Fatal("alice over the limit allowed")
	}
	allowN(t, l, "bob", 2)
	allowN(t, l, "", 2)
	if ok, _ := l.Allow("bob"); ok {
		t.Fatal("bob over the limit allowed")
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(2, time.Minute, clk.Now)
	allowN(t, l, "a", 2)
	allowN(t, l, "b", 2)
	l.Reset("a")
	l.Reset("never-seen")
	allowN(t, l, "a", 2)
	if ok, _ := l.Allow("b"); ok {
		t.Fatal("Reset of a affected b")
	}
}

func TestPruning(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(1, time.Minute, clk.Now)
	const n = 2000
	for i := range n {
		allowN(t, l, fmt.Sprintf("old-%d", i), 1)
	}
	allowN(t, l, "busy", 1)
	if got := l.Len(); got != n+1 {
		t.Fatalf("Len = %d, want %d", got, n+1)
	}

	// "busy" keeps acting; the old keys go idle for two windows.
	clk.Advance(70 * time.Second)
	if ok, _ := l.Allow("busy"); ok { // still weighed by its previous window
		t.Fatal("busy allowed too early")
	}
	clk.Advance(70 * time.Second)
	allowN(t, l, "busy", 1)

	// Touch every shard with new keys so each runs its sweep.
	for i := range n {
		allowN(t, l, fmt.Sprintf("new-%d", i), 1)
	}
	if got := l.Len(); got != n+1 {
		t.Fatalf("Len after pruning = %d, want %d (new keys + busy)", got, n+1)
	}
	// The kept key still carries its history.
	if ok, _ := l.Allow("busy"); ok {
		t.Fatal("busy lost its count during pruning")
	}
	// A pruned key starts afresh.
	allowN(t, l, "old-1", 1)
}

func TestClockGoingBackwards(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := ratelimit.New(2, time.Minute, clk.Now)
	allowN(t, l, "k", 2)
	clk.Advance(-time.Hour)
	ok, ra := l.Allow("k")
	if ok {
		t.Fatal("allowed over the limit after the clock went back")
	}
	if ra < time.Second {
		t.Fatalf("retryAfter = %s", ra)
	}
}

func TestNewPanicsOnInvalidArguments(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {1, 0}, {1, -time.Second}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d, %s) did not panic", tt.limit, tt.window)
				}
			}()
			ratelimit.New(tt.limit, tt.window, nil)
		}()
	}
}

func TestNilClockUsesTimeNow(t *testing.T) {
	t.Parallel()
	l := ratelimit.New(1, time.Hour, nil)
	allowN(t, l, "k", 1)
	if ok, ra := l.Allow("k"); ok || ra < 59*time.Minute {
		t.Fatalf("Allow = %v, %s", ok, ra)
	}
}

func TestHugeLimitAndWindow(t *testing.T) {
	t.Parallel()
	// limit*window far beyond int64 nanoseconds: the comparison must not overflow.
	clk := newClock()
	l := ratelimit.New(1<<40, 365*24*time.Hour, clk.Now)
	allowN(t, l, "k", 1000)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	clk := newClock()
	const limit, keys, workers, perWorker = 50, 8, 16, 200
	l := ratelimit.New(limit, time.Minute, clk.Now)
	var allowed [keys]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				k := (w + i) % keys
				if ok, _ := l.Allow(fmt.Sprintf("key-%d", k)); ok {
					allowed[k].Add(1)
				}
				if i%50 == 0 {
					l.Len()
				}
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		if got := allowed[k].Load(); got != limit {
			t.Errorf("key-%d: %d events allowed, want exactly %d", k, got, limit)
		}
	}
}

func BenchmarkAllow(b *testing.B) {
	l := ratelimit.New(1_000_000, time.Minute, nil)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = fmt.Sprintf("agent-key-%d|203.0.113.%d", i, i%256)
	}
	var seq atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := seq.Add(1) * 7919
		for pb.Next() {
			l.Allow(keys[i%uint64(len(keys))])
			i++
		}
	})
}
