package apikey_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/apikey"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

var t0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// world: owner owns a personal agent and a group agent; gadmin is a group admin, member a
// plain member, stranger is outside; admin is an administrator.
type world struct {
	st                                     *store.Store
	svc                                    *apikey.Service
	clock                                  *testkit.Clock
	owner, gadmin, member, stranger, admin *store.User
	personal, team                         *store.Agent
	personalID, teamID                     string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{clock: testkit.NewClock(t0)}
	w.st = storetest.NewWithClock(t, w.clock.Now)
	w.svc = apikey.New(w.st, w.clock.Now)
	w.admin = storetest.User(t, w.st, storetest.Admin)
	w.owner, w.gadmin, w.member, w.stranger = storetest.User(t, w.st), storetest.User(t, w.st), storetest.User(t, w.st), storetest.User(t, w.st)
	g := storetest.Group(t, w.st, w.owner)
	for u, role := range map[*store.User]string{w.gadmin: store.GroupRoleAdmin, w.member: "member"} {
		if _, err := w.st.AddGroupMember(ctx, g.ID, u.ID, role, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.personal, w.team = storetest.Agent(t, w.st, w.owner.PrincipalID), storetest.Agent(t, w.st, g.PrincipalID)
	w.personalID, w.teamID = strconv.FormatInt(w.personal.ID, 10), strconv.FormatInt(w.team.ID, 10)
	return w
}

func TestKeyManagementRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	tests := []struct {
		name  string
		u     *store.User
		agent string
		want  error
	}{
		{"owner, personal agent", w.owner, w.personalID, nil},
		{"owner, group agent", w.owner, w.teamID, nil},
		{"group admin", w.gadmin, w.teamID, nil},
		{"administrator", w.admin, w.personalID, nil},
		{"plain member", w.member, w.teamID, svcerr.ErrForbidden},
		{"invisible agent", w.stranger, w.teamID, svcerr.ErrNotFound},
		{"invisible personal agent", w.member, w.personalID, svcerr.ErrNotFound},
		{"unknown agent", w.owner, "999999", svcerr.ErrNotFound},
		{"malformed agent id", w.owner, "01", svcerr.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, full, err := w.svc.Create(ctx, tc.u, tc.agent, "  "+tc.name+"  ")
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("Create = %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				if k.Name != tc.name || k.CreatedBy != tc.u.ID || !strings.HasPrefix(full, "svk_"+k.KeyID+"_") {
					t.Fatalf("Create = %+v, %q", k, full)
				}
			}
			_, err = w.svc.List(ctx, tc.u, tc.agent)
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("List = %v, want %v", err, tc.want)
			}
			err = w.svc.Revoke(ctx, tc.u, tc.agent, "nosuchkey")
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("Revoke = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCreateName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	for _, name := range []string{"", "   ", "\t\n", strings.Repeat("x", 101), " " + strings.Repeat("é", 101), "a\x00b", "\xff"} {
		if _, _, err := w.svc.Create(ctx, w.owner, w.personalID, name); !errors.Is(err, svcerr.ErrInvalid) {
			t.Fatalf("Create(name %q) = %v, want ErrInvalid", name, err)
		}
	}
	k, _, err := w.svc.Create(ctx, w.owner, w.personalID, " "+strings.Repeat("é", 100)+" ")
	if err != nil || k.Name != strings.Repeat("é", 100) {
		t.Fatalf("Create(100 characters) = %+v, %v", k, err)
	}
	list, err := w.svc.List(ctx, w.owner, w.personalID)
	if err != nil || len(list) != 1 {
		t.Fatalf("refused names were stored: %+v, %v", list, err)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	k, full, err := w.svc.Create(ctx, w.owner, w.personalID, "integration")
	if err != nil {
		t.Fatal(err)
	}
	_, revokedFull, err := w.svc.Create(ctx, w.owner, w.personalID, "old")
	if err != nil {
		t.Fatal(err)
	}
	revokedID, _, _ := apikey.Parse(revokedFull)
	if err := w.svc.Revoke(ctx, w.owner, w.personalID, revokedID); err != nil {
		t.Fatal(err)
	}
	id, secret, _ := apikey.Parse(full)
	wrongSecret := []byte(secret)
	wrongSecret[0] ^= 1
	unknown := apikey.Mint().Key

	got, err := w.svc.Authenticate(ctx, "Bearer "+full)
	if err != nil || got.ID != k.ID || got.AgentID != w.personal.ID {
		t.Fatalf("Authenticate(valid) = %+v, %v", got, err)
	}
	if got, err := w.svc.Authenticate(ctx, "bearer "+full); err != nil || got.ID != k.ID {
		t.Fatalf("scheme is case-insensitive: %+v, %v", got, err)
	}

	refused := map[string]string{
		"missing":         "",
		"basic":           "Basic " + full,
		"no scheme":       full,
		"scheme only":     "Bearer",
		"empty token":     "Bearer ",
		"two spaces":      "Bearer  " + full,
		"malformed":       "Bearer svk_nope",
		"unknown id":      "Bearer " + unknown,
		"wrong secret":    "Bearer svk_" + id + "_" + string(wrongSecret),
		"revoked":         "Bearer " + revokedFull,
		"trailing data":   "Bearer " + full + " x",
		"session cookie":  "Cookie svc_session=abc",
		"secret as token": "Bearer " + secret,
	}
	for name, header := range refused {
		t.Run(name, func(t *testing.T) {
			got, err := w.svc.Authenticate(ctx, header)
			if got != nil || !errors.Is(err, svcerr.ErrUnauthenticated) || err.Error() != apikey.ErrUnauthenticated.Error() {
				t.Fatalf("Authenticate(%s) = %+v, %v; want the one ErrUnauthenticated", name, got, err)
			}
		})
	}
}

func TestTouch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	_, full, err := w.svc.Create(ctx, w.owner, w.personalID, "integration")
	if err != nil {
		t.Fatal(err)
	}
	use := func() *time.Time {
		t.Helper()
		k, err := w.svc.Authenticate(ctx, "Bearer "+full)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.svc.Touch(ctx, k); err != nil {
			t.Fatal(err)
		}
		list, err := w.svc.List(ctx, w.owner, w.personalID)
		if err != nil || len(list) != 1 {
			t.Fatal(list, err)
		}
		return list[0].LastUsedAt
	}
	first := w.clock.Now()
	if got := use(); got == nil || !got.Equal(first) {
		t.Fatalf("last_used_at after first use = %v, want %v", got, first)
	}
	w.clock.Advance(40 * time.Second)
	if got := use(); !got.Equal(first) {
		t.Fatalf("last_used_at within a minute = %v, want unchanged %v", got, first)
	}
	later := w.clock.Advance(30 * time.Second)
	if got := use(); !got.Equal(later) {
		t.Fatalf("last_used_at after 70 s = %v, want %v", got, later)
	}
}
