package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// BeginToolCall marks tool call callID of a task whose lease workerID holds as started
// (executed_at = now) — a compare-and-swap that succeeds once per call, so a call is executed
// at most once even across crashes: a call found started but unfinished is not begun again
// (only RestartToolCall, for a repeatable operation, starts it again). Errors: ErrInvalidState
// (lease lost, or the call was already started or is not runnable), ErrNotFound.
func (s *Tasks) BeginToolCall(ctx context.Context, taskID int64, workerID string, callID int64) error {
	return s.startToolCall(ctx, taskID, workerID, callID, "executed_at IS NULL",
		map[string]any{}, "was already started or is not runnable")
}

// RestartToolCall starts again tool call callID of a task whose lease workerID holds, when a
// crash interrupted it: the call was started (executed_at set) and never finished (still
// PENDING or APPROVED). It counts one restart and sets executed_at to now, in one conditional
// UPDATE. The caller restarts only calls of repeatable operations (tools.Operation.Repeatable):
// those are run at least once, every other call at most once (BeginToolCall). Errors:
// ErrInvalidState (lease lost, or the call is not an interrupted one), ErrNotFound.
func (s *Tasks) RestartToolCall(ctx context.Context, taskID int64, workerID string, callID int64) error {
	return s.startToolCall(ctx, taskID, workerID, callID, "executed_at IS NOT NULL",
		map[string]any{"restarts": gorm.Expr("restarts + 1")}, "is not an interrupted call")
}

// startToolCall sets executed_at (and set) on a runnable call matching started, under the
// lease: one conditional UPDATE, no transaction — the lease check is a condition of the
// compare-and-swap (a locking read of the task row on MySQL/MariaDB). refused completes the
// ErrInvalidState message of a call the condition does not match.
func (s *Tasks) startToolCall(ctx context.Context, taskID int64, workerID string, callID int64, started string, set map[string]any, refused string) error {
	now, db := s.now(), s.conn(ctx)
	set["executed_at"] = now
	res := db.Model(&toolCallRow{}).
		Where("id = ? AND task_id = ? AND "+started+" AND status IN ?", callID, taskID,
			[]string{ToolCallPending, ToolCallApproved}).
		Where("EXISTS (SELECT 1 FROM tasks WHERE "+leaseWhere+")", taskID, taskstate.Running, workerID, now).
		Updates(set)
	if res.Error != nil {
		return fmt.Errorf("start tool call %d: %w", callID, TranslateError(res.Error))
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var held int64
	if err := db.Model(&taskRow{}).Where(leaseWhere, taskID, taskstate.Running, workerID, now).Count(&held).Error; err != nil {
		return TranslateError(fmt.Errorf("start tool call %d: %w", callID, err))
	}
	if held == 0 {
		return TranslateError(leaseLost(db, taskID, workerID))
	}
	return svcerr.New(svcerr.ErrInvalidState, "tool call %d of task %d %s", callID, taskID, refused)
}

// UserOfPrincipal returns the user whose personal principal p is. Errors: ErrNotFound (a
// group's principal, or none).
func (s *Tasks) UserOfPrincipal(ctx context.Context, p int64) (int64, error) {
	var ids []int64
	if err := s.conn(ctx).Table("users").Where("principal_id = ?", p).Limit(1).Pluck("id", &ids).Error; err != nil {
		return 0, TranslateError(err)
	}
	if len(ids) == 0 {
		return 0, svcerr.New(svcerr.ErrNotFound, "principal %d is no user's", p)
	}
	return ids[0], nil
}
