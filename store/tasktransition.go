package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// TaskTransition is a status change asked for by a caller (task.Service), applied by
// TransitionTask under the state machine's rule for Action (taskstate.Rules), which also gives
// its effects (error and answer cleared, retry counted …).
type TaskTransition struct {
	Action taskstate.Action
	// From, when set, narrows the statuses the rule allows the task to leave (a condition the
	// caller checked, such as the agent refusing follow-ups on a COMPLETED task).
	From []string
	To   string
	// RequireRetryPending applies the change only while next_retry_at is set.
	RequireRetryPending bool
	// GrantSteps > 0 sets max_steps to steps_used + GrantSteps.
	GrantSteps int
	// UserMessage, when set, is appended to the conversation as a user message.
	UserMessage *NewTaskMessage
	// UnsetData removes these keys from the task's data.
	UnsetData []string
}

// TransitionTask applies t to task id under the task's row lock, so of two concurrent callers
// at most one moves the task. Errors: ErrNotFound "task not found", ErrInvalidState when the
// state machine (or t.From) does not let the task leave its status, or it has no pending retry
// when required; ErrInvalid for an invalid user message.
func (s *Tasks) TransitionTask(ctx context.Context, id int64, t TaskTransition) (*Task, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		now := s.now()
		cur, err := loadTask(tx, id, true)
		if err != nil {
			return nil, err
		}
		if t.From != nil && !slices.Contains(t.From, cur.Status) {
			return nil, invalidState(taskstate.Rules[t.Action].Verb, cur.Status)
		}
		if t.RequireRetryPending && taskstate.Leaves(t.Action, cur.Status) && cur.NextRetryAt == nil {
			return nil, svcerr.New(svcerr.ErrInvalidState, "the task has no pending automatic retry")
		}
		set := map[string]any{}
		if t.GrantSteps > 0 {
			set["max_steps"] = gorm.Expr("steps_used + ?", t.GrantSteps)
		}
		if len(t.UnsetData) > 0 {
			data, err := decodeMetadata(cur.Data)
			if err != nil {
				return nil, fmt.Errorf("task %d: data: %w", id, err)
			}
			for _, k := range t.UnsetData {
				delete(data, k)
			}
			if set["data"], err = encodeJSON("data", data); err != nil {
				return nil, err
			}
		}
		rows, err := s.setStatus(tx, now, statusChange{action: t.Action, from: cur.Status, to: t.To,
			where: "id = ?", args: []any{id}, ids: []int64{id}, set: set})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 { // cannot happen under the row lock; refuse rather than guess
			return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
		}
		if t.UserMessage != nil {
			m := *t.UserMessage
			m.Role = RoleUser
			if _, err := appendMessages(tx, id, now, []NewTaskMessage{m}); err != nil {
				return nil, err
			}
			return readTask(tx, id)
		}
		return rows[0].toTask()
	})
}

// AbortTaskChain aborts task id, then every ancestor above it that is AWAITING_SUB_AGENTS,
// walking up parent_task_id and stopping at the first ancestor in another state (it is not
// waiting on this branch). All in one transaction; returns the task id itself. Errors:
// ErrNotFound "task not found", ErrInvalidState when the state machine does not let id abort.
func (s *Tasks) AbortTaskChain(ctx context.Context, id int64) (*Task, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		now := s.now()
		cur, err := loadTask(tx, id, true)
		if err != nil {
			return nil, err
		}
		if err := pruneDeltas(tx, id); err != nil { // it may have been mid-turn
			return nil, err
		}
		rows, err := s.setStatus(tx, now, statusChange{action: taskstate.Abort, from: cur.Status, to: taskstate.Aborted,
			where: "id = ?", args: []any{id}, ids: []int64{id}})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
		}
		child := rows[0]
		seen := map[int64]bool{id: true}
		for p := child.ParentTaskID; p != nil && !seen[*p]; {
			seen[*p] = true
			parents, err := s.setStatus(tx, now, statusChange{action: taskstate.Abort, from: taskstate.AwaitingSubAgents,
				to: taskstate.Aborted, where: "id = ?", args: []any{*p}, ids: []int64{*p}})
			if err != nil {
				return nil, err
			}
			if len(parents) == 0 {
				break
			}
			p = parents[0].ParentTaskID
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
// if its agent allows more now. The status is written into the text: the index that finds
// FAILED tasks is partial (migration 0039), and a plan made for any status could not use it. Errors: uncategorised (database).
func (s *Tasks) UnscheduledRetries(ctx context.Context, before time.Time) ([]int64, error) {
	var out []int64
	for after := int64(0); ; {
		var ids []int64
		err := s.conn(ctx).Table("tasks").Select("tasks.id").
			Joins("JOIN agents ON agents.id = tasks.agent_id").
			Where("tasks.status = '"+taskstate.Failed+"' AND tasks.next_retry_at IS NULL AND tasks.error_code IN ? AND tasks.retry_count < agents.max_retries"+
				" AND tasks.updated_at < ? AND tasks.updated_at >= ? AND tasks.id > ?",
				taskstate.Transient, normTime(before), normTime(before.Add(-unscheduledRetryWindow)), after).
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
func (s *Tasks) ScheduleTaskRetry(ctx context.Context, id int64, after time.Duration, maxRetries int) (bool, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (bool, error) {
		now := s.now()
		rows, err := s.setStatus(tx, now, statusChange{action: taskstate.ScheduleRetry, from: taskstate.Failed, to: taskstate.Failed,
			where: "id = ? AND next_retry_at IS NULL AND retry_count < ?", args: []any{id, maxRetries}, ids: []int64{id},
			set: map[string]any{"next_retry_at": normTime(now.Add(max(after, 0)))}})
		if err != nil {
			return false, err
		}
		if len(rows) == 0 {
			_, err := loadTask(tx, id, false)
			return false, err
		}
		return true, nil
	})
}
