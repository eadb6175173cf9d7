package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestCreateSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	exp := t0.Add(24 * time.Hour)
	if _, err := s.CreateSession(ctx, store.Session{UserID: u.ID, TokenDigest: digest("taken"), CSRFToken: "c", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		in   store.Session
		want error
	}{
		{"ok", store.Session{UserID: u.ID, TokenDigest: digest("ok"), CSRFToken: "csrf-1", IP: "192.0.2.1", UserAgent: "Go-test", ExpiresAt: exp}, nil},
		{"long user agent truncated", store.Session{UserID: u.ID, TokenDigest: digest("ua"), CSRFToken: "c", UserAgent: strings.Repeat("ü", 2000), ExpiresAt: exp}, nil},
		{"duplicate digest", store.Session{UserID: u.ID, TokenDigest: digest("taken"), CSRFToken: "c", ExpiresAt: exp}, svcerr.ErrConflict},
		{"unknown user", store.Session{UserID: 999999, TokenDigest: digest("nouser"), CSRFToken: "c", ExpiresAt: exp}, svcerr.ErrNotFound},
		{"digest not hex", store.Session{UserID: u.ID, TokenDigest: strings.Repeat("Z", 64), CSRFToken: "c", ExpiresAt: exp}, svcerr.ErrInvalid},
		{"digest short", store.Session{UserID: u.ID, TokenDigest: "abc", CSRFToken: "c", ExpiresAt: exp}, svcerr.ErrInvalid},
		{"no csrf token", store.Session{UserID: u.ID, TokenDigest: digest("nocsrf"), ExpiresAt: exp}, svcerr.ErrInvalid},
		{"already expired", store.Session{UserID: u.ID, TokenDigest: digest("past"), CSRFToken: "c", ExpiresAt: t0}, svcerr.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.CreateSession(ctx, tc.in)
			wantErr(t, err, tc.want)
			if err != nil {
				return
			}
			now := t0.Truncate(time.Microsecond)
			if got.ID == 0 || !got.CreatedAt.Equal(now) || !got.LastSeenAt.Equal(now) || !got.ExpiresAt.Equal(exp.Truncate(time.Microsecond)) {
				t.Fatalf("session = %+v", got)
			}
			if len([]rune(got.UserAgent)) > store.MaxUserAgentLen {
				t.Errorf("user agent kept %d characters", len([]rune(got.UserAgent)))
			}
			sess, user, err := s.SessionByDigest(ctx, tc.in.TokenDigest)
			if err != nil {
				t.Fatal(err)
			}
			if *sess != *got || user.ID != u.ID || user.Email != u.Email {
				t.Fatalf("SessionByDigest = %+v, %+v; want %+v", sess, user, got)
			}
		})
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	other := storetest.User(t, s)

	mk := func(user *store.User, name string, ttl time.Duration) *store.Session {
		t.Helper()
		sess, err := s.CreateSession(ctx, store.Session{UserID: user.ID, TokenDigest: digest(name), CSRFToken: "c-" + name, ExpiresAt: clock.Now().Add(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	short := mk(u, "short", time.Minute)
	long := mk(u, "long", time.Hour)
	third := mk(u, "third", time.Hour)
	foreign := mk(other, "foreign", time.Hour)

	// Unknown digest.
	if _, _, err := s.SessionByDigest(ctx, digest("nope")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unknown digest: %v", err)
	}

	// Sliding expiry: touching moves expiry and last_seen_at.
	clock.Advance(30 * time.Second)
	newExp := clock.Now().Add(time.Minute)
	if err := s.TouchSession(ctx, short.ID, newExp); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.SessionByDigest(ctx, digest("short"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.ExpiresAt.Equal(newExp.Truncate(time.Microsecond)) || !got.LastSeenAt.Equal(clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("touched session = %+v", got)
	}
	// Touching with the same values again still finds the row (rows matched, not changed).
	if err := s.TouchSession(ctx, short.ID, newExp); err != nil {
		t.Fatalf("idempotent touch: %v", err)
	}
	if err := s.TouchSession(ctx, 999999, newExp); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("touch unknown: %v", err)
	}

	// Expiry: the short session dies exactly at its expiry time.
	clock.Set(newExp)
	if _, _, err := s.SessionByDigest(ctx, digest("short")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("expired session: %v, want ErrNotFound", err)
	}
	if _, _, err := s.SessionByDigest(ctx, digest("long")); err != nil {
		t.Fatalf("live session: %v", err)
	}
	n, err := s.PurgeExpiredSessions(ctx)
	if err != nil || n != 1 {
		t.Fatalf("PurgeExpiredSessions = %d, %v; want 1", n, err)
	}
	if n, err := s.PurgeExpiredSessions(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want 0", n, err)
	}

	// Sign out everywhere else.
	if err := s.DeleteUserSessions(ctx, u.ID, long.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SessionByDigest(ctx, digest("third")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("session %d survived DeleteUserSessions: %v", third.ID, err)
	}
	for _, name := range []string{"long", "foreign"} {
		if _, _, err := s.SessionByDigest(ctx, digest(name)); err != nil {
			t.Fatalf("session %s: %v", name, err)
		}
	}

	// Logout, twice.
	for range 2 {
		if err := s.DeleteSession(ctx, digest("long")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.SessionByDigest(ctx, digest("long")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("after logout: %v", err)
	}
	if err := s.DeleteUserSessions(ctx, other.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SessionByDigest(ctx, digest("foreign")); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("session %d survived DeleteUserSessions(…, 0): %v", foreign.ID, err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	exp := t0.Add(time.Hour)
	const badLink = "the link is invalid or has expired"

	create := func(kind, sel, verifier, payload string, ttl time.Duration) {
		t.Helper()
		err := s.CreateToken(ctx, store.Token{Kind: kind, UserID: u.ID, Selector: sel, VerifierDigest: digest(verifier), Payload: payload, ExpiresAt: clock.Now().Add(ttl)})
		if err != nil {
			t.Fatalf("CreateToken(%s): %v", sel, err)
		}
	}

	t.Run("create validation", func(t *testing.T) {
		tests := []struct {
			name string
			in   store.Token
			want error
		}{
			{"unknown kind", store.Token{Kind: "magic", UserID: u.ID, Selector: "s1", VerifierDigest: digest("v"), ExpiresAt: exp}, svcerr.ErrInvalid},
			{"bad selector", store.Token{Kind: store.TokenVerify, UserID: u.ID, Selector: "a b", VerifierDigest: digest("v"), ExpiresAt: exp}, svcerr.ErrInvalid},
			{"long selector", store.Token{Kind: store.TokenVerify, UserID: u.ID, Selector: strings.Repeat("a", 65), VerifierDigest: digest("v"), ExpiresAt: exp}, svcerr.ErrInvalid},
			{"bad digest", store.Token{Kind: store.TokenVerify, UserID: u.ID, Selector: "s2", VerifierDigest: "v", ExpiresAt: exp}, svcerr.ErrInvalid},
			{"payload too big", store.Token{Kind: store.TokenEmailChange, UserID: u.ID, Selector: "s3", VerifierDigest: digest("v"), Payload: strings.Repeat("x", 5000), ExpiresAt: exp}, svcerr.ErrInvalid},
			{"expired", store.Token{Kind: store.TokenVerify, UserID: u.ID, Selector: "s4", VerifierDigest: digest("v"), ExpiresAt: t0.Add(-time.Second)}, svcerr.ErrInvalid},
			{"unknown user", store.Token{Kind: store.TokenVerify, UserID: 999999, Selector: "s5", VerifierDigest: digest("v"), ExpiresAt: exp}, svcerr.ErrNotFound},
		}
		for _, tc := range tests {
			wantErr(t, s.CreateToken(ctx, tc.in), tc.want)
		}
	})

	create(store.TokenEmailChange, "change1", "v-change", "new@example.com", time.Hour)
	create(store.TokenVerify, "verifyOld", "v-old", "", time.Hour)
	create(store.TokenVerify, "verifyNew", "v-new", "", time.Hour) // replaces verifyOld
	create(store.TokenReset, "resetShort", "v-reset", "", time.Minute)

	t.Run("selector already used by another user", func(t *testing.T) {
		other := storetest.User(t, s)
		err := s.CreateToken(ctx, store.Token{Kind: store.TokenVerify, UserID: other.ID, Selector: "change1", VerifierDigest: digest("x"), ExpiresAt: exp})
		wantErr(t, err, svcerr.ErrConflict)
	})

	tok, err := s.TokenBySelector(ctx, "change1")
	if err != nil || tok.Payload != "new@example.com" || tok.Kind != store.TokenEmailChange || tok.UserID != u.ID {
		t.Fatalf("TokenBySelector = %+v, %v", tok, err)
	}
	if _, err := s.TokenBySelector(ctx, "verifyOld"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("replaced token still found: %v", err)
	}

	steps := []struct {
		name                   string
		kind, sel, verifierSrc string
		ok                     bool
	}{
		{"replaced token", store.TokenVerify, "verifyOld", "v-old", false},
		{"missing selector", store.TokenVerify, "nothing", "v-new", false},
		{"malformed selector", store.TokenVerify, "no pe", "v-new", false},
		{"unknown kind", "magic", "verifyNew", "v-new", false},
		{"wrong kind", store.TokenReset, "verifyNew", "v-new", false},
		{"wrong verifier", store.TokenVerify, "verifyNew", "guess", false},
		{"right after wrong attempts", store.TokenVerify, "verifyNew", "v-new", true},
		{"reused", store.TokenVerify, "verifyNew", "v-new", false},
		{"email change", store.TokenEmailChange, "change1", "v-change", true},
	}
	for _, st := range steps {
		got, err := s.ConsumeToken(ctx, st.kind, st.sel, digest(st.verifierSrc))
		if st.ok {
			if err != nil || got.Selector != st.sel || got.UserID != u.ID || got.Kind != st.kind {
				t.Fatalf("%s: ConsumeToken = %+v, %v", st.name, got, err)
			}
			continue
		}
		if got != nil {
			t.Fatalf("%s: got token %+v", st.name, got)
		}
		wantPublic(t, err, svcerr.ErrInvalid, badLink)
	}

	// Expiry: the reset link dies exactly at its expiry and is removed on the attempt.
	clock.Advance(time.Minute)
	_, err = s.ConsumeToken(ctx, store.TokenReset, "resetShort", digest("v-reset"))
	wantPublic(t, err, svcerr.ErrInvalid, badLink)
	var left int64
	if err := s.GormDBForTest().Table("auth_tokens").Where("selector = ?", "resetShort").Count(&left).Error; err != nil || left != 0 {
		t.Fatalf("expired token left in place: %d, %v", left, err)
	}

	// Purge and per-user deletion.
	create(store.TokenReset, "r2", "v", "", time.Minute)
	create(store.TokenVerify, "v2", "v", "", time.Hour)
	clock.Advance(2 * time.Minute)
	if n, err := s.PurgeExpiredTokens(ctx); err != nil || n != 1 {
		t.Fatalf("PurgeExpiredTokens = %d, %v; want 1", n, err)
	}
	wantErr(t, s.DeleteUserTokens(ctx, u.ID, "magic"), svcerr.ErrInvalid)
	if err := s.DeleteUserTokens(ctx, u.ID, store.TokenReset); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenBySelector(ctx, "v2"); err != nil {
		t.Fatalf("verify token removed with reset tokens: %v", err)
	}
	if err := s.DeleteUserTokens(ctx, u.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenBySelector(ctx, "v2"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("token survived DeleteUserTokens(all): %v", err)
	}
}

// A link clicked twice at once is redeemed once.
func TestConsumeTokenRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s, storetest.Email("race@example.com"))
	if err := s.CreateToken(ctx, store.Token{Kind: store.TokenReset, UserID: u.ID, Selector: "race", VerifierDigest: digest("v"), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.ConsumeToken(ctx, store.TokenReset, "race", digest("v"))
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, svcerr.ErrInvalid):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("token redeemed %d times, want 1", ok)
	}
}
