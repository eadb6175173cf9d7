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
}

// TaskMessage is one stored conversation turn; Sequence starts at 1 per task.
type TaskMessage struct {
	ID       int64
	TaskID   int64
	Sequence int
	NewTaskMessage
	CreatedAt time.Time
}

type taskMessageRow struct {
	ID             int64
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
	m := TaskMessage{ID: r.ID, TaskID: r.TaskID, Sequence: r.Sequence, CreatedAt: r.CreatedAt.UTC()}
	m.Role, m.Text, m.Reasoning = r.Role, r.Text, rawOf(r.Reasoning)
	m.ProviderCallID, m.InputTokens, m.OutputTokens = deref(r.ProviderCallID), r.InputTokens, r.OutputTokens
	if r.ToolCalls != nil {
		if err := json.Unmarshal([]byte(*r.ToolCalls), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("task message %d: tool calls: %w", r.ID, err)
		}
	}
	if r.MediaIDs != nil {
		if err := json.Unmarshal([]byte(*r.MediaIDs), &m.MediaIDs); err != nil {
			return m, fmt.Errorf("task message %d: media ids: %w", r.ID, err)
		}
	}
	return m, nil
}

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

// appendMessages stores msgs after the task's last message; the task row must be locked (or
// written) in tx already.
func appendMessages(tx *gorm.DB, taskID int64, now time.Time, msgs []NewTaskMessage) ([]TaskMessage, error) {
	var last int
	if err := tx.Model(&taskMessageRow{}).Where("task_id = ?", taskID).Select("COALESCE(MAX(sequence), 0)").Scan(&last).Error; err != nil {
		return nil, fmt.Errorf("task %d: last message: %w", taskID, err)
	}
	out := make([]TaskMessage, 0, len(msgs))
	for i, m := range msgs {
		r, err := messageRow(taskID, last+i+1, now, m)
		if err != nil {
			return nil, err
		}
		if err := tx.Create(r).Error; err != nil {
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
	evs := make([]TaskEvent, len(out))
	for i := range out {
		evs[i] = TaskEvent{Type: EventMessage, Message: &out[i]}
	}
	return out, appendEvents(tx, taskID, now, evs...)
}

// AppendMessages adds conversation turns to a task whose lease workerID holds and returns them
// with their sequence numbers. Errors: ErrInvalidState (lease lost), ErrNotFound, ErrInvalid.
func (s *Store) AppendMessages(ctx context.Context, taskID int64, workerID string, msgs []NewTaskMessage) ([]TaskMessage, error) {
	return inLease(ctx, s, taskID, workerID, func(tx *gorm.DB, now time.Time) ([]TaskMessage, error) {
		return appendMessages(tx, taskID, now, msgs)
	})
}

// Messages returns the turns of a task with a sequence above sinceSequence, in order.
// Errors: none beyond the database's own (an unknown task has no messages).
func (s *Store) Messages(ctx context.Context, taskID int64, sinceSequence int) ([]TaskMessage, error) {
	var rows []taskMessageRow
	err := s.conn(ctx).Where("task_id = ? AND sequence > ?", taskID, sinceSequence).Order("sequence").Find(&rows).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: messages: %w", taskID, err))
	}
	return convertRows(rows, (*taskMessageRow).toMessage)
}
