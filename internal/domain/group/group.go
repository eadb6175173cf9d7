// Package group holds the rules of groups: who may see and change a group, its members, its
// preferences and its language-model configurations. A group is a principal; access.Scope
// decides visibility (members and administrators see a group, anyone else gets 404) and the
// manage right (owners and admins of the group, and administrators; others who see it get 403).
// Membership and configuration writes re-check the rules inside the store's transaction, so a
// concurrent change cannot slip between the decision and the write.
package group

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// MaxAPIKeyLen bounds a model configuration's API key, in characters.
const MaxAPIKeyLen = 4096

// Store is what the service needs of the store; *store.Store satisfies it.
type Store interface {
	access.Memberships
	UserByID(ctx context.Context, id int64) (*store.User, error)
	UserByEmail(ctx context.Context, email string) (*store.User, error)
	GroupByID(ctx context.Context, id int64) (*store.Group, error)
	ListGroups(ctx context.Context, memberOf int64, page, perPage int) ([]store.Group, error)
	CreateGroup(ctx context.Context, ownerUserID int64, name, description string) (*store.Group, error)
	UpdateGroup(ctx context.Context, id int64, upd store.GroupUpdate) (*store.Group, error)
	DeleteGroup(ctx context.Context, id int64) (mediaKeys []string, err error)
	GroupMembers(ctx context.Context, groupID int64, page, perPage int) ([]store.GroupMember, error)
	AddGroupMember(ctx context.Context, groupID, userID int64, role string, check store.RoleCheck) (*store.GroupMember, error)
	UpdateGroupMember(ctx context.Context, groupID, userID int64, role string, check store.RoleCheck) (*store.GroupMember, error)
	RemoveGroupMember(ctx context.Context, groupID, userID int64, check store.RoleCheck) error
	GroupPreferences(ctx context.Context, groupID int64) (map[string]any, error)
	PutGroupPreferences(ctx context.Context, groupID int64, prefs map[string]any) (map[string]any, error)
	ListLLMConfigs(ctx context.Context, groupID int64, includeGlobal bool) ([]store.LLMConfig, error)
	CreateLLMConfig(ctx context.Context, groupID int64, c store.LLMConfig) (*store.LLMConfig, error)
	UpdateLLMConfig(ctx context.Context, groupID, id int64, upd store.LLMConfigUpdate, check store.LLMConfigCheck) (*store.LLMConfig, error)
	DeleteLLMConfig(ctx context.Context, groupID, id int64, check store.LLMConfigCheck) error
	SetDefaultLLMConfig(ctx context.Context, groupID, id int64, check store.LLMConfigCheck) (*store.LLMConfig, error)
	LLMConfig(ctx context.Context, groupID, id int64) (*store.LLMConfig, error)
	ResolveLLMConfig(ctx context.Context, groupPrincipalID *int64) (*store.LLMConfig, error)
}

// Service implements the group operations for a signed-in user.
type Service struct {
	store Store
	box   *secret.Box
	media *media.Service // removes the files of a deleted group's assets (nil: left to the sweep)
	// llmNet is the screen of model base URLs (nil: not screened); see WithLLMNet.
	llmNet func() netguard.Options
}

// New returns a Service. box seals model API keys at rest.
func New(st Store, box *secret.Box) *Service {
	return &Service{store: st, box: box}
}

// WithLLMNet sets the screen applied to the base_url of group (non-global) model
// configurations when it is written: opts returns the current options, llm_allowed_hosts
// included as Exempt. Returns s.
func (s *Service) WithLLMNet(opts func() netguard.Options) *Service {
	s.llmNet = opts
	return s
}

// WithMedia sets the media service that removes the files of a deleted group's assets and
// returns s. Without one the files are left to media.Service.Sweep (orphan files).
func (s *Service) WithMedia(m *media.Service) *Service {
	s.media = m
	return s
}

// View is a group as one user sees it.
type View struct {
	store.Group
	// YourRole is the viewer's role in the group ("" for an administrator who is not a member).
	YourRole string
}

// Member names the user to add: exactly one of UserID and Email.
type Member struct {
	UserID *int64
	Email  *string
}

// scope loads the caller's view of the principals.
func (s *Service) scope(ctx context.Context, u *store.User) (*access.Scope, error) {
	return access.For(ctx, s.store, u)
}

// visible loads a group the caller may see. Errors: ErrNotFound (absent or invisible).
func (s *Service) visible(ctx context.Context, u *store.User, id int64) (*access.Scope, *store.Group, error) {
	sc, err := s.scope(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	g, err := s.store.GroupByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.See(g.PrincipalID, "group"); err != nil {
		return nil, nil, err
	}
	return sc, g, nil
}

// managed loads a group the caller may change. Errors: ErrNotFound (absent or invisible),
// ErrForbidden (visible, but the caller is a plain member).
func (s *Service) managed(ctx context.Context, u *store.User, id int64) (*access.Scope, *store.Group, error) {
	sc, g, err := s.visible(ctx, u, id)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.Manage(g.PrincipalID, "this group"); err != nil {
		return nil, nil, err
	}
	return sc, g, nil
}

func view(sc *access.Scope, g *store.Group) *View {
	return &View{Group: *g, YourRole: sc.Role(g.PrincipalID)}
}

// List returns one page of the groups the caller belongs to, ordered by name; administrators
// get every group.
func (s *Service) List(ctx context.Context, u *store.User, page, perPage int) ([]View, error) {
	sc, err := s.scope(ctx, u)
	if err != nil {
		return nil, err
	}
	memberOf := u.ID
	if sc.Admin {
		memberOf = 0
	}
	gs, err := s.store.ListGroups(ctx, memberOf, page, perPage)
	if err != nil {
		return nil, err
	}
	out := make([]View, len(gs))
	for i := range gs {
		out[i] = *view(sc, &gs[i])
	}
	return out, nil
}

// Create makes a group with the caller as its owner; the name is trimmed. Any signed-in user
// may. Errors: ErrInvalid (empty or oversize name, oversize description, checked before the
// store; the caller's account deleted meanwhile).
func (s *Service) Create(ctx context.Context, u *store.User, name, description string) (*View, error) {
	name, err := NormName(name)
	if err != nil {
		return nil, err
	}
	if err := CheckDescription(description); err != nil {
		return nil, err
	}
	g, err := s.store.CreateGroup(ctx, u.ID, name, description)
	if err != nil {
		return nil, err
	}
	return &View{Group: *g, YourRole: store.GroupRoleOwner}, nil
}

// Get shows a group to its members and administrators. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, u *store.User, id int64) (*View, error) {
	sc, g, err := s.visible(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return view(sc, g), nil
}

// Update changes the name (trimmed) and/or description (owners, admins, administrators).
// Errors: ErrNotFound, ErrForbidden, ErrInvalid (NormName, CheckDescription).
func (s *Service) Update(ctx context.Context, u *store.User, id int64, upd store.GroupUpdate) (*View, error) {
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if upd.Name != nil {
		n, err := NormName(*upd.Name)
		if err != nil {
			return nil, err
		}
		upd.Name = &n
	}
	if upd.Description != nil {
		if err := CheckDescription(*upd.Description); err != nil {
			return nil, err
		}
	}
	g, err := s.store.UpdateGroup(ctx, id, upd)
	if err != nil {
		return nil, err
	}
	return view(sc, g), nil
}

// Delete removes a group (its owners and administrators; group admins get 403) with its media
// assets and their files (removed after the deletion is committed). Errors:
// ErrNotFound, ErrForbidden, ErrInvalidState (the group still owns agents).
func (s *Service) Delete(ctx context.Context, u *store.User, id int64) error {
	sc, g, err := s.visible(ctx, u, id)
	if err != nil {
		return err
	}
	if !sc.Admin && sc.Role(g.PrincipalID) != store.GroupRoleOwner {
		return svcerr.New(svcerr.ErrForbidden, "only the group's owners may delete it")
	}
	keys, err := s.store.DeleteGroup(ctx, id)
	if err != nil {
		return err
	}
	if s.media != nil {
		s.media.RemoveFiles(keys...)
	}
	return nil
}

// Members lists one page of the group's members (members and administrators). Errors:
// ErrNotFound.
func (s *Service) Members(ctx context.Context, u *store.User, id int64, page, perPage int) ([]store.GroupMember, error) {
	if _, _, err := s.visible(ctx, u, id); err != nil {
		return nil, err
	}
	return s.store.GroupMembers(ctx, id, page, perPage)
}

// actor returns the caller's role among roles and whether the caller may act as an owner
// (owner role or administrator) and as a manager (owner or admin role, or administrator).
func actor(sc *access.Scope, roles map[int64]string) (asOwner, asManager bool) {
	r := roles[sc.UserID]
	asOwner = sc.Admin || r == store.GroupRoleOwner
	asManager = asOwner || r == store.GroupRoleAdmin
	return asOwner, asManager
}

func forbidden(msg string) error { return svcerr.New(svcerr.ErrForbidden, "%s", msg) }

// AddMember adds a user, named by exactly one of m.UserID and m.Email, with role (default
// member). Owners, admins and administrators may add members and admins; only owners and
// administrators may add an owner. Errors: ErrNotFound (group), ErrForbidden, ErrInvalid
// (neither or both named, no such user, bad role), ErrConflict (already a member).
func (s *Service) AddMember(ctx context.Context, u *store.User, id int64, m Member, role string) (*store.GroupMember, error) {
	if role == "" {
		role = store.GroupRoleMember
	}
	if err := checkRole(role); err != nil {
		return nil, err
	}
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	target, err := s.resolveUser(ctx, m)
	if err != nil {
		return nil, err
	}
	return s.store.AddGroupMember(ctx, id, target, role, func(roles map[int64]string) error {
		asOwner, asManager := actor(sc, roles)
		switch {
		case !asManager:
			return forbidden("you may not manage this group")
		case role == store.GroupRoleOwner && !asOwner:
			return forbidden("only owners may add an owner")
		}
		return nil
	})
}

// resolveUser finds the user named by exactly one of m.UserID and m.Email. Errors: ErrInvalid.
func (s *Service) resolveUser(ctx context.Context, m Member) (int64, error) {
	switch {
	case m.UserID == nil && m.Email == nil:
		return 0, svcerr.New(svcerr.ErrInvalid, "name the user with user_id or email")
	case m.UserID != nil && m.Email != nil:
		return 0, svcerr.New(svcerr.ErrInvalid, "name the user with user_id or email, not both")
	}
	var (
		target *store.User
		err    error
	)
	if m.UserID != nil {
		target, err = s.store.UserByID(ctx, *m.UserID)
	} else {
		target, err = s.store.UserByEmail(ctx, *m.Email)
	}
	if err != nil {
		if errors.Is(err, svcerr.ErrNotFound) {
			return 0, svcerr.New(svcerr.ErrInvalid, "no such user")
		}
		return 0, err
	}
	return target.ID, nil
}

// UpdateMember changes a member's role. Owners, admins and administrators may switch members
// between member and admin; granting owner, or changing an owner's role, needs the owner role
// or the administrator flag. Errors: ErrNotFound (group or membership), ErrForbidden,
// ErrInvalid (bad role), ErrInvalidState (demoting the last owner).
func (s *Service) UpdateMember(ctx context.Context, u *store.User, id, userID int64, role string) (*store.GroupMember, error) {
	if err := checkRole(role); err != nil {
		return nil, err
	}
	sc, _, err := s.managed(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.store.UpdateGroupMember(ctx, id, userID, role, func(roles map[int64]string) error {
		asOwner, asManager := actor(sc, roles)
		switch {
		case !asManager:
			return forbidden("you may not manage this group")
		case (role == store.GroupRoleOwner || roles[userID] == store.GroupRoleOwner) && !asOwner:
			return forbidden("only owners may grant the owner role or change an owner's role")
		}
		return nil
	})
}

// RemoveMember ends a membership. Every member may remove themself; otherwise owners, admins
// and administrators may remove members and admins, and removing an owner needs the owner role
// or the administrator flag. Errors: ErrNotFound (group or membership), ErrForbidden,
// ErrInvalidState (the last owner).
func (s *Service) RemoveMember(ctx context.Context, u *store.User, id, userID int64) error {
	sc, g, err := s.visible(ctx, u, id)
	if err != nil {
		return err
	}
	self := userID == u.ID
	if !self {
		if err := sc.Manage(g.PrincipalID, "this group"); err != nil {
			return err
		}
	}
	return s.store.RemoveGroupMember(ctx, id, userID, func(roles map[int64]string) error {
		if self {
			return nil
		}
		asOwner, asManager := actor(sc, roles)
		switch {
		case !asManager:
			return forbidden("you may not manage this group")
		case roles[userID] == store.GroupRoleOwner && !asOwner:
			return forbidden("only owners may remove an owner")
		}
		return nil
	})
}

// Preferences returns the group's free-form preferences (members and administrators).
// Errors: ErrNotFound.
func (s *Service) Preferences(ctx context.Context, u *store.User, id int64) (map[string]any, error) {
	if _, _, err := s.visible(ctx, u, id); err != nil {
		return nil, err
	}
	return s.store.GroupPreferences(ctx, id)
}

// ReplacePreferences stores a new preferences object (owners, admins, administrators).
// Errors: ErrNotFound, ErrForbidden, ErrInvalid (CheckPreferences: not encodable, or more
// than store.MaxGroupPreferencesLen bytes).
func (s *Service) ReplacePreferences(ctx context.Context, u *store.User, id int64, prefs map[string]any) (map[string]any, error) {
	if _, _, err := s.managed(ctx, u, id); err != nil {
		return nil, err
	}
	if err := CheckPreferences(prefs); err != nil {
		return nil, err
	}
	return s.store.PutGroupPreferences(ctx, id, prefs)
}

// checkAPIKey refuses keys the store could not hold or a provider could not use. The message
// never repeats the key.
func checkAPIKey(k string) error {
	if k == "" {
		return svcerr.New(svcerr.ErrInvalid, "api_key must not be empty")
	}
	if !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
		return svcerr.New(svcerr.ErrInvalid, "api_key must be valid UTF-8 text")
	}
	if utf8.RuneCountInString(k) > limits.LLMAPIKeyLen {
		return svcerr.New(svcerr.ErrInvalid, "api_key must be at most %d characters", limits.LLMAPIKeyLen)
	}
	return nil
}
