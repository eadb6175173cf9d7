package user_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/domain/user"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestAdministratorsOnly: every account operation refuses a user who is no administrator with
// ErrForbidden before it looks at anything (an unknown account included), and serves one who is.
func TestAdministratorsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	root := storetest.User(t, s, storetest.Admin)
	ada := storetest.User(t, s)
	svc := user.New(s, nil, nil)

	calls := map[string]func(by *store.User, id int64) error{
		"list":   func(by *store.User, _ int64) error { _, err := svc.List(ctx, by, 1, 25); return err },
		"get":    func(by *store.User, id int64) error { _, err := svc.Get(ctx, by, id); return err },
		"delete": func(by *store.User, id int64) error { return svc.Delete(ctx, by, id) },
		"roles":  func(by *store.User, id int64) error { _, err := svc.Roles(ctx, by, id); return err },
		"grant":  func(by *store.User, id int64) error { _, err := svc.GrantRole(ctx, by, id, "editor"); return err },
		"revoke": func(by *store.User, id int64) error { _, err := svc.RevokeRole(ctx, by, id, "editor"); return err },
		"create": func(by *store.User, _ int64) error { _, err := svc.Create(ctx, by, user.NewUser{}); return err },
		"update": func(by *store.User, id int64) error {
			_, err := svc.Update(ctx, by, id, account.UserChanges{})
			return err
		},
	}
	names := slices.Sorted(maps.Keys(calls)) // "grant" runs before "revoke", which needs its role
	for _, name := range names {
		call := calls[name]
		for _, id := range []int64{root.ID, 999999} {
			if err := call(ada, id); !errors.Is(err, svcerr.ErrForbidden) {
				t.Errorf("%s of %d by a user: %v, want ErrForbidden", name, id, err)
			}
		}
		if name == "delete" || name == "create" || name == "update" {
			continue // exercised through the API (server tests)
		}
		if err := call(root, ada.ID); err != nil {
			t.Errorf("%s by an administrator: %v", name, err)
		}
	}

	roles, err := svc.RevokeRole(ctx, root, ada.ID, "editor")
	if err == nil || !errors.Is(err, svcerr.ErrNotFound) {
		t.Errorf("revoking a role not held: %v %v", roles, err)
	}
	if roles, err = svc.GrantRole(ctx, root, ada.ID, "editor"); err != nil || !slices.Contains(roles, "editor") {
		t.Errorf("grant: %v %v", roles, err)
	}
	if _, err := svc.Roles(ctx, root, 999999); !errors.Is(err, svcerr.ErrNotFound) {
		t.Errorf("roles of an unknown account: %v, want ErrNotFound", err)
	}
}

// TestOwnLocations: a user's locations are their own; another user's answers ErrNotFound.
func TestOwnLocations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ada, bob := storetest.User(t, s), storetest.User(t, s)
	svc := user.New(s, nil, nil)
	l, err := svc.CreateLocation(ctx, ada, store.Location{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteLocation(ctx, bob, l.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Errorf("another user's location deleted: %v", err)
	}
	if ls, err := svc.Locations(ctx, ada); err != nil || len(ls) != 1 || ls[0].ID != l.ID {
		t.Errorf("locations = %+v, %v", ls, err)
	}
}
