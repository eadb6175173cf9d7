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

// This file is the one writer of tasks.status: every status change of a task, from its
// creation to its last step, goes through setStatus (or insertTask for the first), which checks
// it against the state machine (taskstate.Rules), sets the columns the rules derive from it,
// writes the status event, the callback and the notifications it owes, and logs it once the
// transaction committed. Other writes of the task row (usage, lease renewals, counters) never
// name the status column.

// statusChange is one transition of one or more task rows in the same status.
type statusChange struct {
	action taskstate.Action
	from   string // the status the rows are in: the UPDATE's condition, and the log line's "from"
	to     string
	// where selects the rows (ANDed with status = from): "id = ?", a lease condition, an IN list.
	where string
	args  []any
	// ids are the rows' ids when the caller knows them. MySQL/MariaDB (no UPDATE … RETURNING)
	// reads them back; a change of several rows there must hold their locks already, so that
	// each one matches.
	ids []int64
	// locked are the rows of ids as the caller read them under their locks, before the change
	// (a claim's locking read): MySQL/MariaDB then applies the change to them (changedRows)
	// instead of reading them back, a round trip less.
	locked []taskRow
	// set holds the action's own columns (usage, lease, error, data …); the derived ones are
	// setStatus's.
	set map[string]any
	// reserve numbers the caller's own events and messages in the same UPDATE: events before
	// the status event (one task only).
	reserve reserve
	// before runs between the UPDATE and the events' INSERT on the row as written (one task
	// only) and returns the caller's events, numbered before the status event.
	before func(row *taskRow) ([]TaskEvent, error)
	worker string // the worker that claims or holds the tasks, for the log line
}

// transitioned is one logged status change, kept with the transaction until it commits.
type transitioned struct {
	action   taskstate.Action
	id       int64
	from, to string
	code     string
	worker   string
}

// setStatus applies c in tx at now and returns the rows as written, in ascending id order; none
// when no row matched (the caller says why: a lost lease, a change meanwhile). Errors:
// ErrInvalidState "cannot <verb> a task that is <from>" when the state machine does not allow
// the change; database errors.
func (s *Store) setStatus(tx *gorm.DB, now time.Time, c statusChange) ([]taskRow, error) {
	rule, ok := taskstate.Rules[c.action]
	if !ok {
		return nil, fmt.Errorf("task status: unknown action %q", c.action)
	}
	if !taskstate.Allows(c.action, c.from, c.to) {
		if taskstate.Leaves(c.action, c.from) { // the status may be left, not for this one
			return nil, fmt.Errorf("task status: %s cannot move a task from %s to %s", c.action, c.from, c.to)
		}
		return nil, invalidState(rule.Verb, c.from)
	}
	ch := make(map[string]any, len(c.set)+10)
	for k, v := range c.set {
		ch[k] = v
	}
	for k, v := range derivedColumns(rule, c.to, now) {
		if _, own := ch[k]; !own {
			ch[k] = v
		}
	}
	ch["status"], ch["updated_at"] = c.to, now
	ch["event_seq"] = gorm.Expr("event_seq + ?", c.reserve.events+1)
	if c.reserve.messages > 0 {
		ch["message_seq"] = gorm.Expr("message_seq + ?", c.reserve.messages)
	}
	set, args := setClause(ch)
	q := "UPDATE tasks SET " + set + " WHERE status = ? AND (" + c.where + ")"
	rows, err := updateTasks(tx, q, append(append(args, c.from), c.args...), c.ids, mayNoticeIf(c), changedRows(c.locked, ch))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if err := s.statusWritten(tx, now, c, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// derivedColumns are the columns a transition into to sets by the state machine's rules: the
// rule's effects, the lease dropped on leaving RUNNING, finished_at, a pending retry dropped.
func derivedColumns(rule taskstate.Rule, to string, now time.Time) map[string]any {
	ch := map[string]any{"finished_at": nil}
	if taskstate.IsFinished(to) {
		ch["finished_at"] = now
	}
	if taskstate.LeavesLease(to) {
		ch["lease_owner"], ch["lease_expires_at"] = nil, nil
	}
	if rule.Effects&taskstate.KeepRetry == 0 {
		ch["next_retry_at"] = nil
	}
	if rule.Effects&taskstate.ClearError != 0 {
		ch["error_code"], ch["error_message"] = nil, nil
	}
	if rule.Effects&taskstate.ClearAnswer != 0 {
		ch["answer"] = nil
	}
	if rule.Effects&taskstate.CountRetry != 0 {
		ch["retry_count"] = gorm.Expr("retry_count + 1")
	}
	return ch
}

// updateTasks runs the UPDATE q of task rows and returns them as written, in ascending id
// order: UPDATE … RETURNING on SQLite and PostgreSQL; on MySQL/MariaDB the UPDATE, then a read
// of ids (which must all have matched), or, when the caller knew the rows before the change
// (changed, not nil), those rows as the UPDATE changed them. With wanted, each row also says
// whether a conditional notice of its transition is wanted (taskRow.noticeWanted,
// noticeWantedSQL), read with the rows.
func updateTasks(tx *gorm.DB, q string, args []any, ids []int64, wanted bool, changed []taskRow) ([]taskRow, error) {
	cols, dest := taskColumns, (*taskRow).dest
	var wArgs []any
	if wanted {
		cols, dest, wArgs = cols+", "+noticeWantedSQL, (*taskRow).destWanted, noticeWantedArgs
	}
	if tx.Dialector.Name() != DialectMySQL {
		rows, err := queryRows(tx, dest, q+" RETURNING "+cols, slices.Concat(args, wArgs)...)
		if err != nil {
			return nil, fmt.Errorf("update tasks: %w", err)
		}
		slices.SortFunc(rows, func(a, b taskRow) int { return int(a.ID - b.ID) })
		return rows, nil
	}
	res, err := rawExec(tx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("update tasks: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("update tasks: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	if int(n) != len(ids) {
		return nil, fmt.Errorf("update tasks: %d rows changed, %d expected", n, len(ids))
	}
	if changed != nil && !wanted {
		slices.SortFunc(changed, func(a, b taskRow) int { return int(a.ID - b.ID) })
		return changed, nil
	}
	in, inArgs := inList(ids)
	return queryRows(tx, dest, "SELECT "+cols+" FROM tasks WHERE id IN "+in+" ORDER BY id", slices.Concat(wArgs, inArgs)...)
}

// statusWritten writes what rows, just moved by c, owe: their status events (after the
// caller's own, in one INSERT), the notices of the notification outbox (noteNotices), the
// callbacks of chats that settled, and the log lines for after the commit. A change that
// keeps the status (follow-up, retry scheduled) owes no callback and no log line.
func (s *Store) statusWritten(tx *gorm.DB, now time.Time, c statusChange, rows []taskRow) error {
	var evRows []taskEventRow
	for i := range rows {
		r := &rows[i]
		var evs []TaskEvent
		if c.before != nil {
			own, err := c.before(r)
			if err != nil {
				return err
			}
			evs = own
		}
		st, err := statusEvent(tx, r)
		if err != nil {
			return err
		}
		evs = append(evs, TaskEvent{Type: EventStatus, Status: st, answerSeq: answerMessage(evs, st)})
		base := r.EventSeq - int64(len(evs))
		for j, e := range evs {
			e.TaskID = r.ID
			data, err := eventData(e)
			if err != nil {
				return err
			}
			evRows = append(evRows, taskEventRow{TaskID: r.ID, Sequence: base + int64(j) + 1, Type: e.Type, Data: data, CreatedAt: now})
			noteEvent(tx, r.ID, e.Status)
		}
	}
	if err := insertEventRows(tx, evRows); err != nil {
		return fmt.Errorf("status events: %w", err)
	}
	if err := noteNotices(tx, now, c, rows); err != nil {
		return err
	}
	if c.from == c.to {
		return nil
	}
	var callbacks []int64
	for i := range rows {
		r := &rows[i]
		if r.CallbackURL != nil && r.APIKeyID != nil && taskstate.IsSettled(r.Status) {
			callbacks = append(callbacks, r.ID)
		}
	}
	if err := enqueueCallbacks(tx, now, callbacks...); err != nil {
		return err
	}
	for i := range rows {
		noteTransition(tx, c.action, c.from, &rows[i], c.worker)
	}
	return nil
}

// noteTransition records, for the log line after the commit, that row moved from from.
func noteTransition(tx *gorm.DB, action taskstate.Action, from string, row *taskRow, worker string) {
	if c := createdFrom(tx); c != nil {
		tr := transitioned{action: action, id: row.ID, from: from, to: row.Status, worker: worker}
		if row.ErrorCode != nil && row.Status == taskstate.Failed {
			tr.code = *row.ErrorCode
		}
		c.transitions = append(c.transitions, tr)
	}
}

// logTransitions writes the "task transition" line of each change a committed transaction
// made, at info: task_id, action, from ("" for a new task), to, error_code of a failure, worker.
func (s *Store) logTransitions(ctx context.Context, trs []transitioned) {
	for _, tr := range trs {
		attrs := []any{"task_id", tr.id, "action", string(tr.action), "from", tr.from, "to", tr.to}
		if tr.code != "" {
			attrs = append(attrs, "error_code", tr.code)
		}
		if tr.worker != "" {
			attrs = append(attrs, "worker", tr.worker)
		}
		s.log.InfoContext(ctx, "task transition", attrs...)
	}
}

// insertTask inserts the new task row (its status the one taskstate.Create enters) with its
// first messages, and writes their events: the status event first, then the messages'. The
// messages and events are blind writes, sent in one round trip after the row (blindwrite.go).
// Errors: ErrInvalid for a row naming an unknown agent, user or parent task, or for invalid
// messages.
func (s *Store) insertTask(tx *gorm.DB, now time.Time, row *taskRow, msgs []NewTaskMessage) error {
	tx, held := holdBlind(tx)
	row.Status = taskstate.Rules[taskstate.Create].To[0]
	row.EventSeq, row.MessageSeq = int64(1+len(msgs)), int64(len(msgs))
	if err := insertTaskRow(tx, row); err != nil {
		if errors.Is(TranslateError(err), svcerr.ErrInvalid) {
			return invalidf("task refers to an unknown agent, user or parent task")
		}
		return fmt.Errorf("create task: %w", err)
	}
	st, err := statusEvent(tx, row)
	if err != nil {
		return err
	}
	stored, err := insertMessages(tx, row.ID, 0, now, msgs)
	if err != nil {
		return err
	}
	if err := insertEvents(tx, row.ID, 0, now, append([]TaskEvent{{Type: EventStatus, Status: st}}, messageEvents(stored)...)); err != nil {
		return err
	}
	if err := held.flush(tx); err != nil {
		return err
	}
	noteTransition(tx, taskstate.Create, "", row, "")
	return nil
}

// invalidState is the refusal of an action on a task in status.
func invalidState(verb, status string) error {
	if verb == "" {
		return svcerr.New(svcerr.ErrInvalidState, "the task is %s", status)
	}
	return svcerr.New(svcerr.ErrInvalidState, "cannot %s a task that is %s", verb, status)
}
