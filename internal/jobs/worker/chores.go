package worker

import (
	"context"
	"errors"
	"time"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/jobs/retention"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Chores is the housekeeping of both worker modes, written once: the Daemon runs it every
// minute (server mode), POST /worker/housekeeping runs it for a browser (client mode).
type Chores struct {
	// Reap takes back the RUNNING tasks whose lease expired before now: store.ReapStale in
	// server mode (queued again to resume, or ORPHANED past store.MaxRecoveries),
	// store.ReapDisconnected in client mode (WORKER_DISCONNECTED); nil reaps nothing
	// (worker_stale_minutes 0 disables the reaper).
	Reap func(ctx context.Context, now time.Time) (store.Reaped, error)
	// Requeued is told when a pass queued tasks again (the daemon claims them at once); nil: no one.
	Requeued  func()
	Tasks     *task.Service     // schedules the automatic retry of each reaped task, and missed ones
	Schedules *schedule.Service // dispatches due scheduled runs
	Media     *media.Service    // sweeps expired media uploads
	// Changed follows each task the reaper moved (push event, callbacks, scheduled-run mail), as
	// the loop does after a step; nil: nobody.
	Changed func(ctx context.Context, taskID int64)
	// Idempotency removes the Idempotency-Key records created before its argument
	// (store.DeleteIdempotencyBefore); nil keeps them.
	Idempotency func(ctx context.Context, before time.Time) (int64, error)
	// RateLimits removes the shared rate-limit windows expired before its argument
	// (store.DeleteRateLimitWindowsBefore); nil keeps them.
	RateLimits func(ctx context.Context, before time.Time) (int64, error)
	// ExpireApprovals decides the tool calls whose approval timeout ran out and returns the
	// tasks it moved (inbox.Service.Expire; each told to Changed); nil: none expire.
	ExpireApprovals func(ctx context.Context) ([]int64, error)
	// Retention deletes what its retention_* setting says is old enough (chats, event logs,
	// outbox rows, read notifications, the usage ledger); nil keeps everything.
	Retention *retention.Sweeper
	Clock     func() time.Time // the "now" of reaping and dispatching
}

// Housekeeping is what one pass did.
type Housekeeping struct {
	OrphansReaped           int
	ScheduledRunsDispatched int
	ApprovalsExpired        int // tasks whose pending calls an approval timeout decided
}

// Run does one pass: it reaps RUNNING tasks whose lease expired (a task that failed then gets
// the agent's automatic retry when it applies: the failure codes are transient; every reaped
// task is told to Changed), schedules the automatic retries a stopped process promised but did
// not schedule (task.Service.ScheduleMissedRetries; each told to Changed), decides the tool
// calls whose approval timeout ran out (ExpireApprovals; each task told to Changed), dispatches due
// scheduled runs (tasks owned by each run's creator), sweeps expired media uploads, deletes
// what is past its retention (Retention) and Idempotency-Key records past theirs, and expired
// rate-limit windows. A failing step does not keep the later ones from running; Run returns what was done
// and the first error (database and file-system failures; a reaped task deleted meanwhile is
// none).
func (c *Chores) Run(ctx context.Context) (Housekeeping, error) {
	var h Housekeeping
	var errs []error
	now := c.Clock()
	if c.Reap != nil {
		r, err := c.Reap(ctx, now)
		errs = append(errs, err)
		h.OrphansReaped = len(r.Failed) + len(r.Requeued)
		if len(r.Requeued) > 0 && c.Requeued != nil {
			c.Requeued()
		}
		for _, id := range r.Failed {
			if err := c.Tasks.Reaped(ctx, id); !errors.Is(err, svcerr.ErrNotFound) {
				errs = append(errs, err)
			}
		}
		if c.Changed != nil {
			for _, id := range append(r.Requeued, r.Failed...) {
				c.Changed(ctx, id)
			}
		}
	}
	retried, err := c.Tasks.ScheduleMissedRetries(ctx, now)
	errs = append(errs, err)
	if c.Changed != nil {
		for _, id := range retried {
			c.Changed(ctx, id)
		}
	}
	if c.ExpireApprovals != nil {
		expired, err := c.ExpireApprovals(ctx)
		errs = append(errs, err)
		h.ApprovalsExpired = len(expired)
		if len(expired) > 0 && c.Requeued != nil {
			c.Requeued()
		}
		if c.Changed != nil {
			for _, id := range expired {
				c.Changed(ctx, id)
			}
		}
	}
	h.ScheduledRunsDispatched, err = c.Schedules.DispatchDue(ctx, now)
	errs = append(errs, err)
	_, err = c.Media.Sweep(ctx)
	errs = append(errs, err)
	if c.Retention != nil {
		_, err = c.Retention.Run(ctx)
		errs = append(errs, err)
	}
	if c.Idempotency != nil {
		_, err = c.Idempotency(ctx, now.Add(-store.IdempotencyRetention))
		errs = append(errs, err)
	}
	if c.RateLimits != nil {
		_, err = c.RateLimits(ctx, now)
		errs = append(errs, err)
	}
	for _, err := range errs {
		if err != nil {
			return h, err
		}
	}
	return h, nil
}
