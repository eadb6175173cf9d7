// Package worker runs tasks outside a request. Daemon is the server-mode loop that drains the
// task queue: it claims QUEUED tasks (atomically, through the store), runs each with bounded
// concurrency, and periodically runs the housekeeping Chores. Stop drains: no new claims, and
// in-flight runs finish their current step, then hand their task back (they see the stop
// channel closed at their next step boundary); a step still running when Stop's context ends is
// cancelled. Client applies the rules of client-worker mode.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsvc/svc/internal/platform/startstop"
)

// Daemon drains the queue of tasks of type T (what a claim yields: the claimed task row, so its
// run need not read it again). Claim, Run and Chores are supplied by the caller (the store and
// the agent loop), which keeps the daemon free of both.
type Daemon[T any] struct {
	// Claim atomically takes up to n runnable tasks and returns them.
	Claim func(ctx context.Context, n int) ([]T, error)
	// Run works on one claimed task until it is quiescent or stop closes (checked between
	// steps; agentloop.Loop.Run). ctx ends only when Stop gives up waiting: the step in flight
	// is then cancelled.
	Run func(ctx context.Context, stop <-chan struct{}, task T)
	// Chores runs the periodic housekeeping (Chores.Run: reaping RUNNING tasks whose lease
	// expired, dispatching due scheduled runs, sweeping expired media) at start and then every
	// ChoresEvery; nil disables it.
	Chores func(ctx context.Context) error

	MaxWorkers int           // concurrent runs; 0 means unlimited (claims in batches of 16; the server never asks for it)
	Poll       time.Duration // idle wait between empty claims (default 1 s)
	// ClaimLinger is how long the claimer waits after a wake-up (a task queued, a slot freed)
	// before it claims, so that the slots freed and the tasks queued meanwhile go in one claim;
	// 0 claims at once. Where a claim is a serial transaction of several round trips to the
	// database server (MySQL/MariaDB), claiming every freed slot alone kept the claimer busy.
	ClaimLinger time.Duration
	ChoresEvery time.Duration   // default 1 minute
	Clock       startstop.Clock // paces Poll and ChoresEvery; nil: startstop.RealClock(nil)
	Log         *slog.Logger
	// HandBack is how long Stop waits, once its context ended and the steps still running were
	// cancelled, for their runs to hand their tasks back (0: DefaultHandBack). A stop's owner
	// carves it out of the process's grace (server.App.Stop).
	HandBack time.Duration

	base    startstop.Base
	running sync.WaitGroup
	mu      sync.Mutex
	abandon context.CancelFunc // cancels the runs' ctx: Stop gave up waiting
	claimer chan struct{}      // closed when the claim loop has ended (Halt waits for it)
	polled  atomic.Int64       // wall-clock Unix nanoseconds of the claim loop's last pass (LastPoll)
}

// LastPoll is when the claim loop last went round (wall clock; zero before Start and after the
// loop ended): the readiness check takes a loop that has not gone round for a few Poll
// intervals to be stuck.
func (d *Daemon[T]) LastPoll() time.Time {
	if n := d.polled.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// DefaultHandBack is Daemon.HandBack's default.
const DefaultHandBack = 10 * time.Second

const unlimitedBatch = 16

// Start begins claiming in the background; ctx's values reach Claim, Run and Chores. A second
// Start before Stop does nothing.
func (d *Daemon[T]) Start(ctx context.Context) {
	if d.Poll <= 0 {
		d.Poll = time.Second
	}
	if d.ChoresEvery <= 0 {
		d.ChoresEvery = time.Minute
	}
	if d.Clock == nil {
		d.Clock = startstop.RealClock(nil)
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	runs, abandon := context.WithCancel(context.WithoutCancel(ctx))
	claimer := make(chan struct{})
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base.Start(ctx, func(ctx context.Context) { d.loop(ctx, runs, claimer) }) {
		d.abandon, d.claimer = abandon, claimer
	} else {
		abandon()
	}
}

// Notify wakes the claimer at once (a task was queued, or a slot freed) instead of waiting for
// the next poll.
func (d *Daemon[T]) Notify() { d.base.Notify() }

// Halt ends claiming and returns once the claimer is done (a claim in flight, its context
// cancelled, ends first), without waiting for the runs: after it, nothing more is claimed. A
// stop's first act, before anything a client sees end (an event stream) could let it act on a
// stop while the daemon still claims; Stop does the rest.
func (d *Daemon[T]) Halt() {
	d.base.Halt()
	d.mu.Lock()
	claimer := d.claimer
	d.mu.Unlock()
	if claimer != nil {
		<-claimer
	}
}

// Stop ends claiming at once (a claim after Stop began would run work the stop then has to hand
// back) and waits until in-flight runs have finished their step and handed their task back.
// When ctx ends first, the steps still running are cancelled (model and tool calls with them;
// their runs hand the tasks back) and Stop waits HandBack for that, then returns an error
// naming the timeout, and whether runs were still in flight after it.
func (d *Daemon[T]) Stop(ctx context.Context) error {
	err := d.base.Stop(ctx)
	if err == nil {
		return nil
	}
	d.mu.Lock()
	abandon := d.abandon
	d.mu.Unlock()
	if abandon != nil {
		abandon()
	}
	grace := d.HandBack
	if grace <= 0 {
		grace = DefaultHandBack
	}
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if gerr := d.base.Stop(gctx); gerr != nil {
		return fmt.Errorf("worker: stop timed out with runs in flight, still running after cancelling them: %w", err)
	}
	return fmt.Errorf("worker: stop timed out; in-flight steps were cancelled and their tasks handed back: %w", err)
}

func (d *Daemon[T]) loop(ctx, runs context.Context, claimer chan struct{}) {
	defer d.running.Wait()
	defer close(claimer)
	defer d.polled.Store(0)
	var sem chan struct{}
	if d.MaxWorkers > 0 {
		sem = make(chan struct{}, d.MaxWorkers)
	}
	choresDue := d.chores(ctx) // nil channel when there are no chores: never ready
	for ctx.Err() == nil {
		d.polled.Store(time.Now().UnixNano())
		select {
		case <-choresDue:
			choresDue = d.chores(ctx)
		default:
		}
		n := unlimitedBatch
		if sem != nil {
			n = cap(sem) - len(sem)
		}
		claimed := 0
		if n > 0 {
			tasks, err := d.Claim(ctx, n)
			if err != nil && ctx.Err() == nil {
				d.Log.Error("claim tasks", "err", err)
			}
			claimed = len(tasks)
			for _, task := range tasks {
				if sem != nil {
					sem <- struct{}{}
				}
				d.running.Add(1)
				go func(task T) {
					defer d.running.Done()
					defer d.Notify() // a slot freed: claim again without waiting for the poll
					if sem != nil {
						defer func() { <-sem }() // before the Notify, so the woken claimer sees the slot
					}
					d.Run(runs, ctx.Done(), task)
				}(task)
			}
		}
		if claimed > 0 && (sem == nil || len(sem) < cap(sem)) {
			continue // there may be more work right away
		}
		poll := d.Clock.NewTimer(d.Poll)
		select {
		case <-ctx.Done():
		case <-d.base.Woken():
			d.linger(ctx)
		case <-choresDue:
			choresDue = d.chores(ctx)
		case <-poll.C():
		}
		poll.Stop()
	}
}

// linger waits ClaimLinger after a wake-up, or until ctx ends.
func (d *Daemon[T]) linger(ctx context.Context) {
	if d.ClaimLinger <= 0 {
		return
	}
	t := d.Clock.NewTimer(d.ClaimLinger)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// chores runs the periodic chores, if any, and returns the channel of the next pass.
func (d *Daemon[T]) chores(ctx context.Context) <-chan time.Time {
	if d.Chores == nil {
		return nil
	}
	if err := d.Chores(ctx); err != nil && ctx.Err() == nil {
		d.Log.Error("worker chores", "err", err)
	}
	return d.Clock.NewTimer(d.ChoresEvery).C()
}
