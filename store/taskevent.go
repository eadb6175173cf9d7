package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Task event types. A task's events are written in the transaction of their cause, numbered
// from 1 per task, so a reader that has seen sequence n has seen every event before it.
const (
	EventStatus           = "status"             // the task entered a status (Status)
	EventMessage          = "message"            // a conversation turn was stored (Message)
	EventToolCallProposed = "tool_call.proposed" // the model asked for a tool call (ToolCall)
	EventToolCallDecided  = "tool_call.decided"  // a person approved or rejected it (ToolCall)
	EventToolCallExecuted = "tool_call.executed" // it ran and its result was recorded (ToolCall)
	EventQuestionAsked    = "question.asked"     // the agent asked a question batch (Questions)
	EventQuestionAnswered = "question.answered"  // the batch was answered (Questions)
	EventDelta            = "delta"              // model output while a turn streams (Delta)
	EventSummary          = "summary"            // older turns were compacted into a summary (Summary)
)

// MaxEventsPage bounds one read of a task's events.
const MaxEventsPage = 500

// StatusEvent is the payload of an EventStatus: the task as it entered the status.
type StatusEvent struct {
	Status string     `json:"status"`
	Error  *TaskError `json:"error,omitempty"`
	Answer *string    `json:"answer,omitempty"`
	// Zero counts are left out of the stored event (every task's first status has them).
	StepsUsed    int        `json:"steps_used,omitempty"`
	InputTokens  int64      `json:"input_tokens,omitempty"`
	OutputTokens int64      `json:"output_tokens,omitempty"`
	NextRetryAt  *time.Time `json:"next_retry_at,omitempty"`
	// Retrying marks a FAILED status whose transient error the agent retries automatically: the
	// run is not over.
	Retrying bool `json:"retrying,omitempty"`
}

// Ends reports whether the status ends the task's run: a finished status with no automatic
// retry to follow. An event stream ends with it.
func (e *StatusEvent) Ends() bool {
	return taskstate.IsFinished(e.Status) && !e.Retrying && e.NextRetryAt == nil
}

// Delta is a piece of model output that arrived while a turn streams; deltas are coalesced
// by the loop and deleted once the turn's message (which holds the whole text) is stored.
type Delta struct {
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// TaskEvent is one entry of a task's event log; exactly the payload its Type names is set.
type TaskEvent struct {
	TaskID    int64
	Sequence  int64
	Type      string
	CreatedAt time.Time
	Status    *StatusEvent   `json:",omitempty"`
	Message   *TaskMessage   `json:",omitempty"`
	ToolCall  *ToolCall      `json:",omitempty"`
	Questions *QuestionBatch `json:",omitempty"`
	Delta     *Delta         `json:",omitempty"`
	Summary   *Summary       `json:",omitempty"`

	messageSeq int64 // a message event read from the log: its message's sequence (TaskEvents fills Message)
	// answerSeq is, in a status event, the sequence of the message whose text is its answer:
	// set by the writer when the step stored that message (answerMessage), and read from the log
	// (TaskEvents fills Status.Answer from it).
	answerSeq int64
}

// Ends reports whether the event ends the task's run (see StatusEvent.Ends).
func (e *TaskEvent) Ends() bool { return e.Status != nil && e.Status.Ends() }

// taskEventRow is a row of task_events, named by (task_id, sequence): PostgreSQL has no other
// key (migration 0040); the id column SQLite and MySQL keep is never read.
type taskEventRow struct {
	TaskID    int64
	Sequence  int64
	Type      string
	Data      string
	CreatedAt time.Time
}

func (taskEventRow) TableName() string { return "task_events" }

// eventPayload is what the data column holds: the payload fields of a TaskEvent.
type eventPayload struct {
	Status    *StatusEvent   `json:"status,omitempty"`
	Message   *TaskMessage   `json:"message,omitempty"`
	ToolCall  *ToolCall      `json:"tool_call,omitempty"`
	Questions *QuestionBatch `json:"questions,omitempty"`
	Delta     *Delta         `json:"delta,omitempty"`
	Summary   *Summary       `json:"summary,omitempty"`
	// MessageSeq stands for Message in a message event: the turn is in task_messages, written
	// in the same transaction and never changed, so its text is stored once (issue 28: the
	// copies were half of what a task kept). Events written before hold Message itself.
	MessageSeq int64 `json:"message_seq,omitempty"`
	// AnswerSeq stands for a status event's answer when it is the text of a message of the task
	// (the step's own): the answer is stored once more in tasks.answer, not a third time here.
	AnswerSeq int64 `json:"answer_seq,omitempty"`
}

// eventData encodes e's payload for the data column (a message by its sequence).
func eventData(e TaskEvent) (string, error) {
	p := eventPayload{Status: e.Status, ToolCall: e.ToolCall, Questions: e.Questions, Delta: e.Delta, Summary: e.Summary}
	if e.Message != nil {
		p.MessageSeq = int64(e.Message.Sequence)
	}
	if e.Status != nil && e.answerSeq > 0 {
		st := *e.Status
		st.Answer = nil
		p.Status, p.AnswerSeq = &st, e.answerSeq
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("task %d: encode %s event: %w", e.TaskID, e.Type, err)
	}
	return string(data), nil
}

func (r *taskEventRow) toEvent() (TaskEvent, error) {
	var p eventPayload
	if err := json.Unmarshal([]byte(r.Data), &p); err != nil {
		return TaskEvent{}, fmt.Errorf("task %d event %d: %w", r.TaskID, r.Sequence, err)
	}
	return TaskEvent{TaskID: r.TaskID, Sequence: r.Sequence, Type: r.Type, CreatedAt: r.CreatedAt.UTC(),
		Status: p.Status, Message: p.Message, ToolCall: p.ToolCall, Questions: p.Questions, Delta: p.Delta, Summary: p.Summary,
		messageSeq: p.MessageSeq, answerSeq: p.AnswerSeq}, nil
}

// answerMessage is the sequence of the assistant message among evs (a step's own events) whose
// text is st's answer, 0 for none: the status event then names it instead of repeating it.
func answerMessage(evs []TaskEvent, st *StatusEvent) int64 {
	if st.Answer == nil || *st.Answer == "" {
		return 0
	}
	for _, e := range evs {
		if e.Message != nil && e.Message.Role == RoleAssistant && e.Message.Text == *st.Answer {
			return int64(e.Message.Sequence)
		}
	}
	return 0
}

// appendEvents writes evs as the next events of task taskID in tx: it bumps tasks.event_seq
// (which locks the task row to the end of tx, so concurrent writers of one task's events
// commit in sequence order) and inserts the rows. The store's event hook hears of the task
// after the commit. Writers that update the task row anyway number their events in that
// update instead (leaseWrite, then insertNumbered).
func appendEvents(tx *gorm.DB, taskID int64, now time.Time, evs ...TaskEvent) error {
	if len(evs) == 0 {
		return nil
	}
	last, err := bumpSeq(tx, taskID, "event_seq", len(evs))
	if err != nil {
		return err
	}
	return insertEvents(tx, taskID, last-int64(len(evs)), now, evs)
}

// insertEvents inserts evs numbered from base+1, in one statement.
func insertEvents(tx *gorm.DB, taskID, base int64, now time.Time, evs []TaskEvent) error {
	if len(evs) == 0 {
		return nil
	}
	rows := make([]taskEventRow, len(evs))
	for i, e := range evs {
		e.TaskID = taskID
		data, err := eventData(e)
		if err != nil {
			return err
		}
		rows[i] = taskEventRow{TaskID: taskID, Sequence: base + int64(i) + 1, Type: e.Type, Data: data, CreatedAt: now}
	}
	if err := insertEventRows(tx, rows); err != nil {
		return fmt.Errorf("task %d: append events: %w", taskID, err)
	}
	for i := range evs {
		noteEvent(tx, taskID, evs[i].Status)
	}
	return nil
}

// noteEvent records, for after the commit, that task taskID got an event (its streams wake)
// and, for a QUEUED status, that work is waiting (the daemon wakes).
func noteEvent(tx *gorm.DB, taskID int64, st *StatusEvent) {
	c := createdFrom(tx)
	if c == nil {
		return
	}
	if !slices.Contains(c.EventTasks, taskID) {
		c.EventTasks = append(c.EventTasks, taskID)
	}
	if st != nil && st.Status == taskstate.Queued {
		c.TaskQueued = true
	}
}

// bumpSeq adds n to a counter column of the task row (event_seq, message_seq) and returns its
// new value, in one statement: UPDATE … RETURNING on SQLite and PostgreSQL; on MySQL/MariaDB (no UPDATE …
// RETURNING) the value passes through LAST_INSERT_ID(expr), which the server reports in the
// statement's answer.
func bumpSeq(tx *gorm.DB, taskID int64, column string, n int) (int64, error) {
	var last int64
	if tx.Dialector.Name() != DialectMySQL {
		res := tx.Raw("UPDATE tasks SET "+column+" = "+column+" + ? WHERE id = ? RETURNING "+column, n, taskID).Scan(&last)
		if res.Error != nil {
			return 0, fmt.Errorf("task %d: number %s: %w", taskID, column, res.Error)
		}
		if res.RowsAffected == 0 {
			return 0, errTaskNotFound()
		}
		return last, nil
	}
	conn, ok := tx.Statement.ConnPool.(interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	})
	if !ok {
		return 0, fmt.Errorf("task %d: number %s: the transaction cannot execute statements", taskID, column)
	}
	res, err := conn.ExecContext(tx.Statement.Context, "UPDATE tasks SET "+column+" = LAST_INSERT_ID("+column+" + ?) WHERE id = ?", n, taskID)
	if err == nil {
		var rows int64
		if rows, err = res.RowsAffected(); err == nil && rows == 0 {
			return 0, errTaskNotFound()
		}
	}
	if err == nil {
		last, err = res.LastInsertId()
	}
	if err != nil {
		return 0, fmt.Errorf("task %d: number %s: %w", taskID, column, err)
	}
	return last, nil
}

// pruneDeltas deletes the streamed output deltas of task id: the turn they belong to has ended
// (its message is stored, or it failed and nothing of it is kept).
func pruneDeltas(tx *gorm.DB, id int64) error {
	if err := tx.Where("task_id = ? AND type = ?", id, EventDelta).Delete(&taskEventRow{}).Error; err != nil {
		return fmt.Errorf("task %d: prune deltas: %w", id, err)
	}
	return nil
}

// toolCallEvents appends one event of type typ per call.
func toolCallEvents(tx *gorm.DB, taskID int64, now time.Time, typ string, calls []ToolCall) error {
	evs := make([]TaskEvent, len(calls))
	for i := range calls {
		evs[i] = TaskEvent{Type: typ, ToolCall: &calls[i]}
	}
	return appendEvents(tx, taskID, now, evs...)
}

// AppendDelta records a piece of streamed model output of the turn running under workerID's
// lease. Errors: ErrInvalidState (lease lost), ErrNotFound.
func (s *Tasks) AppendDelta(ctx context.Context, taskID int64, workerID string, d Delta) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		row, err := leaseWrite(tx, taskID, workerID, now, nil, reserve{events: 1})
		if err != nil {
			return err
		}
		return insertNumbered(tx, taskID, row.EventSeq, now, []TaskEvent{{Type: EventDelta, Delta: &d}})
	})
}

// TaskEvents returns up to limit (at most MaxEventsPage) events of task id with a sequence
// above after, in order. An unknown task has no events.
func (s *Tasks) TaskEvents(ctx context.Context, id, after int64, limit int) ([]TaskEvent, error) {
	if limit <= 0 || limit > MaxEventsPage {
		limit = MaxEventsPage
	}
	var rows []taskEventRow
	if err := s.conn(ctx).Where("task_id = ? AND sequence > ?", id, after).Order("sequence").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("task %d: events: %w", id, err)
	}
	evs, err := convertRows(rows, (*taskEventRow).toEvent)
	if err != nil {
		return nil, err
	}
	return evs, s.fillMessages(ctx, id, evs)
}

// fillMessages sets the Message of the message events in evs (of task id) that name it by
// sequence, and the answer of the status events that name its message, from task_messages in
// one read of the range they span.
func (s *Tasks) fillMessages(ctx context.Context, id int64, evs []TaskEvent) error {
	var lo, hi int64
	for _, e := range evs {
		for _, q := range []int64{e.messageSeq, e.answerSeq} {
			if q > 0 {
				if lo == 0 {
					lo = q
				}
				lo, hi = min(lo, q), max(hi, q)
			}
		}
	}
	if lo == 0 {
		return nil
	}
	rows, err := queryRows(s.conn(ctx), (*taskMessageRow).dest, "SELECT "+messageColumns+" FROM task_messages WHERE task_id = ? AND sequence >= ? AND sequence <= ?",
		id, lo, hi)
	if err != nil {
		return fmt.Errorf("task %d: messages of events: %w", id, err)
	}
	msgs, err := convertRows(rows, (*taskMessageRow).toMessage)
	if err != nil {
		return err
	}
	bySeq := make(map[int64]*TaskMessage, len(msgs))
	for i := range msgs {
		bySeq[int64(msgs[i].Sequence)] = &msgs[i]
	}
	for i := range evs {
		if q := evs[i].messageSeq; q > 0 {
			if evs[i].Message = bySeq[q]; evs[i].Message == nil {
				return fmt.Errorf("task %d: event %d names message %d, which is not stored", id, evs[i].Sequence, q)
			}
		}
		if q := evs[i].answerSeq; q > 0 && evs[i].Status != nil {
			m := bySeq[q]
			if m == nil {
				return fmt.Errorf("task %d: event %d names message %d as its answer, which is not stored", id, evs[i].Sequence, q)
			}
			answer := m.Text
			evs[i].Status.Answer = &answer
		}
	}
	return nil
}

// EventCursor is where a task's event log stands: the last sequence given out, and whether
// the run is over (a finished status without a pending retry).
type EventCursor struct {
	TaskID   int64
	EventSeq int64
	Ended    bool
}

// EventCursors reads the event cursors of ids (unknown ids are left out) in one query, for
// the event streams of every process to notice events other processes wrote.
func (s *Tasks) EventCursors(ctx context.Context, ids []int64) ([]EventCursor, error) {
	var rows []taskRow
	if err := s.conn(ctx).Select("id", "event_seq", "status", "next_retry_at").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("event cursors: %w", err)
	}
	out := make([]EventCursor, len(rows))
	for i, r := range rows {
		out[i] = EventCursor{TaskID: r.ID, EventSeq: r.EventSeq,
			Ended: taskstate.IsFinished(r.Status) && r.NextRetryAt == nil}
	}
	return out, nil
}
