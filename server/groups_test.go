package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// groupCast is one group seen by everyone who matters: its owner, a group admin, a plain
// member, a signed-in stranger and an administrator who is not a member.
type groupCast struct {
	env                                   *apitest.Env
	root, owner, gadmin, member, stranger *apitest.Client
	rootU, ownerU, gadminU, memberU, strU gen.User
	group                                 gen.Group
	path                                  string // /groups/{id}
}

func newGroupCast(t *testing.T) *groupCast {
	t.Helper()
	return groupCastOn(t, apitest.New(t))
}

// groupCastOn builds the cast on env.
func groupCastOn(t *testing.T, env *apitest.Env) *groupCast {
	t.Helper()
	c := &groupCast{env: env}
	c.root, c.rootU = env.UserClient("root@example.com") // the first account: administrator
	c.owner, c.ownerU = env.UserClient("owner@example.com")
	c.gadmin, c.gadminU = env.UserClient("gadmin@example.com")
	c.member, c.memberU = env.UserClient("member@example.com")
	c.stranger, c.strU = env.UserClient("stranger@example.com")
	var g gen.GroupResponse
	c.owner.Post("/groups", map[string]any{"name": "Research", "description": "Market research"}).Expect(t, 201).Decode(t, &g)
	c.group = g.Data.Group
	c.path = fmt.Sprintf("/groups/%d", c.group.Id)
	c.owner.Post(c.path+"/members", map[string]any{"user_id": fmt.Sprint(c.gadminU.Id), "role": "admin"}).Expect(t, 201)
	c.owner.Post(c.path+"/members", map[string]any{"email": "member@example.com"}).Expect(t, 201)
	return c
}

func (c *groupCast) getGroup(t *testing.T) gen.Group {
	t.Helper()
	var g gen.GroupResponse
	c.owner.Get(c.path).Expect(t, 200).Decode(t, &g)
	return g.Data.Group
}

func (c *groupCast) members(t *testing.T) []gen.GroupMember {
	t.Helper()
	var l gen.GroupMemberListResponse
	c.owner.Get(c.path+"/members").Expect(t, 200).Decode(t, &l)
	return l.Data.Members
}

func roleOf(g gen.Group) string {
	if g.YourRole == nil {
		return "<null>"
	}
	return string(*g.YourRole)
}

func TestCreateAndShowGroup(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	g := c.group
	if g.Name != "Research" || g.Description != "Market research" || roleOf(g) != "owner" || g.PrincipalId == 0 || g.PictureUrl != nil {
		t.Fatalf("created group = %+v", g)
	}
	// Names are trimmed and need not be unique; the description defaults to empty.
	var dup gen.GroupResponse
	c.stranger.Post("/groups", map[string]any{"name": "  Research  "}).Expect(t, 201).Decode(t, &dup)
	if dup.Data.Group.Name != "Research" || dup.Data.Group.Description != "" || dup.Data.Group.Id == g.Id || dup.Data.Group.PrincipalId == g.PrincipalId {
		t.Fatalf("second group = %+v", dup.Data.Group)
	}

	// Bad bodies; none of them creates a group.
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"empty object", map[string]any{}, 422},
		{"empty name", map[string]any{"name": ""}, 422},
		{"blank name", map[string]any{"name": "   "}, 422},
		{"long name", map[string]any{"name": strings.Repeat("n", 101)}, 422},
		{"long description", map[string]any{"name": "x", "description": strings.Repeat("d", 1001)}, 422},
		{"name not a string", map[string]any{"name": 42}, 422},
		{"unknown field", map[string]any{"name": "x", "owner": 1}, 422},
		{"not JSON", "{name:", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.member.Post("/groups", tc.body).Expect(t, tc.status)
		})
	}
	var mine gen.GroupListResponse
	c.member.Get("/groups").Expect(t, 200).Decode(t, &mine)
	if len(mine.Data.Groups) != 1 || mine.Data.Groups[0].Id != g.Id {
		t.Fatalf("refused creations left groups behind: %+v", mine.Data.Groups)
	}
	// Anonymous callers are refused before anything else.
	c.env.Client().Post("/groups", map[string]any{"name": "anon"}).Expect(t, 401, "UNAUTHENTICATED")

	// Who sees the group, and with which role.
	for _, tc := range []struct {
		name string
		cl   *apitest.Client
		role string
	}{
		{"owner", c.owner, "owner"}, {"group admin", c.gadmin, "admin"}, {"member", c.member, "member"}, {"administrator", c.root, "<null>"},
	} {
		var got gen.GroupResponse
		tc.cl.Get(c.path).Expect(t, 200).Decode(t, &got)
		if got.Data.Group.Id != g.Id || roleOf(got.Data.Group) != tc.role {
			t.Errorf("%s sees %+v", tc.name, got.Data.Group)
		}
	}
	c.stranger.Get(c.path).Expect(t, 404, "NOT_FOUND")
	c.owner.Get("/groups/999999").Expect(t, 404, "NOT_FOUND")
	c.owner.Get("/groups/abc").Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Get("/groups/0").Expect(t, 422, "VALIDATION_ERROR")
}

func TestListGroups(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	for _, n := range []string{"delta", "alpha", "charlie"} {
		c.member.Post("/groups", map[string]any{"name": n}).Expect(t, 201)
	}
	c.stranger.Post("/groups", map[string]any{"name": "bravo"}).Expect(t, 201)

	list := func(cl *apitest.Client, query string) string {
		t.Helper()
		var l gen.GroupListResponse
		cl.Get("/groups"+query).Expect(t, 200).Decode(t, &l)
		var out []string
		for _, g := range l.Data.Groups {
			out = append(out, g.Name+":"+roleOf(g))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name  string
		cl    *apitest.Client
		query string
		want  string
	}{
		{"member", c.member, "", "alpha:owner,charlie:owner,delta:owner,Research:member"},
		{"owner", c.owner, "", "Research:owner"},
		{"stranger", c.stranger, "", "bravo:owner"},
		{"administrator sees every group", c.root, "", "alpha:<null>,bravo:<null>,charlie:<null>,delta:<null>,Research:<null>"},
		{"page 2", c.member, "?page=2&per_page=3", "Research:member"},
		{"past the end", c.member, "?page=3&per_page=3", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(tc.cl, tc.query); got != tc.want {
				t.Fatalf("list = %s, want %s", got, tc.want)
			}
		})
	}
	c.member.Get("/groups?per_page=101").Expect(t, 422, "VALIDATION_ERROR")
	c.member.Get("/groups?page=0").Expect(t, 422, "VALIDATION_ERROR")
	c.env.Client().Get("/groups").Expect(t, 401, "UNAUTHENTICATED")
}

func TestUpdateGroup(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	before := c.getGroup(t)

	c.member.Patch(c.path, map[string]any{"name": "Mine"}).Expect(t, 403, "FORBIDDEN")
	c.stranger.Patch(c.path, map[string]any{"name": "Mine"}).Expect(t, 404, "NOT_FOUND")
	c.owner.Patch(c.path, map[string]any{}).Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Patch(c.path, map[string]any{"name": ""}).Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Patch(c.path, map[string]any{"name": "  "}).Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Patch(c.path, map[string]any{"name": "x", "principal_id": 1}).Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Patch(c.path, map[string]any{"description": strings.Repeat("d", 1001)}).Expect(t, 422, "VALIDATION_ERROR")
	c.owner.Patch("/groups/999999", map[string]any{"name": "x"}).Expect(t, 404, "NOT_FOUND")
	if after := c.getGroup(t); !cmp.Equal(before, after) {
		t.Fatalf("refused updates changed the group:\n%s", cmp.Diff(before, after))
	}

	c.env.Clock.Advance(60e9)
	var g gen.GroupResponse
	c.gadmin.Patch(c.path, map[string]any{"description": ""}).Expect(t, 200).Decode(t, &g)
	if g.Data.Group.Description != "" || g.Data.Group.Name != "Research" || roleOf(g.Data.Group) != "admin" || !g.Data.Group.UpdatedAt.After(before.UpdatedAt) {
		t.Fatalf("group admin's update = %+v", g.Data.Group)
	}
	c.root.Patch(c.path, map[string]any{"name": " Pricing "}).Expect(t, 200).Decode(t, &g)
	if g.Data.Group.Name != "Pricing" || roleOf(g.Data.Group) != "<null>" {
		t.Fatalf("administrator's update = %+v", g.Data.Group)
	}
	c.owner.Patch(c.path, map[string]any{"name": "Research", "description": "Back"}).Expect(t, 200).Decode(t, &g)
	if g.Data.Group.Name != "Research" || g.Data.Group.Description != "Back" || !g.Data.Group.CreatedAt.Equal(before.CreatedAt) {
		t.Fatalf("owner's update = %+v", g.Data.Group)
	}
}

func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	c.owner.Put(c.path+"/preferences", map[string]any{"preferences": map[string]any{"a": 1}}).Expect(t, 200)
	c.owner.Post(c.path+"/llm-configs", map[string]any{"name": "m", "driver": "openai", "model": "gpt", "is_default": true}).Expect(t, 201)

	c.member.Delete(c.path).Expect(t, 403, "FORBIDDEN")
	c.gadmin.Delete(c.path).Expect(t, 403, "FORBIDDEN") // admins manage, only owners delete
	c.stranger.Delete(c.path).Expect(t, 404, "NOT_FOUND")
	c.owner.Delete("/groups/999999").Expect(t, 404, "NOT_FOUND")

	// A group that owns an agent cannot go (409 INVALID_STATE) until the agent is gone.
	var agent struct {
		Data struct {
			Agent struct {
				ID int64 `json:"id"`
			} `json:"agent"`
		} `json:"data"`
	}
	c.owner.Post("/agents", map[string]any{"name": "Group bot", "principal_id": c.group.PrincipalId}).Expect(t, 201).Decode(t, &agent)
	c.owner.Delete(c.path).Expect(t, 409, "INVALID_STATE")
	c.root.Delete(c.path).Expect(t, 409, "INVALID_STATE")
	c.getGroup(t)
	if n := len(c.members(t)); n != 3 {
		t.Fatalf("refused deletions changed the members: %d", n)
	}
	c.owner.Delete(fmt.Sprintf("/agents/%d", agent.Data.Agent.ID)).Expect(t, 200)

	c.owner.Delete(c.path).Expect(t, 200)
	c.owner.Get(c.path).Expect(t, 404, "NOT_FOUND")
	c.root.Get(c.path).Expect(t, 404, "NOT_FOUND")
	c.owner.Get(c.path+"/members").Expect(t, 404, "NOT_FOUND")
	c.owner.Get(c.path+"/preferences").Expect(t, 404, "NOT_FOUND")
	c.owner.Get(c.path+"/llm-configs").Expect(t, 404, "NOT_FOUND")
	c.owner.Delete(c.path).Expect(t, 404, "NOT_FOUND")
	var l gen.GroupListResponse
	c.member.Get("/groups").Expect(t, 200).Decode(t, &l)
	if len(l.Data.Groups) != 0 {
		t.Fatalf("the member still lists %+v", l.Data.Groups)
	}

	// Administrators delete groups they do not belong to.
	var g gen.GroupResponse
	c.member.Post("/groups", map[string]any{"name": "other"}).Expect(t, 201).Decode(t, &g)
	c.root.Delete(fmt.Sprintf("/groups/%d", g.Data.Group.Id)).Expect(t, 200)
	c.member.Get(fmt.Sprintf("/groups/%d", g.Data.Group.Id)).Expect(t, 404)
}

func TestGroupMembers(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	mp := func(u gen.User) string { return fmt.Sprintf("%s/members/%d", c.path, u.Id) }
	extra, extraU := c.env.UserClient("extra@example.com")

	summary := func(ms []gen.GroupMember) string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Role)+":"+string(m.Email))
		}
		return strings.Join(out, " ")
	}
	const start = "owner:owner@example.com admin:gadmin@example.com member:member@example.com"
	if got := summary(c.members(t)); got != start {
		t.Fatalf("members = %s", got)
	}
	// Every member lists them; strangers do not see the group.
	for _, cl := range []*apitest.Client{c.member, c.gadmin, c.root} {
		var l gen.GroupMemberListResponse
		cl.Get(c.path+"/members").Expect(t, 200).Decode(t, &l)
		if summary(l.Data.Members) != start {
			t.Fatalf("list = %s", summary(l.Data.Members))
		}
	}
	c.stranger.Get(c.path+"/members").Expect(t, 404, "NOT_FOUND")
	c.owner.Get("/groups/999999/members").Expect(t, 404, "NOT_FOUND")
	var page gen.GroupMemberListResponse
	c.member.Get(c.path+"/members?page=2&per_page=2").Expect(t, 200).Decode(t, &page)
	if summary(page.Data.Members) != "member:member@example.com" {
		t.Fatalf("page 2 = %s", summary(page.Data.Members))
	}
	m0 := c.members(t)[2]
	if m0.UserId != fmt.Sprint(c.memberU.Id) || m0.DisplayName != c.memberU.DisplayName || m0.JoinedAt.IsZero() {
		t.Fatalf("membership = %+v", m0)
	}

	// Refused additions: each writes nothing.
	for _, tc := range []struct {
		name   string
		cl     *apitest.Client
		path   string
		body   any
		status int
		code   string
	}{
		{"plain member adds", c.member, c.path + "/members", map[string]any{"user_id": fmt.Sprint(extraU.Id)}, 403, "FORBIDDEN"},
		{"stranger adds", c.stranger, c.path + "/members", map[string]any{"user_id": fmt.Sprint(extraU.Id)}, 404, "NOT_FOUND"},
		{"group admin adds an owner", c.gadmin, c.path + "/members", map[string]any{"user_id": fmt.Sprint(extraU.Id), "role": "owner"}, 403, "FORBIDDEN"},
		{"nobody named", c.owner, c.path + "/members", map[string]any{"role": "member"}, 422, "VALIDATION_ERROR"},
		{"both named", c.owner, c.path + "/members", map[string]any{"user_id": fmt.Sprint(extraU.Id), "email": "extra@example.com"}, 422, "VALIDATION_ERROR"},
		{"unknown email", c.owner, c.path + "/members", map[string]any{"email": "nobody@example.com"}, 422, "VALIDATION_ERROR"},
		{"unknown user id", c.owner, c.path + "/members", map[string]any{"user_id": "999999"}, 422, "VALIDATION_ERROR"},
		{"bad role", c.owner, c.path + "/members", map[string]any{"user_id": fmt.Sprint(extraU.Id), "role": "boss"}, 422, "VALIDATION_ERROR"},
		{"user id not a number", c.owner, c.path + "/members", map[string]any{"user_id": "seven"}, 422, "VALIDATION_ERROR"},
		{"user id as an integer", c.owner, c.path + "/members", map[string]any{"user_id": extraU.Id}, 422, "VALIDATION_ERROR"},
		{"user id beyond int64", c.owner, c.path + "/members", map[string]any{"user_id": "9999999999999999999"}, 422, "VALIDATION_ERROR"},
		{"already a member", c.owner, c.path + "/members", map[string]any{"email": "MEMBER@example.com"}, 409, "CONFLICT"},
		{"the owner again", c.root, c.path + "/members", map[string]any{"user_id": fmt.Sprint(c.ownerU.Id), "role": "member"}, 409, "CONFLICT"},
		{"unknown group", c.owner, "/groups/999999/members", map[string]any{"user_id": fmt.Sprint(extraU.Id)}, 404, "NOT_FOUND"},
	} {
		t.Run("add: "+tc.name, func(t *testing.T) {
			tc.cl.Post(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if got := summary(c.members(t)); got != start {
		t.Fatalf("refused additions changed the members: %s", got)
	}
	extra.Get(c.path).Expect(t, 404)

	// A group admin adds members and admins.
	var added gen.GroupMemberResponse
	c.gadmin.Post(c.path+"/members", map[string]any{"email": "Extra@Example.com", "role": "admin"}).Expect(t, 201).Decode(t, &added)
	if added.Data.Member.UserId != fmt.Sprint(extraU.Id) || added.Data.Member.Role != "admin" {
		t.Fatalf("added = %+v", added.Data.Member)
	}
	extra.Get(c.path).Expect(t, 200)

	// Role changes.
	for _, tc := range []struct {
		name   string
		cl     *apitest.Client
		path   string
		role   string
		status int
		code   string
	}{
		{"plain member changes a role", c.member, mp(extraU), "member", 403, "FORBIDDEN"},
		{"plain member promotes themself", c.member, mp(c.memberU), "admin", 403, "FORBIDDEN"},
		{"stranger changes a role", c.stranger, mp(extraU), "member", 404, "NOT_FOUND"},
		{"group admin grants owner", c.gadmin, mp(extraU), "owner", 403, "FORBIDDEN"},
		{"group admin demotes the owner", c.gadmin, mp(c.ownerU), "admin", 403, "FORBIDDEN"},
		{"the last owner demotes themself", c.owner, mp(c.ownerU), "admin", 409, "INVALID_STATE"},
		{"administrator demotes the last owner", c.root, mp(c.ownerU), "member", 409, "INVALID_STATE"},
		{"not a member", c.owner, mp(c.strU), "admin", 404, "NOT_FOUND"},
		{"unknown user", c.owner, c.path + "/members/999999", "admin", 404, "NOT_FOUND"},
		{"id beyond int64", c.owner, c.path + "/members/9999999999999999999", "admin", 404, "NOT_FOUND"},
		{"id not decimal", c.owner, c.path + "/members/abc", "admin", 422, "VALIDATION_ERROR"},
		{"id zero", c.owner, c.path + "/members/0", "admin", 422, "VALIDATION_ERROR"},
		{"bad role", c.owner, mp(extraU), "boss", 422, "VALIDATION_ERROR"},
		{"unknown group", c.owner, fmt.Sprintf("/groups/999999/members/%d", extraU.Id), "member", 404, "NOT_FOUND"},
	} {
		t.Run("update: "+tc.name, func(t *testing.T) {
			tc.cl.Patch(tc.path, map[string]any{"role": tc.role}).Expect(t, tc.status, tc.code)
		})
	}
	c.owner.Patch(mp(extraU), map[string]any{}).Expect(t, 422, "VALIDATION_ERROR")
	const withExtra = "owner:owner@example.com admin:extra@example.com admin:gadmin@example.com member:member@example.com"
	if got := summary(c.members(t)); got != withExtra {
		t.Fatalf("refused role changes changed the members: %s", got)
	}

	var upd gen.GroupMemberResponse
	c.gadmin.Patch(mp(extraU), map[string]any{"role": "member"}).Expect(t, 200).Decode(t, &upd)
	if upd.Data.Member.Role != "member" || upd.Data.Member.UserId != fmt.Sprint(extraU.Id) {
		t.Fatalf("group admin demoted an admin: %+v", upd.Data.Member)
	}
	c.gadmin.Patch(mp(c.gadminU), map[string]any{"role": "admin"}).Expect(t, 200) // same role: no-op
	c.owner.Patch(mp(c.memberU), map[string]any{"role": "owner"}).Expect(t, 200)  // a second owner
	c.owner.Patch(mp(c.ownerU), map[string]any{"role": "admin"}).Expect(t, 200)   // now allowed
	c.root.Patch(mp(c.ownerU), map[string]any{"role": "owner"}).Expect(t, 200)    // administrators grant owner
	var g gen.GroupResponse
	c.member.Get(c.path).Expect(t, 200).Decode(t, &g)
	if roleOf(g.Data.Group) != "owner" {
		t.Fatalf("your_role after promotion = %s", roleOf(g.Data.Group))
	}
	// Owners: owner, member. Admin: gadmin. Member: extra.

	// Removals.
	for _, tc := range []struct {
		name   string
		cl     *apitest.Client
		path   string
		status int
		code   string
	}{
		{"plain member removes someone", extra, mp(c.gadminU), 403, "FORBIDDEN"},
		{"group admin removes an owner", c.gadmin, mp(c.ownerU), 403, "FORBIDDEN"},
		{"stranger removes", c.stranger, mp(extraU), 404, "NOT_FOUND"},
		{"stranger removes themself", c.stranger, mp(c.strU), 404, "NOT_FOUND"},
		{"not a member", c.owner, mp(c.strU), 404, "NOT_FOUND"},
		{"id beyond int64", c.owner, c.path + "/members/9999999999999999999", 404, "NOT_FOUND"},
		{"unknown group", c.owner, fmt.Sprintf("/groups/999999/members/%d", extraU.Id), 404, "NOT_FOUND"},
	} {
		t.Run("remove: "+tc.name, func(t *testing.T) {
			tc.cl.Delete(tc.path).Expect(t, tc.status, tc.code)
		})
	}
	const four = "owner:member@example.com owner:owner@example.com admin:gadmin@example.com member:extra@example.com"
	if got := summary(c.members(t)); got != four {
		t.Fatalf("refused removals changed the members: %s", got)
	}

	extra.Delete(mp(extraU)).Expect(t, 200) // a member leaves
	extra.Get(c.path).Expect(t, 404, "NOT_FOUND")
	c.owner.Post(c.path+"/members", map[string]any{"user_id": fmt.Sprint(extraU.Id)}).Expect(t, 201)
	c.gadmin.Delete(mp(extraU)).Expect(t, 200)                     // an admin removes a member
	c.member.Delete(mp(c.ownerU)).Expect(t, 200)                   // an owner removes another owner
	c.member.Delete(mp(c.memberU)).Expect(t, 409, "INVALID_STATE") // the last owner cannot leave
	c.root.Delete(mp(c.memberU)).Expect(t, 409, "INVALID_STATE")
	c.gadmin.Delete(mp(c.gadminU)).Expect(t, 200) // an admin leaves
	var last gen.GroupMemberListResponse
	c.member.Get(c.path+"/members").Expect(t, 200).Decode(t, &last)
	if got := summary(last.Data.Members); got != "owner:member@example.com" {
		t.Fatalf("members at the end = %s", got)
	}
	c.owner.Get(c.path).Expect(t, 404, "NOT_FOUND")
}

func TestGroupPreferences(t *testing.T) {
	t.Parallel()
	c := newGroupCast(t)
	pp := c.path + "/preferences"
	read := func(cl *apitest.Client) map[string]any {
		t.Helper()
		var p gen.GroupPreferencesResponse
		cl.Get(pp).Expect(t, 200).Decode(t, &p)
		return p.Data.Preferences
	}
	for _, cl := range []*apitest.Client{c.owner, c.gadmin, c.member, c.root} {
		if got := read(cl); got == nil || len(got) != 0 {
			t.Fatalf("fresh preferences = %#v", got)
		}
	}
	c.stranger.Get(pp).Expect(t, 404, "NOT_FOUND")
	c.owner.Get("/groups/999999/preferences").Expect(t, 404, "NOT_FOUND")

	first := map[string]any{"default_agent_view": "grid", "nested": map[string]any{"list": []any{1.5, "x", true, nil}}}
	var put gen.GroupPreferencesResponse
	c.gadmin.Put(pp, map[string]any{"preferences": first}).Expect(t, 200).Decode(t, &put)
	if !cmp.Equal(first, put.Data.Preferences) || !cmp.Equal(first, read(c.member)) {
		t.Fatalf("stored preferences = %#v", put.Data.Preferences)
	}

	// The serialised object may be 65536 bytes: {"k":"…"} is 8 bytes plus the value.
	exact := map[string]any{"k": strings.Repeat("x", 65536-8)}
	over := map[string]any{"k": strings.Repeat("x", 65536-7)}
	for _, tc := range []struct {
		name   string
		cl     *apitest.Client
		path   string
		body   any
		status int
		code   string
	}{
		{"plain member", c.member, pp, map[string]any{"preferences": map[string]any{}}, 403, "FORBIDDEN"},
		{"stranger", c.stranger, pp, map[string]any{"preferences": map[string]any{}}, 404, "NOT_FOUND"},
		{"unknown group", c.owner, "/groups/999999/preferences", map[string]any{"preferences": map[string]any{}}, 404, "NOT_FOUND"},
		{"missing preferences", c.owner, pp, map[string]any{}, 422, "VALIDATION_ERROR"},
		{"preferences not an object", c.owner, pp, map[string]any{"preferences": []any{1}}, 422, "VALIDATION_ERROR"},
		{"preferences null", c.owner, pp, map[string]any{"preferences": nil}, 422, "VALIDATION_ERROR"},
		{"unknown top-level field", c.owner, pp, map[string]any{"preferences": map[string]any{}, "x": 1}, 422, "VALIDATION_ERROR"},
		{"too large", c.owner, pp, map[string]any{"preferences": over}, 422, "VALIDATION_ERROR"},
		{"not JSON", c.owner, pp, "{", 400, "BAD_REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cl.Put(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if got := read(c.owner); !cmp.Equal(first, got) {
		t.Fatalf("refused writes changed the preferences: %#v", got)
	}

	c.owner.Put(pp, map[string]any{"preferences": exact}).Expect(t, 200)
	if got := read(c.member); !cmp.Equal(exact, got) {
		t.Fatal("preferences of exactly 65536 bytes did not round-trip")
	}
	// PUT replaces the whole object.
	var replaced gen.GroupPreferencesResponse
	c.root.Put(pp, map[string]any{"preferences": map[string]any{"locale": "en-GB"}}).Expect(t, 200).Decode(t, &replaced)
	if want := map[string]any{"locale": "en-GB"}; !cmp.Equal(want, replaced.Data.Preferences) || !cmp.Equal(want, read(c.owner)) {
		t.Fatalf("replaced preferences = %#v", replaced.Data.Preferences)
	}
	c.owner.Put(pp, map[string]any{"preferences": map[string]any{}}).Expect(t, 200)
	if got := read(c.owner); len(got) != 0 {
		t.Fatalf("emptied preferences = %#v", got)
	}
}
