package access_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	root := storetest.User(t, s, storetest.Admin)
	ada := storetest.User(t, s)
	bob := storetest.User(t, s)
	owned := storetest.Group(t, s, ada)   // ada: owner
	admined := storetest.Group(t, s, bob) // ada: admin
	joined := storetest.Group(t, s, bob)  // ada: member
	foreign := storetest.Group(t, s, bob) // ada: nothing
	for g, role := range map[int64]string{admined.ID: store.GroupRoleAdmin, joined.ID: store.GroupRoleMember} {
		if _, err := s.AddGroupMember(ctx, g, ada.ID, role, nil); err != nil {
			t.Fatal(err)
		}
	}

	adaScope, err := access.For(ctx, s, ada)
	if err != nil {
		t.Fatal(err)
	}
	rootScope, err := access.For(ctx, s, root)
	if err != nil {
		t.Fatal(err)
	}
	if adaScope.UserID != ada.ID || adaScope.Self != ada.PrincipalID || adaScope.Admin || !rootScope.Admin {
		t.Fatalf("scopes: ada %+v, root %+v", adaScope, rootScope)
	}

	tests := []struct {
		name      string
		scope     *access.Scope
		principal int64
		role      string
		see       error // nil, ErrNotFound
		manage    error // nil, ErrNotFound, ErrForbidden
	}{
		{"own principal", adaScope, ada.PrincipalID, store.RoleSelf, nil, nil},
		{"owner of a group", adaScope, owned.PrincipalID, store.GroupRoleOwner, nil, nil},
		{"admin of a group", adaScope, admined.PrincipalID, store.GroupRoleAdmin, nil, nil},
		{"member of a group", adaScope, joined.PrincipalID, store.GroupRoleMember, nil, svcerr.ErrForbidden},
		{"foreign group", adaScope, foreign.PrincipalID, "", svcerr.ErrNotFound, svcerr.ErrNotFound},
		{"another user's principal", adaScope, bob.PrincipalID, "", svcerr.ErrNotFound, svcerr.ErrNotFound},
		{"unknown principal", adaScope, 999999, "", svcerr.ErrNotFound, svcerr.ErrNotFound},
		{"administrator: foreign group", rootScope, foreign.PrincipalID, "", nil, nil},
		{"administrator: another user", rootScope, ada.PrincipalID, "", nil, nil},
		{"administrator: own principal", rootScope, root.PrincipalID, store.RoleSelf, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := tc.scope
			if got := sc.Role(tc.principal); got != tc.role {
				t.Errorf("Role = %q, want %q", got, tc.role)
			}
			if got := sc.CanSee(tc.principal); got != (tc.see == nil) {
				t.Errorf("CanSee = %v", got)
			}
			if got := sc.CanManage(tc.principal); got != (tc.manage == nil) {
				t.Errorf("CanManage = %v", got)
			}
			if err := sc.See(tc.principal, "thing"); !matches(err, tc.see) {
				t.Errorf("See = %v, want %v", err, tc.see)
			}
			if err := sc.Manage(tc.principal, "thing"); !matches(err, tc.manage) {
				t.Errorf("Manage = %v, want %v", err, tc.manage)
			}
		})
	}

	want := []int64{ada.PrincipalID, owned.PrincipalID, admined.PrincipalID, joined.PrincipalID}
	slices.Sort(want)
	if got := adaScope.Principals(); !slices.Equal(got, want) {
		t.Fatalf("Principals = %v, want %v", got, want)
	}
	if got := rootScope.Principals(); !slices.Equal(got, []int64{root.PrincipalID}) {
		t.Fatalf("administrator's Principals = %v, want only their own", got)
	}
	if _, err := access.For(ctx, s, &store.User{ID: 999999}); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("For an unknown user: %v", err)
	}
}

func matches(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func TestAdministrator(t *testing.T) {
	t.Parallel()
	root := &store.User{ID: 1, Roles: []string{store.RoleAdmin}}
	ada := &store.User{ID: 2}
	if err := access.Administrator(root); err != nil {
		t.Errorf("administrator refused: %v", err)
	}
	for name, u := range map[string]*store.User{"user": ada, "nobody": nil} {
		if err := access.Administrator(u); !errors.Is(err, svcerr.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
}
