package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Tool call row states.
const (
	ToolCallPending         = "PENDING"
	ToolCallPendingApproval = "PENDING_APPROVAL"
	ToolCallApproved        = "APPROVED"
	ToolCallRejected        = "REJECTED"
	ToolCallExecuted        = "EXECUTED"
	ToolCallFailed          = "FAILED"
)

// NewToolCall is a tool call of an assistant turn to record. Status is ToolCallPending (run
// without approval), ToolCallPendingApproval, or ToolCallRejected for a call the approval gate
// refused or a policy denied before anyone was asked (Gate says which, Reason why: the model is
// told).
type NewToolCall struct {
	ProviderCallID string
	ToolClass      string
	Name           string
	Operation      string
	Status         string
	Arguments      map[string]any
	// Gate records what the approval gate decided without asking (ToolCall.Gate); "" when the
	// operation's approval flag decided.
	Gate string
	// Reason is the refusal's reason (ToolCallRejected only).
	Reason string
	// ApprovalTimeoutSeconds, set on a ToolCallPendingApproval call, is its operation's approval
	// timeout (0: forever) instead of the agent's; nil leaves the agent's in force.
	ApprovalTimeoutSeconds *int
	// Started records a PENDING call as started (executed_at) in the transaction that records
	// it: the worker runs it right away, and BeginToolCall's separate write is saved. A crash
	// before its result is recorded leaves it interrupted, never run again, as after
	// BeginToolCall.
	Started bool
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
	// DecidedBySystem marks a call decided by the service itself: its approval timeout ran out.
	DecidedBySystem bool
	CreatedAt       time.Time
	ExecutedAt      *time.Time // when it was (last) started; set while it runs
	// Restarts counts the times the call was started again after a crash interrupted it (see
	// RestartToolCall): only calls of repeatable operations are.
	Restarts int
	// Gate is what the approval gate decided without asking anyone: GateRefused, a policy rule
	// (GateRule), GateTask; "" when the operation's approval flag decided.
	Gate string
	// AllowForTask marks an approval that also allows later calls of the same tool operation
	// in the same task (ToolDecision.AllowForTask).
	AllowForTask bool
}

// Approval gate outcomes recorded on a tool call (ToolCall.Gate).
const (
	// GateRefused: the call's tool or operation could not be resolved, or is off; it was
	// refused before approval.
	GateRefused = "refused"
	// GateTask: an earlier approval allowed the operation for the rest of the task.
	GateTask       = "task"
	gateRulePrefix = "policy:"
)

// GateRule is the gate value of a call that rule n (1-based) of its operation's approval
// policy decided (allowed, denied, or sent to a human).
func GateRule(n int) string { return gateRulePrefix + strconv.Itoa(n) }

// PolicyRule returns the number of the policy rule that decided call c, and false when none did.
func (c *ToolCall) PolicyRule() (int, bool) {
	rest, ok := strings.CutPrefix(c.Gate, gateRulePrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
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
	Restarts          int
	Gate              *string
	AllowForTask      bool
	DecidedBySystem   bool
	// ApprovalTimeoutSeconds is the operation's approval timeout the call was held with (nil:
	// the agent's applies); only the expiry sweep reads it.
	ApprovalTimeoutSeconds *int
}

func (toolCallRow) TableName() string { return "task_tool_calls" }

func (r *toolCallRow) toToolCall() (ToolCall, error) {
	c := ToolCall{
		ID: r.ID, TaskID: r.TaskID, MessageSequence: r.MessageSequence, ProviderCallID: r.ProviderCallID,
		ToolClass: r.ToolClass, Name: r.Name, Operation: r.Operation, Status: r.Status, Result: rawOf(r.Result),
		Reason: r.Reason, DecidedBy: r.DecidedBy, DecidedByKey: r.DecidedByKey, DecidedAt: utcPtr(r.DecidedAt), CreatedAt: r.CreatedAt.UTC(),
		ExecutedAt: utcPtr(r.ExecutedAt), Restarts: r.Restarts, AllowForTask: r.AllowForTask,
		DecidedBySystem: r.DecidedBySystem,
	}
	if r.Gate != nil {
		c.Gate = *r.Gate
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

// AppendAssistantTurn stores an assistant turn and the rows of the tool calls it requests in one
// transaction of a task whose lease workerID holds, so a crash leaves either both or neither
// (never a turn whose calls have no row, which the model would be told produced no result).
// Each call row gets the turn's sequence. Errors: ErrInvalidState (lease lost), ErrConflict (a
// provider call id already recorded for the task), ErrInvalid, ErrNotFound.
func (s *Tasks) AppendAssistantTurn(ctx context.Context, taskID int64, workerID string, msg NewTaskMessage, calls []NewToolCall) (TaskMessage, []ToolCall, error) {
	if msg.Role != RoleAssistant {
		return TaskMessage{}, nil, invalidf("an assistant turn has the role %q", RoleAssistant)
	}
	rows, err := toolCallRows(calls)
	if err != nil {
		return TaskMessage{}, nil, err
	}
	type turn struct {
		msg   TaskMessage
		calls []ToolCall
	}
	out, err := inTx(ctx, s.Store, func(tx *gorm.DB) (turn, error) {
		// One UPDATE checks the lease and numbers the message and its events (the message, one
		// proposal per call); one INSERT writes the events.
		now := s.now()
		var ch map[string]any
		if len(rows) > 0 {
			ch = map[string]any{"tool_call_count": gorm.Expr("tool_call_count + ?", len(rows))}
		}
		row, err := leaseWrite(tx, taskID, workerID, now, ch, reserve{events: 1 + len(rows), messages: 1})
		if err != nil {
			return turn{}, err
		}
		stored, err := insertMessages(tx, taskID, int(row.MessageSeq)-1, now, []NewTaskMessage{msg})
		if err != nil {
			return turn{}, err
		}
		recorded, err := insertToolCalls(tx, taskID, stored[0].Sequence, now, rows)
		if err != nil {
			return turn{}, err
		}
		if msg.Streamed {
			if err := pruneDeltas(tx, taskID); err != nil { // the message holds the whole text now
				return turn{}, err
			}
		}
		evs := messageEvents(stored)
		for i := range recorded {
			evs = append(evs, TaskEvent{Type: EventToolCallProposed, ToolCall: &recorded[i]})
		}
		return turn{stored[0], recorded}, insertNumbered(tx, taskID, row.EventSeq, now, evs)
	})
	return out.msg, out.calls, err
}

// toolCallRows checks new tool calls and encodes them as rows.
func toolCallRows(calls []NewToolCall) ([]toolCallRow, error) {
	rows := make([]toolCallRow, 0, len(calls))
	for _, c := range calls {
		if c.Status != ToolCallPending && c.Status != ToolCallPendingApproval && c.Status != ToolCallRejected {
			return nil, invalidf("a new tool call is PENDING, PENDING_APPROVAL or REJECTED")
		}
		if (c.Status == ToolCallRejected) != (c.Reason != "") || (c.Status == ToolCallRejected && c.Gate == "") {
			return nil, invalidf("a new tool call is REJECTED by the gate with a reason, and only then has one")
		}
		if len(c.Gate) > 32 {
			return nil, invalidf("gate %q is too long", c.Gate)
		}
		for _, k := range []struct{ f, v string }{{"provider call id", c.ProviderCallID}, {"tool class", c.ToolClass}, {"tool name", c.Name}} {
			if err := checkKey(k.f, k.v, true); err != nil {
				return nil, err
			}
		}
		if err := checkKey("operation", c.Operation, false); err != nil {
			return nil, err
		}
		if c.Started && c.Status != ToolCallPending {
			return nil, invalidf("only a PENDING call can be recorded as started")
		}
		args := map[string]any{}
		if c.Arguments != nil {
			args = c.Arguments
		}
		enc, err := encodeJSON("arguments", args)
		if err != nil {
			return nil, err
		}
		row := toolCallRow{
			ProviderCallID: c.ProviderCallID, ToolClass: c.ToolClass,
			Name: c.Name, Operation: c.Operation, Status: c.Status, ProposedArguments: enc,
		}
		if c.Started {
			row.ExecutedAt = &time.Time{} // set to the transaction's time by insertToolCalls
		}
		if c.Gate != "" {
			row.Gate = &c.Gate
		}
		if c.Status == ToolCallPendingApproval {
			row.ApprovalTimeoutSeconds = c.ApprovalTimeoutSeconds
		}
		if c.Status == ToolCallRejected {
			res, err := rejectionResult(c.Reason)
			if err != nil {
				return nil, err
			}
			reason := c.Reason
			row.Reason, row.Result = &reason, &res
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// insertToolCalls stores rows as calls of the turn with sequence seq.
func insertToolCalls(tx *gorm.DB, taskID int64, seq int, now time.Time, rows []toolCallRow) ([]ToolCall, error) {
	out := make([]ToolCall, 0, len(rows))
	for i := range rows {
		rows[i].TaskID, rows[i].MessageSequence, rows[i].CreatedAt = taskID, seq, now
		if rows[i].ExecutedAt != nil {
			rows[i].ExecutedAt = &now
		}
		if err := insertToolCallRow(tx, &rows[i]); err != nil {
			if errors.Is(TranslateError(err), svcerr.ErrConflict) {
				return nil, svcerr.New(svcerr.ErrConflict, "tool call %q is already recorded", rows[i].ProviderCallID)
			}
			return nil, fmt.Errorf("task %d: record tool call: %w", taskID, err)
		}
		c, err := rows[i].toToolCall()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
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
func (s *Tasks) UpdateToolCall(ctx context.Context, taskID int64, workerID string, callID int64, u ToolCallUpdate) error {
	if u.Status != ToolCallExecuted && u.Status != ToolCallFailed {
		return invalidf("a tool call ends EXECUTED or FAILED")
	}
	result, err := encodeRaw("result", u.Result)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		row, err := leaseWrite(tx, taskID, workerID, now, nil, reserve{events: 1})
		if err != nil {
			return err
		}
		c, err := writeToolResult(tx, taskID, callID, now, u.Status, result)
		if err != nil {
			return err
		}
		return insertNumbered(tx, taskID, row.EventSeq, now, []TaskEvent{{Type: EventToolCallExecuted, ToolCall: &c}})
	})
}

// writeToolResult records the outcome of call callID of task taskID in tx (its lease checked by
// the caller's lease write) and returns the call as written, for its event.
func writeToolResult(tx *gorm.DB, taskID, callID int64, now time.Time, status string, result *string) (ToolCall, error) {
	q := "UPDATE task_tool_calls SET executed_at = ?, result = ?, status = ? WHERE id = ? AND task_id = ?"
	args := []any{now, result, status, callID, taskID}
	var rows []toolCallRow
	var err error
	if tx.Dialector.Name() != DialectMySQL {
		rows, err = queryRows(tx, (*toolCallRow).dest, q+" RETURNING "+toolCallColumns, args...) // the row as written, for its event
	} else if _, err = rawExec(tx, q, args...); err == nil {
		rows, err = queryRows(tx, (*toolCallRow).dest, "SELECT "+toolCallColumns+" FROM task_tool_calls WHERE id = ? AND task_id = ?", callID, taskID)
	}
	if err != nil {
		return ToolCall{}, fmt.Errorf("update tool call %d: %w", callID, err)
	}
	if len(rows) == 0 {
		return ToolCall{}, svcerr.New(svcerr.ErrNotFound, "tool call not found")
	}
	return rows[0].toToolCall()
}

// ToolCalls returns every tool call of a task in the order they were recorded.
func (s *Tasks) ToolCalls(ctx context.Context, taskID int64) ([]ToolCall, error) {
	return toolCalls(s.conn(ctx), taskID, "")
}

func toolCalls(db *gorm.DB, taskID int64, status string) ([]ToolCall, error) {
	q, args := "SELECT "+toolCallColumns+" FROM task_tool_calls WHERE task_id = ?", []any{taskID}
	if status != "" {
		q, args = q+" AND status = ?", append(args, status)
	}
	rows, err := queryRows(db, (*toolCallRow).dest, q+" ORDER BY id", args...)
	if err != nil {
		return nil, TranslateError(fmt.Errorf("task %d: tool calls: %w", taskID, err))
	}
	return convertRows(rows, (*toolCallRow).toToolCall)
}

// toolCallsWhere reads the tool calls matching a condition, in id order.
func toolCallsWhere(db *gorm.DB, where string, args ...any) ([]ToolCall, error) {
	var rows []toolCallRow
	if err := db.Where(where, args...).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("tool calls: %w", err)
	}
	return convertRows(rows, (*toolCallRow).toToolCall)
}

// ToolDecision is one caller decision on a PENDING_APPROVAL call.
type ToolDecision struct {
	ProviderCallID string
	Approve        bool
	Arguments      map[string]any // approve: what runs (nil: the proposed arguments)
	Reason         *string        // reject: shown to the model
	// AllowForTask (approve only) also allows later calls of the same tool operation in the
	// same task without asking (the agent loop reads it from the approved call).
	AllowForTask bool
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
// pending the task becomes QUEUED. The caller has applied task.CheckDecisions (at least one
// decision, arguments only on an approval, their size, reasons). Errors: ErrNotFound "task not
// found", ErrInvalidState (the task is not PENDING_APPROVAL), ErrInvalid (unknown, already
// decided or repeated provider call id: the pending calls are read under the task's lock) — a
// refused request writes nothing.
func (s *Tasks) DecideToolCalls(ctx context.Context, taskID, decidedBy int64, ds []ToolDecision) (*Task, error) {
	return s.DecideToolCallsBy(ctx, taskID, Decider{UserID: decidedBy}, ds)
}

// Decider is who decides tool calls: a user, through a session or (KeyID set) through the
// per-agent API key with that public id.
type Decider struct {
	UserID int64
	KeyID  string
	// System marks the service's own decision (an approval timeout ran out); UserID and KeyID
	// are then unset.
	System bool
}

func (d Decider) changes(now time.Time) map[string]any {
	if d.System {
		return map[string]any{"decided_by_system": true, "decided_at": now}
	}
	ch := map[string]any{"decided_by": d.UserID, "decided_at": now}
	if d.KeyID != "" {
		ch["decided_by_key"] = d.KeyID
	}
	return ch
}

// DecideToolCallsBy is DecideToolCalls recording by as the decider.
func (s *Tasks) DecideToolCallsBy(ctx context.Context, taskID int64, by Decider, ds []ToolDecision) (*Task, error) {
	return s.decide(ctx, taskID, taskstate.Approve, func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error {
		// Which ids are pending only this transaction knows; a repeated id would find its call
		// decided by the first one, so it is refused here with them.
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
				if d.AllowForTask {
					ch["allow_for_task"] = true
				}
				if d.Reason != nil {
					ch["reason"] = *d.Reason
				}
			} else {
				if d.AllowForTask {
					return invalidf("decisions: allow_for_task is for an approval only")
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
	if reason != nil { // bounded by the caller (task.CheckReason)
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
// "task not found", ErrInvalidState (not PENDING_APPROVAL); the caller has bounded the reason
// (task.CheckReason).
func (s *Tasks) RejectToolCalls(ctx context.Context, taskID, decidedBy int64, reason string) (*Task, error) {
	return s.RejectToolCallsBy(ctx, taskID, Decider{UserID: decidedBy}, reason)
}

// RejectToolCallsBy is RejectToolCalls recording by as the decider.
func (s *Tasks) RejectToolCallsBy(ctx context.Context, taskID int64, by Decider, reason string) (*Task, error) {
	return s.decide(ctx, taskID, taskstate.Reject, func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error {
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
func (s *Store) decide(ctx context.Context, taskID int64, action taskstate.Action, fn func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error) (*Task, error) {
	return inTx(ctx, s, func(tx *gorm.DB) (*Task, error) {
		row, err := loadTask(tx, taskID, true)
		if err != nil {
			return nil, err
		}
		if !taskstate.Leaves(action, row.Status) {
			return nil, invalidState(taskstate.Rules[action].Verb, row.Status)
		}
		var rows []toolCallRow
		if err := tx.Where("task_id = ? AND status = ?", taskID, ToolCallPendingApproval).Order("id").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("task %d: pending tool calls: %w", taskID, err)
		}
		pending := make(map[string]*toolCallRow, len(rows))
		for i := range rows {
			pending[rows[i].ProviderCallID] = &rows[i]
		}
		now := s.now()
		if err := fn(tx, pending, now); err != nil {
			return nil, err
		}
		ids := make([]int64, 0, len(rows))
		for i := range rows {
			ids = append(ids, rows[i].ID)
		}
		decided, err := toolCallsWhere(tx, "id IN ? AND status <> ?", ids, ToolCallPendingApproval)
		if err != nil {
			return nil, err
		}
		if err := toolCallEvents(tx, taskID, now, EventToolCallDecided, decided); err != nil {
			return nil, err
		}
		return s.queueWhenSettled(tx, taskID, action, row.Status, now, &toolCallRow{}, "status = ?", ToolCallPendingApproval)
	})
}

// queueWhenSettled moves the task, locked in status from, to QUEUED by action when no row of
// model matches "task_id = ? AND <where>" (every call decided, every batch answered);
// otherwise it only bumps updated_at. It returns the task.
func (s *Store) queueWhenSettled(tx *gorm.DB, taskID int64, action taskstate.Action, from string, now time.Time, model any, where string, args ...any) (*Task, error) {
	var n int64
	if err := tx.Model(model).Where("task_id = ?", taskID).Where(where, args...).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("task %d: count pending: %w", taskID, err)
	}
	if n > 0 {
		if err := tx.Model(&taskRow{}).Where("id = ?", taskID).Update("updated_at", now).Error; err != nil {
			return nil, fmt.Errorf("task %d: touch: %w", taskID, err)
		}
		return readTask(tx, taskID)
	}
	rows, err := s.setStatus(tx, now, statusChange{action: action, from: from, to: taskstate.Queued,
		where: "id = ?", args: []any{taskID}, ids: []int64{taskID}})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 { // cannot happen under the row lock
		return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
	}
	return rows[0].toTask()
}
