// Package outbox is the one dispatcher loop of the durable outboxes (chat callbacks, mail):
// claim a batch of due items with a lease, deliver them with bounded concurrency, each
// delivery recording its own outcome, and wait for the next poll or a Notify. The store side
// (lease claim, fenced finish, backoff schedule) is shared in store/outbox.go; this package
// only runs it on internal/platform/startstop with an injected clock. Delivery is at-least-once: an
// item whose dispatcher dies between delivering and recording is delivered again when its
// lease lapses.
package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/platform/startstop"
)

// Defaults of Loop's zero fields.
const (
	DefaultBatchSize   = 25
	DefaultPoll        = time.Second
	DefaultConcurrency = 8
	DefaultLease       = time.Minute
)

// Loop drains one outbox. Claim and Deliver are required; the rest have defaults. Several
// loops (processes) may share one database: claims are leased. Background work has one
// owner: Start begins the loop, Stop ends claiming and waits for the deliveries in flight.
type Loop[T any] struct {
	// Name names the outbox in logs and in random worker ids ("webhook", "mail").
	Name string
	// Claim leases up to limit due items until now+lease.
	Claim func(ctx context.Context, workerID string, limit int, lease time.Duration) ([]T, error)
	// Deliver makes one attempt at item and records its outcome (a failure to record is
	// Deliver's to log). It must return well within Lease.
	Deliver func(ctx context.Context, item T)
	// Clock paces Poll; nil means startstop.RealClock(nil).
	Clock  startstop.Clock
	Logger *slog.Logger // nil means slog.Default()
	// WorkerID names this loop in claims; empty means Name plus a random id.
	WorkerID string
	// Poll is the idle wait between empty batches (default 1 s); Notify cuts it short.
	Poll time.Duration
	// BatchSize is the most items one claim takes (default 25); Concurrency bounds the
	// deliveries in flight within a batch (default 8).
	BatchSize, Concurrency int
	// Lease is how long a claimed item stays with this loop (default 1 minute): well above
	// the longest delivery, so only a loop that died lets it lapse.
	Lease time.Duration

	initOnce sync.Once
	base     startstop.Base
}

func (l *Loop[T]) init() {
	l.initOnce.Do(func() {
		if l.Clock == nil {
			l.Clock = startstop.RealClock(nil)
		}
		if l.Logger == nil {
			l.Logger = slog.Default()
		}
		if l.WorkerID == "" {
			var b [8]byte
			_, _ = rand.Read(b[:])
			l.WorkerID = l.Name + "-" + hex.EncodeToString(b[:])
		}
		if l.Poll <= 0 {
			l.Poll = DefaultPoll
		}
		if l.BatchSize <= 0 {
			l.BatchSize = DefaultBatchSize
		}
		if l.Concurrency <= 0 {
			l.Concurrency = DefaultConcurrency
		}
		if l.Lease <= 0 {
			l.Lease = DefaultLease
		}
	})
}

// Start begins delivering in the background: a batch whenever items are due, checked every
// Poll and on Notify; ctx's values reach Claim and Deliver. A second Start before Stop does
// nothing.
func (l *Loop[T]) Start(ctx context.Context) {
	l.init()
	l.base.Start(ctx, l.loop)
}

// Notify makes the loop look for due items at once instead of waiting for the next poll (an
// item was just queued). Safe before Start (the first pass looks anyway) and from any
// goroutine.
func (l *Loop[T]) Notify() { l.base.Notify() }

// Stop ends claiming and waits until the deliveries in flight are recorded, or ctx ends (then
// an error: deliveries are still in flight).
func (l *Loop[T]) Stop(ctx context.Context) error {
	if err := l.base.Stop(ctx); err != nil {
		return fmt.Errorf("%s outbox: stop timed out with deliveries in flight: %w", l.Name, err)
	}
	return nil
}

func (l *Loop[T]) loop(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := l.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			l.Logger.Error("claim "+l.Name+" outbox", "err", err)
		}
		if n == l.BatchSize {
			continue // there may be more due right away
		}
		poll := l.Clock.NewTimer(l.Poll)
		select {
		case <-ctx.Done():
		case <-l.base.Woken():
		case <-poll.C():
		}
		poll.Stop()
	}
}

// RunOnce claims one batch of due items (at most BatchSize), delivers them (at most
// Concurrency at once) and returns how many it claimed. Once claimed, a batch is delivered and
// recorded even if ctx ends meanwhile (Stop drains).
func (l *Loop[T]) RunOnce(ctx context.Context) (int, error) {
	l.init()
	batch, err := l.Claim(ctx, l.WorkerID, l.BatchSize, l.Lease)
	if err != nil {
		return 0, err
	}
	work := context.WithoutCancel(ctx)
	sem := make(chan struct{}, l.Concurrency)
	var wg sync.WaitGroup
	for _, item := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l.Deliver(work, item)
		}()
	}
	wg.Wait()
	return len(batch), nil
}

// Drain runs batches until a claim finds nothing due, and returns how many items it
// delivered or gave a failed attempt: a synchronous pass for tests and for a caller that must
// see the outbox empty of due items (items waiting for a retry are not due, so Drain ends).
// It may run beside the background loop: claims are leased.
func (l *Loop[T]) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := l.RunOnce(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}
