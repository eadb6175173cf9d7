package store

import (
	"context"
	"fmt"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// BeginToolCall marks tool call callID of a task whose lease workerID holds as started
// (executed_at = now) — a compare-and-swap that succeeds once per call, so a call is executed
// at most once even across crashes: a call found started but unfinished is never run again
// (see InterruptedToolCalls). Errors: ErrInvalidState (lease lost, or the call was already
// started or is not runnable), ErrNotFound.
func (s *Tasks) BeginToolCall(ctx context.Context, taskID int64, workerID string, callID int64) error {
	// One conditional UPDATE, no transaction: the lease check is a condition of the
	// compare-and-swap (a locking read of the task row on MySQL/MariaDB).
	now, db := s.now(), s.conn(ctx)
	res := db.Model(&toolCallRow{}).
		Where("id = ? AND task_id = ? AND executed_at IS NULL AND status IN ?", callID, taskID,
			[]string{ToolCallPending, ToolCallApproved}).
		Where("EXISTS (SELECT 1 FROM tasks WHERE "+leaseWhere+")", taskID, taskstate.Running, workerID, now).
		Update("executed_at", now)
	if res.Error != nil {
		return fmt.Errorf("begin tool call %d: %w", callID, TranslateError(res.Error))
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var held int64
	if err := db.Model(&taskRow{}).Where(leaseWhere, taskID, taskstate.Running, workerID, now).Count(&held).Error; err != nil {
		return TranslateError(fmt.Errorf("begin tool call %d: %w", callID, err))
	}
	if held == 0 {
		return TranslateError(leaseLost(db, taskID, workerID))
	}
	return svcerr.New(svcerr.ErrInvalidState, "tool call %d of task %d was already started or is not runnable", callID, taskID)
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
