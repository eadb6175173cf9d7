package sqlcount_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/agentsvc/svc/internal/platform/sqlcount"
)

var errRefused = errors.New("refused")

func TestCounts(t *testing.T) {
	t.Parallel()
	var counts sqlcount.Counts
	var mu sync.Mutex
	var traced []string
	refuse := false
	sqlcount.Register("sqlcount-test-sqlite3", &sqlcount.Driver{Base: &sqlite3.SQLiteDriver{}, Observe: func(string) sqlcount.Observer {
		return sqlcount.Observer{Counts: &counts,
			Check: func(q string) error {
				mu.Lock()
				defer mu.Unlock()
				if refuse && sqlcount.IsWrite(q) {
					return errRefused
				}
				return nil
			},
			Trace: func(q string) { mu.Lock(); traced = append(traced, strings.Fields(q)[0]); mu.Unlock() }}
	}})
	db, err := sql.Open("sqlcount-test-sqlite3", filepath.Join(t.TempDir(), "c.sqlite")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)") // a statement, not a write
	exec("INSERT INTO t (v) VALUES (?)", "a")               // a write outside a transaction: one write transaction
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	// A transaction that writes and commits.
	tx, _ := db.BeginTx(ctx, nil)
	if _, err := tx.ExecContext(ctx, "UPDATE t SET v = ? WHERE id = 1", "b"); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Two transactions that only read: one committed, one rolled back.
	for _, commit := range []bool{true, false} {
		tx, _ := db.BeginTx(ctx, nil)
		if err := tx.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(new(string)); err != nil {
			t.Fatal(err)
		}
		if commit {
			_ = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	// A prepared write, then a refused one (not sent, not counted).
	st, err := db.PrepareContext(ctx, "  insert INTO t (v) VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	if _, err := st.ExecContext(ctx, "d"); !errors.Is(err, errRefused) {
		t.Fatalf("refused write: %v", err)
	}
	_ = st.Close()

	got := counts.Snapshot()
	want := sqlcount.Snapshot{Statements: 8, Writes: 3, Txs: 3, WriteTxs: 3, ReadTxs: 2, Prepares: 1}
	if got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	if d := got.Sub(sqlcount.Snapshot{Statements: 2, WriteTxs: 1}); d.Statements != 6 || d.WriteTxs != 2 {
		t.Errorf("Sub = %+v", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(traced, " ") != "CREATE INSERT SELECT BEGIN UPDATE SELECT COMMIT BEGIN SELECT COMMIT BEGIN SELECT insert" {
		t.Errorf("traced %v", traced)
	}
}

func TestIsWrite(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"INSERT INTO t": true, " update t": true, "\nDELETE FROM t": true, "REPLACE INTO t": true,
		"SELECT 1": false, "WITH x AS (SELECT 1) SELECT * FROM x": false, "": false, "UPD": false,
	} {
		if got := sqlcount.IsWrite(q); got != want {
			t.Errorf("IsWrite(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestPreparedArgsCheckedByTheConnection: a driver whose connection takes a slice argument and
// whose statements have no checker of their own (pgx, which sends a slice as an array) takes it
// through a prepared statement of the wrapped driver too.
func TestPreparedArgsCheckedByTheConnection(t *testing.T) {
	t.Parallel()
	var got []driver.Value
	sqlcount.Register("sqlcount-test-slices", &sqlcount.Driver{Base: sliceDriver{got: &got}, Observe: func(string) sqlcount.Observer {
		return sqlcount.Observer{Counts: &sqlcount.Counts{}}
	}})
	db, err := sql.Open("sqlcount-test-slices", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Prepare("UPDATE t SET v = 1 WHERE id = ANY($1)")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Exec([]int64{1, 2}); err != nil {
		t.Fatalf("prepared: %v", err)
	}
	if _, err := db.Exec("UPDATE t SET v = 1 WHERE id = ANY($1)", []int64{3}); err != nil {
		t.Fatalf("unprepared: %v", err)
	}
	if len(got) != 2 || fmt.Sprint(got) != "[[1 2] [3]]" {
		t.Fatalf("the driver received %v", got)
	}
}

// sliceDriver is a driver whose connection's checker takes any argument, as pgx's does, and
// whose statements have none.
type sliceDriver struct{ got *[]driver.Value }

func (d sliceDriver) Open(string) (driver.Conn, error) { return sliceConn(d), nil }

type sliceConn sliceDriver

func (c sliceConn) Prepare(q string) (driver.Stmt, error)    { return sliceStmt(c), nil }
func (c sliceConn) Close() error                             { return nil }
func (c sliceConn) Begin() (driver.Tx, error)                { return nil, errors.New("no transactions") }
func (c sliceConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type sliceStmt sliceConn

func (s sliceStmt) Close() error  { return nil }
func (s sliceStmt) NumInput() int { return -1 }
func (s sliceStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("use ExecContext")
}
func (s sliceStmt) ExecContext(_ context.Context, args []driver.NamedValue) (driver.Result, error) {
	for _, a := range args {
		*s.got = append(*s.got, a.Value)
	}
	return driver.RowsAffected(1), nil
}
func (s sliceStmt) Query([]driver.Value) (driver.Rows, error) { return nil, errors.New("no queries") }
