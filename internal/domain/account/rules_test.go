package account_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func newService(t *testing.T, s *store.Store) *account.Service {
	t.Helper()
	svc, err := account.New(account.Options{
		Store:  s,
		Config: func() *config.Config { return &config.Config{AllowRegistration: true} },
		Hash:   account.HashParams{MemoryKiB: 64, Time: 1, Threads: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func wantInvalid(t *testing.T, name string, err error, msg string) {
	t.Helper()
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("%s: %v, want ErrInvalid", name, err)
		return
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %q, want it to say %q", name, err, msg)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAccountFieldsBeforeTheStore: the address, display name and profile rules (once the
// store's) refuse with ErrInvalid before anything is written.
func TestAccountFieldsBeforeTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	svc := newService(t, s)
	const pw = "a long enough password"

	for name, tc := range map[string]struct{ email, display, msg string }{
		"empty email":           {" ", "", "is not a valid address"},
		"email without at":      {"nobody", "", "is not a valid address"},
		"email too long":        {strings.Repeat("a", 250) + "@x.io", "", "is not a valid address"},
		"display name too long": {"long@example.com", strings.Repeat("x", limits.DisplayNameLen+1), "display_name must be at most"},
		"display name not utf8": {"utf@example.com", "\xff", "display_name must be valid UTF-8"},
	} {
		_, err := svc.CreateUser(ctx, tc.email, pw, tc.display, false, false)
		wantInvalid(t, "create: "+name, err, tc.msg)
	}
	if n, err := s.CountUsers(ctx); err != nil || n != 0 {
		t.Fatalf("refused creations wrote %d users (%v)", n, err)
	}

	u, err := svc.CreateUser(ctx, "Ada@Example.com", pw, "Ada", true, true)
	if err != nil || u.Email != "ada@example.com" {
		t.Fatalf("create: %+v, %v", u, err)
	}
	other, err := svc.CreateUser(ctx, "bob@example.com", pw, "Bob", false, false)
	if err != nil {
		t.Fatal(err)
	}

	long := strings.Repeat("x", limits.DisplayNameLen+1)
	_, err = svc.UpdateAccount(ctx, u.ID, long)
	wantInvalid(t, "own display name too long", err, "display_name must be at most")
	for name, ch := range map[string]account.UserChanges{
		"email malformed":       {Email: ptr("nope")},
		"display name too long": {DisplayName: &long},
		// the role change would be written first: the display name is refused before it
		"display name too long with a role change": {DisplayName: &long, IsAdmin: ptr(true)},
	} {
		_, err := svc.UpdateUser(ctx, other.ID, ch)
		wantInvalid(t, "update: "+name, err, "")
	}
	if got, err := s.UserByID(ctx, other.ID); err != nil || got.DisplayName != "Bob" || got.IsAdmin() {
		t.Fatalf("refused updates changed the user: %+v, %v", got, err)
	}

	for name, tc := range map[string]struct {
		p   store.Profile
		msg string
	}{
		"first name too long": {store.Profile{FirstName: strings.Repeat("x", limits.ProfileNameLen+1)}, "first_name must be at most"},
		"locale too long":     {store.Profile{Locale: strings.Repeat("x", limits.LocaleLen+1)}, "locale must be at most"},
		"bio too long":        {store.Profile{Bio: strings.Repeat("x", limits.BioLen+1)}, "bio must be at most"},
		"invalid utf-8":       {store.Profile{LastName: "\xff"}, "last_name must be valid UTF-8"},
		"unknown time zone":   {store.Profile{Timezone: "Mars/Olympus"}, "not an IANA time zone"},
	} {
		_, err := svc.PutProfile(ctx, u.ID, tc.p)
		wantInvalid(t, "profile: "+name, err, tc.msg)
	}
	if p, err := s.Profile(ctx, u.ID); err != nil || !p.UpdatedAt.IsZero() {
		t.Fatalf("refused profiles stored one: %+v, %v", p, err)
	}
}

// TestMalformedLink: a selector that cannot name a link gets the one answer of an unusable
// link, as an unknown one does.
func TestMalformedLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newService(t, storetest.New(t))
	for _, sel := range []string{"", "no pe", strings.Repeat("a", limits.SelectorLen+1), "unknown"} {
		_, err := svc.VerifyEmail(ctx, sel, "verifier")
		wantInvalid(t, "verify "+sel, err, "the link is invalid or has expired")
		_, err = svc.ConfirmEmailChange(ctx, sel, "verifier")
		wantInvalid(t, "confirm "+sel, err, "the link is invalid or has expired")
		err = svc.ResetPassword(ctx, sel, "verifier", "a long enough password")
		wantInvalid(t, "reset "+sel, err, "the link is invalid or has expired")
	}
}
