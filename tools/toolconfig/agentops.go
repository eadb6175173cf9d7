package toolconfig

import (
	"context"

	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/store"
)

// SlimAgentFields are the fields the model-facing agent operations (create_agent, update_agent)
// may set: document 2's slim subset of the agent template. Nil means the default (create) or
// unchanged (update). Notes, metadata and the owner are not among them.
type SlimAgentFields struct {
	Name              *string
	Description       *string
	SystemPrompt      *string
	MaxSteps          *int
	AllowFollowup     *bool
	RetryAfterMinutes *int
	MaxRetries        *int
}

func (f SlimAgentFields) store() store.AgentFields {
	return store.AgentFields{
		Name: f.Name, Description: f.Description, SystemPrompt: f.SystemPrompt, MaxSteps: f.MaxSteps,
		AllowFollowup: f.AllowFollowup, RetryAfterMinutes: f.RetryAfterMinutes, MaxRetries: f.MaxRetries,
	}
}

// CreateAgentForAgent creates an agent owned by the principal of the agent callerID (the
// calling agent acts for its owner), with the validation of POST /agents, when the user userID
// the task runs for may manage that principal. Errors: ErrNotFound (the caller is gone),
// ErrForbidden (the user may not manage the principal), ErrInvalid (agent.CheckFields: missing
// or blank name, oversize text, max_steps outside 1..100, negative retry settings).
func (s *Service) CreateAgentForAgent(ctx context.Context, callerID, userID int64, f SlimAgentFields) (*store.Agent, error) {
	caller, err := s.store.Agent(ctx, callerID, 0)
	if err != nil {
		return nil, err
	}
	if err := s.userManages(ctx, userID, caller.PrincipalID); err != nil {
		return nil, err
	}
	if err := agent.CheckFields(f.store(), true); err != nil {
		return nil, err
	}
	return s.store.CreateAgent(ctx, caller.PrincipalID, f.store())
}

// AgentsOfAgentOwner returns one page of the agents of the principal of the agent callerID
// (the caller included), by name then id; page starts at 1 and perPage is 1..100 (the store's
// paging rules apply to other values). Errors: ErrNotFound (the caller is gone).
func (s *Service) AgentsOfAgentOwner(ctx context.Context, callerID int64, page, perPage int) ([]store.Agent, error) {
	caller, err := s.store.Agent(ctx, callerID, 0)
	if err != nil {
		return nil, err
	}
	return s.store.ListAgents(ctx, store.AgentQuery{Principals: []int64{caller.PrincipalID}, Page: page, PerPage: perPage})
}

// UpdateAgentForAgent changes the slim fields set in f of agent targetID for the agent callerID
// (the caller itself or an agent of the same principal; targetID 0 is the caller) when the user
// userID the task runs for may manage it. Errors: ErrNotFound (caller or target), ErrForbidden
// (the user may not manage the target), ErrInvalid (as CreateAgentForAgent), ErrInvalidState
// (the target changed owner meanwhile).
func (s *Service) UpdateAgentForAgent(ctx context.Context, callerID, userID, targetID int64, f SlimAgentFields) (*store.Agent, error) {
	a, err := s.changeableByAgent(ctx, callerID, userID, targetID)
	if err != nil {
		return nil, err
	}
	if err := agent.CheckFields(f.store(), false); err != nil {
		return nil, err
	}
	check := sameOwner(a.PrincipalID)
	return s.store.UpdateAgent(ctx, a.ID, 0, f.store(), check)
}
