// Package user holds the rules of user accounts as resources: the administrator's management
// of accounts and their roles (/users), and a user's own profile and locations (/me). Who may
// do what is decided here (internal/domain/access), so the handlers only convert; the account flows
// themselves (registration, sign-in, passwords, the checks of a new or changed account) stay in
// internal/domain/account, which this service calls.
package user

import (
	"context"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/store"
)

// Store is what the user service reads and writes: accounts, their roles, profiles and
// locations. The one store (*store.Store) satisfies it; a test may hand in anything smaller.
type Store interface {
	ListUsers(ctx context.Context, page, perPage int) ([]store.User, error)
	UserByID(ctx context.Context, id int64) (*store.User, error)
	DeleteUser(ctx context.Context, id int64) (mediaKeys []string, err error)
	ListRoles(ctx context.Context, userID int64) ([]string, error)
	GrantRole(ctx context.Context, userID int64, role string) error
	RevokeRole(ctx context.Context, userID int64, role string) error

	Profile(ctx context.Context, userID int64) (*store.Profile, error)
	ListLocations(ctx context.Context, userID int64) ([]store.Location, error)
	CreateLocation(ctx context.Context, userID int64, l store.Location) (*store.Location, error)
	UpdateLocation(ctx context.Context, userID, id int64, l store.Location) (*store.Location, error)
	DeleteLocation(ctx context.Context, userID, id int64) error
}

// Service applies the user rules on top of the store and the account service.
type Service struct {
	store    Store
	accounts *account.Service
	media    *media.Service // removes the files of a deleted user's media assets; may be nil
}

// New returns the service.
func New(st Store, accounts *account.Service, m *media.Service) *Service {
	return &Service{store: st, accounts: accounts, media: m}
}

// List returns one page of accounts, by id, to an administrator (by); page and perPage as the
// API gives them. Errors: ErrForbidden (by is no administrator), those of the store.
func (s *Service) List(ctx context.Context, by *store.User, page, perPage int) ([]store.User, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return s.store.ListUsers(ctx, page, perPage)
}

// NewUser is an account an administrator adds.
type NewUser struct {
	Email, Password, DisplayName string
	Admin, EmailVerified         bool
}

// Create adds an account for an administrator (by). Errors: ErrForbidden (by is no
// administrator), ErrInvalid, ErrConflict (those of account.Service.CreateUser).
func (s *Service) Create(ctx context.Context, by *store.User, in NewUser) (*store.User, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return s.accounts.CreateUser(ctx, in.Email, in.Password, in.DisplayName, in.Admin, in.EmailVerified)
}

// Get returns account id to an administrator (by). Errors: ErrForbidden (by is no
// administrator), ErrNotFound.
func (s *Service) Get(ctx context.Context, by *store.User, id int64) (*store.User, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return s.store.UserByID(ctx, id)
}

// Update applies an administrator's (by) changes to account id. Errors: ErrForbidden (by is no
// administrator), ErrNotFound, ErrInvalid, ErrConflict (address taken, last administrator):
// those of account.Service.UpdateUser.
func (s *Service) Update(ctx context.Context, by *store.User, id int64, ch account.UserChanges) (*store.User, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	return s.accounts.UpdateUser(ctx, id, ch)
}

// Delete removes account id for an administrator (by), never the last administrator, with its
// media assets, whose files are removed once the deletion is committed. Errors: ErrForbidden
// (by is no administrator), ErrNotFound, ErrConflict (last administrator, last owner of a
// group), ErrInvalidState (a task of the user's is running): those of store.DeleteUser.
func (s *Service) Delete(ctx context.Context, by *store.User, id int64) error {
	if err := access.Administrator(by); err != nil {
		return err
	}
	keys, err := s.store.DeleteUser(ctx, id)
	if err != nil {
		return err
	}
	if s.media != nil {
		s.media.RemoveFiles(keys...)
	}
	return nil
}

// Roles returns the roles of account id, sorted, to an administrator (by). Errors:
// ErrForbidden (by is no administrator), ErrNotFound.
func (s *Service) Roles(ctx context.Context, by *store.User, id int64) ([]string, error) {
	return s.roles(ctx, by, id, nil)
}

// GrantRole gives account id the role (granting a role held already changes nothing) for an
// administrator (by) and returns its roles. Errors: ErrForbidden (by is no administrator),
// ErrNotFound, ErrInvalid (malformed role: CheckRole, after the account is found).
func (s *Service) GrantRole(ctx context.Context, by *store.User, id int64, role string) ([]string, error) {
	return s.roles(ctx, by, id, func() error {
		if err := CheckRole(role); err != nil {
			return err
		}
		return s.store.GrantRole(ctx, id, role)
	})
}

// RevokeRole takes the role from account id for an administrator (by) and returns its roles.
// Errors: ErrForbidden (by is no administrator), ErrNotFound (no such account, or the role is
// not held), ErrConflict (admin of the last administrator).
func (s *Service) RevokeRole(ctx context.Context, by *store.User, id int64, role string) ([]string, error) {
	return s.roles(ctx, by, id, func() error { return s.store.RevokeRole(ctx, id, role) })
}

// roles checks by is an administrator and account id exists, runs change (if any) and returns
// the account's roles afterwards (never nil).
func (s *Service) roles(ctx context.Context, by *store.User, id int64, change func() error) ([]string, error) {
	if err := access.Administrator(by); err != nil {
		return nil, err
	}
	if _, err := s.store.UserByID(ctx, id); err != nil {
		return nil, err
	}
	if change != nil {
		if err := change(); err != nil {
			return nil, err
		}
	}
	roles, err := s.store.ListRoles(ctx, id)
	if err != nil {
		return nil, err
	}
	return append([]string{}, roles...), nil
}

// Profile returns u's own profile (an empty one when none was stored). Errors: ErrNotFound (u
// was deleted meanwhile).
func (s *Service) Profile(ctx context.Context, u *store.User) (*store.Profile, error) {
	return s.store.Profile(ctx, u.ID)
}

// PutProfile replaces u's own profile. Errors: ErrInvalid (a field, an unknown time zone),
// ErrNotFound: those of account.Service.PutProfile.
func (s *Service) PutProfile(ctx context.Context, u *store.User, p store.Profile) (*store.Profile, error) {
	return s.accounts.PutProfile(ctx, u.ID, p)
}

// Locations lists u's own locations by id. Errors: ErrNotFound (u was deleted meanwhile).
func (s *Service) Locations(ctx context.Context, u *store.User) ([]store.Location, error) {
	return s.store.ListLocations(ctx, u.ID)
}

// CreateLocation adds a location of u's (the default one loses the flag when l is the
// default). Errors: ErrInvalid (missing name, oversize text, coordinates out of range or only
// one given: CheckLocation, before the store), ErrNotFound (u was deleted meanwhile).
func (s *Service) CreateLocation(ctx context.Context, u *store.User, l store.Location) (*store.Location, error) {
	if err := CheckLocation(l); err != nil {
		return nil, err
	}
	return s.store.CreateLocation(ctx, u.ID, l)
}

// UpdateLocation replaces location id of u's. Another user's location answers ErrNotFound, as
// an unknown one does (whose it is stays unsaid). Errors: ErrNotFound, ErrInvalid (as
// CreateLocation).
func (s *Service) UpdateLocation(ctx context.Context, u *store.User, id int64, l store.Location) (*store.Location, error) {
	if err := CheckLocation(l); err != nil {
		return nil, err
	}
	return s.store.UpdateLocation(ctx, u.ID, id, l)
}

// DeleteLocation removes location id of u's. Errors: ErrNotFound (unknown, or another user's).
func (s *Service) DeleteLocation(ctx context.Context, u *store.User, id int64) error {
	return s.store.DeleteLocation(ctx, u.ID, id)
}
