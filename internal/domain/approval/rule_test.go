package approval_test

import (
	"context"
	"testing"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/approval"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestMayDecide: the owner by default; the managers of the agent's principal (owner and admin
// of its group, not a member) when named; named users; API chats stay their owner's.
func TestMayDecide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	lead, adm, mem, named, other := storetest.User(t, s), storetest.User(t, s), storetest.User(t, s), storetest.User(t, s), storetest.User(t, s)
	g := storetest.Group(t, s, lead)
	if _, err := s.AddGroupMember(ctx, g.ID, adm.ID, store.GroupRoleAdmin, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddGroupMember(ctx, g.ID, mem.ID, store.GroupRoleMember, nil); err != nil {
		t.Fatal(err)
	}
	scope := func(u *store.User) *access.Scope {
		sc, err := access.For(ctx, s, u)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	a := &store.Agent{ID: 1, PrincipalID: g.PrincipalID, Approvers: store.DefaultApprovers()}
	tk := &store.Task{ID: 9, AgentID: 1, UserID: mem.ID}
	want := func(who *store.User, ok bool) {
		t.Helper()
		if got := approval.MayDecide(scope(who), a, tk); got != ok {
			t.Errorf("approvers %+v, user %d: %v, want %v", a.Approvers, who.ID, got, ok)
		}
	}
	want(mem, true)
	want(lead, false)
	want(named, false)
	a.Approvers = store.Approvers{Owner: true, Managers: true, Users: []int64{named.ID}}
	want(mem, true)
	want(lead, true)
	want(adm, true)
	want(named, true)
	want(other, false)
	a.Approvers = store.Approvers{Users: []int64{named.ID}}
	want(mem, false)
	want(lead, false)
	want(named, true)
	key := int64(4)
	tk.APIKeyID = &key // a per-agent API chat: its owner only, through a session
	want(named, false)
	want(mem, true)
	if approval.MayDecide(scope(mem), &store.Agent{ID: 2}, tk) {
		t.Error("an agent that is not the task's decides nothing")
	}
}
