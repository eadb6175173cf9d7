package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestProfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)

	p, err := s.Profile(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&store.Profile{UserID: u.ID}, p); diff != "" {
		t.Fatalf("empty profile (-want +got):\n%s", diff)
	}

	want := store.Profile{UserID: u.ID, FirstName: "Ada", LastName: "Lovelace", Locale: "en-GB", Timezone: "Europe/London", Bio: strings.Repeat("ünïcode ", 1000), UpdatedAt: t0.Truncate(time.Microsecond)}
	got, err := s.PutProfile(ctx, u.ID, store.Profile{UserID: 12345, FirstName: want.FirstName, LastName: want.LastName, Locale: want.Locale, Timezone: want.Timezone, Bio: want.Bio})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("PutProfile (-want +got):\n%s", diff)
	}
	if got, err = s.Profile(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("Profile after put (-want +got):\n%s", diff)
	}

	// Replace: fields left empty are cleared.
	clock.Advance(time.Minute)
	want = store.Profile{UserID: u.ID, FirstName: "Augusta", UpdatedAt: clock.Now().Truncate(time.Microsecond)}
	got, err = s.PutProfile(ctx, u.ID, store.Profile{FirstName: "Augusta"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("PutProfile replace (-want +got):\n%s", diff)
	}
	if got, err = s.Profile(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("Profile after replace (-want +got):\n%s", diff)
	}

	tests := []struct {
		name string
		user int64
		in   store.Profile
		want error
	}{
		{"unknown user", 999999, store.Profile{FirstName: "x"}, svcerr.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.PutProfile(ctx, tc.user, tc.in)
			wantErr(t, err, tc.want)
		})
	}
	t.Run("get unknown user", func(t *testing.T) {
		t.Parallel()
		_, err := s.Profile(ctx, 999999)
		wantErr(t, err, svcerr.ErrNotFound)
	})
}

func f64(v float64) *float64 { return &v }

func TestLocations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	other := storetest.User(t, s)

	if got, err := s.ListLocations(ctx, u.ID); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ListLocations on none = %#v, %v; want empty non-nil", got, err)
	}

	home, err := s.CreateLocation(ctx, u.ID, store.Location{Name: "Home", Address: "1 Main St", Latitude: f64(51.5), Longitude: f64(-0.12), IsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Truncate(time.Microsecond)
	wantHome := &store.Location{ID: home.ID, UserID: u.ID, Name: "Home", Address: "1 Main St", Latitude: f64(51.5), Longitude: f64(-0.12), IsDefault: true, CreatedAt: now, UpdatedAt: now}
	if diff := cmp.Diff(wantHome, home); diff != "" {
		t.Fatalf("CreateLocation (-want +got):\n%s", diff)
	}
	clock.Advance(time.Minute)
	office, err := s.CreateLocation(ctx, u.ID, store.Location{Name: "Office", IsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := s.CreateLocation(ctx, other.ID, store.Location{Name: "Elsewhere", IsDefault: true})
	if err != nil {
		t.Fatal(err)
	}

	defaults := func(userID int64) map[string]bool {
		t.Helper()
		list, err := s.ListLocations(ctx, userID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, l := range list {
			out[l.Name] = l.IsDefault
		}
		return out
	}
	if diff := cmp.Diff(map[string]bool{"Home": false, "Office": true}, defaults(u.ID)); diff != "" {
		t.Fatalf("a new default did not clear the old one (-want +got):\n%s", diff)
	}
	if !defaults(other.ID)["Elsewhere"] {
		t.Fatal("another user's default was cleared")
	}

	// Updating home back to default clears office, in the same transaction.
	clock.Advance(time.Minute)
	upd, err := s.UpdateLocation(ctx, u.ID, home.ID, store.Location{Name: "Home sweet home", IsDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Name != "Home sweet home" || upd.Latitude != nil || upd.Address != "" || !upd.CreatedAt.Equal(now) || !upd.UpdatedAt.Equal(clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("UpdateLocation = %+v", upd)
	}
	if diff := cmp.Diff(map[string]bool{"Home sweet home": true, "Office": false}, defaults(u.ID)); diff != "" {
		t.Fatalf("defaults after update (-want +got):\n%s", diff)
	}
	list, err := s.ListLocations(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != home.ID || list[1].ID != office.ID {
		t.Fatalf("ListLocations order = %+v", list)
	}
	if diff := cmp.Diff(*upd, list[0]); diff != "" {
		t.Fatalf("listed location differs from update result:\n%s", diff)
	}

	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"create for unknown user", func() error { _, err := s.CreateLocation(ctx, 999999, store.Location{Name: "x"}); return err }, svcerr.ErrNotFound},
		{"list for unknown user", func() error { _, err := s.ListLocations(ctx, 999999); return err }, svcerr.ErrNotFound},
		{"update another user's location", func() error {
			_, err := s.UpdateLocation(ctx, u.ID, foreign.ID, store.Location{Name: "mine now"})
			return err
		}, svcerr.ErrNotFound},
		{"update missing", func() error { _, err := s.UpdateLocation(ctx, u.ID, 999999, store.Location{Name: "x"}); return err }, svcerr.ErrNotFound},
		{"delete another user's location", func() error { return s.DeleteLocation(ctx, u.ID, foreign.ID) }, svcerr.ErrNotFound},
		{"delete missing", func() error { return s.DeleteLocation(ctx, u.ID, 999999) }, svcerr.ErrNotFound},
	}
	for _, tc := range tests {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Fatalf("%s: error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := defaults(other.ID); !got["Elsewhere"] || len(got) != 1 {
		t.Fatalf("another user's location changed: %v", got)
	}

	if err := s.DeleteLocation(ctx, u.ID, office.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLocation(ctx, u.ID, office.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got := defaults(u.ID); len(got) != 1 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	got, err := s.Settings(ctx)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Settings on empty store = %#v, %v", got, err)
	}
	err = s.PutSettings(ctx, map[string]any{
		"site.name":   "Agents",
		"Site.Name":   "case matters", // keys compare byte for byte on every dialect
		"limits":      map[string]any{"max_steps": 50, "tools": []string{"web", "shell"}},
		"registering": true,
		"ratio":       0.25,
		"unset":       nil, // deleting a missing key is fine
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"site.name":   "Agents",
		"Site.Name":   "case matters",
		"limits":      map[string]any{"max_steps": float64(50), "tools": []any{"web", "shell"}},
		"registering": true,
		"ratio":       0.25,
	}
	if got, err = s.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Settings (-want +got):\n%s", diff)
	}

	// Overwrite one, delete two (one with an untyped nil, one with a typed nil), keep the rest.
	if err := s.PutSettings(ctx, map[string]any{"site.name": "Renamed", "ratio": nil, "registering": (*bool)(nil)}); err != nil {
		t.Fatal(err)
	}
	want["site.name"] = "Renamed"
	delete(want, "ratio")
	delete(want, "registering")
	if got, err = s.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Settings after update (-want +got):\n%s", diff)
	}
	if err := s.PutSettings(ctx, nil); err != nil {
		t.Fatalf("PutSettings(nil): %v", err)
	}

	tests := []struct {
		name string
		in   map[string]any
	}{
		{"empty key", map[string]any{"": 1}},
		{"key too long", map[string]any{strings.Repeat("k", store.MaxSettingKeyLen+1): 1}},
		{"not JSON-encodable", map[string]any{"fn": func() {}}},
		{"value too large", map[string]any{"big": strings.Repeat("x", store.MaxSettingValueLen)}},
		{"one bad key spoils the batch", map[string]any{"ok.key": 1, "": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, s.PutSettings(ctx, tc.in), svcerr.ErrInvalid)
		})
	}
	if got, err = s.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("rejected batches changed settings (-want +got):\n%s", diff)
	}
}
