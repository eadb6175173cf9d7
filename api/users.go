package api

import (
	"context"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/user"
)

// ListUsers pages through accounts (administrators: user.Service decides).
func (a *API) ListUsers(ctx context.Context, req gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	users, err := a.users.List(ctx, id.User, page, per)
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
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	u, err := a.users.Create(ctx, id.User, user.NewUser{Email: string(b.Email), Password: b.Password,
		DisplayName: deref(b.DisplayName), Admin: deref(b.IsAdmin), EmailVerified: deref(b.EmailVerified)})
	if err != nil {
		return nil, err
	}
	return gen.CreateUser201JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// GetUser shows one account (administrators).
func (a *API) GetUser(ctx context.Context, req gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := a.users.Get(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetUser200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// ReplaceUser sets every administrable field (administrators).
func (a *API) ReplaceUser(ctx context.Context, req gen.ReplaceUserRequestObject) (gen.ReplaceUserResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	email := string(b.Email)
	u, err := a.users.Update(ctx, id.User, req.Id, account.UserChanges{
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
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	ch := account.UserChanges{DisplayName: b.DisplayName, Password: b.Password, IsAdmin: b.IsAdmin, EmailVerified: b.EmailVerified}
	if b.Email != nil {
		e := string(*b.Email)
		ch.Email = &e
	}
	u, err := a.users.Update(ctx, id.User, req.Id, ch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateUser200JSONResponse(userResponse(a.publicBase(ctx), u)), nil
}

// DeleteUser removes an account with its media assets (administrators; never the last
// administrator).
func (a *API) DeleteUser(ctx context.Context, req gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.users.Delete(ctx, id.User, req.Id); err != nil {
		return nil, err
	}
	return gen.DeleteUser200JSONResponse(deleted()), nil
}

// ListUserRoles lists a user's roles (administrators).
func (a *API) ListUserRoles(ctx context.Context, req gen.ListUserRolesRequestObject) (gen.ListUserRolesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	roles, err := a.users.Roles(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.ListUserRoles200JSONResponse(roleList(roles)), nil
}

// GrantUserRole grants a role (administrators; idempotent).
func (a *API) GrantUserRole(ctx context.Context, req gen.GrantUserRoleRequestObject) (gen.GrantUserRoleResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	roles, err := a.users.GrantRole(ctx, id.User, req.Id, req.Body.Role)
	if err != nil {
		return nil, err
	}
	return gen.GrantUserRole200JSONResponse(roleList(roles)), nil
}

// RevokeUserRole revokes a role (administrators; never admin from the last administrator).
func (a *API) RevokeUserRole(ctx context.Context, req gen.RevokeUserRoleRequestObject) (gen.RevokeUserRoleResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	roles, err := a.users.RevokeRole(ctx, id.User, req.Id, req.Role)
	if err != nil {
		return nil, err
	}
	return gen.RevokeUserRole200JSONResponse(roleList(roles)), nil
}

func roleList(roles []string) gen.RoleListResponse {
	var r gen.RoleListResponse
	r.Data.Roles = roles
	return r
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
