// Package ratelimit is an in-memory fixed-window limiter keyed by string (client address,
// user id, key id).
package ratelimit

import (
	"sync"
	"time"
)

// maxKeys bounds memory: past it, expired windows are pruned before a new key is added.
const maxKeys = 100_000

// Limiter allows limit events per window per key.
type Limiter struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	now    func() time.Time
	keys   map[string]*bucket
}

type bucket struct {
	start time.Time
	count int
}

// New returns a limiter; clock nil means time.Now.
func New(limit int, window time.Duration, clock func() time.Time) *Limiter {
	if clock == nil {
		clock = time.Now
	}
	return &Limiter{limit: limit, window: window, now: clock, keys: map[string]*bucket{}}
}

// Allow records an event for key. When the key's budget is spent it returns false and how long
// until the window resets, rounded up to whole seconds (at least one).
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.keys[key]
	if !ok || now.Sub(b.start) >= l.window {
		if !ok && len(l.keys) >= maxKeys {
			l.prune(now)
		}
		l.keys[key] = &bucket{start: now, count: 1}
		return true, 0
	}
	if b.count < l.limit {
		b.count++
		return true, 0
	}
	wait := b.start.Add(l.window).Sub(now)
	return false, max(wait.Round(time.Second), time.Second)
}

// Reset forgets key.
func (l *Limiter) Reset(key string) {
	l.mu.Lock()
	delete(l.keys, key)
	l.mu.Unlock()
}

func (l *Limiter) prune(now time.Time) {
	for k, b := range l.keys {
		if now.Sub(b.start) >= l.window {
			delete(l.keys, k)
		}
	}
}
