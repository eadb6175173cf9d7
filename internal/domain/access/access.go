// Package access decides what a user may see and manage. Agents, media and model
// configurations are owned by principals; a user sees the principals they are (their personal
// one) or belong to (groups), and manages their own and the groups where they are owner or
// admin. Administrators see and manage everything. Invisible resources answer 404; visible
// ones the caller may not manage answer 403 (document 1, rule 6).
package access

import (
	"context"
	"maps"
	"slices"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Scope is one user's view of the principals.
type Scope struct {
	UserID  int64
	Admin   bool
	Self    int64
	byRoles map[int64]string // principal id → store.RoleSelf or group role
}

// Memberships is the store method a scope is read with; *store.Store satisfies it, and every
// service's own store interface embeds it.
type Memberships interface {
	// Memberships returns the user's role by principal id (store.Store.Memberships).
	Memberships(ctx context.Context, userID int64) (map[int64]string, error)
}

// For loads the scope of u. Errors: those of store.Memberships.
func For(ctx context.Context, st Memberships, u *store.User) (*Scope, error) {
	m, err := st.Memberships(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	return &Scope{UserID: u.ID, Admin: u.IsAdmin(), Self: u.PrincipalID, byRoles: m}, nil
}

// Role returns the user's role on principal p ("" when none).
func (s *Scope) Role(p int64) string { return s.byRoles[p] }

// CanSee reports whether resources of principal p are visible.
func (s *Scope) CanSee(p int64) bool {
	_, ok := s.byRoles[p]
	return s.Admin || ok
}

// CanManage reports whether resources of principal p may be changed: the personal principal,
// a group where the user is owner or admin, or anything for an administrator.
func (s *Scope) CanManage(p int64) bool {
	switch s.byRoles[p] {
	case store.RoleSelf, store.GroupRoleOwner, store.GroupRoleAdmin:
		return true
	}
	return s.Admin
}

// Principals lists the principals the user is or belongs to, ascending (administrators see
// everything, but this list stays their own memberships; check Admin for "all").
func (s *Scope) Principals() []int64 {
	return slices.Sorted(maps.Keys(s.byRoles))
}

// See returns ErrNotFound unless p is visible; what names the resource in the message.
func (s *Scope) See(p int64, what string) error {
	if !s.CanSee(p) {
		return svcerr.New(svcerr.ErrNotFound, "%s not found", what)
	}
	return nil
}

// Manage returns ErrNotFound when p is invisible and ErrForbidden when it is visible but not
// manageable.
func (s *Scope) Manage(p int64, what string) error {
	if err := s.See(p, what); err != nil {
		return err
	}
	if !s.CanManage(p) {
		return svcerr.New(svcerr.ErrForbidden, "you may not manage %s", what)
	}
	return nil
}

// Administrator returns nil when u is an administrator and ErrForbidden "administrator rights
// required" otherwise (a nil u included): the one check of the operations reserved to
// administrators (users and their roles, plugins, the mail configuration, runtime settings),
// which their services make before anything else.
func Administrator(u *store.User) error {
	if u == nil || !u.IsAdmin() {
		return svcerr.New(svcerr.ErrForbidden, "administrator rights required")
	}
	return nil
}
