package api

import (
	"context"
	"time"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/approval/inbox"
	"github.com/agentsvc/svc/store"
)

// ListApprovals pages through what the caller may decide (the approvals inbox).
func (a *API) ListApprovals(ctx context.Context, req gen.ListApprovalsRequestObject) (gen.ListApprovalsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	page, per := pageArgs(p.Page, p.PerPage)
	q := inbox.InboxQuery{Page: page, PerPage: per}
	if p.AgentId != nil {
		q.AgentID = *p.AgentId
	}
	if p.Tool != nil {
		q.Tool = *p.Tool
	}
	if p.OlderThan != nil {
		q.OlderThan = time.Duration(*p.OlderThan) * time.Second
	}
	items, err := a.inbox.Inbox(ctx, id.User, q)
	if err != nil {
		return nil, err
	}
	var r gen.ListApprovals200JSONResponse
	r.Data.Approvals = make([]gen.Approval, 0, len(items))
	for i := range items {
		r.Data.Approvals = append(r.Data.Approvals, toApproval(&items[i]))
	}
	return r, nil
}

func toApproval(it *inbox.Item) gen.Approval {
	out := gen.Approval{TaskId: it.TaskID, TaskTitle: it.Title, TaskUserId: it.Task.UserID, AgentId: it.Agent.ID,
		AgentName: it.Agent.Name, CreatedAt: it.CreatedAt, LastMessage: it.LastMessage}
	if c := it.Call; c != nil {
		out.Kind = gen.ToolCall
		args := c.ProposedArguments
		if args == nil {
			args = map[string]any{}
		}
		out.ToolCall = &gen.TaskPendingToolCall{Id: c.ID, ProviderCallId: c.ProviderCallID, Name: c.Name,
			Operation: c.Operation, Description: it.Description, Arguments: args}
	} else {
		out.Kind = gen.QuestionBatch
		b := questionBatches([]store.QuestionBatch{*it.Batch})[0]
		out.QuestionBatch = &b
	}
	return out
}

// DecideApprovals applies several tool call decisions, each on its own.
func (a *API) DecideApprovals(ctx context.Context, req gen.DecideApprovalsRequestObject) (gen.DecideApprovalsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ds := make([]inbox.Decision, 0, len(req.Body.Decisions))
	for _, d := range req.Body.Decisions {
		td := store.ToolDecision{ProviderCallID: d.ProviderCallId, Approve: d.Decision == gen.ApprovalDecisionDecisionApprove, Reason: d.Reason}
		if d.Arguments != nil {
			td.Arguments = *d.Arguments
			if td.Arguments == nil {
				td.Arguments = map[string]any{}
			}
		}
		ds = append(ds, inbox.Decision{TaskID: d.TaskId, ToolDecision: td})
	}
	results, err := a.inbox.DecideBatch(ctx, id.User, ds)
	if err != nil {
		return nil, err
	}
	var r gen.DecideApprovals200JSONResponse
	r.Data.Results = make([]gen.ApprovalDecisionResult, 0, len(results))
	for i, res := range results {
		out := gen.ApprovalDecisionResult{TaskId: ds[i].TaskID, ProviderCallId: ds[i].ProviderCallID}
		if res.Err != nil {
			_, code, msg, ok := Classify(res.Err)
			if !ok {
				return nil, res.Err // an internal failure fails the request (logged as such)
			}
			e := gen.Error{}
			e.Error.Code, e.Error.Message = code, msg
			out.Error = &e
		} else {
			out.Ok = true
			st := gen.TaskStatus(res.Task.Status)
			out.TaskStatus = &st
		}
		r.Data.Results = append(r.Data.Results, out)
	}
	return r, nil
}
