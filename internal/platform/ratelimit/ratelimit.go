// Package ratelimit limits how often a key (an API key, a client address, an account) may act
// within a time window, in memory, for a single process.
//
// The algorithm is the sliding-window estimate: counts are kept for the current fixed window
// and the previous one, and the previous count is weighted by how much of it still overlaps
// the sliding window ending now. With limit L per window W a key gets at most L requests in
// any span of W (up to the estimate's assumption that the previous window's requests were
// evenly spread), never the 2L burst a plain fixed window allows at a boundary, and it uses
// two counters per key instead of a timestamp per request.
package ratelimit

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// shardCount spreads keys over independently locked maps so parallel callers rarely contend.
const shardCount = 64

// MaxKeys is the hard cap on keys a Limiter holds (spread evenly over its shards): about
// 100 MB with short keys. It is only reached when callers invent keys faster than old ones
// expire, that is, under a deliberate flood; see Limiter for what happens then.
const MaxKeys = 1 << 20

// Limiter allows up to limit events per key within any window. It is safe for concurrent use.
//
// Memory bound: an entry (the key plus about 64 bytes) is kept only while it can still affect
// a decision. A key idle for two whole windows counts zero and is dropped by the next sweep;
// each shard sweeps at most once per window, when it is used. The limiter therefore holds the
// distinct keys that called Allow during roughly the last three windows, and never more than
// MaxKeys. When a key's shard is full, a key it does not know yet is refused (fail closed, so
// a flood of invented keys cannot buy unlimited attempts) with a retryAfter reaching the
// shard's next sweep; known keys keep working normally.
type Limiter struct {
	limit  uint64
	window int64 // nanoseconds
	clock  func() time.Time
	base   time.Time // times are kept as nanoseconds since base, so monotonic readings are used
	seed   maphash.Seed
	// perShard caps each shard's map (MaxKeys/shardCount; tests lower it).
	perShard int
	shards   [shardCount]shard
}

type shard struct {
	mu        sync.Mutex
	entries   map[string]entry
	lastSweep int64
	_         [64]byte // keep neighbouring shards' locks on separate cache lines
}

// entry holds one key's counts: curr for the fixed window starting at start, prev for the
// window before it.
type entry struct {
	start      int64
	curr, prev uint64
}

// New returns a limiter allowing limit events per key within window. clock supplies the
// current time (time.Now when nil); tests pass a fake clock. New panics when limit or window
// is not positive, as that is a programming error.
func New(limit int, window time.Duration, clock func() time.Time) *Limiter {
	if limit <= 0 {
		panic(fmt.Sprintf("ratelimit: limit must be positive, got %d", limit))
	}
	if window <= 0 {
		panic(fmt.Sprintf("ratelimit: window must be positive, got %s", window))
	}
	if clock == nil {
		clock = time.Now
	}
	l := &Limiter{
		limit:    uint64(limit),
		window:   int64(window),
		clock:    clock,
		base:     clock(),
		seed:     maphash.MakeSeed(),
		perShard: MaxKeys / shardCount,
	}
	for i := range l.shards {
		l.shards[i].entries = make(map[string]entry)
	}
	return l
}

// Allow records an event for key and reports whether it is within the limit. When it is not,
// the event is not counted and retryAfter says how long to wait before the key's next event
// would be allowed (assuming no other events for it meanwhile), rounded up to whole seconds
// and at least one second, ready for a Retry-After header. retryAfter is zero when ok.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	now := int64(l.clock().Sub(l.base))
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()

	if now-sh.lastSweep >= l.window {
		sh.sweep(now, l.window)
	}

	e, found := sh.entries[key]
	if !found {
		if len(sh.entries) >= l.perShard {
			return false, roundUp(uint64(max(sh.lastSweep+l.window-now, 0)))
		}
		e.start = now
	} else if now-e.start >= l.window {
		n := (now - e.start) / l.window
		if n == 1 {
			e.prev = e.curr
		} else {
			e.prev = 0
		}
		e.curr = 0
		e.start += n * l.window
	}

	// elapsed is the position within the current window; a clock that went backwards is
	// treated as the window's start.
	ok, wait := decide(l.limit, uint64(l.window), e.prev, e.curr, uint64(max(now-e.start, 0)))
	if ok {
		e.curr++
	}
	sh.entries[key] = e
	return ok, wait
}

// decide is the sliding-window estimate's verdict on one more event of a key whose fixed window
// of w nanoseconds started elapsed nanoseconds ago (elapsed < w), with prev events in the
// window before and curr in this one: allowed when prev*(w-elapsed)/w + curr + 1 <= limit,
// compared exactly in 128 bits. A refusal comes with the wait, rounded up to whole seconds
// (roundUp). The verdict is monotone: more prev or curr events never turn a refusal into an
// allowance (the shared limiter's cache relies on it).
func decide(limit, w, prev, curr, elapsed uint64) (bool, time.Duration) {
	remaining := w - min(elapsed, w)
	// prev*(W-elapsed) + (curr+1)*W <= limit*W.
	aHi, aLo := bits.Mul64(prev, remaining)
	bHi, bLo := bits.Mul64(curr+1, w)
	lo, carry := bits.Add64(aLo, bLo, 0)
	hi, _ := bits.Add64(aHi, bHi, carry)
	limHi, limLo := bits.Mul64(limit, w)
	if hi < limHi || (hi == limHi && lo <= limLo) {
		return true, 0
	}
	return false, roundUp(wait(limit, w, prev, curr, remaining))
}

// wait is the exact time, in nanoseconds, until an event for a refused key would be allowed,
// given remaining nanoseconds left in its current window of w.
func wait(limit, w, prev, curr, remaining uint64) uint64 {
	if curr < limit {
		// Still within the current window, once the previous window's weight has decayed
		// enough: the smallest t with prev*(remaining-t) <= (limit-curr-1)*W. Refusal means
		// prev*remaining exceeds the right side, so prev > 0 and the quotient is below
		// remaining (no overflow in Div64).
		hi, lo := bits.Mul64(limit-curr-1, w)
		q, _ := bits.Div64(hi, lo, prev)
		return remaining - q
	}
	// The current window is full: after it rolls over, its count becomes the previous one
	// (equal to limit) and must decay by one event's worth: ceil(W/limit) into the next window.
	return remaining + (w+limit-1)/limit
}

// roundUp converts nanoseconds to a whole number of seconds, rounding up, at least one.
func roundUp(ns uint64) time.Duration {
	secs := (ns + uint64(time.Second) - 1) / uint64(time.Second)
	return time.Duration(max(secs, 1)) * time.Second
}

// Reset forgets key's history, e.g. after a successful login that should clear failed
// attempts.
func (l *Limiter) Reset(key string) {
	sh := l.shard(key)
	sh.mu.Lock()
	delete(sh.entries, key)
	sh.mu.Unlock()
}

// Len reports how many keys the limiter currently holds (for metrics and tests).
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

func (l *Limiter) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)%shardCount]
}

// sweep drops entries whose counts can no longer matter: two or more windows have started
// since their current window, so both counts would read as zero.
func (sh *shard) sweep(now, window int64) {
	for k, e := range sh.entries {
		if now-e.start >= 2*window {
			delete(sh.entries, k)
		}
	}
	sh.lastSweep = now
}
