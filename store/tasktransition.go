package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/svcerr"
	"github.com/agentsvc/svc/internal/taskstate"
)

// TaskTransition is one compare-and-swap status change: it applies only while the task's
// status is one of From. Leaving RUNNING drops the lease; entering COMPLETED, FAILED,
// CANCELLED or ABORTED sets finished_at, entering any other state clears it; any pending
// automatic retry (next_retry_at) is dropped.
type TaskTransition struct {
	Action string // names the request in the refusal message ("abort", "retry" …)
	From   []string
	To     string
	// RequireRetryPending applies the change only while next_retry_at is set.
	RequireRetryPending bool
	ClearAnswer         bool
	ClearError          bool
	IncRetry            bool
	// GrantSteps > 0 sets max_steps to steps_used + GrantSteps.
	GrantSteps int
	// UserMessage, when set, is appended to the conversation as a user message.
	UserMessage *NewTaskMessage
	// UnsetData removes these keys from the task's data.
	UnsetData []string
}

func invalidState(action, status string) error {
	if action == "" {
		return svcerr.New(svcerr.ErrInvalidState, "the task is %s", status)
	}
	return svcerr.New(svcerr.ErrInvalidState, "cannot %s a task that is %s", action, status)
}

// TransitionTask applies t to task id as one conditional UPDATE, so of two concurrent callers
// at most one moves the task. Errors: ErrNotFound "task not found", ErrInvalidState when the
// task is not in one of t.From (or has no pending retry when required), ErrInvalid for an
// invalid user message.
func (s *Store) TransitionTask(ctx context.Context, id int64, t TaskTransition) (*Task, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (*Task, error) {
		now := s.now()
		db := tx.Model(&taskRow{}).Where("id = ? AND status IN ?", id, t.From)
		if t.RequireRetryPending {
			db = db.Where("next_retry_at IS NOT NULL")
		}
		res := db.Updates(transitionChanges(t, now))
		if res.Error != nil {
			return nil, fmt.Errorf("task %d: %s: %w", id, t.Action, res.Error)
		}
		if res.RowsAffected == 0 {
			row, err := loadTask(tx, id, false)
			if err != nil {
				return nil, err
			}
			if t.RequireRetryPending && slices.Contains(t.From, row.Status) {
				return nil, svcerr.New(svcerr.ErrInvalidState, "the task has no pending automatic retry")
			}
			return nil, invalidState(t.Action, row.Status)
		}
		if err := statusEvents(tx, now, id); err != nil {
			return nil, err
		}
		if t.UserMessage != nil {
			m := *t.UserMessage
			m.Role = RoleUser
			if _, err := appendMessages(tx, id, now, []NewTaskMessage{m}); err != nil {
				return nil, err
			}
		}
		if len(t.UnsetData) > 0 {
			if err := unsetData(tx, id, t.UnsetData); err != nil {
				return nil, err
			}
		}
		if err := enqueueCallbacks(tx, now, id); err != nil {
			return nil, err
		}
		return readTask(tx, id)
	})
}

func transitionChanges(t TaskTransition, now time.Time) map[string]any {
	ch := map[string]any{"status": t.To, "updated_at": now, "next_retry_at": nil}
	if t.To != taskstate.Running {
		ch["lease_owner"], ch["lease_expires_at"] = nil, nil
	}
	if slices.Contains(taskstate.Finished, t.To) {
		ch["finished_at"] = now
	} else {
		ch["finished_at"] = nil
	}
	if t.ClearAnswer {
		ch["answer"] = nil
	}
	if t.ClearError {
		ch["error_code"], ch["error_message"] = nil, nil
	}
	if t.IncRetry {
		ch["retry_count"] = gorm.Expr("retry_count + 1")
	}
	if t.GrantSteps > 0 {
		ch["max_steps"] = gorm.Expr("steps_used + ?", t.GrantSteps)
	}
	return ch
}

func unsetData(tx *gorm.DB, id int64, keys []string) error {
	row, err := loadTask(tx, id, false)
	if err != nil {
		return err
	}
	data, err := decodeMetadata(row.Data)
	if err != nil {
		return fmt.Errorf("task %d: data: %w", id, err)
	}
	for _, k := range keys {
		delete(data, k)
	}
	enc, err := encodeJSON("data", data)
	if err != nil {
		return err
	}
	return tx.Model(&taskRow{}).Where("id = ?", id).Update("data", enc).Error
}

// AbortTaskChain aborts task id when it is in one of from, then every ancestor above it that
// is AWAITING_SUB_AGENTS, walking up parent_task_id and stopping at the first ancestor in
// another state (it is not waiting on this branch). All in one transaction; returns the task
// id itself. Errors: ErrNotFound "task not found", ErrInvalidState when id is not in from.
func (s *Store) AbortTaskChain(ctx context.Context, id int64, from []string) (*Task, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (*Task, error) {
		now := s.now()
		abort := TaskTransition{To: taskstate.Aborted}
		res := tx.Model(&taskRow{}).Where("id = ? AND status IN ?", id, from).Updates(transitionChanges(abort, now))
		if res.Error != nil {
			return nil, fmt.Errorf("abort task %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			row, err := loadTask(tx, id, false)
			if err != nil {
				return nil, err
			}
			return nil, invalidState("abort", row.Status)
		}
		child, err := loadTask(tx, id, false)
		if err != nil {
			return nil, err
		}
		if err := reapedEvents(tx, now, []int64{id}); err != nil { // it may have been mid-turn
			return nil, err
		}
		if err := enqueueCallbacks(tx, now, id); err != nil {
			return nil, err
		}
		seen := map[int64]bool{id: true}
		for p := child.ParentTaskID; p != nil && !seen[*p]; {
			seen[*p] = true
			res := tx.Model(&taskRow{}).Where("id = ? AND status = ?", *p, taskstate.AwaitingSubAgents).Updates(transitionChanges(abort, now))
			if res.Error != nil {
				return nil, fmt.Errorf("abort ancestor task %d: %w", *p, res.Error)
			}
			if res.RowsAffected == 0 {
				break
			}
			parent, err := loadTask(tx, *p, false)
			if err != nil {
				return nil, err
			}
			if err := statusEvents(tx, now, *p); err != nil {
				return nil, err
			}
			if err := enqueueCallbacks(tx, now, *p); err != nil {
				return nil, err
			}
			p = parent.ParentTaskID
		}
		return child.toTask()
	})
}

// Bounds of UnscheduledRetries: the ids one call returns (the next pass takes the rest), and
// how far back it looks (a process restarts within minutes; a day-old failure stays FAILED).
const (
	maxUnscheduledRetries  = 100
	unscheduledRetryWindow = 24 * time.Hour
)

// UnscheduledRetries returns the ids (ascending, at most 100) of FAILED tasks whose last status
// event promised an automatic retry (StatusEvent.Retrying) that was never scheduled: no
// next_retry_at, last written before before and within the day before it. A failure and its
// retry's schedule are two commits (the step's finish, then task.Service.ScheduleRetry), so a
// process that stopped between them leaves such a task, its event stream waiting for a retry;
// housekeeping schedules it. Only tasks with a transient error and retries left under their
// agent's max_retries are looked at (in pages, so failures that promised nothing cannot hide
// later ones), and a failure whose event promised nothing (none left then) is not returned even
// if its agent allows more now. Errors: uncategorised (database).
func (s *Store) UnscheduledRetries(ctx context.Context, before time.Time) ([]int64, error) {
	var out []int64
	for after := int64(0); ; {
		var ids []int64
		err := s.conn(ctx).Table("tasks").Select("tasks.id").
			Joins("JOIN agents ON agents.id = tasks.agent_id").
			Where("tasks.status = ? AND tasks.next_retry_at IS NULL AND tasks.error_code IN ? AND tasks.retry_count < agents.max_retries"+
				" AND tasks.updated_at < ? AND tasks.updated_at >= ? AND tasks.id > ?",
				taskstate.Failed, taskstate.Transient, normTime(before), normTime(before.Add(-unscheduledRetryWindow)), after).
			Order("tasks.id").Limit(maxUnscheduledRetries).Pluck("tasks.id", &ids).Error
		if err != nil {
			return nil, fmt.Errorf("unscheduled retries: %w", err)
		}
		for _, id := range ids {
			promised, err := s.retryPromised(ctx, id)
			if err != nil {
				return nil, err
			}
			if promised {
				if out = append(out, id); len(out) == maxUnscheduledRetries {
					return out, nil
				}
			}
		}
		if len(ids) < maxUnscheduledRetries {
			return out, nil
		}
		after = ids[len(ids)-1]
	}
}

// retryPromised reports whether task id's last status event is a FAILED that promised an
// automatic retry not yet scheduled.
func (s *Store) retryPromised(ctx context.Context, id int64) (bool, error) {
	var row taskEventRow
	err := s.conn(ctx).Where("task_id = ? AND type = ?", id, EventStatus).Order("sequence DESC").Limit(1).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unscheduled retries: task %d: %w", id, err)
	}
	ev, err := row.toEvent()
	if err != nil {
		return false, err
	}
	return ev.Status != nil && ev.Status.Status == taskstate.Failed && ev.Status.Retrying && ev.Status.NextRetryAt == nil, nil
}

// ScheduleTaskRetry sets the automatic retry of a FAILED task for now+after, unless one is
// already pending or retry_count has reached maxRetries. It reports whether a retry was scheduled.
// The caller decides whether the error code is transient. Errors: ErrNotFound "task not found".
func (s *Store) ScheduleTaskRetry(ctx context.Context, id int64, after time.Duration, maxRetries int) (bool, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (bool, error) {
		res := tx.Model(&taskRow{}).
			Where("id = ? AND status = ? AND next_retry_at IS NULL AND retry_count < ?", id, taskstate.Failed, maxRetries).
			Updates(map[string]any{"next_retry_at": normTime(s.now().Add(max(after, 0))), "updated_at": s.now()})
		if res.Error != nil {
			return false, fmt.Errorf("schedule retry of task %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			_, err := loadTask(tx, id, false)
			return false, err
		}
		t, err := loadTask(tx, id, false)
		if err != nil {
			return false, err
		}
		if err := statusEvents(tx, s.now(), id); err != nil {
			return false, err
		}
		if t.ParentTaskID == nil {
			if err := s.notify(tx, s.now(), t, NotifyTaskRetryQueued); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}
