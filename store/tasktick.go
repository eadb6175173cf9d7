package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// AcquireTick gives workerID the lease of task id for one client-mode tick (POST
// /tasks/{id}/tick), in one transaction under the task's row lock: a QUEUED task, or a FAILED
// task whose automatic retry is due (its retry_count grows by one, error and next_retry_at are
// cleared, as ClaimQueued does), becomes RUNNING leased to workerID until now+lease; a RUNNING
// task whose lease workerID already holds, or whose lease expired (its worker went away), gets
// the lease renewed for workerID. Errors: ErrNotFound "task not found"; ErrInvalidState when
// another worker holds an unexpired lease ("being ticked by another caller") or the task is
// quiescent (PENDING_APPROVAL, AWAITING_INPUT, AWAITING_SUB_AGENTS, ABORTED) or terminal;
// ErrInvalid for an empty or oversize worker id or a lease that is not positive.
func (s *Tasks) AcquireTick(ctx context.Context, id int64, workerID string, lease time.Duration) (*Task, error) {
	if err := checkKey("worker id", workerID, true); err != nil {
		return nil, err
	}
	if lease <= 0 {
		return nil, invalidf("lease must be positive")
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		row, err := loadTask(tx, id, true)
		if err != nil {
			return nil, err
		}
		now := s.now()
		until := normTime(now.Add(lease))
		switch {
		case row.Status == taskstate.Failed && row.NextRetryAt != nil && !row.NextRetryAt.After(now):
			return s.tickClaim(tx, now, taskstate.ClaimRetry, row, workerID, until)
		case row.Status == taskstate.Running:
			held := row.LeaseOwner != nil && *row.LeaseOwner != workerID &&
				row.LeaseExpiresAt != nil && !row.LeaseExpiresAt.Before(now)
			if held {
				return nil, svcerr.New(svcerr.ErrInvalidState, "the task is being ticked by another caller")
			}
			// The lease lapsed or is ours: lease it again, the status stays.
			res := tx.Model(&taskRow{}).Where("id = ? AND status = ?", id, taskstate.Running).
				Updates(map[string]any{"lease_owner": workerID, "lease_expires_at": until, "updated_at": now})
			if res.Error != nil {
				return nil, fmt.Errorf("task %d: acquire tick: %w", id, res.Error)
			}
		default:
			return s.tickClaim(tx, now, taskstate.Tick, row, workerID, until)
		}
		return readTask(tx, id)
	})
}

// ReapDisconnected is ReapStale for client-worker mode, without the requeue (document 2: the
// browser driving the task went away, and no other browser of its owner may be open): every
// RUNNING task whose lease expired before now becomes FAILED with error code
// WORKER_DISCONNECTED (the code is transient, so an automatic retry may follow — see
// task.Service.ScheduleRetry). Their ids are in Reaped.Failed, in ascending order. Errors: none
// beyond the database's own.
func (s *Tasks) ReapDisconnected(ctx context.Context, now time.Time) (Reaped, error) {
	return s.reap(ctx, now, 0, taskstate.CodeWorkerDisconnected, "the client driving the task stopped ticking it")
}

// tickClaim moves task row, locked, to RUNNING by action, leased to workerID until until.
// Errors: ErrInvalidState when the state machine does not allow it (quiescent, terminal).
func (s *Store) tickClaim(tx *gorm.DB, now time.Time, action taskstate.Action, row *taskRow, workerID string, until time.Time) (*Task, error) {
	rows, err := s.setStatus(tx, now, statusChange{action: action, from: row.Status, to: taskstate.Running,
		where: "id = ?", args: []any{row.ID}, ids: []int64{row.ID}, set: claimLease(workerID, until), worker: workerID})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 { // cannot happen under the row lock; refuse rather than run unleased
		return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
	}
	return rows[0].toTask()
}
