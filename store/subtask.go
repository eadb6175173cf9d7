package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// unsettledChild selects the children a parent still waits for: every child that is not
// COMPLETED, CANCELLED, ABORTED, or FAILED without a pending automatic retry (a retry will run
// it again, so the parent keeps waiting).
const unsettledChild = "parent_task_id = ? AND NOT (status IN ? OR (status = ? AND next_retry_at IS NULL))"

func unsettledArgs(parentID int64) []any {
	return []any{parentID, []string{taskstate.Completed, taskstate.Cancelled, taskstate.Aborted}, taskstate.Failed}
}

// UnsettledChildren counts the sub-agent tasks of parentID that have not settled yet (see
// ResumeWhenChildrenSettled). Errors: none beyond the database's own.
func (s *Tasks) UnsettledChildren(ctx context.Context, parentID int64) (int64, error) {
	var n int64
	err := s.conn(ctx).Model(&taskRow{}).Where(unsettledChild, unsettledArgs(parentID)...).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("task %d: count unsettled children: %w", parentID, TranslateError(err))
	}
	return n, nil
}

// ResumeWhenChildrenSettled moves task parentID from AWAITING_SUB_AGENTS to QUEUED when none
// of its children is unsettled (still queued, running, paused for approval or input, waiting
// on its own sub-agents, or FAILED with an automatic retry pending), and reports whether it
// did. The parent row is locked first and the move is a conditional UPDATE, so when two
// children settle at once on two workers the parent is queued exactly once; a parent in any
// other state is left alone (false). Errors: ErrNotFound "task not found".
func (s *Tasks) ResumeWhenChildrenSettled(ctx context.Context, parentID int64) (bool, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (bool, error) {
		row, err := loadTask(tx, parentID, true)
		if err != nil {
			return false, err
		}
		if row.Status != taskstate.AwaitingSubAgents {
			return false, nil
		}
		var n int64
		if err := tx.Model(&taskRow{}).Where(unsettledChild, unsettledArgs(parentID)...).Count(&n).Error; err != nil {
			return false, fmt.Errorf("task %d: count unsettled children: %w", parentID, err)
		}
		if n > 0 {
			return false, nil
		}
		rows, err := s.setStatus(tx, s.now(), statusChange{action: taskstate.Resume, from: taskstate.AwaitingSubAgents,
			to: taskstate.Queued, where: "id = ?", args: []any{parentID}, ids: []int64{parentID}})
		return len(rows) > 0, err
	})
}
