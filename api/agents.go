package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/store"
)

func toAgent(base string, a *store.Agent) gen.Agent {
	md := a.Metadata
	if md == nil {
		md = map[string]any{}
	}
	return gen.Agent{
		Id: a.ID, PrincipalId: a.PrincipalID, Name: a.Name, Description: a.Description,
		SystemPrompt: a.SystemPrompt, Notes: a.Notes, MaxSteps: a.MaxSteps, AllowFollowup: a.AllowFollowup,
		RetryAfterMinutes: a.RetryAfterMinutes, MaxRetries: a.MaxRetries, Metadata: md,
		Approvers: toAgentApprovers(a.Approvers), ApprovalTimeoutSeconds: a.ApprovalTimeoutSeconds,
		ApprovalTimeoutAction: gen.ApprovalTimeoutAction(a.ApprovalTimeoutAction),
		CompactionEnabled:     a.Compaction.Enabled, CompactionThresholdPercent: a.Compaction.ThresholdPercent,
		CompactionAnswerReserve: a.Compaction.AnswerReserve, ToolResultMaxChars: a.Compaction.ToolResultMaxChars,
		SummaryLlmConfigId: a.Compaction.SummaryLLMConfigID,
		IsFavorite:         a.IsFavorite, PictureUrl: pictureURL(base, "agents", a.ID, a.PictureMediaID), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

func toAgentApprovers(ap store.Approvers) gen.AgentApprovers {
	ids := ap.Users
	if ids == nil {
		ids = []int64{}
	}
	return gen.AgentApprovers{Owner: ap.Owner, Managers: ap.Managers, UserIds: ids}
}

// approvalFields are the approval settings of a create or update body (nil: absent).
func approvalFields(f *store.AgentFields, ap *gen.AgentApprovers, timeout *int, action *gen.ApprovalTimeoutAction) {
	if ap != nil {
		f.Approvers = &store.Approvers{Owner: ap.Owner, Managers: ap.Managers, Users: ap.UserIds}
	}
	f.ApprovalTimeoutSeconds = timeout
	if action != nil {
		s := string(*action)
		f.ApprovalTimeoutAction = &s
	}
}

func toAgents(base string, as []store.Agent) []gen.Agent {
	out := make([]gen.Agent, 0, len(as))
	for i := range as {
		out = append(out, toAgent(base, &as[i]))
	}
	return out
}

func agentResponse(base string, a *store.Agent) gen.AgentResponse {
	var r gen.AgentResponse
	r.Data.Agent = toAgent(base, a)
	return r
}

// ListAgents pages through the agents the caller can see, favorites first.
func (a *API) ListAgents(ctx context.Context, req gen.ListAgentsRequestObject) (gen.ListAgentsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	list, err := a.agents.List(ctx, id.User, agent.ListOptions{PrincipalID: req.Params.PrincipalId, Page: page, PerPage: per})
	if err != nil {
		return nil, err
	}
	var r gen.ListAgents200JSONResponse
	r.Data.Agents = toAgents(a.publicBase(ctx), list)
	return r, nil
}

// CreateAgent creates an agent owned by the caller or a principal it manages.
func (a *API) CreateAgent(ctx context.Context, req gen.CreateAgentRequestObject) (gen.CreateAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	f := store.AgentFields{
		Name: &b.Name, Description: b.Description, SystemPrompt: b.SystemPrompt, Notes: b.Notes,
		MaxSteps: b.MaxSteps, AllowFollowup: b.AllowFollowup, RetryAfterMinutes: b.RetryAfterMinutes,
		MaxRetries: b.MaxRetries, Metadata: b.Metadata, CompactionEnabled: b.CompactionEnabled,
		CompactionThresholdPercent: b.CompactionThresholdPercent, CompactionAnswerReserve: b.CompactionAnswerReserve,
		ToolResultMaxChars: b.ToolResultMaxChars, SummaryLLMConfigID: b.SummaryLlmConfigId,
	}
	approvalFields(&f, b.Approvers, b.ApprovalTimeoutSeconds, b.ApprovalTimeoutAction)
	ag, err := a.agents.Create(ctx, id.User, b.PrincipalId, f)
	if err != nil {
		return nil, err
	}
	return gen.CreateAgent201JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// GetAgent shows an agent the caller can see.
func (a *API) GetAgent(ctx context.Context, req gen.GetAgentRequestObject) (gen.GetAgentResponseObject, error) {
	ag, err := a.visibleAgent(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetAgent200JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// visibleAgent loads an agent the caller can see. Errors: ErrUnauthenticated, ErrNotFound.
func (a *API) visibleAgent(ctx context.Context, agentID string) (*store.Agent, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return a.agents.Get(ctx, id.User, agentID)
}

// UpdateAgent changes the fields sent (manage rights).
func (a *API) UpdateAgent(ctx context.Context, req gen.UpdateAgentRequestObject) (gen.UpdateAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	f := store.AgentFields{
		Name: b.Name, Description: b.Description, SystemPrompt: b.SystemPrompt, Notes: b.Notes,
		MaxSteps: b.MaxSteps, AllowFollowup: b.AllowFollowup, RetryAfterMinutes: b.RetryAfterMinutes,
		MaxRetries: b.MaxRetries, Metadata: b.Metadata, CompactionEnabled: b.CompactionEnabled,
		CompactionThresholdPercent: b.CompactionThresholdPercent, CompactionAnswerReserve: b.CompactionAnswerReserve,
		ToolResultMaxChars: b.ToolResultMaxChars, SummaryLLMConfigID: b.SummaryLlmConfigId,
	}
	approvalFields(&f, b.Approvers, b.ApprovalTimeoutSeconds, b.ApprovalTimeoutAction)
	ag, err := a.agents.Update(ctx, id.User, req.Id, f)
	if err != nil {
		return nil, err
	}
	return gen.UpdateAgent200JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// DeleteAgent removes an agent and everything belonging to it (manage rights).
func (a *API) DeleteAgent(ctx context.Context, req gen.DeleteAgentRequestObject) (gen.DeleteAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.agents.Delete(ctx, id.User, req.Id); err != nil {
		return nil, err
	}
	return gen.DeleteAgent200JSONResponse(deleted()), nil
}

// FavoriteAgent marks an agent as one of the caller's favorites (idempotent).
func (a *API) FavoriteAgent(ctx context.Context, req gen.FavoriteAgentRequestObject) (gen.FavoriteAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ag, err := a.agents.SetFavorite(ctx, id.User, req.Id, true)
	if err != nil {
		return nil, err
	}
	return gen.FavoriteAgent200JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// UnfavoriteAgent removes the caller's favorite marker (idempotent).
func (a *API) UnfavoriteAgent(ctx context.Context, req gen.UnfavoriteAgentRequestObject) (gen.UnfavoriteAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := a.agents.SetFavorite(ctx, id.User, req.Id, false); err != nil {
		return nil, err
	}
	return gen.UnfavoriteAgent200JSONResponse(deleted()), nil
}

// TransferAgent gives an agent to another principal (manage rights on both).
func (a *API) TransferAgent(ctx context.Context, req gen.TransferAgentRequestObject) (gen.TransferAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	ag, err := a.agents.Transfer(ctx, id.User, req.Id, req.Body.PrincipalId)
	if err != nil {
		return nil, err
	}
	return gen.TransferAgent200JSONResponse(agentResponse(a.publicBase(ctx), ag)), nil
}

// ListGroupAgents pages through a group's agents (members and administrators).
func (a *API) ListGroupAgents(ctx context.Context, req gen.ListGroupAgentsRequestObject) (gen.ListGroupAgentsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	list, err := a.agents.ListGroup(ctx, id.User, req.Id, page, per)
	if err != nil {
		return nil, err
	}
	var r gen.ListGroupAgents200JSONResponse
	r.Data.Agents = toAgents(a.publicBase(ctx), list)
	return r, nil
}
