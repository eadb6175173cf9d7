package store

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// leaseWhere is the condition under which a worker's write to its task applies: the task is
// RUNNING, leased to the worker, and the lease has not expired.
const leaseWhere = "id = ? AND status = ? AND lease_owner = ? AND lease_expires_at >= ?"

// leaseHeld is leaseWhere without the status, for setStatus (which adds status = RUNNING).
const leaseHeld = "id = ? AND lease_owner = ? AND lease_expires_at >= ?"

// reserve is what a lease write numbers on the task row in the same statement: the events and
// the messages the transaction is about to insert.
type reserve struct{ events, messages int }

// leaseWrite applies ch (updated_at = now added) to task id if workerID still holds its lease at
// now, and gives out r's event and message numbers, in one conditional UPDATE: the lease check
// is the statement's WHERE and its affected row count decides (no separate check). It takes the
// task's row lock for the rest of tx and returns the row as written (UPDATE … RETURNING * on
// SQLite and PostgreSQL; the UPDATE, then a read of the locked row, on MySQL/MariaDB). Errors: ErrInvalidState
// when the lease was lost (reaped, aborted, expired, claimed by another worker), ErrNotFound.
func leaseWrite(tx *gorm.DB, id int64, workerID string, now time.Time, ch map[string]any, r reserve) (*taskRow, error) {
	if ch == nil {
		ch = map[string]any{}
	}
	ch["updated_at"] = now
	if r.events > 0 {
		ch["event_seq"] = gorm.Expr("event_seq + ?", r.events)
	}
	if r.messages > 0 {
		ch["message_seq"] = gorm.Expr("message_seq + ?", r.messages)
	}
	set, args := setClause(ch)
	args = append(args, id, taskstate.Running, workerID, now)
	q := "UPDATE tasks SET " + set + " WHERE " + leaseWhere
	if tx.Dialector.Name() != DialectMySQL {
		rows, err := queryTasks(tx, q+" RETURNING "+taskColumns, args...)
		if err != nil {
			return nil, fmt.Errorf("task %d: write under lease: %w", id, err)
		}
		if len(rows) == 0 {
			return nil, leaseLost(tx, id, workerID)
		}
		return &rows[0], nil
	}
	res, err := rawExec(tx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("task %d: write under lease: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("task %d: write under lease: %w", id, err)
	} else if n == 0 {
		return nil, leaseLost(tx, id, workerID)
	}
	return loadTask(tx, id, false)
}

// leaseLost is the error of a lease write that matched no row: ErrNotFound for a task that is
// gone, else ErrInvalidState.
func leaseLost(tx *gorm.DB, id int64, workerID string) error {
	var n int64
	if err := tx.Model(&taskRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return fmt.Errorf("task %d: check lease: %w", id, err)
	}
	if n == 0 {
		return errTaskNotFound()
	}
	return svcerr.New(svcerr.ErrInvalidState, "worker %s no longer holds the lease of task %d", workerID, id)
}

// numbered is a transaction's events of one task with their numbers given out already (by
// leaseWrite): last is the task's event_seq after the reservation.
func insertNumbered(tx *gorm.DB, taskID, last int64, now time.Time, evs []TaskEvent) error {
	return insertEvents(tx, taskID, last-int64(len(evs)), now, evs)
}

// statusEvent describes the task of row as it entered its status (see statusEvents).
func statusEvent(tx *gorm.DB, r *taskRow) (*StatusEvent, error) {
	st := &StatusEvent{Status: r.Status, Answer: r.Answer, StepsUsed: r.StepsUsed, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, NextRetryAt: utcPtr(r.NextRetryAt)}
	if r.ErrorCode != nil {
		st.Error = &TaskError{Code: *r.ErrorCode, Message: deref(r.ErrorMessage)}
	}
	if r.Status == taskstate.Failed && r.ErrorCode != nil && taskstate.IsTransient(*r.ErrorCode) {
		var maxRetries int
		if err := tx.Table("agents").Select("max_retries").Where("id = ?", r.AgentID).Row().Scan(&maxRetries); err != nil {
			return nil, fmt.Errorf("task %d: status event: %w", r.ID, err)
		}
		st.Retrying = taskstate.WillRetry(*r.ErrorCode, r.RetryCount, maxRetries)
	}
	return st, nil
}
