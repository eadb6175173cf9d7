package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// mustGroup inserts a group principal with its members (user id → role) by raw SQL, so the
// agent tests need not wait for the groups area; it returns the group id and its principal.
func mustGroup(t *testing.T, s *store.Store, name string, members map[int64]string) (groupID, principalID int64) {
	t.Helper()
	db := s.GormDBForTest()
	if err := db.Exec("INSERT INTO principals (kind, name, created_at) VALUES ('group', ?, ?)", name, t0).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw("SELECT id FROM principals WHERE kind = 'group' AND name = ?", name).Scan(&principalID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO principal_groups (principal_id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", principalID, name, t0, t0).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw("SELECT id FROM principal_groups WHERE principal_id = ?", principalID).Scan(&groupID).Error; err != nil {
		t.Fatal(err)
	}
	for uid, role := range members {
		if err := db.Exec("INSERT INTO group_members (group_id, user_id, role, created_at) VALUES (?, ?, ?, ?)", groupID, uid, role, t0).Error; err != nil {
			t.Fatal(err)
		}
	}
	return groupID, principalID
}

func countRows(t *testing.T, s *store.Store, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.GormDBForTest().Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCreateAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	now := t0.Truncate(time.Microsecond)

	md := map[string]any{"category": "research", "n": json.Number("12345678901234567890"), "nested": map[string]any{"x": []any{true}}}
	tests := []struct {
		name      string
		principal int64
		in        store.AgentFields
		want      error
		check     func(t *testing.T, a *store.Agent)
	}{
		{name: "defaults", in: store.AgentFields{Name: ptr("Plain")}, check: func(t *testing.T, a *store.Agent) {
			if a.MaxSteps != 10 || !a.AllowFollowup || a.RetryAfterMinutes != 0 || a.MaxRetries != 0 ||
				a.Description != "" || a.SystemPrompt != "" || a.Notes != "" || len(a.Metadata) != 0 || a.Metadata == nil || a.IsFavorite {
				t.Errorf("defaults = %+v", a)
			}
		}},
		{name: "every field", in: store.AgentFields{
			Name: ptr("Full"), Description: ptr("d"), SystemPrompt: ptr("sp"), Notes: ptr("# notes"),
			MaxSteps: ptr(100), AllowFollowup: ptr(false), RetryAfterMinutes: ptr(5), MaxRetries: ptr(2), Metadata: &md,
		}, check: func(t *testing.T, a *store.Agent) {
			if a.Description != "d" || a.SystemPrompt != "sp" || a.Notes != "# notes" || a.MaxSteps != 100 || a.AllowFollowup ||
				a.RetryAfterMinutes != 5 || a.MaxRetries != 2 {
				t.Errorf("stored = %+v", a)
			}
			b, _ := json.Marshal(a.Metadata)
			if string(b) != `{"category":"research","n":12345678901234567890,"nested":{"x":[true]}}` {
				t.Errorf("metadata = %s", b)
			}
		}},
		{name: "max_steps 1", in: store.AgentFields{Name: ptr("One"), MaxSteps: ptr(1)}},
		{name: "longest texts, multibyte", in: store.AgentFields{
			Name: ptr(strings.Repeat("é", limits.AgentNameLen)), Description: ptr(strings.Repeat("é", limits.AgentDescriptionLen)),
			Notes: ptr(strings.Repeat("€", limits.AgentNotesLen)), SystemPrompt: ptr(strings.Repeat("€", 100000)),
		}, check: func(t *testing.T, a *store.Agent) {
			if len([]rune(a.Notes)) != limits.AgentNotesLen || len([]rune(a.SystemPrompt)) != 100000 {
				t.Errorf("long texts were cut: notes %d, prompt %d", len([]rune(a.Notes)), len([]rune(a.SystemPrompt)))
			}
		}},
		// The field rules are package agent's (agent.CheckFields, tested there); the store refuses
		// only what its transaction knows.
		{name: "unknown principal", principal: 999999, in: store.AgentFields{Name: ptr("unknown principal")}, want: svcerr.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := tc.principal
			if p == 0 {
				p = u.PrincipalID
			}
			a, err := s.CreateAgent(ctx, p, tc.in)
			wantErr(t, err, tc.want)
			if tc.want != nil {
				if tc.in.Name != nil && countRows(t, s, "agents", "name = ?", *tc.in.Name) != 0 {
					t.Error("a refused create wrote a row")
				}
				return
			}
			if a.ID == 0 || a.PrincipalID != p || !a.CreatedAt.Equal(now) || !a.UpdatedAt.Equal(now) {
				t.Fatalf("agent id %d principal %d created %v updated %v", a.ID, a.PrincipalID, a.CreatedAt, a.UpdatedAt)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
			got, err := s.Agent(ctx, a.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			ga, _ := json.Marshal(got)
			ca, _ := json.Marshal(a)
			if string(ga) != string(ca) {
				t.Errorf("Agent differs from CreateAgent:\n got %.300s\nwant %.300s", ga, ca)
			}
		})
	}
}

func TestListAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	v := storetest.User(t, s, storetest.Email("v@example.com"))
	_, gp := mustGroup(t, s, "team", map[int64]string{u.ID: store.GroupRoleMember})

	// Byte order: upper case before lower case, ties broken by id.
	zeta := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("zeta"))
	alpha := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("alpha"))
	beta1 := storetest.Agent(t, s, gp, storetest.AgentNamed("Beta"))
	beta2 := storetest.Agent(t, s, gp, storetest.AgentNamed("Beta"))
	other := storetest.Agent(t, s, v.PrincipalID, storetest.AgentNamed("other"))
	for _, id := range []int64{zeta.ID, beta2.ID} {
		if _, err := s.SetAgentFavorite(ctx, id, u.ID, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetAgentFavorite(ctx, alpha.ID, v.ID, true, nil); err != nil { // v's favorite, not u's
		t.Fatal(err)
	}

	ids := func(as []store.Agent) []int64 {
		out := []int64{}
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	mine := []int64{u.PrincipalID, gp}
	tests := []struct {
		name string
		q    store.AgentQuery
		want []int64
		favs []int64
	}{
		{name: "favorites first", q: store.AgentQuery{Viewer: u.ID, Principals: mine, FavoritesFirst: true},
			want: []int64{beta2.ID, zeta.ID, beta1.ID, alpha.ID}, favs: []int64{beta2.ID, zeta.ID}},
		{name: "by name", q: store.AgentQuery{Viewer: u.ID, Principals: mine},
			want: []int64{beta1.ID, beta2.ID, alpha.ID, zeta.ID}, favs: []int64{beta2.ID, zeta.ID}},
		{name: "page 2 of 3", q: store.AgentQuery{Viewer: u.ID, Principals: mine, FavoritesFirst: true, Page: 2, PerPage: 3},
			want: []int64{alpha.ID}},
		{name: "past the end", q: store.AgentQuery{Viewer: u.ID, Principals: mine, Page: 3, PerPage: 3}, want: []int64{}},
		{name: "huge page", q: store.AgentQuery{Viewer: u.ID, Principals: mine, Page: 1 << 62, PerPage: 100}, want: []int64{}},
		{name: "no principals", q: store.AgentQuery{Viewer: u.ID}, want: []int64{}},
		{name: "all, other viewer", q: store.AgentQuery{Viewer: v.ID, All: true, FavoritesFirst: true},
			want: []int64{alpha.ID, beta1.ID, beta2.ID, other.ID, zeta.ID}, favs: []int64{alpha.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.ListAgents(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !equalIDs(g, tc.want) {
				t.Fatalf("ids = %v, want %v", g, tc.want)
			}
			var favs []int64
			for _, a := range got {
				if a.IsFavorite {
					favs = append(favs, a.ID)
				}
			}
			if tc.favs != nil && !equalIDs(favs, tc.favs) {
				t.Errorf("favorites = %v, want %v", favs, tc.favs)
			}
		})
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestUpdateAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	md := map[string]any{"a": "1", "b": "2"}
	a, err := s.CreateAgent(ctx, u.PrincipalID, store.AgentFields{Name: ptr("Agent"), Description: ptr("keep"), Metadata: &md})
	if err != nil {
		t.Fatal(err)
	}
	later := clock.Advance(time.Minute).Truncate(time.Microsecond)

	// Nothing sent: nothing changes, not even updated_at.
	got, err := s.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{}, nil)
	if err != nil || !got.UpdatedAt.Equal(a.UpdatedAt) {
		t.Fatalf("empty update = %+v, %v", got, err)
	}

	md2 := map[string]any{"c": "3"}
	got, err = s.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{Name: ptr("Renamed"), MaxSteps: ptr(42), Metadata: &md2, AllowFollowup: ptr(false)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Renamed" || got.MaxSteps != 42 || got.Description != "keep" || got.AllowFollowup ||
		len(got.Metadata) != 1 || got.Metadata["c"] != "3" || !got.UpdatedAt.Equal(later) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("updated = %+v", got)
	}

	refused := errors.New("refused")
	for name, tc := range map[string]struct {
		id    int64
		f     store.AgentFields
		check store.AgentCheck
		want  error
	}{
		"check refuses": {id: a.ID, f: store.AgentFields{Name: ptr("Nope")}, check: func(*store.Agent) error { return refused }, want: refused},
		"unknown agent": {id: 999999, f: store.AgentFields{Name: ptr("Nope")}, want: svcerr.ErrNotFound},
	} {
		_, err := s.UpdateAgent(ctx, tc.id, u.ID, tc.f, tc.check)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", name, err, tc.want)
		}
	}
	after, err := s.Agent(ctx, a.ID, u.ID)
	if err != nil || after.Name != "Renamed" || after.MaxSteps != 42 {
		t.Fatalf("a refused update wrote: %+v, %v", after, err)
	}
	// The check sees the stored agent.
	var seen *store.Agent
	if _, err := s.UpdateAgent(ctx, a.ID, u.ID, store.AgentFields{Notes: ptr("n")}, func(x *store.Agent) error { seen = x; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.ID != a.ID || seen.PrincipalID != u.PrincipalID {
		t.Fatalf("check saw %+v", seen)
	}
}

func TestAgentFavoritesAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s, storetest.Email("u@example.com"))
	v := storetest.User(t, s, storetest.Email("v@example.com"))
	a := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("A"))
	b := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("B"))

	for range 2 { // idempotent
		got, err := s.SetAgentFavorite(ctx, a.ID, u.ID, true, nil)
		if err != nil || !got.IsFavorite {
			t.Fatalf("favorite = %+v, %v", got, err)
		}
	}
	if _, err := s.SetAgentFavorite(ctx, b.ID, v.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Agent(ctx, a.ID, v.ID); got.IsFavorite {
		t.Error("u's favorite shows for v")
	}
	if n := countRows(t, s, "agent_favorites", "agent_id = ?", a.ID); n != 1 {
		t.Fatalf("%d favorite rows of a, want 1", n)
	}
	if _, err := s.SetAgentFavorite(ctx, 999999, u.ID, true, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("favorite of unknown agent: %v", err)
	}
	refused := errors.New("refused")
	if _, err := s.SetAgentFavorite(ctx, b.ID, u.ID, true, func(*store.Agent) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused favorite: %v", err)
	}
	if got, _ := s.Agent(ctx, b.ID, u.ID); got.IsFavorite {
		t.Fatal("a refused favorite wrote")
	}
	for range 2 {
		got, err := s.SetAgentFavorite(ctx, a.ID, u.ID, false, nil)
		if err != nil || got.IsFavorite {
			t.Fatalf("unfavorite = %+v, %v", got, err)
		}
	}

	// Delete: refused by the check writes nothing; otherwise favorites go with the agent.
	if err := s.DeleteAgent(ctx, b.ID, func(*store.Agent) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused delete: %v", err)
	}
	if _, err := s.Agent(ctx, b.ID, u.ID); err != nil {
		t.Fatalf("refused delete removed the agent: %v", err)
	}
	if err := s.DeleteAgent(ctx, b.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Agent(ctx, b.ID, u.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("Agent after delete: %v", err)
	}
	if n := countRows(t, s, "agent_favorites", "agent_id = ?", b.ID); n != 0 {
		t.Fatalf("%d favorite rows survive the agent", n)
	}
	if err := s.DeleteAgent(ctx, b.ID, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestTransferAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	_, gp := mustGroup(t, s, "team", map[int64]string{u.ID: store.GroupRoleOwner})
	a := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("A"))
	if _, err := s.SetAgentFavorite(ctx, a.ID, u.ID, true, nil); err != nil {
		t.Fatal(err)
	}
	later := clock.Advance(time.Hour).Truncate(time.Microsecond)

	same, err := s.TransferAgent(ctx, a.ID, u.ID, u.PrincipalID, nil)
	if err != nil || !same.UpdatedAt.Equal(a.UpdatedAt) || same.PrincipalID != u.PrincipalID {
		t.Fatalf("transfer to the owner = %+v, %v", same, err)
	}
	if _, err := s.TransferAgent(ctx, a.ID, u.ID, 999999, nil); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("transfer to an unknown principal: %v", err)
	}
	refused := errors.New("refused")
	if _, err := s.TransferAgent(ctx, a.ID, u.ID, gp, func(*store.Agent) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("refused transfer: %v", err)
	}
	if got, _ := s.Agent(ctx, a.ID, u.ID); got.PrincipalID != u.PrincipalID {
		t.Fatal("a refused transfer wrote")
	}
	got, err := s.TransferAgent(ctx, a.ID, u.ID, gp, nil)
	if err != nil || got.PrincipalID != gp || got.ID != a.ID || !got.UpdatedAt.Equal(later) || !got.IsFavorite {
		t.Fatalf("transferred = %+v, %v", got, err)
	}
	if _, err := s.TransferAgent(ctx, 999999, u.ID, gp, nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("transfer of an unknown agent: %v", err)
	}
}

func TestPrincipalOfGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	g, gp := mustGroup(t, s, "team", nil)
	if got, err := s.PrincipalOfGroup(ctx, g); err != nil || got != gp {
		t.Fatalf("PrincipalOfGroup = %d, %v; want %d", got, err, gp)
	}
	if _, err := s.PrincipalOfGroup(ctx, g+1000); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown group: %v", err)
	}
}

// A deleted user's personal agents go with its principal, in the same transaction; group
// agents and other users' agents stay.
func TestDeleteUserRemovesPersonalAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	storetest.User(t, s, storetest.Admin)
	u := storetest.User(t, s, storetest.Email("gone@example.com"))
	v := storetest.User(t, s)
	_, gp := mustGroup(t, s, "team", map[int64]string{u.ID: store.GroupRoleOwner, v.ID: store.GroupRoleOwner}) // v stays owner
	mine := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("mine"))
	team := storetest.Agent(t, s, gp, storetest.AgentNamed("team"))
	theirs := storetest.Agent(t, s, v.PrincipalID, storetest.AgentNamed("theirs"))
	for _, fav := range []struct{ agent, user int64 }{{mine.ID, v.ID}, {team.ID, u.ID}, {theirs.ID, u.ID}, {team.ID, v.ID}} {
		if _, err := s.SetAgentFavorite(ctx, fav.agent, fav.user, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Agent(ctx, mine.ID, v.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("personal agent after DeleteUser: %v", err)
	}
	for _, id := range []int64{team.ID, theirs.ID} {
		if _, err := s.Agent(ctx, id, v.ID); err != nil {
			t.Fatalf("agent %d after DeleteUser: %v", id, err)
		}
	}
	if n := countRows(t, s, "agent_favorites", "user_id = ? OR agent_id = ?", u.ID, mine.ID); n != 0 {
		t.Errorf("%d favorite rows of the deleted user or its agents remain", n)
	}
	if n := countRows(t, s, "agent_favorites", "user_id = ? AND agent_id = ?", v.ID, team.ID); n != 1 {
		t.Errorf("the other user's favorite is gone")
	}
	if n := countRows(t, s, "principals", "id = ?", u.PrincipalID); n != 0 {
		t.Errorf("the deleted user's principal remains")
	}
}

// The owning principal cannot disappear under an agent (a group that owns agents must not be
// deleted; the database refuses it too).
func TestAgentPrincipalRestricted(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	g, gp := mustGroup(t, s, "team", nil)
	storetest.Agent(t, s, gp, storetest.AgentNamed("A"))
	db := s.GormDBForTest()
	if err := db.Exec("DELETE FROM principal_groups WHERE id = ?", g).Error; err != nil {
		t.Fatal(err)
	}
	err := db.Exec("DELETE FROM principals WHERE id = ?", gp).Error
	wantErr(t, store.TranslateError(err), svcerr.ErrInvalid)
}

// An agent with a RUNNING task cannot be deleted, alone or with its user (409 INVALID_STATE;
// nothing is written); once the task left RUNNING both deletions go ahead and the tasks go by
// cascade. Tasks in other states do not block.
func TestDeleteAgentRefusedWhileTaskRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	storetest.User(t, s, storetest.Admin)
	u := storetest.User(t, s)
	busy := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("busy"))
	idle := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("idle"))
	running := storetest.Task(t, s, busy, u.ID)
	storetest.Task(t, s, idle, u.ID)
	if got, err := s.ClaimQueued(ctx, "w1", time.Hour, 1); err != nil || len(got) != 1 || got[0].ID != running.ID {
		t.Fatalf("claim = %v, %v", got, err)
	}
	err := s.DeleteAgent(ctx, busy.ID, nil)
	wantErr(t, err, svcerr.ErrInvalidState)
	if !strings.Contains(err.Error(), "running task") {
		t.Fatalf("message %q", err)
	}
	_, err = s.DeleteUser(ctx, u.ID)
	wantErr(t, err, svcerr.ErrInvalidState)
	if !strings.Contains(err.Error(), "before deleting the user") {
		t.Fatalf("message %q", err)
	}
	for _, id := range []int64{busy.ID, idle.ID} {
		if _, err := s.Agent(ctx, id, 0); err != nil {
			t.Fatalf("agent %d after the refused deletions: %v", id, err)
		}
	}
	if _, err := s.UserByID(ctx, u.ID); err != nil {
		t.Fatalf("user after the refused deletion: %v", err)
	}
	// A QUEUED task does not block (it goes with its agent).
	if err := s.DeleteAgent(ctx, idle.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AbortTaskChain(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, "tasks", "agent_id IN ?", []int64{busy.ID, idle.ID}); n != 0 {
		t.Errorf("%d tasks of the deleted agents remain", n)
	}
}
