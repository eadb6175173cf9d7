package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/account"
)

// ListUsers pages through accounts (administrators).
func (a *API) ListUsers(ctx context.Context, req gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	users, err := a.store.ListUsers(ctx, page, per)
	if err != nil {
		return nil, err
	}
	var r gen.ListUsers200JSONResponse
	r.Data.Users = make([]gen.User, 0, len(users))
	for i := range users {
		r.Data.Users = append(r.Data.Users, toUser(a.publicBase(ctx), &users[i]))
	}
	return r, nil
}

// CreateUser adds an account (administrators).
func (a *API) CreateUser(ctx context.Context, req gen.CreateUserRequestObject) (gen.CreateUserResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	b := req.Body
	u, err := a.accounts.CreateUser(ctx, string(b.Email), b.Password, deref(b.DisplayName), deref(b.IsAdmin), deref(b.EmailVerified))
	if err != nil {
		return nil, err
	}
	return gen.CreateUser201JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// GetUser shows one account (administrators).
func (a *API) GetUser(ctx context.Context, req gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	u, err := a.store.UserByID(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetUser200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ReplaceUser sets every administrable field (administrators).
func (a *API) ReplaceUser(ctx context.Context, req gen.ReplaceUserRequestObject) (gen.ReplaceUserResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	b := req.Body
	email := string(b.Email)
	u, err := a.accounts.UpdateUser(ctx, req.Id, account.UserChanges{
		Email: &email, DisplayName: &b.DisplayName, Password: b.Password,
		IsAdmin: &b.IsAdmin, EmailVerified: &b.EmailVerified,
	})
	if err != nil {
		return nil, err
	}
	return gen.ReplaceUser200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// UpdateUser changes the fields sent (administrators).
func (a *API) UpdateUser(ctx context.Context, req gen.UpdateUserRequestObject) (gen.UpdateUserResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	b := req.Body
	ch := account.UserChanges{DisplayName: b.DisplayName, Password: b.Password, IsAdmin: b.IsAdmin, EmailVerified: b.EmailVerified}
	if b.Email != nil {
		e := string(*b.Email)
		ch.Email = &e
	}
	u, err := a.accounts.UpdateUser(ctx, req.Id, ch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateUser200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// DeleteUser removes an account (administrators; never the last administrator) with its media
// assets; their files are removed once the deletion is committed.
func (a *API) DeleteUser(ctx context.Context, req gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	if _, err := admin(ctx); err != nil {
		return nil, err
	}
	keys, err := a.store.DeleteUser(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	a.media.RemoveFiles(keys...)
	return gen.DeleteUser200JSONResponse(deleted()), nil
}

// ListUserRoles lists a user's roles (administrators).
func (a *API) ListUserRoles(ctx context.Context, req gen.ListUserRolesRequestObject) (gen.ListUserRolesResponseObject, error) {
	roles, err := a.rolesOf(ctx, req.Id, nil)
	if err != nil {
		return nil, err
	}
	return gen.ListUserRoles200JSONResponse(roles), nil
}

// GrantUserRole grants a role (administrators; idempotent).
func (a *API) GrantUserRole(ctx context.Context, req gen.GrantUserRoleRequestObject) (gen.GrantUserRoleResponseObject, error) {
	roles, err := a.rolesOf(ctx, req.Id, func() error { return a.store.GrantRole(ctx, req.Id, req.Body.Role) })
	if err != nil {
		return nil, err
	}
	return gen.GrantUserRole200JSONResponse(roles), nil
}

// RevokeUserRole revokes a role (administrators; never admin from the last administrator).
func (a *API) RevokeUserRole(ctx context.Context, req gen.RevokeUserRoleRequestObject) (gen.RevokeUserRoleResponseObject, error) {
	roles, err := a.rolesOf(ctx, req.Id, func() error { return a.store.RevokeRole(ctx, req.Id, req.Role) })
	if err != nil {
		return nil, err
	}
	return gen.RevokeUserRole200JSONResponse(roles), nil
}

// rolesOf checks the caller is an administrator and the user exists, runs change (if any) and
// returns the user's roles afterwards.
func (a *API) rolesOf(ctx context.Context, userID int64, change func() error) (gen.RoleListResponse, error) {
	var r gen.RoleListResponse
	if _, err := admin(ctx); err != nil {
		return r, err
	}
	if _, err := a.store.UserByID(ctx, userID); err != nil {
		return r, err
	}
	if change != nil {
		if err := change(); err != nil {
			return r, err
		}
	}
	roles, err := a.store.ListRoles(ctx, userID)
	if err != nil {
		return r, err
	}
	r.Data.Roles = append([]string{}, roles...)
	return r, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
