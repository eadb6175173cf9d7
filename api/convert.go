package api

import (
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
)

func toUser(u *store.User) gen.User {
	out := gen.User{
		Id:            u.ID,
		Email:         openapi_types.Email(u.Email),
		DisplayName:   u.DisplayName,
		IsAdmin:       u.IsAdmin(),
		EmailVerified: u.EmailVerified(),
		Roles:         u.Roles,
		PrincipalId:   u.PrincipalID,
		CreatedAt:     u.CreatedAt,
		UpdatedAt:     u.UpdatedAt,
	}
	if out.Roles == nil {
		out.Roles = []string{}
	}
	if u.PendingEmail != nil {
		pe := openapi_types.Email(*u.PendingEmail)
		out.PendingEmail = &pe
	}
	return out
}

func userResponse(u *store.User) gen.UserResponse {
	var r gen.UserResponse
	r.Data.User = toUser(u)
	return r
}

func deleted() gen.DeletedResponse {
	var r gen.DeletedResponse
	r.Data.Deleted = true
	return r
}

func accepted() gen.AcceptedResponse {
	var r gen.AcceptedResponse
	r.Data.Accepted = true
	return r
}

func pageArgs(page, perPage *int) (int, int) {
	p, pp := 1, 25
	if page != nil && *page > 0 {
		p = *page
	}
	if perPage != nil && *perPage > 0 {
		pp = min(*perPage, 100)
	}
	return p, pp
}
