package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

func TestCreateUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	now := t0.Truncate(time.Microsecond)

	first, err := s.CreateUser(ctx, store.NewUser{Email: "  First@Example.COM ", DisplayName: "First", AdminIfFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if first.Email != "first@example.com" || !first.IsAdmin() || first.PrincipalID == 0 {
		t.Fatalf("first user = %+v, want lowercased admin with a principal", first)
	}

	tests := []struct {
		name      string
		in        store.NewUser
		want      error
		wantMsg   string
		wantAdmin bool
		verified  bool
	}{
		{name: "plain", in: store.NewUser{Email: "plain@example.com", PasswordHash: "$2a$10$abc", DisplayName: "Plain"}},
		{name: "not first: AdminIfFirst grants nothing", in: store.NewUser{Email: "second@example.com", AdminIfFirst: true}},
		{name: "explicit admin", in: store.NewUser{Email: "root@example.com", Admin: true}, wantAdmin: true},
		{name: "verified", in: store.NewUser{Email: "ok@example.com", Verified: true}, verified: true},
		{name: "unicode display name", in: store.NewUser{Email: "u@example.com", DisplayName: strings.Repeat("é", limits.DisplayNameLen)}},
		{name: "duplicate same case", in: store.NewUser{Email: "first@example.com"}, want: svcerr.ErrConflict, wantMsg: "email already registered"},
		{name: "duplicate other case", in: store.NewUser{Email: "FIRST@example.com"}, want: svcerr.ErrConflict, wantMsg: "email already registered"},
		{name: "password hash not ascii", in: store.NewUser{Email: "hash@example.com", PasswordHash: "hásh"}, want: svcerr.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := s.CreateUser(ctx, tc.in)
			wantErr(t, err, tc.want)
			if tc.wantMsg != "" {
				wantPublic(t, err, tc.want, tc.wantMsg)
			}
			if tc.want != nil {
				return
			}
			if u.ID == 0 || u.PrincipalID == 0 || u.IsAdmin() != tc.wantAdmin {
				t.Fatalf("user = %+v, want admin=%v", u, tc.wantAdmin)
			}
			if !u.CreatedAt.Equal(now) || !u.UpdatedAt.Equal(now) {
				t.Errorf("timestamps = %v / %v, want %v", u.CreatedAt, u.UpdatedAt, now)
			}
			if u.EmailVerified() != tc.verified {
				t.Errorf("EmailVerifiedAt = %v, want verified=%v", u.EmailVerifiedAt, tc.verified)
			}
			got, err := s.UserByID(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(u, got); diff != "" {
				t.Errorf("UserByID differs from CreateUser result (-created +loaded):\n%s", diff)
			}
		})
	}
}

// Exactly one of many concurrent first registrations becomes administrator.
func TestCreateUserFirstAdminRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	const n = 12
	users := make([]*store.User, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			users[i], errs[i] = s.CreateUser(ctx, store.NewUser{
				Email: "racer" + string(rune('a'+i)) + "@example.com", AdminIfFirst: true,
			})
		})
	}
	close(start)
	wg.Wait()
	admins := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("CreateUser %d: %v", i, errs[i])
		}
		if users[i].IsAdmin() {
			admins++
		}
	}
	if admins != 1 {
		t.Fatalf("%d administrators after concurrent first registrations, want 1", admins)
	}
	all, err := s.ListUsers(ctx, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, u := range all {
		if u.IsAdmin() {
			stored++
		}
	}
	if len(all) != n || stored != 1 {
		t.Fatalf("stored %d users with %d admins, want %d with 1", len(all), stored, n)
	}
}

func TestUserLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s, storetest.Email("Look@Example.com"))

	tests := []struct {
		name  string
		email string
		want  error
	}{
		{"exact", "look@example.com", nil},
		{"upper case", "LOOK@EXAMPLE.COM", nil},
		{"surrounding space", " look@example.com\t", nil},
		{"unknown", "other@example.com", svcerr.ErrNotFound},
		{"empty", "", svcerr.ErrNotFound},
		{"malformed", "look", svcerr.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.UserByEmail(ctx, tc.email)
			wantErr(t, err, tc.want)
			if err == nil && got.ID != u.ID {
				t.Fatalf("UserByEmail(%q) = user %d, want %d", tc.email, got.ID, u.ID)
			}
		})
	}
	t.Run("by id unknown", func(t *testing.T) {
		t.Parallel()
		_, err := s.UserByID(ctx, u.ID+1000)
		wantErr(t, err, svcerr.ErrNotFound)
	})
}

func TestListAndCountUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	if n, err := s.CountUsers(ctx); err != nil || n != 0 {
		t.Fatalf("CountUsers on empty store = %d, %v", n, err)
	}
	if got, err := s.ListUsers(ctx, 1, 10); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("ListUsers on empty store = %#v, %v; want empty non-nil", got, err)
	}
	var ids []int64
	for _, e := range []string{"a@x.io", "b@x.io", "c@x.io", "d@x.io", "e@x.io"} {
		ids = append(ids, storetest.User(t, s, storetest.Email(e)).ID)
	}
	if err := s.GrantRole(ctx, ids[1], "operator"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountUsers(ctx); err != nil || n != 5 {
		t.Fatalf("CountUsers = %d, %v; want 5", n, err)
	}
	tests := []struct {
		page, perPage int
		want          []int64
	}{
		{1, 2, ids[0:2]},
		{2, 2, ids[2:4]},
		{3, 2, ids[4:5]},
		{4, 2, nil},
		{0, 3, ids[0:3]},  // page below 1 means 1
		{1, 0, ids},       // perPage below 1 means the default
		{1, 10000, ids},   // capped, still everything here
		{-5, -5, ids[0:]}, // both defaulted
	}
	for _, tc := range tests {
		got, err := s.ListUsers(ctx, tc.page, tc.perPage)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		for _, u := range got {
			gotIDs = append(gotIDs, u.ID)
		}
		if !slices.Equal(gotIDs, tc.want) {
			t.Errorf("ListUsers(%d, %d) = %v, want %v", tc.page, tc.perPage, gotIDs, tc.want)
		}
		for _, u := range got {
			if want := u.ID == ids[1]; slices.Contains(u.Roles, "operator") != want {
				t.Errorf("user %d roles = %v", u.ID, u.Roles)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestUpdateUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	storetest.User(t, s, storetest.Email("taken@example.com"))
	later := clock.Advance(time.Hour).Truncate(time.Microsecond)

	tests := []struct {
		name  string
		upd   store.UserUpdate
		want  error
		check func(t *testing.T, before, after *store.User)
	}{
		{
			name: "email lowercased",
			upd:  store.UserUpdate{Email: ptr("New.Address@Example.com")},
			check: func(t *testing.T, _, u *store.User) {
				if u.Email != "new.address@example.com" {
					t.Errorf("Email = %q", u.Email)
				}
			},
		},
		{name: "email taken in another case", upd: store.UserUpdate{Email: ptr("TAKEN@example.com")}, want: svcerr.ErrConflict},
		{
			name: "display name and hash",
			upd:  store.UserUpdate{DisplayName: ptr("Renamed"), PasswordHash: ptr("$argon2id$new")},
			check: func(t *testing.T, before, u *store.User) {
				if u.DisplayName != "Renamed" || u.PasswordHash != "$argon2id$new" || u.Email != before.Email {
					t.Errorf("user = %+v", u)
				}
				if !u.UpdatedAt.Equal(later) || !u.CreatedAt.Equal(before.CreatedAt) {
					t.Errorf("UpdatedAt = %v CreatedAt = %v", u.UpdatedAt, u.CreatedAt)
				}
			},
		},
		{
			name: "verify",
			upd:  store.UserUpdate{EmailVerified: ptr(true)},
			check: func(t *testing.T, _, u *store.User) {
				if u.EmailVerifiedAt == nil || !u.EmailVerifiedAt.Equal(later) {
					t.Errorf("EmailVerifiedAt = %v, want %v", u.EmailVerifiedAt, later)
				}
			},
		},
		{
			name: "pending email set then cleared",
			upd:  store.UserUpdate{PendingEmail: ptr(ptr("Next@Example.com"))},
			check: func(t *testing.T, _, u *store.User) {
				if u.PendingEmail == nil || *u.PendingEmail != "next@example.com" {
					t.Fatalf("PendingEmail = %v", u.PendingEmail)
				}
				u2, err := s.UpdateUser(ctx, u.ID, store.UserUpdate{PendingEmail: ptr[*string](nil)})
				if err != nil || u2.PendingEmail != nil {
					t.Fatalf("clear pending: %+v, %v", u2, err)
				}
			},
		},
		{
			name: "no changes",
			upd:  store.UserUpdate{},
			check: func(t *testing.T, before, u *store.User) {
				before.UpdatedAt = u.UpdatedAt
				if diff := cmp.Diff(before, u); diff != "" {
					t.Errorf("empty update changed the user:\n%s", diff)
				}
			},
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before, err := s.CreateUser(ctx, store.NewUser{Email: "u" + string(rune('a'+i)) + "@example.com", DisplayName: "U"})
			if err != nil {
				t.Fatal(err)
			}
			after, err := s.UpdateUser(ctx, before.ID, tc.upd)
			wantErr(t, err, tc.want)
			if tc.want == svcerr.ErrConflict {
				wantPublic(t, err, svcerr.ErrConflict, "email already registered")
			}
			if tc.check != nil {
				tc.check(t, before, after)
			}
		})
	}

	t.Run("unverify", func(t *testing.T) {
		t.Parallel()
		u, err := s.CreateUser(ctx, store.NewUser{Email: "verified@example.com", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		u, err = s.UpdateUser(ctx, u.ID, store.UserUpdate{EmailVerified: ptr(false)})
		if err != nil || u.EmailVerifiedAt != nil {
			t.Fatalf("unverify: %+v, %v", u, err)
		}
	})
	t.Run("verify keeps the first stamp", func(t *testing.T) {
		t.Parallel()
		u, err := s.CreateUser(ctx, store.NewUser{Email: "early@example.com", Verified: true})
		if err != nil {
			t.Fatal(err)
		}
		first := *u.EmailVerifiedAt
		u, err = s.UpdateUser(ctx, u.ID, store.UserUpdate{EmailVerified: ptr(true)})
		if err != nil || !u.EmailVerifiedAt.Equal(first) {
			t.Fatalf("re-verify: %v, %v; want %v", u.EmailVerifiedAt, err, first)
		}
	})
	t.Run("unknown user", func(t *testing.T) {
		t.Parallel()
		_, err := s.UpdateUser(ctx, 987654, store.UserUpdate{DisplayName: ptr("x")})
		wantErr(t, err, svcerr.ErrNotFound)
	})
}

func TestRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	admin := storetest.User(t, s, storetest.Email("admin@example.com"), storetest.Admin)
	u := storetest.User(t, s, storetest.Email("user@example.com"))

	steps := []struct {
		name string
		do   func() error
		want error
		msg  string
	}{
		{"grant", func() error { return s.GrantRole(ctx, u.ID, "operator") }, nil, ""},
		{"grant again is a no-op", func() error { return s.GrantRole(ctx, u.ID, "operator") }, nil, ""},
		{"grant second role", func() error { return s.GrantRole(ctx, u.ID, "auditor") }, nil, ""},
		{"grant to unknown user", func() error { return s.GrantRole(ctx, 999999, "operator") }, svcerr.ErrNotFound, ""},
		{"revoke not held", func() error { return s.RevokeRole(ctx, u.ID, "admin") }, svcerr.ErrNotFound, ""},
		{"revoke from unknown user", func() error { return s.RevokeRole(ctx, 999999, "operator") }, svcerr.ErrNotFound, ""},
		{"revoke last admin", func() error { return s.RevokeRole(ctx, admin.ID, store.RoleAdmin) }, svcerr.ErrConflict, "cannot remove the last administrator"},
		{"delete last admin", func() error { return errOf(s.DeleteUser(ctx, admin.ID)) }, svcerr.ErrConflict, "cannot remove the last administrator"},
		{"revoke auditor", func() error { return s.RevokeRole(ctx, u.ID, "auditor") }, nil, ""},
		{"promote second admin", func() error { return s.GrantRole(ctx, u.ID, store.RoleAdmin) }, nil, ""},
		{"revoke first admin now allowed", func() error { return s.RevokeRole(ctx, admin.ID, store.RoleAdmin) }, nil, ""},
		{"second is now the last", func() error { return s.RevokeRole(ctx, u.ID, store.RoleAdmin) }, svcerr.ErrConflict, "cannot remove the last administrator"},
		{"delete non-admin", func() error { return errOf(s.DeleteUser(ctx, admin.ID)) }, nil, ""},
	}
	for _, st := range steps { // sequential: each step depends on the previous ones
		err := st.do()
		if (st.want == nil) != (err == nil) || (st.want != nil && !errors.Is(err, st.want)) {
			t.Fatalf("%s: error = %v, want %v", st.name, err, st.want)
		}
		if st.msg != "" {
			wantPublic(t, err, st.want, st.msg)
		}
	}
	roles, err := s.ListRoles(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"admin", "operator"}; !slices.Equal(roles, want) {
		t.Fatalf("ListRoles = %v, want %v", roles, want)
	}
	got, err := s.UserByID(ctx, u.ID)
	if err != nil || !got.IsAdmin() || !slices.Equal(got.Roles, roles) {
		t.Fatalf("UserByID = %+v, %v", got, err)
	}
	if _, err := s.ListRoles(ctx, admin.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("ListRoles of deleted user: %v", err)
	}
	plain := storetest.User(t, s, storetest.Email("plain@example.com"))
	if roles, err := s.ListRoles(ctx, plain.ID); err != nil || roles == nil || len(roles) != 0 {
		t.Fatalf("ListRoles of plain user = %#v, %v", roles, err)
	}
}

// Two administrators removing each other's role at once must not leave the service without one.
func TestLastAdminGuardRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	a := storetest.User(t, s, storetest.Admin)
	b := storetest.User(t, s, storetest.Admin)
	var wg sync.WaitGroup
	var errA, errB error
	start := make(chan struct{})
	wg.Go(func() { <-start; errA = s.RevokeRole(ctx, a.ID, store.RoleAdmin) })
	wg.Go(func() { <-start; _, errB = s.DeleteUser(ctx, b.ID) })
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range []error{errA, errB} {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, svcerr.ErrConflict):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 2 removals succeeded (%v, %v), want exactly 1", ok, errA, errB)
	}
	var admins int64
	if err := s.GormDBForTest().Table("user_roles").Where("role = ?", store.RoleAdmin).Count(&admins).Error; err != nil {
		t.Fatal(err)
	}
	if admins != 1 {
		t.Fatalf("%d administrators left, want 1", admins)
	}
}

func TestDeleteUserCascades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewWithClock(t, clock.Now)
	storetest.User(t, s, storetest.Admin)
	u := storetest.User(t, s)
	keep := storetest.User(t, s)

	for _, id := range []int64{u.ID, keep.ID} {
		if err := s.GrantRole(ctx, id, "operator"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateSession(ctx, store.Session{UserID: id, TokenDigest: digest("s" + strconv.FormatInt(id, 10)), CSRFToken: "c", ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, store.Token{Kind: store.TokenReset, UserID: id, Selector: "sel" + strconv.FormatInt(id, 10), VerifierDigest: digest("v"), ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateLocation(ctx, id, store.Location{Name: "Home"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutProfile(ctx, id, store.Profile{FirstName: "F"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, u.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("second DeleteUser: %v, want ErrNotFound", err)
	}
	if _, err := s.UserByID(ctx, u.ID); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("UserByID after delete: %v", err)
	}
	db := s.GormDBForTest()
	for _, table := range []string{"user_roles", "sessions", "auth_tokens", "user_locations", "user_profiles"} {
		var gone, kept int64
		if err := db.Table(table).Where("user_id = ?", u.ID).Count(&gone).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Table(table).Where("user_id = ?", keep.ID).Count(&kept).Error; err != nil {
			t.Fatal(err)
		}
		if gone != 0 || kept != 1 {
			t.Errorf("%s: %d rows of the deleted user (want 0), %d of the other (want 1)", table, gone, kept)
		}
	}
	var principals int64
	if err := db.Table("principals").Where("id = ?", u.PrincipalID).Count(&principals).Error; err != nil {
		t.Fatal(err)
	}
	if principals != 0 {
		t.Errorf("principal %d of the deleted user still exists", u.PrincipalID)
	}
}
