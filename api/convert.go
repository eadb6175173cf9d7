package api

import (
	"strconv"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

func toUser(base string, u *store.User) gen.User {
	out := gen.User{
		Id:            u.ID,
		Email:         openapi_types.Email(u.Email),
		DisplayName:   u.DisplayName,
		IsAdmin:       u.IsAdmin(),
		EmailVerified: u.EmailVerified(),
		Roles:         u.Roles,
		PrincipalId:   u.PrincipalID,
		PictureUrl:    pictureURL(base, "users", u.ID, u.PictureMediaID),
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

// pictureURL is the absolute address of the picture of row id of a collection ("users",
// "agents", "groups": GET /<collection>/{id}/picture), or nil when mediaID is nil (no picture).
func pictureURL(base, collection string, id int64, mediaID *string) *string {
	if mediaID == nil {
		return nil
	}
	u := base + "/api/v1/" + collection + "/" + strconv.FormatInt(id, 10) + "/picture"
	return &u
}

func userResponse(base string, u *store.User) gen.UserResponse {
	var r gen.UserResponse
	r.Data.User = toUser(base, u)
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
	p, pp := 1, limits.DefaultPerPage
	if page != nil && *page > 0 {
		p = *page
	}
	if perPage != nil && *perPage > 0 {
		pp = min(*perPage, limits.MaxPerPage)
	}
	return p, pp
}
