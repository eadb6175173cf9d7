package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Checker is what the gates ask: may key act now? retryAfter (whole seconds, at least one) comes
// with a refusal; err is a failure to decide (the shared limiter's database), never a refusal.
// *Limiter (one process) and *Shared (every process on one database) satisfy it.
type Checker interface {
	Check(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// Check is Allow for the Checker interface; it never fails.
func (l *Limiter) Check(_ context.Context, key string) (bool, time.Duration, error) {
	ok, wait := l.Allow(key)
	return ok, wait, nil
}

// Backend keeps the shared windows: store.(*Store).RateLimitHit.
type Backend interface {
	// RateLimitHit records one event of key in the fixed window starting at start (Unix
	// milliseconds, window milliseconds long) if allow, called with the count of the window
	// before (prev) and of this one without the event (curr) under a lock that no other caller
	// of the key can pass until the decision is stored, says so. It returns the counts after
	// the decision and allow's verdict.
	RateLimitHit(ctx context.Context, key string, start, window int64, allow func(prev, curr uint64) bool) (prev, curr uint64, ok bool, err error)
}

// maxKeyLen is the longest key stored as it is; longer ones are stored as their SHA-256.
const maxKeyLen = 160

// sharedCacheKeys caps the refusal cache of a Shared limiter; it is emptied when full.
const sharedCacheKeys = 1 << 16

// Shared is the sliding-window estimate of Limiter over fixed windows kept in the database, so
// every process on it shares one budget per key: at most limit events in any window across all
// of them. Windows are aligned on the Unix epoch (each process reads its own clock, so clock
// skew between processes blurs a boundary by the skew). Each decision is one short transaction
// (upsert-increment of the key's current window under its row lock, read of the previous one,
// the verdict, and the increment undone on refusal, so a refused event is not counted, as in
// Limiter).
//
// Fast path: the counts a process last read for a key are lower bounds of the stored ones
// (within a window they only grow), and the verdict is monotone in them, so when those counts
// already refuse an event the stored ones would too: such a refusal is answered from memory
// without touching the database (a flood of refused requests costs no writes). An event is
// never allowed from memory, so the limit stays exact across processes.
type Shared struct {
	backend Backend
	name    string
	limit   uint64
	window  int64 // milliseconds
	clock   func() time.Time

	mu    sync.Mutex
	cache map[string]seen
}

type seen struct{ start, prev, curr int64 }

// NewShared returns a limiter of limit events per key within window, kept in b under the
// namespace name (limiters with different names never share counts). window is rounded to
// milliseconds; clock is time.Now when nil. It panics on a non-positive limit or a window under
// a millisecond (programming errors).
func NewShared(b Backend, name string, limit int, window time.Duration, clock func() time.Time) *Shared {
	if limit <= 0 {
		panic(fmt.Sprintf("ratelimit: limit must be positive, got %d", limit))
	}
	if window < time.Millisecond {
		panic(fmt.Sprintf("ratelimit: window must be at least 1ms, got %s", window))
	}
	if clock == nil {
		clock = time.Now
	}
	return &Shared{backend: b, name: name, limit: uint64(limit), window: window.Milliseconds(), clock: clock, cache: map[string]seen{}}
}

// Check records an event for key and reports whether it is within the limit across every
// process sharing the database (see Limiter.Allow for retryAfter). err is the database's.
func (l *Shared) Check(ctx context.Context, key string) (bool, time.Duration, error) {
	now := l.clock().UnixMilli()
	start := now - ((now%l.window)+l.window)%l.window
	elapsed := uint64(now-start) * uint64(time.Millisecond)
	w := uint64(l.window) * uint64(time.Millisecond)
	stored := l.name + "|" + key
	if len(stored) > maxKeyLen {
		sum := sha256.Sum256([]byte(stored))
		stored = l.name + "|sha256:" + hex.EncodeToString(sum[:])
	}

	l.mu.Lock()
	c, found := l.cache[stored]
	l.mu.Unlock()
	if found {
		prev, curr, known := c.prev, c.curr, true
		switch start {
		case c.start:
		case c.start + l.window:
			prev, curr = c.curr, 0
		default:
			known = false
		}
		if known {
			if ok, wait := decide(l.limit, w, uint64(prev), uint64(curr), elapsed); !ok {
				return false, wait, nil
			}
		}
	}

	var wait time.Duration
	prev, curr, ok, err := l.backend.RateLimitHit(ctx, stored, start, l.window, func(prev, curr uint64) bool {
		var ok bool
		ok, wait = decide(l.limit, w, prev, curr, elapsed)
		return ok
	})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", l.name, err)
	}
	l.mu.Lock()
	if len(l.cache) >= sharedCacheKeys {
		clear(l.cache)
	}
	l.cache[stored] = seen{start: start, prev: int64(prev), curr: int64(curr)}
	l.mu.Unlock()
	if ok {
		return true, 0, nil
	}
	return false, wait, nil
}
