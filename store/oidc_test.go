package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestOIDCStateOneTime: a sign-in state is consumed by its first take; an expired state, a
// state of another kind or another provider is refused (and consumed all the same); a link
// ticket can be read without being consumed until taken.
func TestOIDCStateOneTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := t0
	s := storetest.NewWithClock(t, func() time.Time { return now })
	p, err := s.Principals.CreateOIDCProvider(ctx, store.OIDCProvider{Slug: "corp", DisplayName: "Corp", IssuerURL: "https://idp.example.com",
		ClientID: "c", ClientSecretSealed: "sealed", Scopes: "openid", GroupMappings: "[]"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Principals.CreateOIDCProvider(ctx, store.OIDCProvider{Slug: "corp", GroupMappings: "[]"}); !errors.Is(err, svcerr.ErrConflict) {
		t.Fatalf("second provider with the slug: %v", err)
	}
	put := func(digest, kind string, ttl time.Duration, user *int64) {
		t.Helper()
		if err := s.Principals.CreateOIDCState(ctx, store.OIDCState{StateDigest: digest, Kind: kind, ProviderID: p.ID,
			Nonce: "n", PkceVerifier: "v", UserID: user, ExpiresAt: now.Add(ttl)}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", store.OIDCStateLogin, time.Minute, nil)
	st, err := s.Principals.TakeOIDCState(ctx, "a", store.OIDCStateLogin, p.ID)
	if err != nil || st.Nonce != "n" || st.PkceVerifier != "v" {
		t.Fatalf("first take: %+v %v", st, err)
	}
	if _, err := s.Principals.TakeOIDCState(ctx, "a", store.OIDCStateLogin, p.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("replayed state: %v", err)
	}
	put("b", store.OIDCStateLogin, time.Minute, nil)
	now = now.Add(2 * time.Minute)
	if _, err := s.Principals.TakeOIDCState(ctx, "b", store.OIDCStateLogin, p.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("expired state: %v", err)
	}
	put("c", store.OIDCStateLogin, time.Minute, nil)
	if _, err := s.Principals.TakeOIDCState(ctx, "c", store.OIDCStateLink, p.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("state of another kind: %v", err)
	}
	if _, err := s.Principals.TakeOIDCState(ctx, "c", store.OIDCStateLogin, p.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("a refused state must be consumed: %v", err)
	}

	u := storetest.User(t, s)
	put("l", store.OIDCStateLink, time.Minute, &u.ID)
	for i := 0; i < 2; i++ {
		if got, err := s.Principals.PeekOIDCLink(ctx, "l"); err != nil || *got.UserID != u.ID {
			t.Fatalf("peek %d: %+v %v", i, got, err)
		}
	}
	if _, err := s.Principals.TakeOIDCState(ctx, "l", store.OIDCStateLink, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Principals.PeekOIDCLink(ctx, "l"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("peek after take: %v", err)
	}
	if err := s.Principals.DeleteOIDCProvider(ctx, "corp"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Principals.OIDCProviderBySlug(ctx, "corp"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("deleted provider: %v", err)
	}
}

// TestSyncSourcedMemberships: mapped memberships are added, changed and removed under their
// source only; manual ones are never touched.
func TestSyncSourcedMemberships(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	owner := storetest.User(t, s)
	u := storetest.User(t, s)
	g1, err := s.Principals.CreateGroup(ctx, owner.ID, "One", "")
	if err != nil {
		t.Fatal(err)
	}
	g2, err := s.Principals.CreateGroup(ctx, u.ID, "Two", "") // u owns it manually
	if err != nil {
		t.Fatal(err)
	}
	src := "oidc:corp"
	sync := func(want ...store.MappedMembership) {
		t.Helper()
		if err := s.Principals.SyncSourcedMemberships(ctx, u.ID, src, want); err != nil {
			t.Fatal(err)
		}
	}
	member := func(g int64) *store.GroupMember {
		m, err := s.Principals.GroupMember(ctx, g, u.ID)
		if errors.Is(err, svcerr.ErrNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sync(store.MappedMembership{GroupID: g1.ID, Role: store.GroupRoleMember}, store.MappedMembership{GroupID: g2.ID, Role: store.GroupRoleMember},
		store.MappedMembership{GroupID: 999999, Role: store.GroupRoleMember})
	if m := member(g1.ID); m == nil || m.Role != store.GroupRoleMember || m.Source != src {
		t.Fatalf("mapped membership %+v", m)
	}
	if m := member(g2.ID); m == nil || m.Role != store.GroupRoleOwner || m.Source != store.MemberSourceManual {
		t.Fatalf("the manual ownership changed: %+v", m)
	}
	sync(store.MappedMembership{GroupID: g1.ID, Role: store.GroupRoleAdmin})
	if m := member(g1.ID); m == nil || m.Role != store.GroupRoleAdmin {
		t.Fatalf("role change %+v", m)
	}
	sync()
	if m := member(g1.ID); m != nil {
		t.Fatalf("mapped membership stayed: %+v", m)
	}
	if m := member(g2.ID); m == nil || m.Role != store.GroupRoleOwner {
		t.Fatalf("the manual ownership was removed: %+v", m)
	}
}
