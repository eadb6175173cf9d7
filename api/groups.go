package api

import (
	"context"
	"strconv"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/group"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// toGroup converts a group as the caller sees it; picture_url is the address of GET
// /groups/{id}/picture when the group has a picture.
func toGroup(base string, v *group.View) gen.Group {
	out := gen.Group{
		Id: v.ID, PrincipalId: v.PrincipalID, Name: v.Name, Description: v.Description,
		PictureUrl: pictureURL(base, "groups", v.ID, v.PictureMediaID), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
	}
	if v.YourRole != "" {
		r := gen.GroupYourRole(v.YourRole)
		out.YourRole = &r
	}
	return out
}

func groupResponse(base string, v *group.View) gen.GroupResponse {
	var r gen.GroupResponse
	r.Data.Group = toGroup(base, v)
	return r
}

func toGroupMember(m *store.GroupMember) gen.GroupMember {
	return gen.GroupMember{UserId: strconv.FormatInt(m.UserID, 10), Email: openapi_types.Email(m.Email), DisplayName: m.DisplayName,
		Role: gen.GroupRole(m.Role), JoinedAt: m.JoinedAt, Source: memberSource(m.Source)}
}

func groupMemberResponse(m *store.GroupMember) gen.GroupMemberResponse {
	var r gen.GroupMemberResponse
	r.Data.Member = toGroupMember(m)
	return r
}

func preferencesResponse(p map[string]any) gen.GroupPreferencesResponse {
	var r gen.GroupPreferencesResponse
	r.Data.Preferences = p
	return r
}

// memberID parses the {uid} path parameter (the gate checks its pattern): anything but a
// canonical positive int64 (a value beyond int64 passes the gate) names no member, ErrNotFound.
func memberID(uid string) (int64, error) {
	id, ok := pathid.Parse(uid)
	if !ok {
		return 0, svcerr.New(svcerr.ErrNotFound, "member %s not found", uid)
	}
	return id, nil
}

// ListGroups lists the caller's groups (administrators: every group).
func (a *API) ListGroups(ctx context.Context, req gen.ListGroupsRequestObject) (gen.ListGroupsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	gs, err := a.groups.List(ctx, id.User, page, per)
	if err != nil {
		return nil, err
	}
	var r gen.ListGroups200JSONResponse
	r.Data.Groups = make([]gen.Group, 0, len(gs))
	for i := range gs {
		r.Data.Groups = append(r.Data.Groups, toGroup(a.publicBase(ctx), &gs[i]))
	}
	return r, nil
}

// CreateGroup creates a group owned by the caller.
func (a *API) CreateGroup(ctx context.Context, req gen.CreateGroupRequestObject) (gen.CreateGroupResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	g, err := a.groups.Create(ctx, id.User, req.Body.Name, deref(req.Body.Description))
	if err != nil {
		return nil, err
	}
	return gen.CreateGroup201JSONResponse(groupResponse(a.publicBase(ctx), g)), nil
}

// GetGroup shows a group to its members and administrators.
func (a *API) GetGroup(ctx context.Context, req gen.GetGroupRequestObject) (gen.GetGroupResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	g, err := a.groups.Get(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetGroup200JSONResponse(groupResponse(a.publicBase(ctx), g)), nil
}

// UpdateGroup changes the fields sent (owners, admins, administrators).
func (a *API) UpdateGroup(ctx context.Context, req gen.UpdateGroupRequestObject) (gen.UpdateGroupResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	g, err := a.groups.Update(ctx, id.User, req.Id, store.GroupUpdate{Name: req.Body.Name, Description: req.Body.Description})
	if err != nil {
		return nil, err
	}
	return gen.UpdateGroup200JSONResponse(groupResponse(a.publicBase(ctx), g)), nil
}

// DeleteGroup removes a group (owners, administrators; refused while it owns agents).
func (a *API) DeleteGroup(ctx context.Context, req gen.DeleteGroupRequestObject) (gen.DeleteGroupResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.groups.Delete(ctx, id.User, req.Id); err != nil {
		return nil, err
	}
	return gen.DeleteGroup200JSONResponse(deleted()), nil
}

// ListGroupMembers lists a group's members (members, administrators).
func (a *API) ListGroupMembers(ctx context.Context, req gen.ListGroupMembersRequestObject) (gen.ListGroupMembersResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	page, per := pageArgs(req.Params.Page, req.Params.PerPage)
	ms, err := a.groups.Members(ctx, id.User, req.Id, page, per)
	if err != nil {
		return nil, err
	}
	var r gen.ListGroupMembers200JSONResponse
	r.Data.Members = make([]gen.GroupMember, 0, len(ms))
	for i := range ms {
		r.Data.Members = append(r.Data.Members, toGroupMember(&ms[i]))
	}
	return r, nil
}

// AddGroupMember adds a user to a group (owners, admins, administrators).
func (a *API) AddGroupMember(ctx context.Context, req gen.AddGroupMemberRequestObject) (gen.AddGroupMemberResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var m group.Member
	if b.UserId != nil {
		uid, ok := pathid.Parse(*b.UserId)
		if !ok {
			return nil, svcerr.New(svcerr.ErrInvalid, "user_id %s is not a user id", *b.UserId)
		}
		m.UserID = &uid
	}
	if b.Email != nil {
		e := string(*b.Email)
		m.Email = &e
	}
	var role string
	if b.Role != nil {
		role = string(*b.Role)
	}
	gm, err := a.groups.AddMember(ctx, id.User, req.Id, m, role)
	if err != nil {
		return nil, err
	}
	return gen.AddGroupMember201JSONResponse(groupMemberResponse(gm)), nil
}

// UpdateGroupMember changes a member's role.
func (a *API) UpdateGroupMember(ctx context.Context, req gen.UpdateGroupMemberRequestObject) (gen.UpdateGroupMemberResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	uid, err := memberID(req.Uid)
	if err != nil {
		return nil, err
	}
	gm, err := a.groups.UpdateMember(ctx, id.User, req.Id, uid, string(req.Body.Role))
	if err != nil {
		return nil, err
	}
	return gen.UpdateGroupMember200JSONResponse(groupMemberResponse(gm)), nil
}

// RemoveGroupMember ends a membership (managers, or the member themself).
func (a *API) RemoveGroupMember(ctx context.Context, req gen.RemoveGroupMemberRequestObject) (gen.RemoveGroupMemberResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	uid, err := memberID(req.Uid)
	if err != nil {
		return nil, err
	}
	if err := a.groups.RemoveMember(ctx, id.User, req.Id, uid); err != nil {
		return nil, err
	}
	return gen.RemoveGroupMember200JSONResponse(deleted()), nil
}

// GetGroupPreferences reads a group's preferences (members, administrators).
func (a *API) GetGroupPreferences(ctx context.Context, req gen.GetGroupPreferencesRequestObject) (gen.GetGroupPreferencesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := a.groups.Preferences(ctx, id.User, req.Id)
	if err != nil {
		return nil, err
	}
	return gen.GetGroupPreferences200JSONResponse(preferencesResponse(p)), nil
}

// ReplaceGroupPreferences replaces a group's preferences (owners, admins, administrators).
func (a *API) ReplaceGroupPreferences(ctx context.Context, req gen.ReplaceGroupPreferencesRequestObject) (gen.ReplaceGroupPreferencesResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := a.groups.ReplacePreferences(ctx, id.User, req.Id, req.Body.Preferences)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceGroupPreferences200JSONResponse(preferencesResponse(p)), nil
}

// memberSource is a membership's source as the contract shows it ("manual" when unset).
func memberSource(s string) string {
	if s == "" {
		return store.MemberSourceManual
	}
	return s
}
