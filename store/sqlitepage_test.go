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
