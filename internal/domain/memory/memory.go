// Package memory is what operators do with an agent's long-term memory (the memory tool's
// store): list and search, edit, delete. Memories may hold what the agent's users told it, so
// every operation needs the manage role on the agent, not only sight of it.
package memory

import (
	"context"
	"strings"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Store is what the service reads and writes; *store.Store satisfies it.
type Store interface {
	agent.Store
	RecallMemories(ctx context.Context, q store.MemoryQuery) ([]store.Memory, int64, error)
	UpdateMemory(ctx context.Context, agentID, id int64, text string, check store.AgentCheck) (*store.Memory, error)
	ForgetMemory(ctx context.Context, agentID, id int64, scoped bool, userID *int64) error
}

// Service runs the operators' memory operations.
type Service struct{ store Store }

// New returns the service.
func New(st Store) *Service { return &Service{store: st} }

// managed returns agent agentID once u may manage it. Errors: ErrNotFound "agent not found"
// (unknown or invisible), ErrForbidden (visible, not managed).
func (s *Service) managed(ctx context.Context, u *store.User, agentID string) (*store.Agent, *access.Scope, error) {
	a, err := agent.New(s.store).Get(ctx, u, agentID)
	if err != nil {
		return nil, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
		return nil, nil, err
	}
	return a, sc, nil
}

// List returns one page of the agent's memories (every user's) and their total: ranked by q's
// words when q has any (store.RecallMemories), else the most recent first. Errors: those of
// managed, ErrInvalid for a query over limits.MemoryQueryLen characters.
func (s *Service) List(ctx context.Context, u *store.User, agentID, q string, page, perPage int) ([]store.Memory, int64, error) {
	a, _, err := s.managed(ctx, u, agentID)
	if err != nil {
		return nil, 0, err
	}
	if err := fieldcheck.Text("q", q, limits.MemoryQueryLen); err != nil {
		return nil, 0, err
	}
	return s.store.RecallMemories(ctx, store.MemoryQuery{AgentID: a.ID, AllUsers: true, Text: q,
		Offset: (page - 1) * perPage, Limit: perPage, Total: true})
}

// Update replaces a memory's text. Errors: those of managed (checked again on the locked
// agent), ErrNotFound "memory not found", ErrInvalid for a blank text or one over
// limits.MemoryTextLen characters.
func (s *Service) Update(ctx context.Context, u *store.User, agentID, id, text string) (*store.Memory, error) {
	a, sc, err := s.managed(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	mid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fieldcheck.Invalidf("text is required")
	}
	if err := fieldcheck.Text("text", text, limits.MemoryTextLen); err != nil {
		return nil, err
	}
	return s.store.UpdateMemory(ctx, a.ID, mid, text, func(a *store.Agent) error { return sc.Manage(a.PrincipalID, "agent") })
}

// Delete deletes a memory, whatever its scope. Errors: those of managed, ErrNotFound "memory not
// found".
func (s *Service) Delete(ctx context.Context, u *store.User, agentID, id string) error {
	a, _, err := s.managed(ctx, u, agentID)
	if err != nil {
		return err
	}
	mid, err := parseID(id)
	if err != nil {
		return err
	}
	return s.store.ForgetMemory(ctx, a.ID, mid, false, nil)
}

func parseID(s string) (int64, error) {
	id, ok := pathid.Parse(s)
	if !ok {
		return 0, svcerr.New(svcerr.ErrNotFound, "memory not found")
	}
	return id, nil
}
