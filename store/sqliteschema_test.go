package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentsvc/svc/store"
)

// TestSQLitePartialIndexesNameNoValue: on SQLite a partial index's condition may only say that
// columns are not NULL. SQLite proves any other condition (status = 'QUEUED') against the value
// bound to a statement's own term on the column (status = ?), and a statement whose plan used a
// bound value is prepared again at every run: with the status index partial, every status
// write of a task was (BenchmarkRepreparedByPartialIndex shows the cost).
func TestSQLitePartialIndexesNameNoValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: filepath.Join(t.TempDir(), "schema.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var idx []struct{ Name, SQL string }
	if err := s.GormDBForTest().Raw("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'").Scan(&idx).Error; err != nil {
		t.Fatal(err)
	}
	if len(idx) == 0 {
		t.Fatal("no partial index found: the query above no longer reads the schema")
	}
	notNull := regexp.MustCompile(`(?i) WHERE \w+ IS NOT NULL( AND \w+ IS NOT NULL)*$`)
	for _, i := range idx {
		if !notNull.MatchString(i.SQL) {
			t.Errorf("%s: a partial index on SQLite may only exclude NULLs: %s", i.Name, i.SQL)
		}
	}
}

// BenchmarkRepreparedByPartialIndex runs one prepared read by status of the same 100 rows
// beside an index on the status that is whole (whole) or partial to the value read (partial):
// the partial one makes SQLite prepare the statement again at every run.
func BenchmarkRepreparedByPartialIndex(b *testing.B) {
	for _, c := range []struct{ name, where string }{{"whole", ""}, {"partial", " WHERE status = 'QUEUED' OR status = 'FAILED'"}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := sql.Open("sqlite3", filepath.Join(b.TempDir(), "r.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for _, q := range []string{"CREATE TABLE t (id INTEGER PRIMARY KEY, status TEXT NOT NULL, user_id INTEGER NOT NULL)",
				"CREATE INDEX t_status ON t (status, user_id, id)" + c.where,
				"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO t (status, user_id) SELECT 'QUEUED', 1 FROM n"} {
				if _, err := db.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			st, err := db.Prepare("SELECT COUNT(*) FROM t WHERE status = ? AND user_id = ?")
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for b.Loop() {
				var n int
				if err := st.QueryRow("QUEUED", 1).Scan(&n); err != nil || n != 100 {
					b.Fatalf("n = %d, %v", n, err)
				}
			}
		})
	}
}
