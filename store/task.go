package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/svcerr"
)

// Task states (DESIGN.md §3 "Task states"). Terminal: COMPLETED, FAILED, CANCELLED; paused:
// ABORTED, PENDING_APPROVAL, AWAITING_INPUT; quiescent: paused plus AWAITING_SUB_AGENTS.
const (
	TaskQueued            = "QUEUED"
	TaskRunning           = "RUNNING"
	TaskPendingApproval   = "PENDING_APPROVAL"
	TaskAwaitingInput     = "AWAITING_INPUT"
	TaskAwaitingSubAgents = "AWAITING_SUB_AGENTS"
	TaskAborted           = "ABORTED"
	TaskCompleted         = "COMPLETED"
	TaskFailed            = "FAILED"
	TaskCancelled         = "CANCELLED"
)

// Task error codes (the contract's TaskErrorCode).
const (
	TaskErrRateLimit          = "RATE_LIMIT"
	TaskErrServerOverloaded   = "SERVER_OVERLOADED"
	TaskErrServerError        = "SERVER_ERROR"
	TaskErrGatewayError       = "GATEWAY_ERROR"
	TaskErrAuthError          = "AUTH_ERROR"
	TaskErrLLMTimeout         = "LLM_TIMEOUT"
	TaskErrBadRequest         = "BAD_REQUEST"
	TaskErrToolError          = "TOOL_ERROR"
	TaskErrOrphaned           = "ORPHANED"
	TaskErrWorkerDisconnected = "WORKER_DISCONNECTED"
	TaskErrNoLLMConfiguration = "NO_LLM_CONFIGURATION"
	TaskErrUnknown            = "UNKNOWN"
)

// TaskErrorCodes lists every error code a failed task may carry.
var TaskErrorCodes = []string{
	TaskErrRateLimit, TaskErrServerOverloaded, TaskErrServerError, TaskErrGatewayError, TaskErrAuthError,
	TaskErrLLMTimeout, TaskErrBadRequest, TaskErrToolError, TaskErrOrphaned, TaskErrWorkerDisconnected,
	TaskErrNoLLMConfiguration, TaskErrUnknown,
}

// Tool call row states.
const (
	ToolCallPending         = "PENDING"
	ToolCallPendingApproval = "PENDING_APPROVAL"
	ToolCallApproved        = "APPROVED"
	ToolCallRejected        = "REJECTED"
	ToolCallExecuted        = "EXECUTED"
	ToolCallFailed          = "FAILED"
)

// Task sources and message roles.
const (
	TaskSourceSession  = "session"
	TaskSourceAgentAPI = "agent_api"

	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Task column limits (checked here so both dialects refuse the same values).
const (
	MaxTaskPromptLen       = 1 << 20 // characters; MEDIUMTEXT holds 4 bytes a character
	MaxTaskErrorMessageLen = 10000
	MaxTaskJSONLen         = 4 << 20 // bytes of JSON in one column
	MaxTaskKeyLen          = 191     // provider call ids, tool classes, names, worker ids
	MaxTaskReasonLen       = 10000
)

// finishedStates set finished_at when entered.
var finishedStates = []string{TaskCompleted, TaskFailed, TaskCancelled, TaskAborted}

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
		RetryCount: r.RetryCount, NextRetryAt: utcPtr(r.NextRetryAt), InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, Data: data, Source: r.Source, APIKeyID: r.APIKeyID, CallbackURL: r.CallbackURL,
		LeaseOwner:     r.LeaseOwner,
		LeaseExpiresAt: utcPtr(r.LeaseExpiresAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		FinishedAt: utcPtr(r.FinishedAt),
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
	var row taskRow
	if lock {
		db = db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	err := db.Take(&row, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errTaskNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("load task %d: %w", id, err)
	}
	return &row, nil
}

func readTask(db *gorm.DB, id int64) (*Task, error) {
	row, err := loadTask(db, id, false)
	if err != nil {
		return nil, err
	}
	return row.toTask()
}

// encodeJSON renders v as compact JSON (no HTML escaping) of at most MaxTaskJSONLen bytes.
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

// ---- creation, reading, listing, deletion -------------------------------------------------

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
}

// CreateTask stores a QUEUED task and its prompt as the first user message (sequence 1).
// Errors: ErrInvalid (blank or oversize prompt, max_steps below 1, unknown source, unknown
// agent, user or parent task).
func (s *Store) CreateTask(ctx context.Context, nt NewTask) (*Task, error) {
	if strings.TrimSpace(nt.Prompt) == "" {
		return nil, invalidf("prompt is required")
	}
	if err := checkText("prompt", nt.Prompt, MaxTaskPromptLen); err != nil {
		return nil, err
	}
	if nt.MaxSteps < 1 || nt.MaxSteps > math.MaxInt32 {
		return nil, invalidf("max_steps must be at least 1")
	}
	if nt.Source == "" {
		nt.Source = TaskSourceSession
	}
	if nt.Source != TaskSourceSession && nt.Source != TaskSourceAgentAPI {
		return nil, invalidf("source must be %q or %q", TaskSourceSession, TaskSourceAgentAPI)
	}
	data := "{}"
	if nt.Data != nil {
		var err error
		if data, err = encodeJSON("data", nt.Data); err != nil {
			return nil, err
		}
	}
	var out *Task
	err := s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		row := taskRow{
			AgentID: nt.AgentID, PrincipalID: nt.PrincipalID, UserID: nt.UserID, ParentTaskID: nt.ParentTaskID,
			Status: TaskQueued, Prompt: nt.Prompt, MaxSteps: nt.MaxSteps, Data: data, Source: nt.Source,
			APIKeyID: nt.APIKeyID, CallbackURL: nt.CallbackURL, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(TranslateError(err), svcerr.ErrInvalid) {
				return invalidf("task refers to an unknown agent, user or parent task")
			}
			return fmt.Errorf("create task: %w", err)
		}
		if _, err := appendMessages(tx, row.ID, now, []NewTaskMessage{{Role: RoleUser, Text: nt.Prompt, MediaIDs: nt.MediaIDs}}); err != nil {
			return err
		}
		var err error
		out, err = row.toTask()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Task returns one task. Errors: ErrNotFound "task not found".
func (s *Store) Task(ctx context.Context, id int64) (*Task, error) {
	t, err := readTask(s.conn(ctx), id)
	return t, TranslateError(err)
}

// TaskQuery selects a page of one user's tasks for ListTasks.
type TaskQuery struct {
	UserID int64
	Status string     // "" for every state
	Since  *time.Time // only tasks updated strictly after
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
}

// ListTasks returns one page of the tasks q.UserID owns (sub-agent tasks included), newest
// first (created_at, then id, descending). Errors: none beyond the database's own.
func (s *Store) ListTasks(ctx context.Context, q TaskQuery) ([]Task, error) {
	db := s.conn(ctx).Where("user_id = ?", q.UserID)
	if q.Status != "" {
		db = db.Where("status = ?", q.Status)
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
func (s *Store) DeleteTask(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("id = ? AND status <> ?", id, TaskRunning).Delete(&taskRow{})
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

// ---- status changes (compare-and-swap) -------------------------------------------------------

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
	var out *Task
	err := s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		db := tx.Model(&taskRow{}).Where("id = ? AND status IN ?", id, t.From)
		if t.RequireRetryPending {
			db = db.Where("next_retry_at IS NOT NULL")
		}
		res := db.Updates(transitionChanges(t, now))
		if res.Error != nil {
			return fmt.Errorf("task %d: %s: %w", id, t.Action, res.Error)
		}
		if res.RowsAffected == 0 {
			row, err := loadTask(tx, id, false)
			if err != nil {
				return err
			}
			if t.RequireRetryPending && slices.Contains(t.From, row.Status) {
				return svcerr.New(svcerr.ErrInvalidState, "the task has no pending automatic retry")
			}
			return invalidState(t.Action, row.Status)
		}
		if t.UserMessage != nil {
			m := *t.UserMessage
			m.Role = RoleUser
			if _, err := appendMessages(tx, id, now, []NewTaskMessage{m}); err != nil {
				return err
			}
		}
		if len(t.UnsetData) > 0 {
			if err := unsetData(tx, id, t.UnsetData); err != nil {
				return err
			}
		}
		if err := enqueueCallbacks(tx, now, id); err != nil {
			return err
		}
		var err error
		out, err = readTask(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func transitionChanges(t TaskTransition, now time.Time) map[string]any {
	ch := map[string]any{"status": t.To, "updated_at": now, "next_retry_at": nil}
	if t.To != TaskRunning {
		ch["lease_owner"], ch["lease_expires_at"] = nil, nil
	}
	if slices.Contains(finishedStates, t.To) {
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
	var out *Task
	err := s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		abort := TaskTransition{To: TaskAborted}
		res := tx.Model(&taskRow{}).Where("id = ? AND status IN ?", id, from).Updates(transitionChanges(abort, now))
		if res.Error != nil {
			return fmt.Errorf("abort task %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			row, err := loadTask(tx, id, false)
			if err != nil {
				return err
			}
			return invalidState("abort", row.Status)
		}
		child, err := loadTask(tx, id, false)
		if err != nil {
			return err
		}
		if err := enqueueCallbacks(tx, now, id); err != nil {
			return err
		}
		seen := map[int64]bool{id: true}
		for p := child.ParentTaskID; p != nil && !seen[*p]; {
			seen[*p] = true
			res := tx.Model(&taskRow{}).Where("id = ? AND status = ?", *p, TaskAwaitingSubAgents).Updates(transitionChanges(abort, now))
			if res.Error != nil {
				return fmt.Errorf("abort ancestor task %d: %w", *p, res.Error)
			}
			if res.RowsAffected == 0 {
				break
			}
			parent, err := loadTask(tx, *p, false)
			if err != nil {
				return err
			}
			if err := enqueueCallbacks(tx, now, *p); err != nil {
				return err
			}
			p = parent.ParentTaskID
		}
		out, err = child.toTask()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScheduleTaskRetry sets the automatic retry of a FAILED task for now+after, unless one is
// already pending or retry_count has reached maxRetries. It reports whether a retry was scheduled.
// The caller decides whether the error code is transient. Errors: ErrNotFound "task not found".
func (s *Store) ScheduleTaskRetry(ctx context.Context, id int64, after time.Duration, maxRetries int) (bool, error) {
	var ok bool
	err := s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&taskRow{}).
			Where("id = ? AND status = ? AND next_retry_at IS NULL AND retry_count < ?", id, TaskFailed, maxRetries).
			Updates(map[string]any{"next_retry_at": normTime(s.now().Add(max(after, 0))), "updated_at": s.now()})
		if res.Error != nil {
			return fmt.Errorf("schedule retry of task %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			_, err := loadTask(tx, id, false)
			return err
		}
		ok = true
		return nil
	})
	return ok, err
}

// ---- worker side: claiming, leases, reaping ----------------------------------------------------

const claimSet = "retry_count = retry_count + CASE WHEN status = 'FAILED' THEN 1 ELSE 0 END, " +
	"error_code = NULL, error_message = NULL, next_retry_at = NULL, finished_at = NULL, " +
	"lease_owner = ?, lease_expires_at = ?, updated_at = ?, status = 'RUNNING'" // status last: MySQL assigns left to right

// The QUEUED selection orders by (lease_expires_at, id): a queued task has no lease, so this is
// id order, and it follows the (status, lease_expires_at) index (InnoDB appends the primary
// key) instead of sorting. Due retries follow (status, next_retry_at).
const (
	claimQueuedWhere = "status = 'QUEUED'"
	claimQueuedOrder = "lease_expires_at, id"
	claimRetryWhere  = "status = 'FAILED' AND next_retry_at IS NOT NULL AND next_retry_at <= ?"
	claimRetryOrder  = "next_retry_at, id"
)

// ClaimQueued moves up to limit tasks to RUNNING, leased to workerID until now+lease: QUEUED
// tasks first (oldest first), then FAILED tasks whose automatic retry is due (their
// retry_count grows by one, error and next_retry_at are cleared). Concurrent claimers never
// receive the same task: SQLite claims with one UPDATE … RETURNING per kind inside an
// immediate transaction, MySQL/MariaDB selects with FOR UPDATE SKIP LOCKED and updates in the
// same transaction. Errors: ErrInvalid (empty or oversize worker id, lease not positive).
func (s *Store) ClaimQueued(ctx context.Context, workerID string, lease time.Duration, limit int) ([]Task, error) {
	if err := checkKey("worker id", workerID, true); err != nil {
		return nil, err
	}
	if lease <= 0 {
		return nil, invalidf("lease must be positive")
	}
	out := []Task{}
	if limit < 1 {
		return out, nil
	}
	var rows []taskRow
	err := s.tx(ctx, func(tx *gorm.DB) error {
		rows = rows[:0]
		now := s.now()
		until := normTime(now.Add(lease))
		for _, sel := range []struct {
			where, order string
			args         []any
		}{{claimQueuedWhere, claimQueuedOrder, nil}, {claimRetryWhere, claimRetryOrder, []any{now}}} {
			n := limit - len(rows)
			if n <= 0 {
				break
			}
			got, err := s.claim(tx, sel.where, sel.order, sel.args, n, workerID, until, now)
			if err != nil {
				return err
			}
			rows = append(rows, got...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		t, err := rows[i].toTask()
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

func (s *Store) claim(tx *gorm.DB, where, order string, args []any, n int, worker string, until, now time.Time) ([]taskRow, error) {
	var rows []taskRow
	set := []any{worker, until, now}
	if s.dialect == DialectSQLite {
		q := "UPDATE tasks SET " + claimSet + " WHERE id IN (SELECT id FROM tasks WHERE " + where +
			" ORDER BY " + order + " LIMIT ?) RETURNING *"
		if err := tx.Raw(q, append(append(set, args...), n)...).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("claim tasks: %w", err)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
		return rows, nil
	}
	var ids []int64
	q := "SELECT id FROM tasks WHERE " + where + " ORDER BY " + order + " LIMIT ? FOR UPDATE SKIP LOCKED"
	if err := tx.Raw(q, append(args, n)...).Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if err := tx.Exec("UPDATE tasks SET "+claimSet+" WHERE id IN ?", append(set, ids)...).Error; err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	if err := tx.Where("id IN ?", ids).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	return rows, nil
}

// guardLease bumps updated_at of task id if workerID still holds its lease (RUNNING, same
// owner, not expired), taking the row lock for the rest of tx. Errors: ErrInvalidState when
// the lease was lost (reaped, aborted, expired, claimed by another worker), ErrNotFound.
func (s *Store) guardLease(tx *gorm.DB, id int64, workerID string, now time.Time) error {
	res := tx.Model(&taskRow{}).
		Where("id = ? AND status = ? AND lease_owner = ? AND lease_expires_at >= ?", id, TaskRunning, workerID, now).
		Update("updated_at", now)
	if res.Error != nil {
		return fmt.Errorf("task %d: check lease: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := loadTask(tx, id, false); err != nil {
			return err
		}
		return svcerr.New(svcerr.ErrInvalidState, "worker %s no longer holds the lease of task %d", workerID, id)
	}
	return nil
}

func (s *Store) withLease(ctx context.Context, id int64, workerID string, fn func(tx *gorm.DB, now time.Time) error) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		if err := s.guardLease(tx, id, workerID, now); err != nil {
			return err
		}
		return fn(tx, now)
	})
}

// ExtendLease moves the lease of a RUNNING task held by workerID to now+lease. Errors:
// ErrInvalidState when the lease was lost or the task left RUNNING (for example aborted),
// ErrNotFound "task not found", ErrInvalid for a non-positive lease.
func (s *Store) ExtendLease(ctx context.Context, id int64, workerID string, lease time.Duration) error {
	if lease <= 0 {
		return invalidf("lease must be positive")
	}
	return s.withLease(ctx, id, workerID, func(tx *gorm.DB, now time.Time) error {
		return tx.Model(&taskRow{}).Where("id = ?", id).Update("lease_expires_at", normTime(now.Add(lease))).Error
	})
}

// ReapStale fails every RUNNING task whose lease expired before now with error code ORPHANED
// (an automatic retry may follow; see task.Service.ScheduleRetry) and returns their ids in
// ascending order. Errors: none beyond the database's own.
func (s *Store) ReapStale(ctx context.Context, now time.Time) ([]int64, error) {
	return s.reap(ctx, now, TaskErrOrphaned, "the worker running the task stopped answering")
}

// reap fails every RUNNING task whose lease expired before now with code and message, and
// returns their ids in ascending order.
func (s *Store) reap(ctx context.Context, now time.Time, code, msg string) ([]int64, error) {
	now = normTime(now)
	var ids []int64
	err := s.tx(ctx, func(tx *gorm.DB) error {
		ids = ids[:0]
		err := tx.Model(&taskRow{}).Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("status = ? AND lease_expires_at < ?", TaskRunning, now).Order("id").Pluck("id", &ids).Error
		if err != nil {
			return fmt.Errorf("find tasks with expired leases: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		ch := transitionChanges(TaskTransition{To: TaskFailed}, s.now())
		ch["error_code"], ch["error_message"] = code, msg
		if err := tx.Model(&taskRow{}).Where("id IN ? AND status = ?", ids, TaskRunning).Updates(ch).Error; err != nil {
			return err
		}
		return enqueueCallbacks(tx, s.now(), ids...)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// StepOutcome is what one step of the loop did: its usage and steps deltas, and the state the
// task goes to (TaskRunning keeps the lease for another step).
type StepOutcome struct {
	Status       string
	Answer       *string    // replaces the answer when set
	Error        *TaskError // required for FAILED
	InputTokens  int64
	OutputTokens int64
	Steps        int
	Data         map[string]any // keys merged into the task's data
}

var stepTargets = []string{TaskRunning, TaskCompleted, TaskPendingApproval, TaskAwaitingInput, TaskAwaitingSubAgents, TaskFailed, TaskAborted}

// FinishStep records the outcome of one step of a task whose lease workerID holds. Errors:
// ErrInvalidState when the lease was lost (the task was aborted, reaped or claimed again:
// nothing is written), ErrNotFound, ErrInvalid for an invalid outcome.
func (s *Store) FinishStep(ctx context.Context, id int64, workerID string, o StepOutcome) (*Task, error) {
	if !slices.Contains(stepTargets, o.Status) {
		return nil, invalidf("a step cannot end in state %q", o.Status)
	}
	if (o.Status == TaskFailed) != (o.Error != nil) {
		return nil, invalidf("an error is given exactly when the step fails")
	}
	if o.Error != nil {
		if !slices.Contains(TaskErrorCodes, o.Error.Code) {
			return nil, invalidf("unknown task error code %q", o.Error.Code)
		}
		if err := checkText("error message", o.Error.Message, MaxTaskErrorMessageLen); err != nil {
			return nil, err
		}
	}
	if o.Answer != nil {
		if err := checkText("answer", *o.Answer, MaxTaskPromptLen); err != nil {
			return nil, err
		}
	}
	if o.InputTokens < 0 || o.OutputTokens < 0 || o.Steps < 0 {
		return nil, invalidf("usage and steps deltas must not be negative")
	}
	var out *Task
	err := s.withLease(ctx, id, workerID, func(tx *gorm.DB, now time.Time) error {
		ch := map[string]any{
			"input_tokens":  gorm.Expr("input_tokens + ?", o.InputTokens),
			"output_tokens": gorm.Expr("output_tokens + ?", o.OutputTokens),
			"steps_used":    gorm.Expr("steps_used + ?", o.Steps),
		}
		if o.Status != TaskRunning {
			for k, v := range transitionChanges(TaskTransition{To: o.Status}, now) {
				ch[k] = v
			}
		}
		if o.Answer != nil {
			ch["answer"] = *o.Answer
		}
		if o.Error != nil {
			ch["error_code"], ch["error_message"] = o.Error.Code, o.Error.Message
		}
		if len(o.Data) > 0 {
			row, err := loadTask(tx, id, false)
			if err != nil {
				return err
			}
			data, err := decodeMetadata(row.Data)
			if err != nil {
				return fmt.Errorf("task %d: data: %w", id, err)
			}
			for k, v := range o.Data {
				data[k] = v
			}
			if ch["data"], err = encodeJSON("data", data); err != nil {
				return err
			}
		}
		if err := tx.Model(&taskRow{}).Where("id = ?", id).Updates(ch).Error; err != nil {
			return fmt.Errorf("finish step of task %d: %w", id, err)
		}
		if err := enqueueCallbacks(tx, now, id); err != nil {
			return err
		}
		var err error
		out, err = readTask(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ---- messages ----------------------------------------------------------------------------------

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
	return out, nil
}

// AppendMessages adds conversation turns to a task whose lease workerID holds and returns them
// with their sequence numbers. Errors: ErrInvalidState (lease lost), ErrNotFound, ErrInvalid.
func (s *Store) AppendMessages(ctx context.Context, taskID int64, workerID string, msgs []NewTaskMessage) ([]TaskMessage, error) {
	var out []TaskMessage
	err := s.withLease(ctx, taskID, workerID, func(tx *gorm.DB, now time.Time) error {
		var err error
		out, err = appendMessages(tx, taskID, now, msgs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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

// ---- tool calls ----------------------------------------------------------------------------------

// NewToolCall is a tool call of an assistant turn to record. Status is ToolCallPending (run
// without approval) or ToolCallPendingApproval.
type NewToolCall struct {
	MessageSequence int
	ProviderCallID  string
	ToolClass       string
	Name            string
	Operation       string
	Status          string
	Arguments       map[string]any
}

// ToolCall is one recorded tool call with its decision and outcome.
type ToolCall struct {
	ID                int64
	TaskID            int64
	MessageSequence   int
	ProviderCallID    string
	ToolClass         string
	Name              string
	Operation         string
	Status            string
	ProposedArguments map[string]any // never nil
	ApprovedArguments map[string]any // nil until approved
	Result            json.RawMessage
	Reason            *string
	DecidedBy         *int64
	DecidedByKey      *string // public id of the API key the decision came through (nil: a session)
	DecidedAt         *time.Time
	CreatedAt         time.Time
	ExecutedAt        *time.Time
}

type toolCallRow struct {
	ID                int64
	TaskID            int64
	MessageSequence   int
	ProviderCallID    string
	ToolClass         string
	Name              string
	Operation         string
	Status            string
	ProposedArguments string
	ApprovedArguments *string
	Result            *string
	Reason            *string
	DecidedBy         *int64
	DecidedByKey      *string
	DecidedAt         *time.Time
	CreatedAt         time.Time
	ExecutedAt        *time.Time
}

func (toolCallRow) TableName() string { return "task_tool_calls" }

func (r *toolCallRow) toToolCall() (ToolCall, error) {
	c := ToolCall{
		ID: r.ID, TaskID: r.TaskID, MessageSequence: r.MessageSequence, ProviderCallID: r.ProviderCallID,
		ToolClass: r.ToolClass, Name: r.Name, Operation: r.Operation, Status: r.Status, Result: rawOf(r.Result),
		Reason: r.Reason, DecidedBy: r.DecidedBy, DecidedByKey: r.DecidedByKey, DecidedAt: utcPtr(r.DecidedAt), CreatedAt: r.CreatedAt.UTC(),
		ExecutedAt: utcPtr(r.ExecutedAt),
	}
	var err error
	if c.ProposedArguments, err = decodeMetadata(r.ProposedArguments); err != nil {
		return c, fmt.Errorf("tool call %d: arguments: %w", r.ID, err)
	}
	if r.ApprovedArguments != nil {
		if c.ApprovedArguments, err = decodeMetadata(*r.ApprovedArguments); err != nil {
			return c, fmt.Errorf("tool call %d: approved arguments: %w", r.ID, err)
		}
	}
	return c, nil
}

// RecordToolCalls stores the tool calls of an assistant turn of a task whose lease workerID
// holds. Errors: ErrInvalidState (lease lost), ErrConflict (a provider call id already
// recorded for the task), ErrInvalid, ErrNotFound.
func (s *Store) RecordToolCalls(ctx context.Context, taskID int64, workerID string, calls []NewToolCall) ([]ToolCall, error) {
	rows := make([]toolCallRow, 0, len(calls))
	for _, c := range calls {
		if c.Status != ToolCallPending && c.Status != ToolCallPendingApproval {
			return nil, invalidf("a new tool call is PENDING or PENDING_APPROVAL")
		}
		for _, k := range []struct{ f, v string }{{"provider call id", c.ProviderCallID}, {"tool class", c.ToolClass}, {"tool name", c.Name}} {
			if err := checkKey(k.f, k.v, true); err != nil {
				return nil, err
			}
		}
		if err := checkKey("operation", c.Operation, false); err != nil {
			return nil, err
		}
		args := map[string]any{}
		if c.Arguments != nil {
			args = c.Arguments
		}
		enc, err := encodeJSON("arguments", args)
		if err != nil {
			return nil, err
		}
		rows = append(rows, toolCallRow{
			MessageSequence: c.MessageSequence, ProviderCallID: c.ProviderCallID, ToolClass: c.ToolClass,
			Name: c.Name, Operation: c.Operation, Status: c.Status, ProposedArguments: enc,
		})
	}
	out := make([]ToolCall, 0, len(rows))
	err := s.withLease(ctx, taskID, workerID, func(tx *gorm.DB, now time.Time) error {
		for i := range rows {
			rows[i].TaskID, rows[i].CreatedAt = taskID, now
			if err := tx.Create(&rows[i]).Error; err != nil {
				if errors.Is(TranslateError(err), svcerr.ErrConflict) {
					return svcerr.New(svcerr.ErrConflict, "tool call %q is already recorded", rows[i].ProviderCallID)
				}
				return fmt.Errorf("task %d: record tool call: %w", taskID, err)
			}
			c, err := rows[i].toToolCall()
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ToolCallUpdate is the outcome of running one tool call.
type ToolCallUpdate struct {
	Status string // ToolCallExecuted or ToolCallFailed
	Result json.RawMessage
}

// UpdateToolCall records the outcome of tool call callID of a task whose lease workerID holds;
// executed_at becomes now. Errors: ErrInvalidState (lease lost), ErrNotFound "tool call not
// found", ErrInvalid.
func (s *Store) UpdateToolCall(ctx context.Context, taskID int64, workerID string, callID int64, u ToolCallUpdate) error {
	if u.Status != ToolCallExecuted && u.Status != ToolCallFailed {
		return invalidf("a tool call ends EXECUTED or FAILED")
	}
	result, err := encodeRaw("result", u.Result)
	if err != nil {
		return err
	}
	return s.withLease(ctx, taskID, workerID, func(tx *gorm.DB, now time.Time) error {
		res := tx.Model(&toolCallRow{}).Where("id = ? AND task_id = ?", callID, taskID).
			Updates(map[string]any{"status": u.Status, "result": result, "executed_at": now})
		if res.Error != nil {
			return fmt.Errorf("update tool call %d: %w", callID, res.Error)
		}
		if res.RowsAffected == 0 {
			return svcerr.New(svcerr.ErrNotFound, "tool call not found")
		}
		return nil
	})
}

// ToolCalls returns every tool call of a task in the order they were recorded.
func (s *Store) ToolCalls(ctx context.Context, taskID int64) ([]ToolCall, error) {
	return toolCalls(s.conn(ctx), taskID, "")
}

func toolCalls(db *gorm.DB, taskID int64, status string) ([]ToolCall, error) {
	db = db.Where("task_id = ?", taskID)
	if status != "" {
		db = db.Where("status = ?", status)
	}
	var rows []toolCallRow
	if err := db.Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: tool calls: %w", taskID, err))
	}
	return convertRows(rows, (*toolCallRow).toToolCall)
}

// ToolDecision is one caller decision on a PENDING_APPROVAL call.
type ToolDecision struct {
	ProviderCallID string
	Approve        bool
	Arguments      map[string]any // approve: what runs (nil: the proposed arguments)
	Reason         *string        // reject: shown to the model
}

// DefaultRejectReason is what the model sees for a call rejected without a reason.
const DefaultRejectReason = "The user rejected this tool call."

// rejectionResult is the tool result the model sees for a rejected call.
func rejectionResult(reason string) (string, error) {
	return encodeJSON("result", map[string]any{"rejected": true, "reason": reason})
}

// DecideToolCalls applies decisions (by provider call id) to the PENDING_APPROVAL calls of a
// task in PENDING_APPROVAL, recording who decided and when; approved arguments are kept apart
// from the proposed ones, a rejection's reason becomes the call's result. When no call is left
// pending the task becomes QUEUED. Errors: ErrNotFound "task not found", ErrInvalidState (the
// task is not PENDING_APPROVAL), ErrInvalid (unknown, already decided or repeated provider
// call id; arguments on a rejection; oversize values) — a refused request writes nothing.
func (s *Store) DecideToolCalls(ctx context.Context, taskID, decidedBy int64, ds []ToolDecision) (*Task, error) {
	return s.DecideToolCallsBy(ctx, taskID, Decider{UserID: decidedBy}, ds)
}

// Decider is who decides tool calls: a user, through a session or (KeyID set) through the
// per-agent API key with that public id.
type Decider struct {
	UserID int64
	KeyID  string
}

func (d Decider) changes(now time.Time) map[string]any {
	ch := map[string]any{"decided_by": d.UserID, "decided_at": now}
	if d.KeyID != "" {
		ch["decided_by_key"] = d.KeyID
	}
	return ch
}

// DecideToolCallsBy is DecideToolCalls recording by as the decider.
func (s *Store) DecideToolCallsBy(ctx context.Context, taskID int64, by Decider, ds []ToolDecision) (*Task, error) {
	if len(ds) == 0 {
		return nil, invalidf("decisions must not be empty")
	}
	return s.decide(ctx, taskID, "approve", func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error {
		seen := map[string]bool{}
		for _, d := range ds {
			if seen[d.ProviderCallID] {
				return invalidf("decisions: provider_call_id %q appears twice", d.ProviderCallID)
			}
			seen[d.ProviderCallID] = true
			row, ok := pending[d.ProviderCallID]
			if !ok {
				return invalidf("decisions: no pending tool call %q", d.ProviderCallID)
			}
			ch := by.changes(now)
			if d.Approve {
				args := d.Arguments
				if args == nil {
					args = map[string]any{}
					if row.ProposedArguments != "" {
						a, err := decodeMetadata(row.ProposedArguments)
						if err != nil {
							return fmt.Errorf("tool call %d: arguments: %w", row.ID, err)
						}
						args = a
					}
				}
				enc, err := encodeJSON("arguments", args)
				if err != nil {
					return err
				}
				ch["status"], ch["approved_arguments"] = ToolCallApproved, enc
				if d.Reason != nil {
					if err := checkText("reason", *d.Reason, MaxTaskReasonLen); err != nil {
						return err
					}
					ch["reason"] = *d.Reason
				}
			} else {
				if d.Arguments != nil {
					return invalidf("decisions: arguments are only accepted when approving (%q)", d.ProviderCallID)
				}
				if err := rejectChanges(ch, d.Reason); err != nil {
					return err
				}
			}
			if err := updatePendingCall(tx, row.ID, ch); err != nil {
				return err
			}
		}
		return nil
	})
}

func rejectChanges(ch map[string]any, reason *string) error {
	text := DefaultRejectReason
	if reason != nil {
		if err := checkText("reason", *reason, MaxTaskReasonLen); err != nil {
			return err
		}
		ch["reason"] = *reason
		if strings.TrimSpace(*reason) != "" {
			text = *reason
		}
	}
	res, err := rejectionResult(text)
	if err != nil {
		return err
	}
	ch["status"], ch["result"] = ToolCallRejected, res
	return nil
}

func updatePendingCall(tx *gorm.DB, id int64, ch map[string]any) error {
	res := tx.Model(&toolCallRow{}).Where("id = ? AND status = ?", id, ToolCallPendingApproval).Updates(ch)
	if res.Error != nil {
		return fmt.Errorf("decide tool call %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return svcerr.New(svcerr.ErrInvalidState, "the tool call was decided meanwhile")
	}
	return nil
}

// RejectToolCalls rejects every PENDING_APPROVAL call of a task in PENDING_APPROVAL with
// reason (the model sees it as the calls' result) and queues the task. Errors: ErrNotFound
// "task not found", ErrInvalidState (not PENDING_APPROVAL), ErrInvalid (oversize reason).
func (s *Store) RejectToolCalls(ctx context.Context, taskID, decidedBy int64, reason string) (*Task, error) {
	return s.RejectToolCallsBy(ctx, taskID, Decider{UserID: decidedBy}, reason)
}

// RejectToolCallsBy is RejectToolCalls recording by as the decider.
func (s *Store) RejectToolCallsBy(ctx context.Context, taskID int64, by Decider, reason string) (*Task, error) {
	return s.decide(ctx, taskID, "reject", func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error {
		for _, row := range pending {
			ch := by.changes(now)
			if err := rejectChanges(ch, &reason); err != nil {
				return err
			}
			if err := updatePendingCall(tx, row.ID, ch); err != nil {
				return err
			}
		}
		return nil
	})
}

// decide locks a PENDING_APPROVAL task, lets fn decide calls, and queues the task when no call
// is left pending. The task row lock serialises concurrent decisions on one task.
func (s *Store) decide(ctx context.Context, taskID int64, action string, fn func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error) (*Task, error) {
	var out *Task
	err := s.tx(ctx, func(tx *gorm.DB) error {
		row, err := loadTask(tx, taskID, true)
		if err != nil {
			return err
		}
		if row.Status != TaskPendingApproval {
			return invalidState(action, row.Status)
		}
		var rows []toolCallRow
		if err := tx.Where("task_id = ? AND status = ?", taskID, ToolCallPendingApproval).Order("id").Find(&rows).Error; err != nil {
			return fmt.Errorf("task %d: pending tool calls: %w", taskID, err)
		}
		pending := make(map[string]*toolCallRow, len(rows))
		for i := range rows {
			pending[rows[i].ProviderCallID] = &rows[i]
		}
		now := s.now()
		if err := fn(tx, pending, now); err != nil {
			return err
		}
		out, err = s.queueWhenSettled(tx, taskID, TaskPendingApproval, now, &toolCallRow{}, "status = ?", ToolCallPendingApproval)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queueWhenSettled moves the task from `from` to QUEUED when no row of model matches
// "task_id = ? AND <where>"; otherwise it only bumps updated_at. It returns the task.
func (s *Store) queueWhenSettled(tx *gorm.DB, taskID int64, from string, now time.Time, model any, where string, args ...any) (*Task, error) {
	var n int64
	if err := tx.Model(model).Where("task_id = ?", taskID).Where(where, args...).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("task %d: count pending: %w", taskID, err)
	}
	ch := map[string]any{"updated_at": now}
	if n == 0 {
		ch = transitionChanges(TaskTransition{To: TaskQueued}, now)
	}
	res := tx.Model(&taskRow{}).Where("id = ? AND status = ?", taskID, from).Updates(ch)
	if res.Error != nil {
		return nil, fmt.Errorf("task %d: queue: %w", taskID, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
	}
	return readTask(tx, taskID)
}

// ---- questions -----------------------------------------------------------------------------------

// Question is one question of an ask_user_question batch.
type Question struct {
	Question      string   `json:"question"`
	Header        string   `json:"header"`
	Options       []string `json:"options"`
	Multiple      bool     `json:"multiple"`
	AllowFreeText bool     `json:"allowFreeText"`
}

// QuestionAnswer is the answer to one question, named by its header.
type QuestionAnswer struct {
	Header     string   `json:"header"`
	Selections []string `json:"selections"`
	FreeText   *string  `json:"free_text,omitempty"`
}

// QuestionBatch is one ask_user_question call; Answers is nil until answered.
type QuestionBatch struct {
	ID         int64
	TaskID     int64
	ToolCallID string
	Questions  []Question
	Answers    []QuestionAnswer
	CreatedAt  time.Time
	AnsweredAt *time.Time
}

type questionRow struct {
	ID         int64
	TaskID     int64
	ToolCallID string
	Questions  string
	Answers    *string
	CreatedAt  time.Time
	AnsweredAt *time.Time
}

func (questionRow) TableName() string { return "task_questions" }

func (r *questionRow) toBatch() (QuestionBatch, error) {
	b := QuestionBatch{ID: r.ID, TaskID: r.TaskID, ToolCallID: r.ToolCallID, CreatedAt: r.CreatedAt.UTC(), AnsweredAt: utcPtr(r.AnsweredAt)}
	if err := json.Unmarshal([]byte(r.Questions), &b.Questions); err != nil {
		return b, fmt.Errorf("question batch %d: %w", r.ID, err)
	}
	if r.Answers != nil {
		if err := json.Unmarshal([]byte(*r.Answers), &b.Answers); err != nil {
			return b, fmt.Errorf("question batch %d: answers: %w", r.ID, err)
		}
	}
	return b, nil
}

// RecordQuestions stores a question batch asked by tool call toolCallID of a task whose lease
// workerID holds. Errors: ErrInvalidState (lease lost), ErrConflict (batch already recorded),
// ErrInvalid (no questions, oversize values), ErrNotFound.
func (s *Store) RecordQuestions(ctx context.Context, taskID int64, workerID, toolCallID string, qs []Question) (*QuestionBatch, error) {
	if err := checkKey("tool call id", toolCallID, true); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, invalidf("a question batch needs at least one question")
	}
	enc, err := encodeJSON("questions", qs)
	if err != nil {
		return nil, err
	}
	if err := checkText("questions", enc, MaxTaskJSONLen); err != nil {
		return nil, err
	}
	var out QuestionBatch
	err = s.withLease(ctx, taskID, workerID, func(tx *gorm.DB, now time.Time) error {
		row := questionRow{TaskID: taskID, ToolCallID: toolCallID, Questions: enc, CreatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(TranslateError(err), svcerr.ErrConflict) {
				return svcerr.New(svcerr.ErrConflict, "question batch %q is already recorded", toolCallID)
			}
			return fmt.Errorf("task %d: record questions: %w", taskID, err)
		}
		var err error
		out, err = row.toBatch()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// PendingQuestions returns the unanswered question batches of a task, oldest first.
func (s *Store) PendingQuestions(ctx context.Context, taskID int64) ([]QuestionBatch, error) {
	return questionBatches(s.conn(ctx), taskID, true)
}

// QuestionBatches returns every question batch of a task (answered ones with their answers).
func (s *Store) QuestionBatches(ctx context.Context, taskID int64) ([]QuestionBatch, error) {
	return questionBatches(s.conn(ctx), taskID, false)
}

func questionBatches(db *gorm.DB, taskID int64, pendingOnly bool) ([]QuestionBatch, error) {
	db = db.Where("task_id = ?", taskID)
	if pendingOnly {
		db = db.Where("answered_at IS NULL")
	}
	var rows []questionRow
	if err := db.Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: questions: %w", taskID, err))
	}
	return convertRows(rows, (*questionRow).toBatch)
}

// AnswerCheck validates answers against the pending batch inside the answering transaction;
// its error is returned as it is.
type AnswerCheck func(b *QuestionBatch) error

// AnswerQuestions records answers to pending batch toolCallID of a task in AWAITING_INPUT
// after check accepted them; when no batch is left unanswered the task becomes QUEUED.
// Errors: ErrNotFound "task not found", ErrInvalidState (not AWAITING_INPUT), ErrInvalid (no
// such pending batch, oversize answers), and whatever check returns.
func (s *Store) AnswerQuestions(ctx context.Context, taskID int64, toolCallID string, answers []QuestionAnswer, check AnswerCheck) (*Task, error) {
	enc, err := encodeJSON("answers", answers)
	if err != nil {
		return nil, err
	}
	if err := checkText("answers", enc, MaxTaskJSONLen); err != nil {
		return nil, err
	}
	var out *Task
	err = s.tx(ctx, func(tx *gorm.DB) error {
		row, err := loadTask(tx, taskID, true)
		if err != nil {
			return err
		}
		if row.Status != TaskAwaitingInput {
			return invalidState("answer", row.Status)
		}
		var qr questionRow
		err = tx.Where("task_id = ? AND tool_call_id = ? AND answered_at IS NULL", taskID, toolCallID).Take(&qr).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return invalidf("tool_call_id: no pending question batch %q", toolCallID)
		}
		if err != nil {
			return fmt.Errorf("task %d: question batch: %w", taskID, err)
		}
		b, err := qr.toBatch()
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(&b); err != nil {
				return err
			}
		}
		now := s.now()
		res := tx.Model(&questionRow{}).Where("id = ? AND answered_at IS NULL", qr.ID).
			Updates(map[string]any{"answers": enc, "answered_at": now})
		if res.Error != nil {
			return fmt.Errorf("task %d: answer: %w", taskID, res.Error)
		}
		out, err = s.queueWhenSettled(tx, taskID, TaskAwaitingInput, now, &questionRow{}, "answered_at IS NULL")
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
