package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// MessageToolCall is one tool call an assistant turn asked for.
type MessageToolCall struct {
	ProviderCallID string          `json:"id"`
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
}

// NewTaskMessage is a conversation turn to append.
type NewTaskMessage struct {
	Role           string // RoleUser, RoleAssistant or RoleTool
	Text           string
	Reasoning      json.RawMessage   // provider reasoning blocks, kept as sent
	ToolCalls      []MessageToolCall // assistant turn
	ProviderCallID string            // tool turn: the call it answers
	MediaIDs       []string
	InputTokens    int64
	OutputTokens   int64
	// Streamed says that output deltas of this assistant turn were written to the event log
	// (AppendDelta): storing the turn drops them. A turn that streamed nothing costs no delete,
	// since deltas only ever exist while the run that wrote them holds the task's lease (a
	// reaped, handed-back or aborted run's deltas are dropped at that moment).
	Streamed bool `json:"-"`
}

// TaskMessage is one stored conversation turn; Sequence starts at 1 per task.
type TaskMessage struct {
	TaskID   int64
	Sequence int
	NewTaskMessage
	CreatedAt time.Time
}

type taskMessageRow struct {
	TaskID         int64
	Sequence       int
	Role           string
	Text           string
	Reasoning      *string
	ToolCalls      *string
	ProviderCallID *string
	MediaIDs       *string
	InputTokens    int64
	OutputTokens   int64
	CreatedAt      time.Time
}

func (taskMessageRow) TableName() string { return "task_messages" }

func (r *taskMessageRow) toMessage() (TaskMessage, error) {
	m := TaskMessage{TaskID: r.TaskID, Sequence: r.Sequence, CreatedAt: r.CreatedAt.UTC()}
	m.Role, m.Text, m.Reasoning = r.Role, r.Text, rawOf(r.Reasoning)
	m.ProviderCallID, m.InputTokens, m.OutputTokens = deref(r.ProviderCallID), r.InputTokens, r.OutputTokens
	if r.ToolCalls != nil {
		if err := json.Unmarshal([]byte(*r.ToolCalls), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("task %d, message %d: tool calls: %w", r.TaskID, r.Sequence, err)
		}
	}
	if r.MediaIDs != nil {
		if err := json.Unmarshal([]byte(*r.MediaIDs), &m.MediaIDs); err != nil {
			return m, fmt.Errorf("task %d, message %d: media ids: %w", r.TaskID, r.Sequence, err)
		}
	}
	return m, nil
}

// messageRow checks and builds the row of m. The checks guard the rows the agent loop builds
// (roles, token counts, reasoning, tool-call ids); a caller's text is checked before the store
// (task.CheckPrompt, task.CheckFollowUp), so for it they are only the columns' last guard.
func messageRow(taskID int64, seq int, now time.Time, m NewTaskMessage) (*taskMessageRow, error) {
	switch m.Role {
	case RoleUser, RoleAssistant, RoleTool:
	default:
		return nil, invalidf("message role must be user, assistant or tool")
	}
	if err := checkText("message text", m.Text, MaxTaskPromptLen); err != nil {
		return nil, err
	}
	if m.InputTokens < 0 || m.OutputTokens < 0 {
		return nil, invalidf("token counts must not be negative")
	}
	r := &taskMessageRow{TaskID: taskID, Sequence: seq, Role: m.Role, Text: m.Text, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CreatedAt: now}
	var err error
	if r.Reasoning, err = encodeRaw("reasoning", m.Reasoning); err != nil {
		return nil, err
	}
	if len(m.ToolCalls) > 0 {
		for _, c := range m.ToolCalls {
			if err := checkKey("tool call id", c.ProviderCallID, true); err != nil {
				return nil, err
			}
		}
		s, err := encodeJSON("tool calls", m.ToolCalls)
		if err != nil {
			return nil, err
		}
		r.ToolCalls = &s
	}
	if m.ProviderCallID != "" {
		if err := checkKey("provider call id", m.ProviderCallID, true); err != nil {
			return nil, err
		}
		r.ProviderCallID = &m.ProviderCallID
	}
	if len(m.MediaIDs) > 0 {
		s, err := encodeJSON("media ids", m.MediaIDs)
		if err != nil {
			return nil, err
		}
		r.MediaIDs = &s
	}
	return r, nil
}

// appendMessages stores msgs after the task's last message (numbered through
// tasks.message_seq, which locks the task row to the end of tx) with their message events.
func appendMessages(tx *gorm.DB, taskID int64, now time.Time, msgs []NewTaskMessage) ([]TaskMessage, error) {
	last, err := bumpSeq(tx, taskID, "message_seq", len(msgs))
	if err != nil {
		return nil, err
	}
	out, err := insertMessages(tx, taskID, int(last)-len(msgs), now, msgs)
	if err != nil {
		return nil, err
	}
	return out, appendEvents(tx, taskID, now, messageEvents(out)...)
}

// insertMessages stores msgs numbered from base+1 (given out already on the task row) and
// returns them; their events are the caller's.
func insertMessages(tx *gorm.DB, taskID int64, base int, now time.Time, msgs []NewTaskMessage) ([]TaskMessage, error) {
	out := make([]TaskMessage, 0, len(msgs))
	for i, m := range msgs {
		r, err := messageRow(taskID, base+i+1, now, m)
		if err != nil {
			return nil, err
		}
		if err := insertMessageRow(tx, r); err != nil {
			return nil, fmt.Errorf("task %d: append message: %w", taskID, err)
		}
		if err := attachMedia(tx, taskID, r.Sequence, now, m.MediaIDs); err != nil {
			return nil, err
		}
		tm, err := r.toMessage()
		if err != nil {
			return nil, err
		}
		out = append(out, tm)
	}
	return out, nil
}

// messageEvents are the events of stored messages.
func messageEvents(msgs []TaskMessage) []TaskEvent {
	evs := make([]TaskEvent, len(msgs))
	for i := range msgs {
		evs[i] = TaskEvent{Type: EventMessage, Message: &msgs[i]}
	}
	return evs
}

// AppendMessages adds conversation turns to a task whose lease workerID holds and returns them
// with their sequence numbers. Errors: ErrInvalidState (lease lost), ErrNotFound, ErrInvalid.
func (s *Tasks) AppendMessages(ctx context.Context, taskID int64, workerID string, msgs []NewTaskMessage) ([]TaskMessage, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) ([]TaskMessage, error) {
		now := s.now()
		row, err := leaseWrite(tx, taskID, workerID, now, nil, reserve{events: len(msgs), messages: len(msgs)})
		if err != nil {
			return nil, err
		}
		out, err := insertMessages(tx, taskID, int(row.MessageSeq)-len(msgs), now, msgs)
		if err != nil {
			return nil, err
		}
		return out, insertNumbered(tx, taskID, row.EventSeq, now, messageEvents(out))
	})
}

// MessagesOfTasks returns the turns of each of taskIDs, in order, in one statement: the
// worker reads the conversations of a claim's batch at once (agentloop.Loop.Claim). A task
// without messages has no entry. Errors: none beyond the database's own.
func (s *Tasks) MessagesOfTasks(ctx context.Context, taskIDs []int64) (map[int64][]TaskMessage, error) {
	out := make(map[int64][]TaskMessage, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	db := s.conn(ctx)
	in, args := idIn(db, "task_id", taskIDs)
	rows, err := queryRows(db, (*taskMessageRow).dest, "SELECT "+messageColumns+" FROM task_messages WHERE "+in+" ORDER BY task_id, sequence", args...)
	if err != nil {
		return nil, TranslateError(fmt.Errorf("messages of %d tasks: %w", len(taskIDs), err))
	}
	for i := range rows {
		m, err := rows[i].toMessage()
		if err != nil {
			return nil, err
		}
		out[m.TaskID] = append(out[m.TaskID], m)
	}
	return out, nil
}

// Messages returns the turns of a task with a sequence above sinceSequence, in order.
// Errors: none beyond the database's own (an unknown task has no messages).
func (s *Tasks) Messages(ctx context.Context, taskID int64, sinceSequence int) ([]TaskMessage, error) {
	rows, err := queryRows(s.conn(ctx), (*taskMessageRow).dest, "SELECT "+messageColumns+" FROM task_messages WHERE task_id = ? AND sequence > ? ORDER BY sequence",
		taskID, sinceSequence)
	if err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: messages: %w", taskID, err))
	}
	return convertRows(rows, (*taskMessageRow).toMessage)
}
