package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestSessionCache: a session that authenticated once authenticates again without a read; its
// touch is kept in the cache; a logout or a role granted, through this process
// or another, and the session's expiry all take effect at the next authentication.
func TestSessionCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	base := storetest.NewWithClock(t, clock.Now)
	// The process under test reads the versions every time (the TTL is what
	// TestConfigVersion pins); the other process is where changes come from.
	s := storetest.Twin(t, base, func(o *store.Options) { o.VersionTTL = -1 })
	other := storetest.Twin(t, base)
	u := storetest.User(t, base)
	mk := func(name string) string {
		t.Helper()
		d := digest(name)
		if _, err := base.CreateSession(ctx, store.Session{UserID: u.ID, TokenDigest: d, CSRFToken: "c", ExpiresAt: t0.Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	auth := func(d string) (*store.Session, *store.User, error) {
		t.Helper()
		return s.SessionByDigest(ctx, d)
	}
	a, b := mk("a"), mk("b")
	first, _, err := auth(a)
	if err != nil {
		t.Fatal(err)
	}
	// Cached: the row changes under it (a touch by another process) without moving a version.
	later := t0.Add(48 * time.Hour)
	if err := other.TouchSession(ctx, first.ID, later); err != nil {
		t.Fatal(err)
	}
	if again, _, err := auth(a); err != nil || !again.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("cached session = %+v, %v; want the cached expiry %v", again, err, first.ExpiresAt)
	}
	// A touch through this process is kept in the cache.
	if err := s.TouchSession(ctx, first.ID, later); err != nil {
		t.Fatal(err)
	}
	if again, _, err := auth(a); err != nil || !again.ExpiresAt.Equal(later.Truncate(time.Microsecond)) {
		t.Fatalf("after the touch: %+v, %v", again, err)
	}
	// A role granted through another process shows at once.
	if err := other.GrantRole(ctx, u.ID, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, user, err := auth(a); err != nil || !slices.Contains(user.Roles, store.RoleAdmin) {
		t.Fatalf("after the grant: %+v, %v", user, err)
	}
	// A logout through another process ends that session only.
	if err := other.DeleteSession(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := auth(a); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("after the logout: %v", err)
	}
	if _, _, err := auth(b); err != nil {
		t.Fatalf("the other session after the logout: %v", err)
	}
	// A logout through this process.
	if err := s.DeleteSession(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := auth(b); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("after this process's logout: %v", err)
	}
	// Expiry, from the cache.
	c := mk("c")
	if _, _, err := auth(c); err != nil {
		t.Fatal(err)
	}
	clock.Advance(25 * time.Hour)
	if _, _, err := auth(c); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("after expiry: %v", err)
	}
}
