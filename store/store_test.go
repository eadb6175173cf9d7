package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// t0 is where fake clocks start: far enough in the future that the real clock never passes it.
var t0 = time.Date(2031, 3, 4, 5, 6, 7, 123456789, time.UTC)

func TestMain(m *testing.M) {
	fmt.Fprintf(os.Stderr, "store tests on %s\n", storetest.Dialect())
	os.Exit(m.Run())
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// wantErr checks that err belongs to category want (nil: no error).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error = %v, want category %v", err, want)
	}
}

// wantPublic checks the caller-facing message of a categorised error.
func wantPublic(t *testing.T, err, kind error, msg string) {
	t.Helper()
	got, gotKind, ok := svcerr.Public(err)
	if !ok || gotKind != kind || got != msg {
		t.Fatalf("error = %v (public %q, %v, %v), want %v %q", err, got, gotKind, ok, kind, msg)
	}
}

// TestOpenBoundsThePool: the connection pool is bounded on both dialects: by MaxOpenConns, or
// by the dialect's default when it is zero.
func TestOpenBoundsThePool(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	if got, want := s.MaxOpenConns(), store.DefaultMaxOpenConns(s.Dialect()); got != want || want < 1 {
		t.Fatalf("default pool %d, want %d", got, want)
	}
	small, err := store.Open(context.Background(), store.Options{Driver: "sqlite", SQLitePath: filepath.Join(t.TempDir(), "x.db"), MaxOpenConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if got := small.MaxOpenConns(); got != 3 {
		t.Fatalf("pool %d, want 3", got)
	}
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		opts store.Options
		want error
	}{
		{"unknown driver", store.Options{Driver: "postgres"}, svcerr.ErrInvalid},
		{"sqlite without path", store.Options{Driver: "sqlite"}, svcerr.ErrInvalid},
		{"sqlite path with query", store.Options{Driver: "sqlite", SQLitePath: "a?b"}, svcerr.ErrInvalid},
		{"sqlite negative busy timeout", store.Options{Driver: "sqlite", SQLitePath: filepath.Join(t.TempDir(), "x.db"), SQLiteBusyTimeout: -1}, svcerr.ErrInvalid},
		{"mysql without DSN", store.Options{Driver: "mysql"}, svcerr.ErrInvalid},
		{"negative pool", store.Options{Driver: "sqlite", SQLitePath: filepath.Join(t.TempDir(), "x.db"), MaxOpenConns: -1}, svcerr.ErrInvalid},
		{"mariadb bad DSN", store.Options{Driver: "mariadb", MySQLDSN: "not a dsn"}, svcerr.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := store.Open(ctx, tc.opts)
			if err == nil {
				s.Close()
			}
			wantErr(t, err, tc.want)
		})
	}

	t.Run("sqlite creates parent directory", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "nested", "dir", "svc.sqlite")
		s, err := store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: path, SQLiteBusyTimeout: 1000})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Dialect() != store.DialectSQLite {
			t.Errorf("Dialect() = %q", s.Dialect())
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := s.GormDBForTest().Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q, %v; want wal", mode, err)
		}
	})
}

func TestDialectAndPing(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	if s.Dialect() != storetest.Dialect() {
		t.Errorf("Dialect() = %q, storetest says %q", s.Dialect(), storetest.Dialect())
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTranslateError(t *testing.T) {
	t.Parallel()
	categorised := svcerr.New(svcerr.ErrConflict, "taken")
	other := errors.New("disk on fire")
	tests := []struct {
		name string
		in   error
		want error // category; nil means the error must come back unchanged
	}{
		{"nil", nil, nil},
		{"record not found", fmt.Errorf("load: %w", gorm.ErrRecordNotFound), svcerr.ErrNotFound},
		{"duplicated key", gorm.ErrDuplicatedKey, svcerr.ErrConflict},
		{"foreign key", gorm.ErrForeignKeyViolated, svcerr.ErrInvalid},
		{"already categorised", categorised, nil},
		{"context", context.Canceled, nil},
		{"other", other, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := store.TranslateError(tc.in)
			if tc.want == nil {
				if got != tc.in {
					t.Fatalf("TranslateError(%v) = %v, want it unchanged", tc.in, got)
				}
				return
			}
			if !errors.Is(got, tc.want) || !errors.Is(got, tc.in) {
				t.Fatalf("TranslateError(%v) = %v, want %v wrapping the original", tc.in, got, tc.want)
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(t0)
	s := storetest.NewUnmigrated(t, clock.Now)

	st, err := s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) == 0 || st[0].Version != 1 || st[0].Name != "accounts" || st[0].Applied || st[0].AppliedAt != nil {
		t.Fatalf("status before Migrate = %+v", st)
	}

	// Concurrent runs (two processes starting together) apply each migration once.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}

	clock.Advance(time.Hour)
	if err := s.Migrate(ctx); err != nil { // idempotent
		t.Fatalf("second Migrate: %v", err)
	}
	st, err = s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st {
		if !m.Applied || m.AppliedAt == nil || m.Unknown {
			t.Errorf("migration %04d_%s not applied: %+v", m.Version, m.Name, m)
			continue
		}
		if want := t0.Truncate(time.Microsecond); !m.AppliedAt.Equal(want) {
			t.Errorf("migration %d applied at %v, want %v (not re-applied)", m.Version, m.AppliedAt, want)
		}
	}
	var n int64
	if err := s.GormDBForTest().Table("schema_migrations").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if int(n) != len(st) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(st))
	}

	// A version recorded by a newer release shows up as unknown.
	if err := s.GormDBForTest().Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", 9999, "future", t0).Error; err != nil {
		t.Fatal(err)
	}
	st, err = s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := st[len(st)-1]; last.Version != 9999 || !last.Unknown || !last.Applied {
		t.Fatalf("last status = %+v, want unknown 9999", last)
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	db := s.GormDBForTest()
	err := db.Exec(`INSERT INTO sessions (user_id, token_digest, csrf_token, ip, user_agent, created_at, last_seen_at, expires_at)
		VALUES (?, ?, 'c', '', '', ?, ?, ?)`, 424242, digest("fk"), t0, t0, t0).Error
	if err == nil {
		t.Fatal("insert with a dangling user_id succeeded: foreign keys are off")
	}
	wantErr(t, store.TranslateError(err), svcerr.ErrInvalid)
}

// TestTxRetriesDeadlock: a transaction that loses a deadlock (MySQL/MariaDB roll it back whole)
// runs again, up to a bound; other errors are not retried.
func TestTxRetriesDeadlock(t *testing.T) {
	s := storetest.New(t)
	ctx := context.Background()
	runs := 0
	err := s.TxForTest(ctx, func(tx *gorm.DB) error {
		runs++
		if runs < 3 {
			return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
		}
		return nil
	})
	if err != nil || runs != 3 {
		t.Fatalf("deadlocked twice: err %v after %d runs, want success on the third", err, runs)
	}
	runs = 0
	if err := s.TxForTest(ctx, func(*gorm.DB) error { runs++; return &mysql.MySQLError{Number: 1213} }); err == nil || runs != 4 {
		t.Fatalf("always deadlocked: err %v after %d runs, want an error after 4", err, runs)
	}
	runs = 0
	if err := s.TxForTest(ctx, func(*gorm.DB) error { runs++; return &mysql.MySQLError{Number: 1062} }); err == nil || runs != 1 {
		t.Fatalf("duplicate key: err %v after %d runs, want one run", err, runs)
	}
}

// TestMySQLTransactionsReadCommitted: on MySQL/MariaDB every connection of the store's pool,
// through its own driver and through a wrapper of store.MySQLDriver (the counting one), runs its
// transactions under READ COMMITTED without the claim asking for it per transaction (which cost
// the claim a round trip: the driver sends the level as a statement of its own).
func TestMySQLTransactionsReadCommitted(t *testing.T) {
	if storetest.Dialect() != store.DialectMySQL {
		t.Skip("MySQL/MariaDB only: SQLite has one writer, PostgreSQL reads committed by default")
	}
	t.Parallel()
	ctx := context.Background()
	plain := storetest.New(t)
	counted, _ := storetest.NewCounted(t)
	for name, s := range map[string]*store.Store{"store's driver": plain, "counting wrapper": counted} {
		for range 3 {
			// The variable is transaction_isolation on MySQL 8 and MariaDB 11.1+, tx_isolation
			// before; both where both exist.
			var vars []struct {
				VariableName string `gorm:"column:Variable_name"`
				Value        string `gorm:"column:Value"`
			}
			err := s.TxForTest(ctx, func(tx *gorm.DB) error {
				return tx.Raw("SHOW SESSION VARIABLES WHERE Variable_name IN ('tx_isolation', 'transaction_isolation')").Scan(&vars).Error
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(vars) == 0 {
				t.Fatalf("%s: the server shows no isolation variable", name)
			}
			for _, v := range vars {
				if v.Value != "READ-COMMITTED" {
					t.Errorf("%s: a transaction's %s is %q, want READ-COMMITTED", name, v.VariableName, v.Value)
				}
			}
		}
	}
}
