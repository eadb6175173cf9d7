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
// Limiter). A write may instead take the decision into its own transaction (Defer, Pending): the
// same upsert under the same lock, one transaction where there were two.
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
	p, ok, wait := l.Defer(key)
	if !ok {
		return false, wait, nil
	}
	return p.Settle(ctx)
}

// Defer starts the decision on an event of key that a write will take into its own
// transaction (Pending): the refusal the cached counts already give is answered at once (ok
// false, with the wait) and costs nothing; otherwise the event is pending, decided when it is
// counted.
func (l *Shared) Defer(key string) (p *Pending, ok bool, wait time.Duration) {
	now := l.clock().UnixMilli()
	start := now - ((now%l.window)+l.window)%l.window
	p = &Pending{l: l, start: start, elapsed: uint64(now-start) * uint64(time.Millisecond), key: l.name + "|" + key}
	if len(p.key) > maxKeyLen {
		sum := sha256.Sum256([]byte(p.key))
		p.key = l.name + "|sha256:" + hex.EncodeToString(sum[:])
	}

	l.mu.Lock()
	c, found := l.cache[p.key]
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
			if ok, wait := decide(l.limit, p.w(), uint64(prev), uint64(curr), p.elapsed); !ok {
				return nil, false, wait
			}
		}
	}
	return p, true, 0
}

// remember keeps the counts last read for key (lower bounds of the stored ones) for Defer's
// refusals from memory.
func (l *Shared) remember(key string, start int64, prev, curr uint64) {
	l.mu.Lock()
	if len(l.cache) >= sharedCacheKeys {
		clear(l.cache)
	}
	l.cache[key] = seen{start: start, prev: int64(prev), curr: int64(curr)}
	l.mu.Unlock()
}

// Pending is one event of a key on its way to being counted: by the write transaction it is
// handed to (which asks Decide under the window's lock and reports its end to Done) or, when
// none counted it, by Settle in a transaction of its own. Either way it is counted under the
// window's row lock, so the limit is as exact across processes as Check's; folded into a
// write, it costs that write's transaction no second one. A request's goroutine uses it; it is
// not safe for concurrent use.
type Pending struct {
	l       *Shared
	key     string // as stored
	start   int64  // the window's, Unix milliseconds
	elapsed uint64 // nanoseconds into the window

	decided    bool          // Decide ran: prev, curr, ok and wait are its
	counted    bool          // stored, or refused: nothing more to do
	prev, curr uint64        // read under the lock, before the event
	ok         bool          // the verdict
	wait       time.Duration // a refusal's
}

func (p *Pending) w() uint64 { return uint64(p.l.window) * uint64(time.Millisecond) }

// Key is the event's key as stored (Backend.RateLimitHit's key).
func (p *Pending) Key() string { return p.key }

// Start is the start of the event's window, Unix milliseconds.
func (p *Pending) Start() int64 { return p.start }

// Window is the window's length in milliseconds.
func (p *Pending) Window() int64 { return p.l.window }

// Decide is the verdict on the event given the counts read under the window's lock, as
// Backend.RateLimitHit's allow (a transaction retried asks again). A refusal's wait is Wait's.
func (p *Pending) Decide(prev, curr uint64) bool {
	p.prev, p.curr, p.decided = prev, curr, true
	p.ok, p.wait = decide(p.l.limit, p.w(), prev, curr, p.elapsed)
	return p.ok
}

// Wait is the retryAfter of the refusal Decide gave.
func (p *Pending) Wait() time.Duration { return p.wait }

// Done is told how the transaction that asked Decide ended: err nil, it committed with the
// event counted; a refusal of Decide rolled it back (a refused event is not counted either).
// After any other failure the event is not counted yet, and Settle counts it.
func (p *Pending) Done(err error) {
	if !p.decided || (err != nil && p.ok) {
		return
	}
	p.counted = true
	curr := p.curr
	if p.ok {
		curr++
	}
	p.l.remember(p.key, p.start, p.prev, curr)
}

// Settle counts the event in a transaction of its own unless a write counted it (Done) and
// returns the verdict, as Check does; once counted it returns the verdict recorded. err is
// the database's.
func (p *Pending) Settle(ctx context.Context) (bool, time.Duration, error) {
	if !p.counted {
		prev, curr, ok, err := p.l.backend.RateLimitHit(ctx, p.key, p.start, p.l.window, p.Decide)
		if err != nil {
			return false, 0, fmt.Errorf("rate limit %s: %w", p.l.name, err)
		}
		p.counted, p.ok = true, ok
		p.l.remember(p.key, p.start, prev, curr)
	}
	if p.ok {
		return true, 0, nil
	}
	return false, p.wait, nil
}

// pendingKey carries a request's Pending in its context.
type pendingKey struct{}

// WithPending returns ctx carrying p, for the write that takes it (PendingFrom).
func WithPending(ctx context.Context, p *Pending) context.Context {
	return context.WithValue(ctx, pendingKey{}, p)
}

// PendingFrom returns the Pending ctx carries, or nil.
func PendingFrom(ctx context.Context) *Pending {
	p, _ := ctx.Value(pendingKey{}).(*Pending)
	return p
}
