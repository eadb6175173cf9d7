// Package retention is the part of housekeeping that deletes what is old enough: finished
// chats, the event log of finished tasks, delivered or given-up outbox rows, read
// notifications and the per-call usage ledger, each after its retention_* setting (days; 0
// keeps forever). The ages are read from the configuration at every pass, so a changed runtime
// setting applies at the next one.
//
// A pass deletes in small batches (Batch rows, each batch its own short transaction) and at most
// MaxBatches batches of each kind, so one pass bounds both its lock time and its work however
// much is due, and what is left waits for the next pass (every minute). Every process runs the
// pass; batches choose their rows afresh and delete by primary key, so two processes at once
// only share the work (the store's Prune* methods).
package retention

import (
	"context"
	"errors"
	"time"

	"github.com/agentsvc/svc/internal/platform/config"
)

// Store is what the pass needs of the store; *store.Store satisfies it.
type Store interface {
	PruneFinishedTasks(ctx context.Context, before time.Time, limit int) (int64, error)
	PruneTaskEvents(ctx context.Context, before time.Time, limit int) (int64, error)
	PruneOutboxes(ctx context.Context, before time.Time, limit int) (int64, error)
	DeleteReadNotificationsBefore(ctx context.Context, before time.Time, limit int) (int64, error)
	PruneUsageLedger(ctx context.Context, day string, limit int) (int64, error)
}

// Policy holds the retention of each kind in days; 0 keeps it forever.
type Policy struct {
	TaskDays, TaskEventsDays, OutboxDays, NotificationsDays, UsageLedgerDays int
}

// PolicyOf reads the retention settings of c.
func PolicyOf(c *config.Config) Policy {
	return Policy{TaskDays: c.RetentionTaskDays, TaskEventsDays: c.RetentionTaskEventsDays, OutboxDays: c.RetentionOutboxDays,
		NotificationsDays: c.RetentionNotificationsDays, UsageLedgerDays: c.RetentionUsageLedgerDays}
}

// Defaults of Sweeper's batch sizes: 500 rows a batch, 20 batches of each kind a pass (10,000
// rows of each kind a minute on each process).
const (
	DefaultBatch      = 500
	DefaultMaxBatches = 20
)

// Sweeper runs the retention pass. Build it once; Run may be called from several goroutines.
type Sweeper struct {
	Store  Store
	Policy func() Policy
	Clock  func() time.Time
	// Batch is the rows (tasks for the task kinds) a batch deletes, MaxBatches the batches of
	// each kind a pass runs; zero means the defaults.
	Batch, MaxBatches int
}

// Report is what one pass deleted: tasks (chats, with what they held), the event logs of
// tasks, outbox rows, notifications, usage ledger rows.
type Report struct {
	Tasks, TaskEventLogs, Outbox, Notifications, UsageLedger int64
}

// Run does one pass over every kind whose retention is set, oldest rows first. A failing kind
// does not keep the others from running; Run returns what was deleted and the errors joined
// (database errors).
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	var r Report
	p := s.Policy()
	now := s.Clock().UTC()
	before := func(days int) time.Time { return now.Add(-time.Duration(days) * 24 * time.Hour) }
	var errs []error
	sweep := func(days int, into *int64, batch func(before time.Time, limit int) (int64, error)) {
		if days <= 0 {
			return
		}
		n, err := s.batches(ctx, func(limit int) (int64, error) { return batch(before(days), limit) })
		*into += n
		errs = append(errs, err)
	}
	// Chats first: their events, tool calls and ledger rows go with them.
	sweep(p.TaskDays, &r.Tasks, func(b time.Time, limit int) (int64, error) { return s.Store.PruneFinishedTasks(ctx, b, limit) })
	sweep(p.TaskEventsDays, &r.TaskEventLogs, func(b time.Time, limit int) (int64, error) {
		return s.Store.PruneTaskEvents(ctx, b, limit)
	})
	sweep(p.OutboxDays, &r.Outbox, func(b time.Time, limit int) (int64, error) { return s.Store.PruneOutboxes(ctx, b, limit) })
	sweep(p.NotificationsDays, &r.Notifications, func(b time.Time, limit int) (int64, error) {
		return s.Store.DeleteReadNotificationsBefore(ctx, b, limit)
	})
	sweep(p.UsageLedgerDays, &r.UsageLedger, func(b time.Time, limit int) (int64, error) {
		return s.Store.PruneUsageLedger(ctx, b.Format(time.DateOnly), limit)
	})
	return r, errors.Join(errs...)
}

// batches runs batch until one deletes nothing, fails, or MaxBatches ran, and returns the sum.
// A batch that deletes fewer than its limit may still leave rows (outboxes are several tables),
// so only an empty batch ends the kind early.
func (s *Sweeper) batches(ctx context.Context, batch func(limit int) (int64, error)) (int64, error) {
	limit, maxBatches := s.Batch, s.MaxBatches
	if limit <= 0 {
		limit = DefaultBatch
	}
	if maxBatches <= 0 {
		maxBatches = DefaultMaxBatches
	}
	var sum int64
	for range maxBatches {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		n, err := batch(limit)
		sum += n
		if err != nil || n == 0 {
			return sum, err
		}
	}
	return sum, nil
}
