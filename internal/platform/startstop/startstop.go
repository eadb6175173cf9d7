// Package startstop is the one lifecycle of background loops (the worker daemon, the webhook
// dispatcher): Start runs the loop in its own goroutine, Stop cancels it and waits for it to
// return, Notify wakes it, and its waits run on an injected Clock so tests move time instead of
// sleeping. The shape follows river's rivershared/startstop.
package startstop

import (
	"context"
	"sync"
	"time"
)

// Clock is where a loop reads the time and waits. RealClock is the production clock;
// testkit.Clock is a manual one for tests.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer whose channel receives once d has elapsed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was still pending.
	Stop() bool
}

// RealClock returns a clock that reads the time from now (nil: time.Now) and waits on real
// timers. The service injects its time as a function (tests freeze it); its loops keep being
// paced in real time.
func RealClock(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return realClock{now: now}
}

type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Base is embedded (as a field) by a type that owns one background loop. The zero value is
// ready; it must not be copied after first use.
type Base struct {
	mu     sync.Mutex
	cancel context.CancelFunc // non-nil while a loop runs (or has not been seen to stop)
	done   chan struct{}      // closed when the running loop returned
	wake   chan struct{}      // one pending wake-up; made on first use
}

// Start runs loop in its own goroutine under a context that Stop cancels (ctx's values and its
// cancellation reach the loop too). It reports false, starting nothing, while a loop started
// earlier has not been stopped; after Stop returned nil, Start may run a new loop.
func (b *Base) Start(ctx context.Context, loop func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b.cancel, b.done = cancel, done
	go func() {
		defer close(done)
		loop(ctx)
	}()
	return true
}

// Halt cancels the loop's context without waiting for it to return: what the loop does on
// ending (a drain) goes on, and a later Stop waits for it. It does nothing when no loop runs.
func (b *Base) Halt() {
	b.mu.Lock()
	cancel := b.cancel
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop cancels the loop's context and waits until the loop returned. It returns nil at once
// when no loop runs, and ctx's error when ctx ends while the loop is still draining (a later
// Stop waits for it again); a loop that has returned is never reported as draining, even under
// a context that had already ended.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		// A loop that has returned by now stopped in time, whatever ctx says: select picks at
		// random among ready cases, and a stop handed an ended context must not report work
		// in flight that is not.
		select {
		case <-done:
		default:
			return ctx.Err()
		}
	}
	b.mu.Lock()
	if b.done == done { // not restarted meanwhile
		b.cancel, b.done = nil, nil
	}
	b.mu.Unlock()
	return nil
}

// Notify wakes the loop if it waits on Woken; otherwise the wake-up is kept (one at most) for its
// next wait. Safe before Start and from any goroutine.
func (b *Base) Notify() {
	select {
	case b.woken() <- struct{}{}:
	default:
	}
}

// Woken is the channel a loop selects on, next to its timers and ctx.Done, while idle.
func (b *Base) Woken() <-chan struct{} { return b.woken() }

func (b *Base) woken() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	return b.wake
}
