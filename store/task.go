package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Task sources.
const (
	TaskSourceSession  = "session"
	TaskSourceAgentAPI = "agent_api"
)

// Task column limits (checked here so both dialects refuse the same values).
const (
	MaxTaskPromptLen       = 1 << 20 // characters; MEDIUMTEXT holds 4 bytes a character
	MaxTaskErrorMessageLen = 10000
	MaxTaskJSONLen         = 4 << 20 // bytes of JSON in one column
	MaxTaskKeyLen          = 191     // provider call ids, tool classes, names, worker ids
	MaxTaskReasonLen       = 10000
)

// TaskError is why a task failed.
type TaskError struct {
	Code    string
	Message string
}

// Task is one chat run of an agent. UserID is the owner; PrincipalID the agent's principal
// when the task started.
type Task struct {
	ID             int64
	AgentID        int64
	PrincipalID    int64
	UserID         int64
	ParentTaskID   *int64
	Status         string
	Prompt         string
	Answer         *string
	Error          *TaskError
	MaxSteps       int
	StepsUsed      int
	RetryCount     int
	NextRetryAt    *time.Time
	Recoveries     int // times taken back from a worker that died or failed mid-step since the last finished step
	InputTokens    int64
	OutputTokens   int64
	Data           map[string]any // never nil
	Source         string
	APIKeyID       *int64  // the key that started a per-agent API chat (nil: session task)
	CallbackURL    *string // screened callback target of a chat (nil: no callbacks)
	LeaseOwner     *string
	LeaseExpiresAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	FinishedAt     *time.Time
	// TraceParent is the W3C traceparent of the request that created the task ("" : none);
	// the spans of its steps link to it (NewTask.TraceParent).
	TraceParent string
	// ToolCallCount is how many tool calls the task has recorded: a step of a task with none
	// does not read them.
	ToolCallCount int
	// SummarySeq is the event sequence of the task's latest summary (0: never compacted), so a
	// step reads it (SummaryAt) only when there is one.
	SummarySeq int64
	// MessageSeq is the sequence of the task's last message: a run that holds the messages
	// through it reads none again (agentloop's transcript).
	MessageSeq int64
}

type taskRow struct {
	ID             int64
	AgentID        int64
	PrincipalID    int64
	UserID         int64
	ParentTaskID   *int64
	Status         string
	Prompt         string
	Answer         *string
	ErrorCode      *string
	ErrorMessage   *string
	MaxSteps       int
	StepsUsed      int
	RetryCount     int
	NextRetryAt    *time.Time
	Recoveries     int
	InputTokens    int64
	OutputTokens   int64
	Data           string
	Source         string
	APIKeyID       *int64
	CallbackURL    *string
	LeaseOwner     *string
	LeaseExpiresAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	FinishedAt     *time.Time
	EventSeq       int64 // the last event sequence given out (taskevent.go)
	TraceParent    *string
	MessageSeq     int64 // the last message sequence given out (taskmessage.go)
	ToolCallCount  int   // tool calls recorded (AppendAssistantTurn)
	SummarySeq     int64 // the latest summary's event sequence (AppendSummary)
	// noticeWanted is not a column: whether a conditional notice of the row's transition is
	// wanted, when the status UPDATE read it (noticeWantedSQL); nil when not read.
	noticeWanted *bool
}

func (taskRow) TableName() string { return "tasks" }

func (r *taskRow) toTask() (*Task, error) {
	data, err := decodeMetadata(r.Data)
	if err != nil {
		return nil, fmt.Errorf("task %d: data: %w", r.ID, err)
	}
	t := &Task{
		ID: r.ID, AgentID: r.AgentID, PrincipalID: r.PrincipalID, UserID: r.UserID, ParentTaskID: r.ParentTaskID,
		Status: r.Status, Prompt: r.Prompt, Answer: r.Answer, MaxSteps: r.MaxSteps, StepsUsed: r.StepsUsed,
		RetryCount: r.RetryCount, NextRetryAt: utcPtr(r.NextRetryAt), Recoveries: r.Recoveries, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, Data: data, Source: r.Source, APIKeyID: r.APIKeyID, CallbackURL: r.CallbackURL,
		LeaseOwner:     r.LeaseOwner,
		LeaseExpiresAt: utcPtr(r.LeaseExpiresAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		FinishedAt: utcPtr(r.FinishedAt), TraceParent: deref(r.TraceParent), ToolCallCount: r.ToolCallCount,
		SummarySeq: r.SummarySeq, MessageSeq: r.MessageSeq,
	}
	if r.ErrorCode != nil {
		t.Error = &TaskError{Code: *r.ErrorCode, Message: deref(r.ErrorMessage)}
	}
	return t, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func errTaskNotFound() error { return svcerr.New(svcerr.ErrNotFound, "task not found") }

func loadTask(db *gorm.DB, id int64, lock bool) (*taskRow, error) {
	q := "SELECT " + taskColumns + " FROM tasks WHERE id = ?"
	if lock && db.Dialector.Name() != DialectSQLite { // SQLite's immediate transaction holds the lock already
		q += " FOR UPDATE"
	}
	rows, err := queryTasks(db, q, id)
	if err != nil {
		return nil, fmt.Errorf("load task %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, errTaskNotFound()
	}
	return &rows[0], nil
}

func readTask(db *gorm.DB, id int64) (*Task, error) {
	row, err := loadTask(db, id, false)
	if err != nil {
		return nil, err
	}
	return row.toTask()
}

// encodeJSON renders v as compact JSON (no HTML escaping) of at most MaxTaskJSONLen bytes. Its
// ErrInvalid is the last guard of the task tables' JSON columns: what a caller writes (a new
// task's data, approved arguments, answers) is checked by task.CheckJSON before the store; what
// the loop builds (tool calls, results, questions) is checked only here.
func encodeJSON(field string, v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", invalidf("%s must be valid JSON", field)
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	if len(s) > MaxTaskJSONLen {
		return "", invalidf("%s must be at most %d bytes of JSON", field, MaxTaskJSONLen)
	}
	return s, nil
}

// encodeRaw checks and compacts raw JSON; empty means NULL.
func encodeRaw(field string, raw json.RawMessage) (*string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalidf("%s must be valid JSON", field)
	}
	if buf.Len() > MaxTaskJSONLen {
		return nil, invalidf("%s must be at most %d bytes of JSON", field, MaxTaskJSONLen)
	}
	s := buf.String()
	if err := checkText(field, s, MaxTaskJSONLen); err != nil {
		return nil, err
	}
	return &s, nil
}

func rawOf(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

func checkKey(field, v string, required bool) error {
	if required && v == "" {
		return invalidf("%s is required", field)
	}
	return checkText(field, v, MaxTaskKeyLen)
}

// NewTask describes a task to create. The caller has checked that the user may use the agent.
type NewTask struct {
	AgentID      int64
	PrincipalID  int64
	UserID       int64
	ParentTaskID *int64
	Prompt       string
	MaxSteps     int
	Source       string  // TaskSourceSession (default) or TaskSourceAgentAPI
	APIKeyID     *int64  // agent_api: the key that started the chat
	CallbackURL  *string // agent_api: screened callback target
	MediaIDs     []string
	Data         map[string]any
	// TraceParent is the W3C traceparent of the request creating the task ("" : none), stored
	// so the spans of its steps link back to the request across the queue; longer than 128
	// bytes it is not stored.
	TraceParent string
	// Limit, when set, is the caller's rate-limit event, counted in the task's transaction
	// (the per-agent API's chat start: one write transaction instead of two); its refusal is
	// CreateTask's error, with nothing stored.
	Limit *LimitHit
}

// CreateTask stores a QUEUED task and its prompt as the first user message (sequence 1); an
// empty Source is TaskSourceSession. The caller has applied task.CheckNew (prompt, max_steps,
// source, data). Errors: ErrInvalid (unknown agent, user, parent task or media asset: known
// only to this write), nt.Limit's refusal, those of LimitHit.
func (s *Tasks) CreateTask(ctx context.Context, nt NewTask) (*Task, error) {
	if nt.Source == "" {
		nt.Source = TaskSourceSession
	}
	data := "{}"
	if nt.Data != nil {
		var err error
		if data, err = encodeJSON("data", nt.Data); err != nil {
			return nil, err
		}
	}
	t, err := inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		if nt.Limit != nil {
			if err := nt.Limit.apply(tx); err != nil {
				return nil, err
			}
		}
		now := s.now()
		row := taskRow{
			AgentID: nt.AgentID, PrincipalID: nt.PrincipalID, UserID: nt.UserID, ParentTaskID: nt.ParentTaskID,
			Prompt: nt.Prompt, MaxSteps: nt.MaxSteps, Data: data, Source: nt.Source,
			APIKeyID: nt.APIKeyID, CallbackURL: nt.CallbackURL, CreatedAt: now, UpdatedAt: now,
			TraceParent: traceParent(nt.TraceParent),
		}
		if err := s.insertTask(tx, now, &row, []NewTaskMessage{{Role: RoleUser, Text: nt.Prompt, MediaIDs: nt.MediaIDs}}); err != nil {
			return nil, err
		}
		return row.toTask()
	})
	nt.Limit.done(err)
	return t, err
}

// Task returns one task. Errors: ErrNotFound "task not found".
func (s *Tasks) Task(ctx context.Context, id int64) (*Task, error) {
	t, err := readTask(s.conn(ctx), id)
	return t, TranslateError(err)
}

// TaskQuery selects a page of one user's tasks for ListTasks.
type TaskQuery struct {
	UserID  int64
	AgentID int64      // 0 for every agent
	Status  string     // "" for every state
	Match   string     // "" for all; else the tasks whose prompt contains it (ignoring case)
	Since   *time.Time // only tasks updated strictly after
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
}

// ListTasks returns one page of the tasks q.UserID owns (sub-agent tasks included), newest
// first (created_at, then id, descending). Errors: none beyond the database's own.
func (s *Tasks) ListTasks(ctx context.Context, q TaskQuery) ([]Task, error) {
	db := s.conn(ctx).Where("user_id = ?", q.UserID)
	if q.AgentID != 0 {
		db = db.Where("agent_id = ?", q.AgentID)
	}
	if q.Status != "" {
		db = db.Where("status = ?", q.Status)
	}
	if q.Match != "" {
		db = db.Where("LOWER(prompt) LIKE ? ESCAPE '!'", "%"+likeEscape(strings.ToLower(q.Match))+"%")
	}
	return listTasks(db, "list tasks", q.Since, q.Page, q.PerPage)
}

// listTasks returns one page of the tasks db selects, updated strictly after since when given,
// newest first (created_at, then id, descending).
func listTasks(db *gorm.DB, what string, since *time.Time, page, perPage int) ([]Task, error) {
	out := []Task{}
	limit, offset, ok := pageWindow(page, perPage)
	if !ok {
		return out, nil
	}
	if since != nil {
		db = db.Where("updated_at > ?", normTime(*since))
	}
	var rows []taskRow
	if err := db.Order("created_at DESC").Order("id DESC").Limit(limit).Offset(offset).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("%s: %w", what, err))
	}
	return convertRows(rows, func(r *taskRow) (Task, error) {
		t, err := r.toTask()
		if err != nil {
			return Task{}, err
		}
		return *t, nil
	})
}

// DeleteTask removes a task with its messages, tool calls, questions and sub-agent tasks.
// Errors: ErrNotFound "task not found", ErrInvalidState while the task is RUNNING.
func (s *Tasks) DeleteTask(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("id = ? AND status <> ?", id, taskstate.Running).Delete(&taskRow{})
		if res.Error != nil {
			return fmt.Errorf("delete task %d: %w", id, res.Error)
		}
		if res.RowsAffected > 0 {
			return nil
		}
		if _, err := loadTask(tx, id, false); err != nil {
			return err
		}
		return svcerr.New(svcerr.ErrInvalidState, "the task is RUNNING; abort it before deleting it")
	})
}

// convertRows turns database rows into their exported values, stopping at the first row that
// does not decode.
func convertRows[R, T any](rows []R, conv func(*R) (T, error)) ([]T, error) {
	out := make([]T, 0, len(rows))
	for i := range rows {
		v, err := conv(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
