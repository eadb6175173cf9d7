package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func newKey(agentID, userID int64, keyID, name string) store.AgentAPIKey {
	return store.AgentAPIKey{KeyID: keyID, AgentID: agentID, Name: name, SecretDigest: digest("secret-" + keyID), CreatedBy: userID}
}

func mustAPIKey(t *testing.T, s *store.Store, k store.AgentAPIKey) *store.AgentAPIKey {
	t.Helper()
	out, err := s.CreateAPIKey(context.Background(), k, nil)
	if err != nil {
		t.Fatalf("CreateAPIKey(%s): %v", k.KeyID, err)
	}
	return out
}

func keyIDs(ks []store.AgentAPIKey) string {
	ids := make([]string, 0, len(ks))
	for _, k := range ks {
		ids = append(ids, k.KeyID)
	}
	return strings.Join(ids, ",")
}

func TestCreateAPIKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	now := t0.Truncate(time.Microsecond)

	k := mustAPIKey(t, s, newKey(a.ID, u.ID, "abcdefgh23456789", "n8n workflow"))
	if k.ID == 0 || k.KeyID != "abcdefgh23456789" || k.AgentID != a.ID || k.Name != "n8n workflow" || k.CreatedBy != u.ID ||
		k.SecretDigest != digest("secret-abcdefgh23456789") || !k.CreatedAt.Equal(now) || k.LastUsedAt != nil || k.RevokedAt != nil {
		t.Fatalf("created = %+v", k)
	}
	got, err := s.APIKeyByKeyID(ctx, k.KeyID)
	if err != nil || *got != *k {
		t.Fatalf("APIKeyByKeyID = %+v, %v; want %+v", got, err, k)
	}

	tests := []struct {
		name string
		k    store.AgentAPIKey
		want error
	}{
		// The name, key id and digest rules are package apikey's (tested there).
		{"unknown agent", newKey(a.ID+999, u.ID, "k5", "x"), svcerr.ErrNotFound},
		{"unknown user", newKey(a.ID, u.ID+999, "k6", "x"), svcerr.ErrNotFound},
		{"duplicate key id", newKey(a.ID, u.ID, "abcdefgh23456789", "again"), svcerr.ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateAPIKey(ctx, tc.k, nil)
			wantErr(t, err, tc.want)
		})
	}
	t.Run("longest name", func(t *testing.T) {
		mustAPIKey(t, s, newKey(a.ID, u.ID, "k7", strings.Repeat("é", 100)))
	})
	t.Run("check refuses", func(t *testing.T) {
		_, err := s.CreateAPIKey(ctx, newKey(a.ID, u.ID, "k8", "x"), func(got *store.Agent) error {
			if got.ID != a.ID {
				t.Errorf("check saw agent %d", got.ID)
			}
			return svcerr.New(svcerr.ErrForbidden, "no")
		})
		wantErr(t, err, svcerr.ErrForbidden)
		if _, err := s.APIKeyByKeyID(ctx, "k8"); !errors.Is(err, svcerr.ErrNotFound) {
			t.Fatalf("refused key was stored: %v", err)
		}
	})
}

func TestAPIKeysListAndRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("A"))
	b := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("B"))

	mustAPIKey(t, s, newKey(a.ID, u.ID, "first", "one"))
	clock.Advance(time.Second)
	mustAPIKey(t, s, newKey(a.ID, u.ID, "second", "two"))
	mustAPIKey(t, s, newKey(a.ID, u.ID, "third", "three")) // same instant as second: id breaks the tie
	mustAPIKey(t, s, newKey(b.ID, u.ID, "other", "b's"))

	list := func(agentID int64) string {
		t.Helper()
		ks, err := s.APIKeys(ctx, agentID)
		if err != nil {
			t.Fatal(err)
		}
		return keyIDs(ks)
	}
	if got := list(a.ID); got != "third,second,first" {
		t.Fatalf("APIKeys(a) = %s", got)
	}
	if got := list(b.ID + 999); got != "" {
		t.Fatalf("APIKeys(unknown) = %q", got)
	}

	clock.Advance(time.Minute)
	revokedAt := clock.Now().Truncate(time.Microsecond)
	if err := s.RevokeAPIKey(ctx, a.ID, "second", nil); err != nil {
		t.Fatal(err)
	}
	// Idempotent; other agents' keys and unknown or malformed ids are left alone.
	clock.Advance(time.Minute)
	for _, id := range []string{"second", "other", "nope", "bad_id", ""} {
		if err := s.RevokeAPIKey(ctx, a.ID, id, nil); err != nil {
			t.Fatalf("RevokeAPIKey(%q): %v", id, err)
		}
	}
	if got := list(a.ID); got != "third,first" {
		t.Fatalf("after revoke APIKeys(a) = %s", got)
	}
	if got := list(b.ID); got != "other" {
		t.Fatalf("APIKeys(b) = %s: revoking through agent a touched b's key", got)
	}
	k, err := s.APIKeyByKeyID(ctx, "second")
	if err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(revokedAt) {
		t.Fatalf("revoked key = %+v, %v; want revoked_at %v (the first revocation)", k, err, revokedAt)
	}
	if err := s.RevokeAPIKey(ctx, a.ID+999, "first", nil); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("RevokeAPIKey(unknown agent) = %v, want ErrNotFound", err)
	}
	err = s.RevokeAPIKey(ctx, a.ID, "first", func(*store.Agent) error { return svcerr.New(svcerr.ErrForbidden, "no") })
	wantErr(t, err, svcerr.ErrForbidden)
	if got := list(a.ID); got != "third,first" {
		t.Fatalf("refused revoke changed the keys: %s", got)
	}

	for _, id := range []string{"nope", "", "bad_id", strings.Repeat("x", 65)} {
		if _, err := s.APIKeyByKeyID(ctx, id); !errors.Is(err, svcerr.ErrNotFound) {
			t.Fatalf("APIKeyByKeyID(%q) = %v, want ErrNotFound", id, err)
		}
	}

	// Deleting the agent removes its keys.
	if err := s.DeleteAgent(ctx, b.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKeyByKeyID(ctx, "other"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("key of a deleted agent: %v", err)
	}
}

func TestTouchAPIKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID, storetest.AgentNamed("A"))
	k := mustAPIKey(t, s, newKey(a.ID, u.ID, "touched", "t"))
	other := mustAPIKey(t, s, newKey(a.ID, u.ID, "untouched", "u"))

	lastUsed := func(keyID string) *time.Time {
		t.Helper()
		got, err := s.APIKeyByKeyID(ctx, keyID)
		if err != nil {
			t.Fatal(err)
		}
		return got.LastUsedAt
	}
	at := t0.Add(time.Hour)
	steps := []struct {
		now  time.Time
		want time.Time
	}{
		{at, at},                                   // first use is recorded
		{at.Add(30 * time.Second), at},             // within the interval: no write
		{at.Add(59 * time.Second), at},             // still within
		{at.Add(time.Minute), at.Add(time.Minute)}, // a minute later: written
		{at.Add(90 * time.Second), at.Add(time.Minute)},
		{at.Add(time.Hour), at.Add(time.Hour)},
	}
	for i, st := range steps {
		if err := s.TouchAPIKey(ctx, k.ID, st.now); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed("touched"); got == nil || !got.Equal(st.want.Truncate(time.Microsecond)) {
			t.Fatalf("step %d: last_used_at = %v, want %v", i, got, st.want)
		}
	}
	if got := lastUsed("untouched"); got != nil {
		t.Fatalf("other key's last_used_at = %v", got)
	}
	if err := s.TouchAPIKey(ctx, other.ID+999, at); err != nil {
		t.Fatalf("touch of a missing key: %v", err)
	}
}
