// Package worker is the server-mode daemon that drains the task queue: it claims QUEUED tasks
// (atomically, through the store), runs each with bounded concurrency, and periodically reaps
// RUNNING tasks whose lease went stale. Stop drains: no new claims, and in-flight runs finish
// their current step (they see a cancelled "stop soon" context at their next step boundary).
package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Daemon drains the queue. Claim, Run and Reap are supplied by the caller (the store and the
// agent loop), which keeps the daemon free of both.
type Daemon struct {
	// Claim atomically takes up to n runnable tasks and returns their ids.
	Claim func(ctx context.Context, n int) ([]int64, error)
	// Run works on one claimed task until it is quiescent or stop ends (checked between steps).
	Run func(stop context.Context, id int64)
	// Reap runs the periodic chores (reaping RUNNING tasks whose lease expired, dispatching due
	// scheduled runs) every ReapEvery; nil disables them.
	Reap func(ctx context.Context) error

	MaxWorkers int           // concurrent runs; 0 means unlimited (claims in batches of 16)
	Poll       time.Duration // idle wait between empty claims (default 1 s)
	ReapEvery  time.Duration // default 1 minute
	Log        *slog.Logger

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	running sync.WaitGroup
	wake    chan struct{}
}

const unlimitedBatch = 16

// Start begins claiming in the background. It must be called once.
func (d *Daemon) Start(ctx context.Context) {
	if d.Poll <= 0 {
		d.Poll = time.Second
	}
	if d.ReapEvery <= 0 {
		d.ReapEvery = time.Minute
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	d.mu.Lock()
	d.cancel, d.done, d.wake = cancel, make(chan struct{}), make(chan struct{}, 1)
	d.mu.Unlock()
	go d.loop(ctx)
}

// Notify wakes the claimer at once (a task was queued) instead of waiting for the next poll.
func (d *Daemon) Notify() {
	d.mu.Lock()
	w := d.wake
	d.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w <- struct{}{}:
	default:
	}
}

// Stop ends claiming and waits until in-flight runs return or ctx ends.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("worker: stop timed out with runs in flight")
	}
}

func (d *Daemon) loop(ctx context.Context) {
	defer close(d.done)
	defer d.running.Wait()
	var sem chan struct{}
	if d.MaxWorkers > 0 {
		sem = make(chan struct{}, d.MaxWorkers)
	}
	lastReap := time.Time{}
	for ctx.Err() == nil {
		if d.Reap != nil && time.Since(lastReap) >= d.ReapEvery {
			if err := d.Reap(ctx); err != nil && ctx.Err() == nil {
				d.Log.Error("reap stale tasks", "err", err)
			}
			lastReap = time.Now()
		}
		n := unlimitedBatch
		if sem != nil {
			n = cap(sem) - len(sem)
		}
		claimed := 0
		if n > 0 {
			ids, err := d.Claim(ctx, n)
			if err != nil && ctx.Err() == nil {
				d.Log.Error("claim tasks", "err", err)
			}
			claimed = len(ids)
			for _, id := range ids {
				if sem != nil {
					sem <- struct{}{}
				}
				d.running.Add(1)
				go func(id int64) {
					defer d.running.Done()
					if sem != nil {
						defer func() { <-sem }()
					}
					defer d.Notify() // a slot frees up: claim again without waiting for the poll
					d.Run(ctx, id)
				}(id)
			}
		}
		if claimed > 0 && (sem == nil || len(sem) < cap(sem)) {
			continue // there may be more work right away
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-time.After(d.Poll):
		}
	}
}
