package user_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/user"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func f64(v float64) *float64 { return &v }

// TestLocationRules: a location's rules (once the store's) refuse with ErrInvalid before the
// store is asked, for a create and for an update (of an existing location or not).
func TestLocationRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ada := storetest.User(t, s)
	svc := user.New(s, nil, nil)
	home, err := svc.CreateLocation(ctx, ada, store.Location{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]store.Location{
		"without name":          {},
		"latitude out of range": {Name: "x", Latitude: f64(91), Longitude: f64(0)},
		"longitude NaN":         {Name: "x", Latitude: f64(0), Longitude: f64(math.NaN())},
		"half a coordinate":     {Name: "x", Latitude: f64(1)},
		"address too long":      {Name: "x", Address: strings.Repeat("a", limits.AddressLen+1)},
		"name not utf8":         {Name: "\xff"},
	} {
		if _, err := svc.CreateLocation(ctx, ada, l); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("create %s: %v, want ErrInvalid", name, err)
		}
		for _, id := range []int64{home.ID, 999999} {
			if _, err := svc.UpdateLocation(ctx, ada, id, l); !errors.Is(err, svcerr.ErrInvalid) {
				t.Errorf("update %d %s: %v, want ErrInvalid", id, name, err)
			}
		}
	}
	if ls, err := svc.Locations(ctx, ada); err != nil || len(ls) != 1 || ls[0].Name != "home" {
		t.Fatalf("refused requests wrote: %+v, %v", ls, err)
	}
}

// TestRoleRule: a malformed role is refused (ErrInvalid) after the account is found, so an
// unknown account still answers ErrNotFound first; nothing is granted.
func TestRoleRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	root := storetest.User(t, s, storetest.Admin)
	ada := storetest.User(t, s)
	svc := user.New(s, nil, nil)
	for _, role := range []string{"Bad Role", "", "1abc", strings.Repeat("a", store.MaxRoleLen+1)} {
		if _, err := svc.GrantRole(ctx, root, ada.ID, role); !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("grant %q: %v, want ErrInvalid", role, err)
		}
		if _, err := svc.GrantRole(ctx, root, 999999, role); !errors.Is(err, svcerr.ErrNotFound) {
			t.Errorf("grant %q to an unknown account: %v, want ErrNotFound", role, err)
		}
	}
	if roles, err := svc.Roles(ctx, root, ada.ID); err != nil || len(roles) != 0 {
		t.Fatalf("roles after refused grants: %v, %v", roles, err)
	}
	for _, role := range []string{"operator", "a.b-c_1"} {
		if err := user.CheckRole(role); err != nil {
			t.Errorf("CheckRole(%q): %v", role, err)
		}
	}
}
