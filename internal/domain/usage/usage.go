// Package usage answers "what did this spend?" and keeps budgets (issue 27): who may read
// which usage (GET /usage), who may set which budget, and the per-agent API's refusal of a chat
// whose key, agent or group is over budget. The ledger, the rollup and the budget check are the
// store's (store/usage.go, store/budget.go); the loop stops model calls (agentloop/spend.go).
package usage

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// MaxDays bounds a usage query's period (a year, leap day included).
const MaxDays = 366

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	Usage(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
	TimeZone() *time.Location
	GroupByID(ctx context.Context, id int64) (*store.Group, error)
	UserByID(ctx context.Context, id int64) (*store.User, error)
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	APIKeyByKeyID(ctx context.Context, keyID string) (*store.AgentAPIKey, error)
	APIKeyByID(ctx context.Context, id int64) (*store.AgentAPIKey, error)
	CreateBudget(ctx context.Context, b store.Budget) (*store.Budget, error)
	BudgetByID(ctx context.Context, id int64) (*store.Budget, error)
	UpdateBudget(ctx context.Context, b store.Budget) (*store.Budget, error)
	DeleteBudget(ctx context.Context, id int64) error
	Budgets(ctx context.Context, kind string, id int64) ([]store.Budget, error)
	BudgetUse(ctx context.Context, b store.Budget) (store.BudgetUse, error)
	BudgetsFor(ctx context.Context, sc store.BudgetScope) ([]store.BudgetUse, error)
	HasBudgets(ctx context.Context) (bool, error)
	ConfigVersion(ctx context.Context) (int64, error)
}

// Service applies the usage and budget rules on top of the store.
type Service struct {
	store Store

	mu      sync.Mutex
	budgets struct {
		version int64 // the config version it was read at
		known   bool
		any     bool
	}
}

// anyBudget reports whether any budget exists, read again only when the configuration version
// changed (budgets is one of store.ConfigTables: a budget set on any process shows within the
// version's TTL, as it does for the loop's steps), so a chat start where none exists spends no
// statement on them. Errors: the store's.
func (s *Service) anyBudget(ctx context.Context) (bool, error) {
	v, err := s.store.ConfigVersion(ctx)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.budgets.known && s.budgets.version == v {
		any := s.budgets.any
		s.mu.Unlock()
		return any, nil
	}
	s.mu.Unlock()
	any, err := s.store.HasBudgets(ctx)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.budgets.version, s.budgets.known, s.budgets.any = v, true, any
	s.mu.Unlock()
	return any, nil
}

// New returns the service.
func New(st Store) *Service { return &Service{store: st} }

// Query is a usage request as the API received it.
type Query struct {
	From, To time.Time // days (their date in any zone)
	GroupBy  []string
	AgentID  *int64
	UserID   *int64
	GroupID  *int64
	KeyID    *string
	TaskID   *int64
}

// Usage sums the usage u may see as q asks: administrators every call, a group's owners and
// admins the calls of the group's agents, everyone the calls of their own tasks and of their
// own agents. Errors: ErrInvalid (the period: to before from, longer than MaxDays; a grouping
// key twice), ErrNotFound (a group or key filter u cannot see).
func (s *Service) Usage(ctx context.Context, u *store.User, q Query) ([]store.UsageRow, error) {
	from, to := q.From.Format(time.DateOnly), q.To.Format(time.DateOnly)
	if to < from {
		return nil, fieldcheck.Invalidf("to must not be before from")
	}
	if q.To.Sub(q.From) > (MaxDays-1)*24*time.Hour {
		return nil, fieldcheck.Invalidf("the period is at most %d days", MaxDays)
	}
	seen := map[string]bool{}
	for _, g := range q.GroupBy {
		if seen[g] {
			return nil, fieldcheck.Invalidf("group_by names %q twice", g)
		}
		seen[g] = true
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	sq := store.UsageQuery{From: from, To: to, GroupBy: q.GroupBy, AgentID: q.AgentID, UserID: q.UserID, TaskID: q.TaskID,
		All: sc.Admin, Viewer: u.ID}
	for _, p := range sc.Principals() {
		if sc.CanManage(p) {
			sq.Principals = append(sq.Principals, p)
		}
	}
	if q.GroupID != nil {
		g, err := s.store.GroupByID(ctx, *q.GroupID)
		if err != nil {
			return nil, err
		}
		if err := sc.See(g.PrincipalID, "group"); err != nil {
			return nil, err
		}
		sq.PrincipalID = &g.PrincipalID
	}
	if q.KeyID != nil {
		k, err := s.store.APIKeyByKeyID(ctx, *q.KeyID)
		if err != nil {
			return nil, err
		}
		sq.APIKeyID = &k.ID
	}
	return s.store.Usage(ctx, sq)
}

// Budget is a budget with its current use and the public form of its scope id (the key's
// public id for a key budget).
type Budget struct {
	store.BudgetUse
	ScopeRef string
}

// scope resolves a budget's scope for u: its row id, the principal whose managers may see it
// and whether u may change it. Errors: ErrInvalid (a malformed id), ErrNotFound (unknown or
// invisible).
func (s *Service) scope(ctx context.Context, u *store.User, sc *access.Scope, kind, ref string) (id int64, canManage bool, err error) {
	if kind == store.BudgetScopeKey {
		k, err := s.store.APIKeyByKeyID(ctx, ref)
		if err != nil {
			return 0, false, err
		}
		a, err := s.store.Agent(ctx, k.AgentID, u.ID)
		if err != nil || !sc.CanSee(a.PrincipalID) {
			return 0, false, svcerr.New(svcerr.ErrNotFound, "key not found")
		}
		return k.ID, sc.CanManage(a.PrincipalID), nil
	}
	id, perr := strconv.ParseInt(strings.TrimSpace(ref), 10, 64)
	if perr != nil || id < 1 {
		return 0, false, fieldcheck.Invalidf("scope_id must be the %s's id", kind)
	}
	switch kind {
	case store.BudgetScopeUser:
		if _, err := s.store.UserByID(ctx, id); err != nil || (!sc.Admin && id != u.ID) {
			return 0, false, svcerr.New(svcerr.ErrNotFound, "user not found")
		}
		return id, sc.Admin, nil
	case store.BudgetScopeGroup:
		g, err := s.store.GroupByID(ctx, id)
		if err != nil || !sc.CanSee(g.PrincipalID) {
			return 0, false, svcerr.New(svcerr.ErrNotFound, "group not found")
		}
		return id, sc.CanManage(g.PrincipalID), nil
	case store.BudgetScopeAgent:
		a, err := s.store.Agent(ctx, id, u.ID)
		if err != nil || !sc.CanSee(a.PrincipalID) {
			return 0, false, svcerr.New(svcerr.ErrNotFound, "agent not found")
		}
		return id, sc.CanManage(a.PrincipalID), nil
	}
	return 0, false, fieldcheck.Invalidf("scope_kind must be user, group, agent or key")
}

// ref is the public form of budget b's scope id.
func (s *Service) ref(ctx context.Context, b store.Budget) string {
	if b.ScopeKind == store.BudgetScopeKey {
		if k, err := s.store.APIKeyByID(ctx, b.ScopeID); err == nil {
			return k.KeyID
		}
	}
	return strconv.FormatInt(b.ScopeID, 10)
}

func (s *Service) withUse(ctx context.Context, b store.Budget) (*Budget, error) {
	use, err := s.store.BudgetUse(ctx, b)
	if err != nil {
		return nil, err
	}
	return &Budget{BudgetUse: use, ScopeRef: s.ref(ctx, b)}, nil
}

// CreateBudget sets budget b on the scope named by ref (a user, group or agent id, or a key's
// public id) for u, who must manage it: administrators any, a group's owners and admins the
// group, its agents and their keys. Errors: ErrInvalid (fields, store.ValidBudget), ErrNotFound
// (the scope is unknown or invisible), ErrForbidden, ErrConflict (the scope has a budget for
// the period).
func (s *Service) CreateBudget(ctx context.Context, u *store.User, ref string, b store.Budget) (*Budget, error) {
	if err := store.ValidBudget(&b); err != nil {
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	id, manage, err := s.scope(ctx, u, sc, b.ScopeKind, ref)
	if err != nil {
		return nil, err
	}
	if !manage {
		return nil, svcerr.New(svcerr.ErrForbidden, "you may not set budgets on this %s", b.ScopeKind)
	}
	b.ScopeID = id
	out, err := s.store.CreateBudget(ctx, b)
	if err != nil {
		return nil, err
	}
	return s.withUse(ctx, *out)
}

// budget loads budget id for u with whether u may change it. Errors: ErrNotFound (unknown or
// invisible).
func (s *Service) budget(ctx context.Context, u *store.User, id int64) (*store.Budget, bool, error) {
	b, err := s.store.BudgetByID(ctx, id)
	if err != nil {
		return nil, false, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, false, err
	}
	_, manage, err := s.scope(ctx, u, sc, b.ScopeKind, s.ref(ctx, *b))
	if err != nil {
		return nil, false, svcerr.New(svcerr.ErrNotFound, "budget %d not found", id)
	}
	return b, manage, nil
}

// Patch lists a budget's changes; Clear names limits to remove.
type Patch struct {
	LimitTokens *int64
	LimitCost   *int64
	SoftPercent *int
	Clear       []string
}

// UpdateBudget changes budget id for u (who may create it may change it). Errors: ErrNotFound,
// ErrForbidden, ErrInvalid (a field both set and cleared; a budget left without a limit).
func (s *Service) UpdateBudget(ctx context.Context, u *store.User, id int64, p Patch) (*Budget, error) {
	b, manage, err := s.budget(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if !manage {
		return nil, svcerr.New(svcerr.ErrForbidden, "you may not change this budget")
	}
	if p.LimitTokens != nil {
		b.LimitTokens = p.LimitTokens
	}
	if p.LimitCost != nil {
		b.LimitCost = p.LimitCost
	}
	if p.SoftPercent != nil {
		b.SoftPercent = p.SoftPercent
	}
	for _, f := range p.Clear {
		switch {
		case f == "limit_tokens" && p.LimitTokens == nil:
			b.LimitTokens = nil
		case f == "limit_cost" && p.LimitCost == nil:
			b.LimitCost = nil
		case f == "soft_percent" && p.SoftPercent == nil:
			b.SoftPercent = nil
		default:
			return nil, fieldcheck.Invalidf("clear: %q is both set and cleared, or not a budget field", f)
		}
	}
	out, err := s.store.UpdateBudget(ctx, *b)
	if err != nil {
		return nil, err
	}
	return s.withUse(ctx, *out)
}

// DeleteBudget removes budget id for u. Errors: ErrNotFound, ErrForbidden.
func (s *Service) DeleteBudget(ctx context.Context, u *store.User, id int64) error {
	_, manage, err := s.budget(ctx, u, id)
	if err != nil {
		return err
	}
	if !manage {
		return svcerr.New(svcerr.ErrForbidden, "you may not remove this budget")
	}
	return s.store.DeleteBudget(ctx, id)
}

// Budgets lists the budgets u may see (kind and ref filter, both or neither), with their use.
// Errors: ErrInvalid (one filter without the other), ErrNotFound (the filter's scope).
func (s *Service) Budgets(ctx context.Context, u *store.User, kind, ref string) ([]Budget, error) {
	if (kind == "") != (ref == "") {
		return nil, fieldcheck.Invalidf("scope_kind and scope_id filter together")
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	var id int64
	if kind != "" {
		if id, _, err = s.scope(ctx, u, sc, kind, ref); err != nil {
			return nil, err
		}
	}
	all, err := s.store.Budgets(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	out := make([]Budget, 0, len(all))
	for _, b := range all {
		if _, _, err := s.scope(ctx, u, sc, b.ScopeKind, s.ref(ctx, b)); err != nil {
			continue // not visible to u
		}
		w, err := s.withUse(ctx, b)
		if err != nil {
			return nil, err
		}
		out = append(out, *w)
	}
	return out, nil
}

// CheckChat refuses a per-agent API chat of key k (created by user createdBy) when a budget
// of the key, its agent, the agent's principal's group or that user is used up: ErrBudgetExceeded
// naming the budget, with the wait until its reset (Retry-After). Where no budget exists at
// all (anyBudget) it reads nothing more. Errors: ErrBudgetExceeded, the store's.
func (s *Service) CheckChat(ctx context.Context, k *store.AgentAPIKey, a *store.Agent, userID int64) error {
	if any, err := s.anyBudget(ctx); err != nil || !any {
		return err
	}
	keyID := k.ID
	uses, err := s.store.BudgetsFor(ctx, store.BudgetScope{UserID: userID, AgentID: a.ID, PrincipalID: a.PrincipalID, APIKeyID: &keyID})
	if err != nil {
		return err
	}
	for i := range uses {
		if uses[i].Exceeded() {
			wait := uses[i].ResetsAt.Sub(uses[i].At)
			return &svcerr.Error{Kind: svcerr.ErrBudgetExceeded, Msg: uses[i].Message(), RetryAfter: max(wait, time.Second)}
		}
	}
	return nil
}
