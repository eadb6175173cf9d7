package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func tableRows(t *testing.T, s *store.Store, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.GormDBForTest().Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func addMember(t *testing.T, s *store.Store, groupID, userID int64, role string) {
	t.Helper()
	if _, err := s.AddGroupMember(context.Background(), groupID, userID, role, nil); err != nil {
		t.Fatalf("AddGroupMember(%d, %d, %s): %v", groupID, userID, role, err)
	}
}

func TestCreateAndUpdateGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s, storetest.Email("owner@example.com"))

	g, err := s.CreateGroup(ctx, u.ID, "Research", "Market research")
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Truncate(time.Microsecond)
	want := &store.Group{ID: g.ID, PrincipalID: g.PrincipalID, Name: "Research", Description: "Market research", CreatedAt: at, UpdatedAt: at}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}
	if got, err := s.GroupByID(ctx, g.ID); err != nil || !cmp.Equal(want, got) {
		t.Fatalf("GroupByID = %+v, %v", got, err)
	}
	// The group is a principal of kind group, named like it, and the creator is its owner.
	if n := tableRows(t, s, "principals", "id = ? AND kind = 'group' AND name = ?", g.PrincipalID, "Research"); n != 1 {
		t.Fatalf("group principal rows = %d", n)
	}
	m, err := s.GroupMember(ctx, g.ID, u.ID)
	if err != nil || m.Role != store.GroupRoleOwner || m.Email != "owner@example.com" || !m.JoinedAt.Equal(at) {
		t.Fatalf("owner membership = %+v, %v", m, err)
	}
	roles, err := s.Memberships(ctx, u.ID)
	if err != nil || roles[g.PrincipalID] != store.GroupRoleOwner {
		t.Fatalf("Memberships = %v, %v", roles, err)
	}

	clock.Advance(time.Minute)
	upd, err := s.UpdateGroup(ctx, g.ID, store.GroupUpdate{Name: ptr("Research & pricing")})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Name != "Research & pricing" || upd.Description != "Market research" || !upd.UpdatedAt.Equal(clock.Now().Truncate(time.Microsecond)) || !upd.CreatedAt.Equal(at) {
		t.Fatalf("renamed = %+v", upd)
	}
	if n := tableRows(t, s, "principals", "id = ? AND name = ?", g.PrincipalID, "Research & pricing"); n != 1 {
		t.Fatal("renaming the group did not rename its principal")
	}
	upd, err = s.UpdateGroup(ctx, g.ID, store.GroupUpdate{Description: ptr("")})
	if err != nil || upd.Description != "" || upd.Name != "Research & pricing" {
		t.Fatalf("cleared description = %+v, %v", upd, err)
	}

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		// The name and description rules are package group's (tested there).
		{"create: unknown owner", func() error { _, err := s.CreateGroup(ctx, 999999, "orphan", ""); return err }, svcerr.ErrInvalid},
		{"update: unknown group", func() error { _, err := s.UpdateGroup(ctx, 999999, store.GroupUpdate{Name: ptr("x")}); return err }, svcerr.ErrNotFound},
		{"get: unknown group", func() error { _, err := s.GroupByID(ctx, 999999); return err }, svcerr.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.run(), tc.want)
		})
	}
	// Refused writes changed nothing: one group (plus none for the failed creations).
	if n := tableRows(t, s, "principal_groups", "1 = 1"); n != 1 {
		t.Fatalf("groups after refused writes = %d", n)
	}
	if n := tableRows(t, s, "principals", "kind = 'group'"); n != 1 {
		t.Fatalf("group principals after refused writes = %d", n)
	}
	// Exactly the limits are accepted.
	long, err := s.CreateGroup(ctx, u.ID, strings.Repeat("ü", limits.GroupNameLen), strings.Repeat("ü", limits.GroupDescriptionLen))
	if err != nil || len([]rune(long.Name)) != limits.GroupNameLen {
		t.Fatalf("group at the limits: %+v, %v", long, err)
	}
}

func TestListGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	a := storetest.User(t, s, storetest.Email("a@example.com"))
	b := storetest.User(t, s, storetest.Email("b@example.com"))
	var aGroups []int64
	for _, n := range []string{"delta", "alpha", "charlie", "bravo"} {
		g := storetest.Group(t, s, a, storetest.GroupNamed(n))
		aGroups = append(aGroups, g.ID)
	}
	storetest.Group(t, s, b, storetest.GroupNamed("beta"))
	addMember(t, s, aGroups[0], b.ID, store.GroupRoleMember) // b is in delta too

	names := func(gs []store.Group) string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name          string
		memberOf      int64
		page, perPage int
		want          string
	}{
		{"a's groups", a.ID, 1, 25, "alpha,bravo,charlie,delta"},
		{"b's groups", b.ID, 1, 25, "beta,delta"},
		{"every group", 0, 1, 25, "alpha,beta,bravo,charlie,delta"},
		{"page 2 of 2", a.ID, 2, 2, "charlie,delta"},
		{"past the end", a.ID, 3, 2, ""},
		{"defaults for bad paging", 0, 0, 0, "alpha,beta,bravo,charlie,delta"},
		{"no groups", 999999, 1, 25, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs, err := s.ListGroups(ctx, tc.memberOf, tc.page, tc.perPage)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(gs); got != tc.want {
				t.Fatalf("ListGroups = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGroupMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	owner := storetest.User(t, s, storetest.Email("owner@example.com"))
	g := storetest.Group(t, s, owner)
	// Display names decide the order within a role (storetest.Email sets it to the address).
	zed := storetest.User(t, s, storetest.Email("zed@example.com"))
	amy := storetest.User(t, s, storetest.Email("amy@example.com"))
	bob := storetest.User(t, s, storetest.Email("bob@example.com"))
	outsider := storetest.User(t, s)

	m, err := s.AddGroupMember(ctx, g.ID, zed.ID, store.GroupRoleAdmin, nil)
	if err != nil || m.Role != store.GroupRoleAdmin || m.UserID != zed.ID || m.DisplayName != "zed@example.com" {
		t.Fatalf("AddGroupMember = %+v, %v", m, err)
	}
	addMember(t, s, g.ID, bob.ID, store.GroupRoleMember)
	addMember(t, s, g.ID, amy.ID, store.GroupRoleMember)

	list, err := s.GroupMembers(ctx, g.ID, 1, 25)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range list {
		order = append(order, m.Role+":"+m.Email)
	}
	if got, want := strings.Join(order, " "), "owner:owner@example.com admin:zed@example.com member:amy@example.com member:bob@example.com"; got != want {
		t.Fatalf("member order = %s, want %s", got, want)
	}
	if page, err := s.GroupMembers(ctx, g.ID, 2, 3); err != nil || len(page) != 1 || page[0].UserID != bob.ID {
		t.Fatalf("page 2 = %+v, %v", page, err)
	}
	if _, err := s.GroupMembers(ctx, 999999, 1, 25); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("members of an unknown group: %v", err)
	}

	refuse := errors.New("refused by check")
	var seen map[int64]string
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"add: already a member", func() error { _, err := s.AddGroupMember(ctx, g.ID, amy.ID, "member", nil); return err }, svcerr.ErrConflict},
		{"add: unknown user", func() error { _, err := s.AddGroupMember(ctx, g.ID, 999999, "member", nil); return err }, svcerr.ErrInvalid},
		{"add: unknown group", func() error { _, err := s.AddGroupMember(ctx, 999999, outsider.ID, "member", nil); return err }, svcerr.ErrNotFound},
		{"add: check refuses", func() error {
			_, err := s.AddGroupMember(ctx, g.ID, outsider.ID, "member", func(r map[int64]string) error { seen = r; return refuse })
			return err
		}, refuse},
		{"update: not a member", func() error { _, err := s.UpdateGroupMember(ctx, g.ID, outsider.ID, "admin", nil); return err }, svcerr.ErrNotFound},
		{"update: unknown group", func() error { _, err := s.UpdateGroupMember(ctx, 999999, amy.ID, "admin", nil); return err }, svcerr.ErrNotFound},
		{"update: check refuses", func() error {
			_, err := s.UpdateGroupMember(ctx, g.ID, amy.ID, "admin", func(map[int64]string) error { return refuse })
			return err
		}, refuse},
		{"update: demote the last owner", func() error { _, err := s.UpdateGroupMember(ctx, g.ID, owner.ID, "admin", nil); return err }, svcerr.ErrInvalidState},
		{"remove: the last owner", func() error { return s.RemoveGroupMember(ctx, g.ID, owner.ID, nil) }, svcerr.ErrInvalidState},
		{"remove: not a member", func() error { return s.RemoveGroupMember(ctx, g.ID, outsider.ID, nil) }, svcerr.ErrNotFound},
		{"remove: check refuses", func() error {
			return s.RemoveGroupMember(ctx, g.ID, amy.ID, func(map[int64]string) error { return refuse })
		}, refuse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.run(), tc.want)
		})
	}
	if want := map[int64]string{owner.ID: "owner", zed.ID: "admin", amy.ID: "member", bob.ID: "member"}; !cmp.Equal(seen, want) {
		t.Fatalf("check saw %v, want %v", seen, want)
	}
	// The refusals wrote nothing.
	after, err := s.GroupMembers(ctx, g.ID, 1, 25)
	if err != nil || !cmp.Equal(list, after) {
		t.Fatalf("members changed by refused writes:\n%s", cmp.Diff(list, after))
	}

	// A second owner makes demoting and removing the first one possible; then the new owner is
	// the last one.
	if m, err := s.UpdateGroupMember(ctx, g.ID, zed.ID, "owner", nil); err != nil || m.Role != "owner" {
		t.Fatalf("promote = %+v, %v", m, err)
	}
	if m, err := s.UpdateGroupMember(ctx, g.ID, zed.ID, "owner", nil); err != nil || m.Role != "owner" {
		t.Fatalf("same role again = %+v, %v", m, err)
	}
	if m, err := s.UpdateGroupMember(ctx, g.ID, owner.ID, "member", nil); err != nil || m.Role != "member" {
		t.Fatalf("demote the other owner = %+v, %v", m, err)
	}
	wantErr(t, s.RemoveGroupMember(ctx, g.ID, zed.ID, nil), svcerr.ErrInvalidState)
	wantErr(t, s.RemoveGroupMember(ctx, g.ID, owner.ID, nil), nil)
	if _, err := s.GroupMember(ctx, g.ID, owner.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("removed member still there: %v", err)
	}
	if roles, _ := s.Memberships(ctx, owner.ID); len(roles) != 1 {
		t.Fatalf("memberships after removal = %v", roles)
	}
}

// Concurrent demotions of two owners: exactly one may succeed, the group keeps an owner.
func TestLastOwnerRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	a := storetest.User(t, s)
	b := storetest.User(t, s)
	for round := range 5 {
		g := storetest.Group(t, s, a)
		addMember(t, s, g.ID, b.ID, store.GroupRoleOwner)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, u := range []int64{a.ID, b.ID} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 0 {
					_, errs[i] = s.UpdateGroupMember(ctx, g.ID, u, store.GroupRoleMember, nil)
				} else {
					errs[i] = s.RemoveGroupMember(ctx, g.ID, u, nil)
				}
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, svcerr.ErrInvalidState):
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of 2 changes succeeded (%v)", round, ok, errs)
		}
		if n := tableRows(t, s, "group_members", "group_id = ? AND role = 'owner'", g.ID); n != 1 {
			t.Fatalf("round %d: %d owners left", round, n)
		}
	}
}

func TestGroupPreferences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	g := storetest.Group(t, s, u)

	got, err := s.GroupPreferences(ctx, g.ID)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("fresh preferences = %#v, %v", got, err)
	}
	first := map[string]any{"view": "grid", "nested": map[string]any{"n": 1.5, "list": []any{"a", true, nil}}}
	if got, err = s.PutGroupPreferences(ctx, g.ID, first); err != nil || !cmp.Equal(first, got) {
		t.Fatalf("put = %#v, %v", got, err)
	}
	if got, err = s.GroupPreferences(ctx, g.ID); err != nil || !cmp.Equal(first, got) {
		t.Fatalf("read back = %#v, %v", got, err)
	}
	// PUT replaces: keys not sent are gone.
	second := map[string]any{"locale": "en-GB"}
	if got, err = s.PutGroupPreferences(ctx, g.ID, second); err != nil || !cmp.Equal(second, got) {
		t.Fatalf("replace = %#v, %v", got, err)
	}
	if got, err = s.PutGroupPreferences(ctx, g.ID, nil); err != nil || len(got) != 0 {
		t.Fatalf("nil stores {} = %#v, %v", got, err)
	}

	// The serialised size limit: {"k":"…"} is 8 bytes plus the value.
	exact := map[string]any{"k": strings.Repeat("x", store.MaxGroupPreferencesLen-8)}
	if _, err := s.PutGroupPreferences(ctx, g.ID, exact); err != nil {
		t.Fatalf("preferences of exactly %d bytes: %v", store.MaxGroupPreferencesLen, err)
	}
	if got, err := s.GroupPreferences(ctx, g.ID); err != nil || !cmp.Equal(exact, got) {
		t.Fatalf("large preferences did not round-trip: %v", err)
	}
	// The size rule is package group's (group.CheckPreferences, tested there).
	if _, err := s.PutGroupPreferences(ctx, 999999, first); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("put on an unknown group: %v", err)
	}
	if _, err := s.GroupPreferences(ctx, 999999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("read of an unknown group: %v", err)
	}
}

func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s, storetest.Email("d@example.com"))
	other := storetest.User(t, s)
	g := storetest.Group(t, s, u)
	keep := storetest.Group(t, s, u)
	addMember(t, s, g.ID, other.ID, store.GroupRoleMember)
	if _, err := s.PutGroupPreferences(ctx, g.ID, map[string]any{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	for _, gid := range []int64{g.ID, keep.ID} {
		storetest.LLMConfig(t, s, gid)
	}

	// A group whose principal owns an agent cannot go.
	if owns, err := s.PrincipalOwnsAgents(ctx, g.PrincipalID); err != nil || owns {
		t.Fatalf("PrincipalOwnsAgents before = %v, %v", owns, err)
	}
	bot := storetest.Agent(t, s, g.PrincipalID)
	if owns, err := s.PrincipalOwnsAgents(ctx, g.PrincipalID); err != nil || !owns {
		t.Fatalf("PrincipalOwnsAgents with an agent = %v, %v", owns, err)
	}
	if owns, err := s.PrincipalOwnsAgents(ctx, keep.PrincipalID); err != nil || owns {
		t.Fatalf("PrincipalOwnsAgents of another group = %v, %v", owns, err)
	}
	wantErr(t, errOf(s.DeleteGroup(ctx, g.ID)), svcerr.ErrInvalidState)
	if _, err := s.GroupByID(ctx, g.ID); err != nil {
		t.Fatalf("refused deletion removed the group: %v", err)
	}
	if n := tableRows(t, s, "group_members", "group_id = ?", g.ID); n != 2 {
		t.Fatalf("refused deletion removed members: %d left", n)
	}
	if err := s.DeleteAgent(ctx, bot.ID, nil); err != nil {
		t.Fatal(err)
	}

	wantErr(t, errOf(s.DeleteGroup(ctx, g.ID)), nil)
	for _, c := range []struct{ table, where string }{
		{"principal_groups", "id = ?"}, {"group_members", "group_id = ?"}, {"group_preferences", "group_id = ?"}, {"llm_configs", "group_id = ?"},
	} {
		if n := tableRows(t, s, c.table, c.where, g.ID); n != 0 {
			t.Errorf("%s: %d rows left after deleting the group", c.table, n)
		}
	}
	if n := tableRows(t, s, "principals", "id = ?", g.PrincipalID); n != 0 {
		t.Error("the group's principal survived")
	}
	// The other group is untouched.
	if n := tableRows(t, s, "llm_configs", "group_id = ?", keep.ID); n != 1 {
		t.Errorf("the other group's configurations: %d", n)
	}
	wantErr(t, errOf(s.DeleteGroup(ctx, g.ID)), svcerr.ErrNotFound)
	if roles, _ := s.Memberships(ctx, other.ID); len(roles) != 1 {
		t.Fatalf("memberships of a deleted group remain: %v", roles)
	}
}
