package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestMemberships(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	a := storetest.User(t, s)
	b := storetest.User(t, s)
	loner := storetest.User(t, s)
	g1 := storetest.Group(t, s, a, storetest.GroupNamed("one"))
	g2 := storetest.Group(t, s, b, storetest.GroupNamed("two"))
	g3 := storetest.Group(t, s, b)
	addMember(t, s, g2.ID, a.ID, store.GroupRoleAdmin)
	addMember(t, s, g3.ID, a.ID, store.GroupRoleMember)

	tests := []struct {
		name string
		user int64
		want map[int64]string
	}{
		{"owner, admin and member", a.ID, map[int64]string{a.PrincipalID: store.RoleSelf, g1.PrincipalID: "owner", g2.PrincipalID: "admin", g3.PrincipalID: "member"}},
		{"owner of two", b.ID, map[int64]string{b.PrincipalID: store.RoleSelf, g2.PrincipalID: "owner", g3.PrincipalID: "owner"}},
		{"no groups", loner.ID, map[int64]string{loner.PrincipalID: store.RoleSelf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Memberships(ctx, tc.user)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Memberships (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := s.Memberships(ctx, 999999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("Memberships of an unknown user: %v", err)
	}
}
