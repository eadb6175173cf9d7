package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func openPoolDB(t *testing.T, conns int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "p.sqlite")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// A statement first met inside a transaction that holds the pool's only connection runs
// unprepared (its preparation waits in the background for a free connection) instead of
// waiting for a connection that only the transaction's end would free.
func TestStmtPoolFirstUseInTxWithPoolExhausted(t *testing.T) {
	p := newStmtPool(openPoolDB(t, 1), 8)
	defer p.close()
	ctx := context.Background() // no deadline: a wait for the connection would never end
	ctp, err := p.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx := ctp.(*stmtTx)
	done := make(chan error, 1)
	go func() {
		_, err := tx.ExecContext(ctx, "INSERT INTO t (v) VALUES (?)", "a")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("insert in a transaction holding the only connection: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a statement first met in a transaction waits for a connection only the transaction frees")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Once the connection is free the background preparation completes and is used.
	deadline := time.Now().Add(5 * time.Second)
	for p.stmt(ctx, "INSERT INTO t (v) VALUES (?)", true) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the statement was never prepared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var n int
	if err := p.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
}

// The cache keeps at most max statements; an evicted one still runs when asked again, and
// statements that are not data statements are never kept.
func TestStmtPoolBounded(t *testing.T) {
	p := newStmtPool(openPoolDB(t, 2), 2)
	defer p.close()
	ctx := context.Background()
	for i := range 5 {
		var got int
		if err := p.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&got); err != nil || got != i {
			t.Fatalf("SELECT %d = %d, %v", i, got, err)
		}
	}
	if _, err := p.ExecContext(ctx, "PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	kept, has3, has0, pragma := p.order.Len(), p.byKey["SELECT 3"] != nil, p.byKey["SELECT 0"] != nil, p.byKey["PRAGMA user_version = 3"] != nil
	p.mu.Unlock()
	if kept != 2 || !has3 || has0 || pragma {
		t.Fatalf("kept %d (SELECT 3: %v, SELECT 0: %v, PRAGMA: %v), want the 2 most recent data statements", kept, has3, has0, pragma)
	}
	var got int
	if err := p.QueryRowContext(ctx, "SELECT 0").Scan(&got); err != nil || got != 0 {
		t.Fatalf("evicted statement again = %d, %v", got, err)
	}
}

// A connection that sat idle through a migration compiles against the schema it last read:
// `t.*` would list the old columns while SQLite runs the statement with the new ones. After
// duringMigration no such connection is left, so a statement lists the new columns.
func TestStmtPoolMigrationLeavesNoStaleConnection(t *testing.T) {
	db := openPoolDB(t, 2)
	p := newStmtPool(db, 8)
	defer p.close()
	ctx := context.Background()
	if _, err := db.Exec("INSERT INTO t (v) VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	// Two connections that have both read the schema; the second goes back to the pool idle.
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*sql.Conn{c1, c2} {
		if _, err := c.ExecContext(ctx, "SELECT * FROM t"); err != nil {
			t.Fatal(err)
		}
	}
	_ = c2.Close()
	err = p.duringMigration(2, func() error {
		if p.stmt(ctx, "SELECT 1", false) != nil {
			t.Error("a statement was prepared during the migration")
		}
		_, err := c1.ExecContext(ctx, "ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'x'")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// c1 is still held: the query runs on another connection.
	rows, err := p.QueryContext(ctx, "SELECT t.* FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if len(cols) != 3 {
		t.Fatalf("columns after the migration = %v, want id, v, w", cols)
	}
}
