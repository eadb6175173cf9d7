package agentloop

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentsvc/svc/internal/platform/tracing"

	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// SubAgents is the core.SubAgents the sub-agent tool is built with (core.Deps.SubAgents): the
// child tasks it starts are tasks of this loop, created QUEUED with their parent's link, user
// and source, for any worker to claim; the parent waits for them in AWAITING_SUB_AGENTS and
// settle resumes it.
type SubAgents struct{ Store Store }

var _ core.SubAgents = SubAgents{}

// Agent returns agent id as user userID may see it (store.Store.Agent: svcerr.ErrNotFound when
// there is none).
func (s SubAgents) Agent(ctx context.Context, id, userID int64) (*store.Agent, error) {
	return s.Store.Agent(ctx, id, userID)
}

// Spawn creates the child task of parentID on agent a. Errors: svcerr.ErrNotFound when the
// parent is gone, svcerr.ErrInvalid when the task's rules refuse it (task.CheckNew: a blank or
// oversize prompt, before the store) or the store does (store.Store.CreateTask), others are
// infrastructure failures.
func (s SubAgents) Spawn(ctx context.Context, parentID int64, a *store.Agent, prompt string, maxSteps int) (*store.Task, error) {
	parent, err := s.Store.Task(ctx, parentID)
	if err != nil {
		return nil, err
	}
	nt := store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: parent.UserID,
		ParentTaskID: &parent.ID, Prompt: prompt, MaxSteps: maxSteps, Source: parent.Source,
		TraceParent: tracing.TraceParent(ctx)}
	if err := task.CheckNew(nt); err != nil {
		return nil, err
	}
	return s.Store.CreateTask(ctx, nt)
}

// Task reads a child task (svcerr.ErrNotFound once deleted).
func (s SubAgents) Task(ctx context.Context, id int64) (*store.Task, error) {
	return s.Store.Task(ctx, id)
}

// delegator returns the executor of tool class when its calls start child tasks.
func (l *Loop) delegator(class string) (tools.Delegator, bool) {
	x, ok := l.executor(class)
	if !ok {
		return nil, false
	}
	d, ok := x.(tools.Delegator)
	return d, ok
}

// delegation returns the children an executed call of a delegating tool started.
func (l *Loop) delegation(c store.ToolCall) (tools.Delegator, tools.Delegation, bool) {
	if c.Status != store.ToolCallExecuted {
		return nil, tools.Delegation{}, false
	}
	x, ok := l.delegator(c.ToolClass)
	if !ok {
		return nil, tools.Delegation{}, false
	}
	var r resultRecord
	if json.Unmarshal(c.Result, &r) != nil {
		return nil, tools.Delegation{}, false
	}
	d, ok := x.Delegated(r.Data)
	return x, d, ok
}

// subAgentResults derives what the model is told about each executed call that started child
// tasks (keyed by provider call id) from those tasks, as its tool describes them (status, and
// answer or error).
func (l *Loop) subAgentResults(ctx context.Context, calls []store.ToolCall) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range calls {
		x, d, ok := l.delegation(c)
		if !ok {
			continue
		}
		text, err := x.Describe(ctx, d)
		if err != nil {
			return nil, err
		}
		out[c.ProviderCallID] = text
	}
	return out, nil
}

// handoverAnswer reports the answer a resumed task completes with after a handover: the
// latest assistant turn ended in an executed handover call (nothing was said since) and its
// child COMPLETED. Otherwise the model runs as usual and sees the child's outcome.
func (l *Loop) handoverAnswer(ctx context.Context, t *store.Task, calls []store.ToolCall) (*string, error) {
	var last *store.ToolCall
	for i := range calls {
		if last == nil || calls[i].MessageSequence > last.MessageSequence {
			last = &calls[i]
		}
	}
	if last == nil {
		return nil, nil
	}
	var child int64
	for _, c := range calls {
		if _, d, ok := l.delegation(c); ok && d.Handover && c.MessageSequence == last.MessageSequence {
			child = d.ChildTaskIDs[0]
		}
	}
	if child == 0 {
		return nil, nil
	}
	if t.MessageSeq > int64(last.MessageSequence) { // something was said since: the task row counts its messages
		return nil, nil
	}
	ct, err := l.Store.Task(ctx, child)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ct.Status != taskstate.Completed || ct.Answer == nil {
		return nil, nil
	}
	answer := *ct.Answer
	return &answer, nil
}

// settle is called after a step left task t in state t.Status: a parent that now waits on
// sub-agents is resumed at once when its children already settled (they may finish before the
// parent's step ends), and a settled child resumes its parent when it was the last one.
func (l *Loop) settle(ctx context.Context, t *store.Task) *store.Task {
	resume := func(id int64) bool {
		ok, err := l.Store.ResumeWhenChildrenSettled(ctx, id)
		if err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			l.log().Error("resume parent task", "task_id", id, "err", err)
		}
		return ok
	}
	switch t.Status {
	case taskstate.AwaitingSubAgents:
		if resume(t.ID) {
			if nt, err := l.Store.Task(ctx, t.ID); err == nil {
				return nt
			}
		}
	default:
		if t.ParentTaskID != nil && taskstate.IsFinished(t.Status) {
			resume(*t.ParentTaskID)
		}
	}
	return t
}
