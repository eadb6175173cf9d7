package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentsvc/svc/store"
)

// TestSQLitePageSize: a database file the store creates has store.SQLitePageSize pages; one
// that exists keeps its own (here SQLite's default, 4096) and opens as before.
func TestSQLitePageSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pageSize := func(s *store.Store) int {
		t.Helper()
		var n int
		if err := s.GormDBForTest().Raw("PRAGMA page_size").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	s, err := store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: fresh})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pageSize(s); got != store.SQLitePageSize {
		t.Fatalf("a new database has %d-byte pages, want %d", got, store.SQLitePageSize)
	}
	s.Close()

	old := filepath.Join(dir, "old.db")
	db, err := sql.Open("sqlite3", old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA page_size = 4096; CREATE TABLE before_us (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: old})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pageSize(s); got != 4096 {
		t.Fatalf("an existing database's pages became %d bytes, want 4096", got)
	}
}

// TestSQLiteTemporaryStorageInMemory: every connection of the store's pool keeps SQLite's
// temporary storage in memory (temp_store 2), through the store's own driver and through a
// wrapper of SQLiteDriver (as /metrics counts statements): on the file-backed default each
// UPDATE/INSERT … RETURNING set up a pager for its rows, ~250 µs a statement.
func TestSQLiteTemporaryStorageInMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sql.Register("temp-store-test", store.SQLiteDriver())
	for _, driver := range []string{"", "temp-store-test"} {
		s, err := store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: filepath.Join(t.TempDir(), "t.db"), SQLDriverName: driver})
		if err != nil {
			t.Fatal(err)
		}
		db, err := s.GormDBForTest().DB()
		if err != nil {
			t.Fatal(err)
		}
		// Three connections at once: each is a new one from the pool, set up by the hook.
		var conns []*sql.Conn
		for range 3 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var mode int
			if err := c.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if mode != 2 {
				t.Errorf("driver %q: a connection's temp_store is %d, want 2 (MEMORY)", driver, mode)
			}
		}
		for _, c := range conns {
			_ = c.Close()
		}
		s.Close()
	}
}
