// Package agent holds the rules of the agent resource: who may list, read, create, change,
// delete, favorite and transfer agents. Agents are owned by principals; visibility and manage
// rights come from access.Scope (document 1, rule 6: invisible agents answer 404, visible ones
// the caller may not manage answer 403). The store does the writes, each in one transaction
// that re-checks the rule on the locked row, so a refused request writes nothing.
package agent

import (
	"context"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// what names the resource in not-found and forbidden messages.
const what = "agent"

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	ListAgents(ctx context.Context, q store.AgentQuery) ([]store.Agent, error)
	PrincipalOfGroup(ctx context.Context, groupID int64) (int64, error)
	CreateAgent(ctx context.Context, principalID int64, f store.AgentFields) (*store.Agent, error)
	UpdateAgent(ctx context.Context, id, viewer int64, f store.AgentFields, check store.AgentCheck) (*store.Agent, error)
	DeleteAgent(ctx context.Context, id int64, check store.AgentCheck) error
	SetAgentFavorite(ctx context.Context, id, userID int64, favorite bool, check store.AgentCheck) (*store.Agent, error)
	TransferAgent(ctx context.Context, id, viewer, principalID int64, check store.AgentCheck) (*store.Agent, error)
}

// Service applies the agent rules on top of the store.
type Service struct {
	store Store
}

// New returns the service.
func New(st Store) *Service { return &Service{store: st} }

// ParseID turns an agent id from a path (agent ids are strings in paths) into the stored id.
// Anything but a canonical positive decimal number names no agent: ErrNotFound "agent not
// found", the same answer as an unknown or invisible agent.
func ParseID(s string) (int64, error) {
	id, ok := pathid.Parse(s)
	if !ok {
		return 0, notFound()
	}
	return id, nil
}

func notFound() error { return svcerr.New(svcerr.ErrNotFound, "agent not found") }

// ListOptions narrow and page List.
type ListOptions struct {
	PrincipalID   *int64 // only this principal's agents; an invisible principal lists nothing
	Page, PerPage int
}

// List returns one page of the agents u can see (administrators: all agents), u's favorites
// first, then by name and id. Errors: those of access.For and the store.
func (s *Service) List(ctx context.Context, u *store.User, o ListOptions) ([]store.Agent, error) {
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	q := store.AgentQuery{Viewer: u.ID, FavoritesFirst: true, Page: o.Page, PerPage: o.PerPage}
	switch {
	case o.PrincipalID != nil:
		if !sc.CanSee(*o.PrincipalID) {
			return []store.Agent{}, nil
		}
		q.Principals = []int64{*o.PrincipalID}
	case sc.Admin:
		q.All = true
	default:
		q.Principals = sc.Principals()
	}
	return s.store.ListAgents(ctx, q)
}

// ListGroup returns one page of the agents owned by group groupID, by name and id, for a
// member of the group or an administrator. Errors: ErrNotFound "group not found" (unknown
// group, or one u cannot see).
func (s *Service) ListGroup(ctx context.Context, u *store.User, groupID int64, page, perPage int) ([]store.Agent, error) {
	p, err := s.store.PrincipalOfGroup(ctx, groupID)
	if err != nil {
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if err := sc.See(p, "group"); err != nil {
		return nil, err
	}
	return s.store.ListAgents(ctx, store.AgentQuery{Viewer: u.ID, Principals: []int64{p}, Page: page, PerPage: perPage})
}

// Create stores a new agent owned by principalID (nil: u's personal principal). The principal
// must be one u may manage. Errors: ErrInvalid for a principal u cannot see (it is a reference
// in the body, not the addressed resource), for invalid fields (CheckFields, checked after the
// principal) and for a principal deleted meanwhile (store.CreateAgent), ErrForbidden for a
// principal u sees but may not manage.
func (s *Service) Create(ctx context.Context, u *store.User, principalID *int64, f store.AgentFields) (*store.Agent, error) {
	p := u.PrincipalID
	if principalID != nil {
		p = *principalID
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if err := target(sc, p); err != nil {
		return nil, err
	}
	if err := CheckFields(f, true); err != nil {
		return nil, err
	}
	return s.store.CreateAgent(ctx, p, f)
}

// target checks that sc may give an agent to principal p: ErrInvalid when p is invisible,
// ErrForbidden when visible but not manageable.
func target(sc *access.Scope, p int64) error {
	if !sc.CanSee(p) {
		return svcerr.New(svcerr.ErrInvalid, "principal_id: no such principal")
	}
	if !sc.CanManage(p) {
		return svcerr.New(svcerr.ErrForbidden, "you may not manage principal %d", p)
	}
	return nil
}

// Get returns the agent id as u sees it. Errors: ErrNotFound "agent not found" (unknown,
// malformed or invisible).
func (s *Service) Get(ctx context.Context, u *store.User, id string) (*store.Agent, error) {
	aid, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, aid, u.ID)
	if err != nil {
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if err := sc.See(a.PrincipalID, what); err != nil {
		return nil, err
	}
	return a, nil
}

// Update changes the fields set in f. Errors: ErrNotFound "agent not found", ErrForbidden
// (visible without manage rights), ErrInvalid (CheckFields; checked before the agent is read,
// as the store did).
func (s *Service) Update(ctx context.Context, u *store.User, id string, f store.AgentFields) (*store.Agent, error) {
	aid, sc, err := s.prepare(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := CheckFields(f, false); err != nil {
		return nil, err
	}
	return s.store.UpdateAgent(ctx, aid, u.ID, f, manage(sc))
}

// Delete removes the agent and everything belonging to it. Errors: ErrNotFound "agent not
// found", ErrForbidden (visible without manage rights), ErrInvalidState (a task of the agent is
// RUNNING).
func (s *Service) Delete(ctx context.Context, u *store.User, id string) error {
	aid, sc, err := s.prepare(ctx, u, id)
	if err != nil {
		return err
	}
	return s.store.DeleteAgent(ctx, aid, manage(sc))
}

// SetFavorite marks (on) or unmarks the agent as one of u's favorites; both are idempotent
// and need only visibility. Errors: ErrNotFound "agent not found".
func (s *Service) SetFavorite(ctx context.Context, u *store.User, id string, on bool) (*store.Agent, error) {
	aid, sc, err := s.prepare(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.store.SetAgentFavorite(ctx, aid, u.ID, on, func(a *store.Agent) error {
		return sc.See(a.PrincipalID, what)
	})
}

// Transfer gives the agent to principalID. u needs manage rights on the agent (ErrNotFound
// when invisible, ErrForbidden otherwise) and on the target (ErrInvalid when u cannot see it,
// ErrForbidden when u sees it without manage rights). Transferring to the current owner
// changes nothing.
func (s *Service) Transfer(ctx context.Context, u *store.User, id string, principalID int64) (*store.Agent, error) {
	aid, sc, err := s.prepare(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.store.TransferAgent(ctx, aid, u.ID, principalID, func(a *store.Agent) error {
		if err := sc.Manage(a.PrincipalID, what); err != nil {
			return err
		}
		return target(sc, principalID)
	})
}

// prepare parses the agent id and loads u's scope.
func (s *Service) prepare(ctx context.Context, u *store.User, id string) (int64, *access.Scope, error) {
	aid, err := ParseID(id)
	if err != nil {
		return 0, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return 0, nil, err
	}
	return aid, sc, nil
}

// manage is the store check for changes that need manage rights on the agent's principal.
func manage(sc *access.Scope) store.AgentCheck {
	return func(a *store.Agent) error { return sc.Manage(a.PrincipalID, what) }
}
