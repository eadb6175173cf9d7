package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// MaxPendingApprovals bounds what PendingApprovals reads: the oldest this many pending tool
// calls and as many question batches. The inbox filters them by who may decide, so a larger
// backlog shows its oldest part first.
const MaxPendingApprovals = 2000

// ApprovalQuery narrows PendingApprovals: AgentID (0: any), Tool (the tool's name as the model
// sees it, "": any; question batches have none, so a Tool leaves them out), CreatedBefore
// (zero: any; pending since before it).
type ApprovalQuery struct {
	AgentID       int64
	Tool          string
	CreatedBefore time.Time
}

// PendingApproval is one thing a task waits for a decision on: a tool call awaiting approval
// of a PENDING_APPROVAL task, or an unanswered question batch of an AWAITING_INPUT task.
// Exactly one of Call and Batch is set.
type PendingApproval struct {
	TaskID    int64
	AgentID   int64
	CreatedAt time.Time
	Call      *ToolCall
	Batch     *QuestionBatch
}

// PendingApprovals returns what tasks wait for a decision on that q selects, oldest first
// (then by task and row id), at most MaxPendingApprovals of each kind. It does not decide who
// may see them (package approval does). Errors: the database's.
func (s *Tasks) PendingApprovals(ctx context.Context, q ApprovalQuery) ([]PendingApproval, error) {
	db := s.conn(ctx)
	var calls []toolCallRow
	cq := db.Table("task_tool_calls").Select("task_tool_calls.*").
		Joins("JOIN tasks ON tasks.id = task_tool_calls.task_id").
		Where("task_tool_calls.status = ? AND tasks.status = ?", ToolCallPendingApproval, taskstate.PendingApproval)
	if q.AgentID != 0 {
		cq = cq.Where("tasks.agent_id = ?", q.AgentID)
	}
	if q.Tool != "" {
		cq = cq.Where("task_tool_calls.name = ?", q.Tool)
	}
	if !q.CreatedBefore.IsZero() {
		cq = cq.Where("task_tool_calls.created_at < ?", q.CreatedBefore)
	}
	if err := cq.Order("task_tool_calls.created_at, task_tool_calls.id").Limit(MaxPendingApprovals).Find(&calls).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("pending tool calls: %w", err))
	}
	var batches []questionRow
	if q.Tool == "" {
		bq := db.Table("task_questions").Select("task_questions.*").
			Joins("JOIN tasks ON tasks.id = task_questions.task_id").
			Where("task_questions.answered_at IS NULL AND tasks.status = ?", taskstate.AwaitingInput)
		if q.AgentID != 0 {
			bq = bq.Where("tasks.agent_id = ?", q.AgentID)
		}
		if !q.CreatedBefore.IsZero() {
			bq = bq.Where("task_questions.created_at < ?", q.CreatedBefore)
		}
		if err := bq.Order("task_questions.created_at, task_questions.id").Limit(MaxPendingApprovals).Find(&batches).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("pending question batches: %w", err))
		}
	}
	agents, err := s.agentsOfTasks(ctx, calls, batches)
	if err != nil {
		return nil, err
	}
	out := make([]PendingApproval, 0, len(calls)+len(batches))
	for i := range calls {
		c, err := calls[i].toToolCall()
		if err != nil {
			return nil, err
		}
		out = append(out, PendingApproval{TaskID: c.TaskID, AgentID: agents[c.TaskID], CreatedAt: c.CreatedAt, Call: &c})
	}
	for i := range batches {
		b, err := batches[i].toBatch()
		if err != nil {
			return nil, err
		}
		out = append(out, PendingApproval{TaskID: b.TaskID, AgentID: agents[b.TaskID], CreatedAt: b.CreatedAt, Batch: &b})
	}
	sortPending(out)
	return out, nil
}

func (s *Tasks) agentsOfTasks(ctx context.Context, calls []toolCallRow, batches []questionRow) (map[int64]int64, error) {
	ids := map[int64]bool{}
	for i := range calls {
		ids[calls[i].TaskID] = true
	}
	for i := range batches {
		ids[batches[i].TaskID] = true
	}
	out := make(map[int64]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list := make([]int64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	var rows []struct{ ID, AgentID int64 }
	if err := s.conn(ctx).Table("tasks").Select("id, agent_id").Where("id IN ?", list).Scan(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("agents of pending tasks: %w", err))
	}
	for _, r := range rows {
		out[r.ID] = r.AgentID
	}
	return out, nil
}

func sortPending(ps []PendingApproval) {
	slices.SortStableFunc(ps, func(a, b PendingApproval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.TaskID, b.TaskID)
	})
}

// ExpiringCall is a tool call awaiting approval with an approval timeout: its operation's, or
// else its agent's.
type ExpiringCall struct {
	TaskID         int64
	ProviderCallID string
	CreatedAt      time.Time
	TimeoutSeconds int
	Action         string
}

// ExpiredApprovals returns the tool calls awaiting approval whose approval timeout ran out by
// now, oldest first, at most limit: the timeout the call was held with (its operation's
// override), or else its agent's; the agent's action applies to both. Whoever decides them does
// so under the task's lock (ExpireToolCalls), so two processes reading the same list decide each
// once.
func (s *Tasks) ExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]ExpiringCall, error) {
	var rows []ExpiringCall
	const timeout = "COALESCE(task_tool_calls.approval_timeout_seconds, agents.approval_timeout_seconds)"
	err := s.conn(ctx).Table("task_tool_calls").
		Select("task_tool_calls.task_id, task_tool_calls.provider_call_id, task_tool_calls.created_at, "+
			timeout+" AS timeout_seconds, agents.approval_timeout_action AS action").
		Joins("JOIN tasks ON tasks.id = task_tool_calls.task_id").
		Joins("JOIN agents ON agents.id = tasks.agent_id").
		Where("task_tool_calls.status = ? AND tasks.status = ? AND "+timeout+" > 0",
			ToolCallPendingApproval, taskstate.PendingApproval).
		Order("task_tool_calls.created_at, task_tool_calls.id").Limit(MaxPendingApprovals).Scan(&rows).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("expiring tool calls: %w", err))
	}
	out := []ExpiringCall{}
	for _, r := range rows {
		r.CreatedAt = r.CreatedAt.UTC()
		if !r.CreatedAt.Add(time.Duration(r.TimeoutSeconds) * time.Second).After(now) {
			out = append(out, r)
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// ApprovalTimeoutReason is what the model sees for a call its approval timeout rejected.
const ApprovalTimeoutReason = "No decision was made within the approval timeout."

// ExpireToolCalls decides, as the service itself (decided_by_system), the calls callIDs
// (provider call ids) of task taskID whose approval timeout ran out: each is rejected with
// ApprovalTimeoutReason (its tool_call.decided event written); then, abort set, the task is
// aborted, else it is queued when no call is left pending. It runs under the task's row lock
// and only while every named call is still awaiting approval, so of several processes expiring
// the same calls exactly one does. Errors: ErrNotFound, ErrInvalidState (the task left
// PENDING_APPROVAL, or a call was decided meanwhile: nothing is written).
func (s *Tasks) ExpireToolCalls(ctx context.Context, taskID int64, callIDs []string, abort bool) (*Task, error) {
	if !abort {
		return s.decide(ctx, taskID, taskstate.Expire, func(tx *gorm.DB, pending map[string]*toolCallRow, now time.Time) error {
			return expireCalls(tx, pending, callIDs, now)
		})
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Task, error) {
		row, err := loadTask(tx, taskID, true)
		if err != nil {
			return nil, err
		}
		if !taskstate.Leaves(taskstate.Expire, row.Status) {
			return nil, invalidState(taskstate.Rules[taskstate.Expire].Verb, row.Status)
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
		if err := expireCalls(tx, pending, callIDs, now); err != nil {
			return nil, err
		}
		ids := make([]int64, 0, len(callIDs))
		for _, id := range callIDs {
			ids = append(ids, pending[id].ID)
		}
		decided, err := toolCallsWhere(tx, "id IN ?", ids)
		if err != nil {
			return nil, err
		}
		if err := toolCallEvents(tx, taskID, now, EventToolCallDecided, decided); err != nil {
			return nil, err
		}
		moved, err := s.setStatus(tx, now, statusChange{action: taskstate.Expire, from: taskstate.PendingApproval, to: taskstate.Aborted,
			where: "id = ?", args: []any{taskID}, ids: []int64{taskID}})
		if err != nil {
			return nil, err
		}
		if len(moved) == 0 {
			return nil, svcerr.New(svcerr.ErrInvalidState, "the task changed state meanwhile")
		}
		return moved[0].toTask()
	})
}

func expireCalls(tx *gorm.DB, pending map[string]*toolCallRow, callIDs []string, now time.Time) error {
	if len(callIDs) == 0 {
		return invalidf("no tool call to expire")
	}
	reason := ApprovalTimeoutReason
	for _, id := range callIDs {
		row, ok := pending[id]
		if !ok {
			return svcerr.New(svcerr.ErrInvalidState, "the tool call %q was decided meanwhile", id)
		}
		ch := Decider{System: true}.changes(now)
		if err := rejectChanges(ch, &reason); err != nil {
			return err
		}
		if err := updatePendingCall(tx, row.ID, ch); err != nil {
			return err
		}
	}
	return nil
}
