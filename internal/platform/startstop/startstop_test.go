package startstop_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentsvc/svc/internal/platform/startstop"
	"github.com/agentsvc/svc/internal/testkit"
)

// TestStartStopLifecycle: one loop at a time; Stop cancels and waits for it, reports a drain
// that outlives its context, and lets a new loop start afterwards.
func TestStartStopLifecycle(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start = %v", err)
	}
	release, returned := make(chan struct{}), make(chan struct{})
	loop := func(ctx context.Context) {
		<-ctx.Done()
		<-release // draining
		close(returned)
	}
	if !b.Start(context.Background(), loop) {
		t.Fatal("first Start refused")
	}
	if b.Start(context.Background(), func(context.Context) { t.Error("second loop ran") }) {
		t.Fatal("second Start while running accepted")
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Stop(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop during the drain = %v, want context.Canceled", err)
	}
	if b.Start(context.Background(), func(context.Context) { t.Error("loop ran while the first drains") }) {
		t.Fatal("Start accepted while the first loop drains")
	}
	close(release)
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Stop returned before the loop did")
	}
	again := make(chan struct{})
	if !b.Start(context.Background(), func(context.Context) { close(again) }) {
		t.Fatal("Start after Stop refused")
	}
	<-again
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNotifyKeptForTheNextWait: a wake-up sent while the loop is busy (or before Start) is
// waiting on Woken when the loop gets there; several collapse into one.
func TestNotifyKeptForTheNextWait(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	b.Notify()
	b.Notify()
	select {
	case <-b.Woken():
	default:
		t.Fatal("the wake-up was lost")
	}
	select {
	case <-b.Woken():
		t.Fatal("two wake-ups kept")
	default:
	}
}

// TestManualClockTimers: timers fire when Advance reaches them, not before; stopped timers
// never fire; WaitForTimers sees what is pending.
func TestManualClockTimers(t *testing.T) {
	t.Parallel()
	start := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	c := testkit.NewClock(start)
	second, minute, stopped := c.NewTimer(time.Second), c.NewTimer(time.Minute), c.NewTimer(time.Second)
	c.WaitForTimers(t, 3)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report pending once")
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-second.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	if at := <-second.C(); !at.Equal(start.Add(time.Second)) {
		t.Fatalf("fired at %v", at)
	}
	select {
	case <-stopped.C():
		t.Fatal("a stopped timer fired")
	case <-minute.C():
		t.Fatal("the minute timer fired after a second")
	default:
	}
	c.WaitForTimers(t, 1)
	c.Advance(time.Hour)
	<-minute.C()
	if !c.Now().Equal(start.Add(time.Hour + time.Second)) {
		t.Fatalf("Now = %v", c.Now())
	}
}

// TestStopOfAReturnedLoopUnderAnEndedContext: a loop that has returned stopped in time, even
// when Stop is handed a context that had already ended (a stop whose earlier part used up the
// time): Stop reports no drain. Before, Stop chose at random between the two ready cases and
// reported about half of such stops as "timed out with work in flight".
func TestStopOfAReturnedLoopUnderAnEndedContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		for i := range 64 {
			var b startstop.Base
			b.Start(context.Background(), func(context.Context) {}) // returns at once
			synctest.Wait()                                         // …and has returned
			if err := b.Stop(ended); err != nil {
				t.Fatalf("stop %d: Stop = %v, want nil: the loop had returned", i, err)
			}
		}
	})
}
