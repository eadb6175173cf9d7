package api

import (
	"context"
	"encoding/json"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/store"
)

func toTask(v *task.View) gen.Task {
	t := &v.Task
	data := t.Data
	if data == nil {
		data = map[string]any{}
	}
	out := gen.Task{
		Id: t.ID, AgentId: t.AgentID, PrincipalId: t.PrincipalID, UserId: t.UserID, Status: gen.TaskStatus(t.Status),
		Prompt: t.Prompt, Answer: t.Answer, MaxSteps: t.MaxSteps, StepsUsed: t.StepsUsed, ParentTaskId: t.ParentTaskID,
		RetryCount: t.RetryCount, NextRetryAt: t.NextRetryAt, Data: data, CreatedAt: t.CreatedAt,
		UpdatedAt: t.UpdatedAt, FinishedAt: t.FinishedAt,
		Usage: gen.TaskUsage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens},
	}
	if t.Error != nil {
		out.Error = &gen.TaskError{Code: gen.TaskErrorCode(t.Error.Code), Message: t.Error.Message}
	}
	if v.HasPending {
		p := &gen.TaskPending{ToolCalls: []gen.TaskPendingToolCall{}, Questions: []gen.TaskQuestionBatch{}}
		for _, c := range v.Calls {
			args := c.ProposedArguments
			if args == nil {
				args = map[string]any{}
			}
			p.ToolCalls = append(p.ToolCalls, gen.TaskPendingToolCall{
				Id: c.ID, ProviderCallId: c.ProviderCallID, Name: c.Name, Operation: c.Operation,
				Description: c.Description, Arguments: args,
			})
		}
		p.Questions = questionBatches(v.Questions)
		out.Pending = p
	}
	return out
}

// TaskEvent is the push payload of a task: the task resource, as GET /tasks/{id} shows it.
func TaskEvent(v *task.View) ([]byte, error) { return json.Marshal(toTask(v)) }

func taskResponse(v *task.View) gen.TaskResponse {
	var r gen.TaskResponse
	r.Data.Task = toTask(v)
	return r
}

func mediaIDs(ids *[]string) []string {
	if ids == nil {
		return nil
	}
	return *ids
}

// ListTasks pages through the caller's own tasks, newest first.
func (a *API) ListTasks(ctx context.Context, req gen.ListTasksRequestObject) (gen.ListTasksResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	o := task.ListOptions{Since: req.Params.Since, Page: page, PerPage: per}
	if req.Params.AgentId != nil {
		o.AgentID = *req.Params.AgentId
	}
	if req.Params.Status != nil {
		o.Status = string(*req.Params.Status)
	}
	list, err := a.tasks.List(ctx, id.User, o)
	if err != nil {
		return nil, err
	}
	var r gen.ListTasks200JSONResponse
	r.Data.Tasks = make([]gen.Task, 0, len(list))
	for i := range list {
		r.Data.Tasks = append(r.Data.Tasks, toTask(&list[i]))
	}
	return r, nil
}

// CreateTask starts a QUEUED task for an agent the caller can see.
func (a *API) CreateTask(ctx context.Context, req gen.CreateTaskRequestObject) (gen.CreateTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	v, err := a.tasks.Create(ctx, id.User, task.CreateInput{AgentID: b.AgentId, Prompt: b.Prompt, MaxSteps: b.MaxSteps, MediaIDs: mediaIDs(b.MediaIds)})
	if err != nil {
		return nil, err
	}
	return gen.CreateTask201JSONResponse(taskResponse(v)), nil
}

// GetTask shows one of the caller's tasks.
func (a *API) GetTask(ctx context.Context, req gen.GetTaskRequestObject) (gen.GetTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Get(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.GetTask200JSONResponse(taskResponse(v)), nil
}

// DeleteTask removes one of the caller's tasks.
func (a *API) DeleteTask(ctx context.Context, req gen.DeleteTaskRequestObject) (gen.DeleteTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.tasks.Delete(ctx, id.User, req.TaskId); err != nil {
		return nil, err
	}
	return gen.DeleteTask200JSONResponse(deleted()), nil
}

// AbortTask aborts a QUEUED, RUNNING or AWAITING_SUB_AGENTS task.
func (a *API) AbortTask(ctx context.Context, req gen.AbortTaskRequestObject) (gen.AbortTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Abort(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.AbortTask200JSONResponse(taskResponse(v)), nil
}

// AbortSubAgentTask aborts a sub-agent task and its waiting ancestors.
func (a *API) AbortSubAgentTask(ctx context.Context, req gen.AbortSubAgentTaskRequestObject) (gen.AbortSubAgentTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.AbortSubAgent(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.AbortSubAgentTask200JSONResponse(taskResponse(v)), nil
}

// AnswerTask answers one pending question batch.
func (a *API) AnswerTask(ctx context.Context, req gen.AnswerTaskRequestObject) (gen.AnswerTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	answers := make([]store.QuestionAnswer, 0, len(req.Body.Answers))
	for _, an := range req.Body.Answers {
		sel := an.Selections
		if sel == nil {
			sel = []string{}
		}
		answers = append(answers, store.QuestionAnswer{Header: an.Header, Selections: sel, FreeText: an.FreeText})
	}
	v, err := a.tasks.Answer(ctx, id.User, req.TaskId, req.Body.ToolCallId, answers)
	if err != nil {
		return nil, err
	}
	return gen.AnswerTask200JSONResponse(taskResponse(v)), nil
}

// ApproveTask decides pending tool calls.
func (a *API) ApproveTask(ctx context.Context, req gen.ApproveTaskRequestObject) (gen.ApproveTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Approve(ctx, id.User, req.TaskId, toolDecisions(req.Body.Decisions))
	if err != nil {
		return nil, err
	}
	return gen.ApproveTask200JSONResponse(taskResponse(v)), nil
}

func toolDecisions(in []gen.TaskToolCallDecision) []store.ToolDecision {
	ds := make([]store.ToolDecision, 0, len(in))
	for _, d := range in {
		td := store.ToolDecision{ProviderCallID: d.ProviderCallId, Approve: d.Decision == gen.TaskToolCallDecisionDecisionApprove, Reason: d.Reason,
			AllowForTask: d.AllowForTask != nil && *d.AllowForTask}
		if d.Arguments != nil {
			td.Arguments = *d.Arguments
			if td.Arguments == nil {
				td.Arguments = map[string]any{}
			}
		}
		ds = append(ds, td)
	}
	return ds
}

// ContinueTask queues a follow-up prompt.
func (a *API) ContinueTask(ctx context.Context, req gen.ContinueTaskRequestObject) (gen.ContinueTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	v, err := a.tasks.Continue(ctx, id.User, req.TaskId, task.ContinueInput{Prompt: b.Prompt, AdditionalSteps: b.AdditionalSteps, MediaIDs: mediaIDs(b.MediaIds)})
	if err != nil {
		return nil, err
	}
	return gen.ContinueTask200JSONResponse(taskResponse(v)), nil
}

// RejectTask rejects every pending tool call.
func (a *API) RejectTask(ctx context.Context, req gen.RejectTaskRequestObject) (gen.RejectTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Reject(ctx, id.User, req.TaskId, req.Body.Reason)
	if err != nil {
		return nil, err
	}
	return gen.RejectTask200JSONResponse(taskResponse(v)), nil
}

// RetryTask queues a FAILED task again.
func (a *API) RetryTask(ctx context.Context, req gen.RetryTaskRequestObject) (gen.RetryTaskResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.Retry(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.RetryTask200JSONResponse(taskResponse(v)), nil
}

// CancelTaskRetryChain cancels the pending automatic retry (task → CANCELLED).
func (a *API) CancelTaskRetryChain(ctx context.Context, req gen.CancelTaskRetryChainRequestObject) (gen.CancelTaskRetryChainResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	v, err := a.tasks.CancelRetryChain(ctx, id.User, req.TaskId)
	if err != nil {
		return nil, err
	}
	return gen.CancelTaskRetryChain200JSONResponse(taskResponse(v)), nil
}
