// Package testkit is the test kit shared by every package's tests. Clock is the one fake clock:
// time stands still until the test moves it; it is a startstop.Clock too, and a test can wait
// until a loop is idle on its timers before moving it.
package testkit

import (
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/startstop"
)

// Clock is a manual clock. Its Now can also be the clock of a store (storetest.NewWithClock).
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*timer]struct{} // pending
	changed chan struct{}       // closed (and replaced) whenever timers changes
}

var _ startstop.Clock = (*Clock)(nil)

// NewClock returns a clock stopped at start (UTC).
func NewClock(start time.Time) *Clock {
	return &Clock{now: start.UTC(), timers: map[*timer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing once the clock was advanced by d (at once when d <= 0).
func (c *Clock) NewTimer(d time.Duration) startstop.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	c.signal()
	return t
}

// Advance moves the clock forward by d and fires every timer due by then, before it returns.
func (c *Clock) Advance(d time.Duration) time.Time {
	return c.Set(c.Now().Add(d))
}

// Set moves the clock to t (UTC) and fires every timer due by then, before it returns.
func (c *Clock) Set(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
			delete(c.timers, t)
		}
	}
	c.signal()
	return c.now
}

// WaitForTimers blocks until at least n timers are pending: the loop under test is idle,
// waiting, so an Advance reaches it. It fails the test after 10 s of real time (a hung loop).
func (c *Clock) WaitForTimers(t testing.TB, n int) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		pending, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if pending >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("testkit: %d timers pending after 10 s, want %d", pending, n)
		}
	}
}

// signal wakes WaitForTimers; c.mu is held.
func (c *Clock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type timer struct {
	clock *Clock
	at    time.Time
	ch    chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.timers[t]; !ok {
		return false
	}
	delete(c.timers, t)
	c.signal()
	return true
}
