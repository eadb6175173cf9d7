package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// agentWorld is one service with the cast the agent tests share: an administrator (the first
// user), a group "team" owned by owner with gadmin as admin and member as member, a stranger,
// and a group "other" owned by the stranger where owner is a plain member.
type agentWorld struct {
	env                                      *apitest.Env
	admin, owner, member, gadmin, stranger   *apitest.Client
	adminU, ownerU, memberU, gadminU, strngU gen.User
	team, teamP, other, otherP               int64 // group ids and their principals
}

func newAgentWorld(t *testing.T) *agentWorld {
	t.Helper()
	w := &agentWorld{env: apitest.New(t)}
	w.admin, w.adminU = w.env.UserClient("root@example.com")
	w.owner, w.ownerU = w.env.UserClient("owner@example.com")
	w.member, w.memberU = w.env.UserClient("member@example.com")
	w.gadmin, w.gadminU = w.env.UserClient("gadmin@example.com")
	w.stranger, w.strngU = w.env.UserClient("stranger@example.com")
	w.team, w.teamP = mkGroup(t, w.owner, "team", map[int64]string{w.memberU.Id: "member", w.gadminU.Id: "admin"})
	w.other, w.otherP = mkGroup(t, w.stranger, "other", map[int64]string{w.ownerU.Id: "member"})
	return w
}

// mkGroup creates a group owned by owner through the groups API and adds the members (user id
// → role); it returns the group id and the group's principal.
func mkGroup(t *testing.T, owner *apitest.Client, name string, members map[int64]string) (int64, int64) {
	t.Helper()
	var r gen.GroupResponse
	owner.Post("/groups", map[string]any{"name": name}).Expect(t, 201).Decode(t, &r)
	g := r.Data.Group
	for uid, role := range members {
		owner.Post(fmt.Sprintf("/groups/%d/members", g.Id), map[string]any{"user_id": fmt.Sprint(uid), "role": role}).Expect(t, 201)
	}
	return g.Id, g.PrincipalId
}

func mkAgent(t *testing.T, c *apitest.Client, body map[string]any) gen.Agent {
	t.Helper()
	var r gen.AgentResponse
	c.Post("/agents", body).Expect(t, 201).Decode(t, &r)
	return r.Data.Agent
}

func getAgent(t *testing.T, c *apitest.Client, id int64) gen.Agent {
	t.Helper()
	var r gen.AgentResponse
	c.Get(agentPath(id)).Expect(t, 200).Decode(t, &r)
	return r.Data.Agent
}

func listAgents(t *testing.T, c *apitest.Client, query string) []gen.Agent {
	t.Helper()
	var r gen.AgentListResponse
	c.Get("/agents"+query).Expect(t, 200).Decode(t, &r)
	return r.Data.Agents
}

func agentPath(id int64) string { return fmt.Sprintf("/agents/%d", id) }

func agentIDs(as []gen.Agent) []int64 {
	out := []int64{}
	for _, a := range as {
		out = append(out, a.Id)
	}
	return out
}

func sameIDs(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestCreateAgent(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)

	a := mkAgent(t, w.owner, map[string]any{"name": "Plain"})
	if a.PrincipalId != w.ownerU.PrincipalId || a.MaxSteps != 10 || !a.AllowFollowup || a.RetryAfterMinutes != 0 ||
		a.MaxRetries != 0 || a.Description != "" || a.SystemPrompt != "" || a.Notes != "" || len(a.Metadata) != 0 ||
		a.IsFavorite || a.PictureUrl != nil || a.Id == 0 || a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) {
		t.Fatalf("defaults = %+v", a)
	}
	full := mkAgent(t, w.owner, map[string]any{
		"name": "Full", "description": "d", "system_prompt": "You are careful.", "notes": "## n",
		"max_steps": 100, "allow_followup": false, "retry_after_minutes": 5, "max_retries": 2,
		"metadata": map[string]any{"category": "research", "depth": 3},
	})
	if full.MaxSteps != 100 || full.AllowFollowup || full.RetryAfterMinutes != 5 || full.MaxRetries != 2 ||
		full.SystemPrompt != "You are careful." || full.Notes != "## n" || full.Metadata["category"] != "research" || full.Metadata["depth"] != float64(3) {
		t.Fatalf("full = %+v", full)
	}
	if got := getAgent(t, w.owner, full.Id); fmt.Sprint(got) != fmt.Sprint(full) {
		t.Fatalf("GET differs from POST:\n%+v\n%+v", got, full)
	}
	mkAgent(t, w.owner, map[string]any{"name": "Longest notes", "notes": strings.Repeat("é", 200000), "max_steps": 1})

	// Owning principal: own groups (owner, admin), administrators anywhere.
	if g := mkAgent(t, w.owner, map[string]any{"name": "Team 1", "principal_id": w.teamP}); g.PrincipalId != w.teamP {
		t.Fatalf("principal = %d, want the team's %d", g.PrincipalId, w.teamP)
	}
	mkAgent(t, w.gadmin, map[string]any{"name": "Team 2", "principal_id": w.teamP})
	if g := mkAgent(t, w.admin, map[string]any{"name": "For stranger", "principal_id": w.strngU.PrincipalId}); g.PrincipalId != w.strngU.PrincipalId {
		t.Fatalf("admin-created agent principal = %d", g.PrincipalId)
	}

	before := len(listAgents(t, w.admin, "?per_page=100"))
	refused := []struct {
		name   string
		c      *apitest.Client
		body   any
		status int
		code   string
	}{
		{"member of the group (sees, cannot manage)", w.member, map[string]any{"name": "X", "principal_id": w.teamP}, 403, "FORBIDDEN"},
		{"owner is a plain member of other", w.owner, map[string]any{"name": "X", "principal_id": w.otherP}, 403, "FORBIDDEN"},
		{"stranger to the group", w.stranger, map[string]any{"name": "X", "principal_id": w.teamP}, 422, "VALIDATION_ERROR"},
		{"another user's personal principal", w.owner, map[string]any{"name": "X", "principal_id": w.memberU.PrincipalId}, 422, "VALIDATION_ERROR"},
		{"unknown principal", w.owner, map[string]any{"name": "X", "principal_id": 999999}, 422, "VALIDATION_ERROR"},
		{"unknown principal (admin)", w.admin, map[string]any{"name": "X", "principal_id": 999999}, 422, "VALIDATION_ERROR"},
		{"principal_id 0", w.owner, map[string]any{"name": "X", "principal_id": 0}, 422, "VALIDATION_ERROR"},
		{"max_steps 0", w.owner, map[string]any{"name": "X", "max_steps": 0}, 422, "VALIDATION_ERROR"},
		{"max_steps 101", w.owner, map[string]any{"name": "X", "max_steps": 101}, 422, "VALIDATION_ERROR"},
		{"max_steps not a number", w.owner, map[string]any{"name": "X", "max_steps": "ten"}, 422, "VALIDATION_ERROR"},
		{"unknown field", w.owner, map[string]any{"name": "X", "colour": "red"}, 422, "VALIDATION_ERROR"},
		{"missing name", w.owner, map[string]any{"description": "no name"}, 422, "VALIDATION_ERROR"},
		{"empty name", w.owner, map[string]any{"name": ""}, 422, "VALIDATION_ERROR"},
		{"blank name", w.owner, map[string]any{"name": "   "}, 422, "VALIDATION_ERROR"},
		{"name too long", w.owner, map[string]any{"name": strings.Repeat("n", 201)}, 422, "VALIDATION_ERROR"},
		{"name with NUL", w.owner, map[string]any{"name": "a\x00b"}, 422, "VALIDATION_ERROR"},
		{"notes too long", w.owner, map[string]any{"name": "X", "notes": strings.Repeat("n", 200001)}, 422, "VALIDATION_ERROR"},
		{"negative retries", w.owner, map[string]any{"name": "X", "max_retries": -1}, 422, "VALIDATION_ERROR"},
		{"retry minutes beyond the column", w.owner, map[string]any{"name": "X", "retry_after_minutes": int64(1) << 40}, 422, "VALIDATION_ERROR"},
		{"metadata not an object", w.owner, map[string]any{"name": "X", "metadata": []int{1}}, 422, "VALIDATION_ERROR"},
		{"metadata too large", w.owner, map[string]any{"name": "X", "metadata": map[string]any{"k": strings.Repeat("x", 70000)}}, 422, "VALIDATION_ERROR"},
		{"not JSON", w.owner, "{name", 400, "BAD_REQUEST"},
		{"invalid UTF-8 in a string", w.owner, "{\"name\": \"caf\xe9\"}", 400, "BAD_REQUEST"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Post("/agents", tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if after := len(listAgents(t, w.admin, "?per_page=100")); after != before {
		t.Fatalf("refused creates wrote: %d agents, want %d", after, before)
	}
	w.env.Client().Post("/agents", map[string]any{"name": "anon"}).Expect(t, 401, "UNAUTHENTICATED")
	w.owner.Do(apitest.Request{Method: "POST", Path: "/agents", Body: map[string]any{"name": "X"}, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")
}

func TestAgentAccess(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	personal := mkAgent(t, w.owner, map[string]any{"name": "Personal"})
	team := mkAgent(t, w.owner, map[string]any{"name": "Team", "principal_id": w.teamP, "metadata": map[string]any{"a": 1, "b": 2}})

	// Show: visibility (404 otherwise).
	for _, tc := range []struct {
		who    string
		c      *apitest.Client
		id     int64
		status int
	}{
		{"owner/personal", w.owner, personal.Id, 200}, {"member/personal", w.member, personal.Id, 404},
		{"stranger/personal", w.stranger, personal.Id, 404}, {"admin/personal", w.admin, personal.Id, 200},
		{"owner/team", w.owner, team.Id, 200}, {"member/team", w.member, team.Id, 200}, {"gadmin/team", w.gadmin, team.Id, 200},
		{"stranger/team", w.stranger, team.Id, 404}, {"admin/team", w.admin, team.Id, 200},
	} {
		res := tc.c.Get(agentPath(tc.id)).Expect(t, tc.status)
		if tc.status == 404 && res.Code() != "NOT_FOUND" {
			t.Errorf("%s: code %s", tc.who, res.Code())
		}
	}

	// Malformed and unknown ids are 404 on every operation (agent ids are strings in paths).
	for _, id := range []string{"abc", "0", "-1", "01", "+1", "1.5", "99999", "9223372036854775808"} {
		p := "/agents/" + id
		w.admin.Get(p).Expect(t, 404, "NOT_FOUND")
		w.admin.Patch(p, map[string]any{"name": "x"}).Expect(t, 404, "NOT_FOUND")
		w.admin.Delete(p).Expect(t, 404, "NOT_FOUND")
		w.admin.Post(p+"/favorite", nil).Expect(t, 404, "NOT_FOUND")
		w.admin.Delete(p+"/favorite").Expect(t, 404, "NOT_FOUND")
		w.admin.Post(p+"/transfer", map[string]any{"principal_id": w.adminU.PrincipalId}).Expect(t, 404, "NOT_FOUND")
	}

	// Update: manage rights (403 when visible, 404 when not); a refused request writes nothing.
	w.member.Patch(agentPath(team.Id), map[string]any{"name": "member was here"}).Expect(t, 403, "FORBIDDEN")
	w.stranger.Patch(agentPath(team.Id), map[string]any{"name": "stranger was here"}).Expect(t, 404, "NOT_FOUND")
	w.member.Patch(agentPath(personal.Id), map[string]any{"name": "member was here"}).Expect(t, 404, "NOT_FOUND")
	for _, body := range []any{
		map[string]any{"max_steps": 0}, map[string]any{"max_steps": 101}, map[string]any{"name": ""},
		map[string]any{"name": "  "}, map[string]any{"principal_id": w.teamP}, map[string]any{"unknown": 1},
		map[string]any{"metadata": "x"}, map[string]any{"allow_followup": "yes"},
	} {
		w.owner.Patch(agentPath(team.Id), body).Expect(t, 422, "VALIDATION_ERROR")
	}
	if got := getAgent(t, w.owner, team.Id); fmt.Sprint(got) != fmt.Sprint(team) {
		t.Fatalf("refused updates wrote:\n%+v\nwas\n%+v", got, team)
	}

	var r gen.AgentResponse
	w.owner.Patch(agentPath(team.Id), map[string]any{}).Expect(t, 200).Decode(t, &r)
	if fmt.Sprint(r.Data.Agent) != fmt.Sprint(team) {
		t.Fatalf("an empty PATCH changed the agent: %+v", r.Data.Agent)
	}
	w.env.Clock.Advance(time.Second)
	r = gen.AgentResponse{} // decoding into a used map would merge
	w.gadmin.Patch(agentPath(team.Id), map[string]any{"max_steps": 42, "metadata": map[string]any{"c": 3}, "description": "by gadmin"}).
		Expect(t, 200).Decode(t, &r)
	u := r.Data.Agent
	if u.MaxSteps != 42 || u.Description != "by gadmin" || u.Name != "Team" || len(u.Metadata) != 1 || u.Metadata["c"] != float64(3) ||
		!u.UpdatedAt.After(team.UpdatedAt) || !u.CreatedAt.Equal(team.CreatedAt) || u.PrincipalId != w.teamP {
		t.Fatalf("updated = %+v", u)
	}
	r = gen.AgentResponse{}
	w.admin.Patch(agentPath(personal.Id), map[string]any{"name": "Renamed by admin"}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.Name != "Renamed by admin" || r.Data.Agent.PrincipalId != w.ownerU.PrincipalId {
		t.Fatalf("admin update = %+v", r.Data.Agent)
	}

	// Delete: manage rights; favorites go with the agent.
	w.member.Post(agentPath(team.Id)+"/favorite", nil).Expect(t, 200)
	w.member.Delete(agentPath(team.Id)).Expect(t, 403, "FORBIDDEN")
	w.stranger.Delete(agentPath(team.Id)).Expect(t, 404, "NOT_FOUND")
	w.member.Delete(agentPath(personal.Id)).Expect(t, 404, "NOT_FOUND")
	getAgent(t, w.member, team.Id)
	getAgent(t, w.owner, personal.Id)
	var del gen.DeletedResponse
	w.gadmin.Delete(agentPath(team.Id)).Expect(t, 200).Decode(t, &del)
	if !del.Data.Deleted {
		t.Fatal("deleted = false")
	}
	w.member.Get(agentPath(team.Id)).Expect(t, 404, "NOT_FOUND")
	w.owner.Delete(agentPath(team.Id)).Expect(t, 404, "NOT_FOUND")
	if ids := agentIDs(listAgents(t, w.member, "")); len(ids) != 0 {
		t.Fatalf("member still lists %v", ids)
	}
	w.admin.Delete(agentPath(personal.Id)).Expect(t, 200)
	w.owner.Get(agentPath(personal.Id)).Expect(t, 404, "NOT_FOUND")
}

func TestListAgents(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	zeta := mkAgent(t, w.owner, map[string]any{"name": "zeta"})
	alpha := mkAgent(t, w.owner, map[string]any{"name": "alpha"})
	beta1 := mkAgent(t, w.owner, map[string]any{"name": "beta", "principal_id": w.teamP})
	beta2 := mkAgent(t, w.gadmin, map[string]any{"name": "beta", "principal_id": w.teamP})
	gamma := mkAgent(t, w.member, map[string]any{"name": "gamma"})
	strange := mkAgent(t, w.stranger, map[string]any{"name": "strange"})
	otherA := mkAgent(t, w.stranger, map[string]any{"name": "other's", "principal_id": w.otherP})

	w.owner.Post(agentPath(zeta.Id)+"/favorite", nil).Expect(t, 200)
	w.owner.Post(agentPath(beta2.Id)+"/favorite", nil).Expect(t, 200)
	w.member.Post(agentPath(beta1.Id)+"/favorite", nil).Expect(t, 200)

	for _, tc := range []struct {
		name  string
		c     *apitest.Client
		query string
		want  []int64
		favs  []int64
	}{
		// owner: own agents, the team's, and other's (owner is a member there).
		{"owner", w.owner, "", []int64{beta2.Id, zeta.Id, alpha.Id, beta1.Id, otherA.Id}, []int64{beta2.Id, zeta.Id}},
		{"member", w.member, "", []int64{beta1.Id, beta2.Id, gamma.Id}, []int64{beta1.Id}},
		{"stranger", w.stranger, "", []int64{otherA.Id, strange.Id}, nil},
		{"admin sees all", w.admin, "", []int64{alpha.Id, beta1.Id, beta2.Id, gamma.Id, otherA.Id, strange.Id, zeta.Id}, nil},
		{"owner page 2 of 2", w.owner, "?per_page=2&page=2", []int64{alpha.Id, beta1.Id}, nil},
		{"owner page 3 of 2", w.owner, "?per_page=2&page=3", []int64{otherA.Id}, nil},
		{"owner past the end", w.owner, "?per_page=2&page=4", []int64{}, nil},
		{"filter: team", w.member, fmt.Sprintf("?principal_id=%d", w.teamP), []int64{beta1.Id, beta2.Id}, []int64{beta1.Id}},
		{"filter: own", w.owner, fmt.Sprintf("?principal_id=%d", w.ownerU.PrincipalId), []int64{zeta.Id, alpha.Id}, []int64{zeta.Id}},
		{"filter: invisible group", w.member, fmt.Sprintf("?principal_id=%d", w.otherP), []int64{}, nil},
		{"filter: another user", w.member, fmt.Sprintf("?principal_id=%d", w.ownerU.PrincipalId), []int64{}, nil},
		{"filter: unknown", w.member, "?principal_id=999999", []int64{}, nil},
		{"filter: admin", w.admin, fmt.Sprintf("?principal_id=%d", w.strngU.PrincipalId), []int64{strange.Id}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := listAgents(t, tc.c, tc.query)
			if ids := agentIDs(got); !sameIDs(ids, tc.want) {
				t.Fatalf("ids = %v, want %v", ids, tc.want)
			}
			var favs []int64
			for _, a := range got {
				if a.IsFavorite {
					favs = append(favs, a.Id)
				}
			}
			if !sameIDs(favs, tc.favs) {
				t.Errorf("favorites = %v, want %v", favs, tc.favs)
			}
		})
	}
	for _, q := range []string{"?per_page=101", "?per_page=0", "?page=0", "?page=x", "?principal_id=0", "?principal_id=x"} {
		w.owner.Get("/agents"+q).Expect(t, 422, "VALIDATION_ERROR")
	}
	w.env.Client().Get("/agents").Expect(t, 401, "UNAUTHENTICATED")

	// The page size defaults to 25.
	for i := range 26 {
		mkAgent(t, w.stranger, map[string]any{"name": fmt.Sprintf("bulk %02d", i)})
	}
	if n := len(listAgents(t, w.stranger, "")); n != 25 {
		t.Fatalf("default page has %d agents, want 25", n)
	}
	if n := len(listAgents(t, w.stranger, "?page=2")); n != 3 {
		t.Fatalf("second page has %d agents, want 3", n)
	}
}

func TestAgentFavorites(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	personal := mkAgent(t, w.owner, map[string]any{"name": "Personal"})
	team := mkAgent(t, w.owner, map[string]any{"name": "Team", "principal_id": w.teamP})

	for range 2 { // idempotent
		var r gen.AgentResponse
		w.owner.Post(agentPath(personal.Id)+"/favorite", nil).Expect(t, 200).Decode(t, &r)
		if !r.Data.Agent.IsFavorite || r.Data.Agent.Id != personal.Id || !r.Data.Agent.UpdatedAt.Equal(personal.UpdatedAt) {
			t.Fatalf("favorite = %+v", r.Data.Agent)
		}
	}
	// Visibility is enough (a plain member may favorite a group agent); invisible agents are 404.
	w.member.Post(agentPath(team.Id)+"/favorite", nil).Expect(t, 200)
	w.member.Post(agentPath(personal.Id)+"/favorite", nil).Expect(t, 404, "NOT_FOUND")
	w.stranger.Post(agentPath(team.Id)+"/favorite", nil).Expect(t, 404, "NOT_FOUND")
	w.stranger.Delete(agentPath(team.Id)+"/favorite").Expect(t, 404, "NOT_FOUND")

	// The flag is per user.
	if !getAgent(t, w.member, team.Id).IsFavorite || getAgent(t, w.owner, team.Id).IsFavorite {
		t.Fatal("team favorite is not per user")
	}
	if getAgent(t, w.admin, personal.Id).IsFavorite {
		t.Fatal("the owner's favorite shows for the administrator")
	}
	for range 2 {
		var d gen.DeletedResponse
		w.member.Delete(agentPath(team.Id)+"/favorite").Expect(t, 200).Decode(t, &d)
		if !d.Data.Deleted {
			t.Fatal("deleted = false")
		}
	}
	if getAgent(t, w.member, team.Id).IsFavorite {
		t.Fatal("unfavorite did not stick")
	}
	if !getAgent(t, w.owner, personal.Id).IsFavorite {
		t.Fatal("another user's unfavorite touched the owner's marker")
	}
	w.owner.Delete(agentPath(team.Id)+"/favorite").Expect(t, 200) // never a favorite: still 200
}

func TestTransferAgent(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	personal := mkAgent(t, w.owner, map[string]any{"name": "Personal"})
	team := mkAgent(t, w.owner, map[string]any{"name": "Team", "principal_id": w.teamP})
	w.owner.Post(agentPath(personal.Id)+"/favorite", nil).Expect(t, 200)
	tp := func(id int64) string { return agentPath(id) + "/transfer" }

	refused := []struct {
		name   string
		c      *apitest.Client
		id     int64
		body   any
		status int
		code   string
	}{
		{"member cannot manage the agent", w.member, team.Id, map[string]any{"principal_id": w.memberU.PrincipalId}, 403, "FORBIDDEN"},
		{"stranger cannot see the agent", w.stranger, team.Id, map[string]any{"principal_id": w.strngU.PrincipalId}, 404, "NOT_FOUND"},
		{"invisible personal agent", w.member, personal.Id, map[string]any{"principal_id": w.teamP}, 404, "NOT_FOUND"},
		{"target where the caller is only a member", w.owner, personal.Id, map[string]any{"principal_id": w.otherP}, 403, "FORBIDDEN"},
		{"target the caller cannot see", w.gadmin, team.Id, map[string]any{"principal_id": w.otherP}, 422, "VALIDATION_ERROR"},
		{"another user's personal principal", w.owner, personal.Id, map[string]any{"principal_id": w.memberU.PrincipalId}, 422, "VALIDATION_ERROR"},
		{"unknown target", w.owner, personal.Id, map[string]any{"principal_id": 999999}, 422, "VALIDATION_ERROR"},
		{"unknown target (admin)", w.admin, personal.Id, map[string]any{"principal_id": 999999}, 422, "VALIDATION_ERROR"},
		{"missing principal_id", w.owner, personal.Id, map[string]any{}, 422, "VALIDATION_ERROR"},
		{"principal_id 0", w.owner, personal.Id, map[string]any{"principal_id": 0}, 422, "VALIDATION_ERROR"},
		{"principal_id not a number", w.owner, personal.Id, map[string]any{"principal_id": "team"}, 422, "VALIDATION_ERROR"},
		{"unknown field", w.owner, personal.Id, map[string]any{"principal_id": w.teamP, "force": true}, 422, "VALIDATION_ERROR"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Post(tp(tc.id), tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if got := getAgent(t, w.owner, personal.Id); got.PrincipalId != w.ownerU.PrincipalId || !got.UpdatedAt.Equal(personal.UpdatedAt) {
		t.Fatalf("refused transfers wrote: %+v", got)
	}
	if got := getAgent(t, w.owner, team.Id); got.PrincipalId != w.teamP {
		t.Fatalf("refused transfers wrote: %+v", got)
	}

	// To the current owner: nothing changes.
	var r gen.AgentResponse
	w.env.Clock.Advance(time.Second)
	w.owner.Post(tp(personal.Id), map[string]any{"principal_id": w.ownerU.PrincipalId}).Expect(t, 200).Decode(t, &r)
	if !r.Data.Agent.UpdatedAt.Equal(personal.UpdatedAt) || r.Data.Agent.PrincipalId != w.ownerU.PrincipalId {
		t.Fatalf("transfer to the owner = %+v", r.Data.Agent)
	}

	// To a group the caller owns: the id stays, the group's members now see it.
	w.member.Get(agentPath(personal.Id)).Expect(t, 404)
	w.owner.Post(tp(personal.Id), map[string]any{"principal_id": w.teamP}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.Id != personal.Id || r.Data.Agent.PrincipalId != w.teamP || !r.Data.Agent.IsFavorite ||
		!r.Data.Agent.UpdatedAt.After(personal.UpdatedAt) || r.Data.Agent.Name != "Personal" {
		t.Fatalf("transferred = %+v", r.Data.Agent)
	}
	getAgent(t, w.member, personal.Id)
	w.member.Patch(agentPath(personal.Id), map[string]any{"name": "x"}).Expect(t, 403, "FORBIDDEN")

	// A group admin may take a group agent to their own principal; the owner then loses sight.
	w.gadmin.Post(tp(team.Id), map[string]any{"principal_id": w.gadminU.PrincipalId}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.PrincipalId != w.gadminU.PrincipalId {
		t.Fatalf("gadmin transfer = %+v", r.Data.Agent)
	}
	w.owner.Get(agentPath(team.Id)).Expect(t, 404, "NOT_FOUND")

	// Administrators transfer anything anywhere.
	w.admin.Post(tp(team.Id), map[string]any{"principal_id": w.otherP}).Expect(t, 200).Decode(t, &r)
	if r.Data.Agent.PrincipalId != w.otherP {
		t.Fatalf("admin transfer = %+v", r.Data.Agent)
	}
	getAgent(t, w.stranger, team.Id)
}

func TestListGroupAgents(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	b := mkAgent(t, w.owner, map[string]any{"name": "b", "principal_id": w.teamP})
	a := mkAgent(t, w.gadmin, map[string]any{"name": "a", "principal_id": w.teamP})
	c := mkAgent(t, w.owner, map[string]any{"name": "c", "principal_id": w.teamP})
	mkAgent(t, w.owner, map[string]any{"name": "personal"})
	mkAgent(t, w.stranger, map[string]any{"name": "other's", "principal_id": w.otherP})
	w.member.Post(agentPath(c.Id)+"/favorite", nil).Expect(t, 200)

	path := fmt.Sprintf("/groups/%d/agents", w.team)
	for _, tc := range []struct {
		name  string
		cl    *apitest.Client
		query string
		want  []int64
	}{
		{"member, by name (favorites do not lead)", w.member, "", []int64{a.Id, b.Id, c.Id}},
		{"owner", w.owner, "", []int64{a.Id, b.Id, c.Id}},
		{"admin", w.admin, "", []int64{a.Id, b.Id, c.Id}},
		{"page 2", w.member, "?per_page=2&page=2", []int64{c.Id}},
	} {
		var r gen.GroupAgentListResponse
		tc.cl.Get(path+tc.query).Expect(t, 200).Decode(t, &r)
		if ids := agentIDs(r.Data.Agents); !sameIDs(ids, tc.want) {
			t.Errorf("%s: ids = %v, want %v", tc.name, ids, tc.want)
		}
		for _, ag := range r.Data.Agents {
			if ag.IsFavorite != (tc.cl == w.member && ag.Id == c.Id) {
				t.Errorf("%s: agent %d is_favorite = %v", tc.name, ag.Id, ag.IsFavorite)
			}
		}
	}
	w.stranger.Get(path).Expect(t, 404, "NOT_FOUND")
	w.member.Get("/groups/999999/agents").Expect(t, 404, "NOT_FOUND")
	w.member.Get("/groups/abc/agents").Expect(t, 422, "VALIDATION_ERROR")
	w.member.Get(path+"?per_page=101").Expect(t, 422, "VALIDATION_ERROR")
	w.env.Client().Get(path).Expect(t, 401, "UNAUTHENTICATED")
}

// Deleting a user deletes the agents of its personal principal in the same transaction; group
// agents it created stay with the group.
func TestDeleteUserDeletesPersonalAgents(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	personal := mkAgent(t, w.gadmin, map[string]any{"name": "Personal"})
	team := mkAgent(t, w.gadmin, map[string]any{"name": "Team", "principal_id": w.teamP})
	w.owner.Post(agentPath(team.Id)+"/favorite", nil).Expect(t, 200)
	w.admin.Post(agentPath(personal.Id)+"/favorite", nil).Expect(t, 200)

	w.admin.Delete(fmt.Sprintf("/users/%d", w.gadminU.Id)).Expect(t, 200)
	w.admin.Get(agentPath(personal.Id)).Expect(t, 404, "NOT_FOUND")
	if got := getAgent(t, w.owner, team.Id); got.PrincipalId != w.teamP || !got.IsFavorite {
		t.Fatalf("group agent after the creator's deletion = %+v", got)
	}
	if ids := agentIDs(listAgents(t, w.admin, "")); !sameIDs(ids, []int64{team.Id}) {
		t.Fatalf("agents after the deletion = %v", ids)
	}
}

// An agent with a RUNNING task cannot be deleted (409 INVALID_STATE, the agent stays), nor can
// its owner; once the task is aborted both deletions succeed.
func TestDeleteAgentWithRunningTask(t *testing.T) {
	t.Parallel()
	w := newTaskWorld(t)
	tk := w.newTask(t, w.stranger, w.strangerAgent.Id)
	w.claim(t, tk.Id)
	w.stranger.Delete(agentPath(w.strangerAgent.Id)).Expect(t, 409, "INVALID_STATE")
	if got := getAgent(t, w.stranger, w.strangerAgent.Id); got.Name != "Private" {
		t.Fatalf("agent after the refused delete = %+v", got)
	}
	w.admin.Delete(fmt.Sprintf("/users/%d", w.strangerU.Id)).Expect(t, 409, "INVALID_STATE")
	getAgent(t, w.stranger, w.strangerAgent.Id)
	if s := w.taskStatus(t, tk.Id); s != "RUNNING" {
		t.Fatalf("task status after the refused deletions = %s", s)
	}
	w.stranger.Post(taskPath(tk.Id, "abort"), nil).Expect(t, 200)
	w.stranger.Delete(agentPath(w.strangerAgent.Id)).Expect(t, 200)
	w.stranger.Get(agentPath(w.strangerAgent.Id)).Expect(t, 404, "NOT_FOUND")
	w.stranger.Get(taskPath(tk.Id, "")).Expect(t, 404, "NOT_FOUND")
}
