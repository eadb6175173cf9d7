package storetest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/mattn/go-sqlite3"

	"github.com/agentsvc/svc/store"
)

// Faults makes the writes of a store opened by NewFaulty fail on demand the way a busy
// database fails them: SQLite's "database is locked" (SQLITE_BUSY), MySQL's lock wait timeout
// (1205). Reads keep working. Safe for concurrent use.
type Faults struct {
	on     atomic.Bool
	failed atomic.Int64
	mysql  bool
}

// FailWrites turns the failure of every write statement (INSERT, UPDATE, DELETE, REPLACE) on or
// off.
func (f *Faults) FailWrites(on bool) { f.on.Store(on) }

// Failed is how many write statements failed so far.
func (f *Faults) Failed() int64 { return f.failed.Load() }

func (f *Faults) check(query string) error {
	if f == nil || !f.on.Load() {
		return nil
	}
	q := strings.ToUpper(strings.TrimSpace(query))
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if strings.HasPrefix(q, w) {
			f.failed.Add(1)
			if f.mysql {
				return &gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction (injected)"}
			}
			return sqlite3.Error{Code: sqlite3.ErrBusy}
		}
	}
	return nil
}

// NewFaulty is New on a store whose writes fail while its Faults say so.
func NewFaulty(t testing.TB) (*store.Store, *Faults) {
	t.Helper()
	registerFaulty.Do(func() {
		sql.Register(faultySQLite, &faultyDriver{base: &sqlite3.SQLiteDriver{}})
		sql.Register(faultyMySQL, &faultyDriver{base: &gomysql.MySQLDriver{}})
	})
	f := &Faults{}
	opts := store.Options{Logger: testLogger(t)}
	if dsn := os.Getenv(EnvMySQLDSN); dsn != "" {
		f.mysql = true
		opts.Driver, opts.SQLDriverName = "mysql", faultyMySQL
		opts.MySQLDSN = createMySQLDatabase(t, dsn)
	} else {
		opts.Driver, opts.SQLDriverName = "sqlite", faultySQLite
		opts.SQLitePath = filepath.Join(t.TempDir(), "svc.sqlite")
	}
	// The store adds its parameters to the DSN: faults are found by the database's name.
	key := opts.SQLitePath
	if f.mysql {
		cfg, err := gomysql.ParseDSN(opts.MySQLDSN)
		if err != nil {
			t.Fatal(err)
		}
		key = "/" + cfg.DBName + "?"
	}
	faultsByDSN.Store(key, f)
	t.Cleanup(func() { faultsByDSN.Delete(key) })
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("storetest: open faulty %s store: %v", opts.Driver, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("storetest: migrate %s store: %v", s.Dialect(), err)
	}
	return s, f
}

const (
	faultySQLite = "storetest-faulty-sqlite3"
	faultyMySQL  = "storetest-faulty-mysql"
)

var (
	registerFaulty sync.Once
	faultsByDSN    sync.Map // key (a substring of the DSN) → *Faults
)

func faultsOf(dsn string) *Faults {
	var out *Faults
	faultsByDSN.Range(func(k, v any) bool {
		if strings.Contains(dsn, k.(string)) {
			out = v.(*Faults)
			return false
		}
		return true
	})
	return out
}

// faultyDriver wraps a driver: its connections check every statement with the Faults of their
// DSN before passing it on.
type faultyDriver struct{ base driver.Driver }

func (d *faultyDriver) Open(dsn string) (driver.Conn, error) {
	c, err := d.base.Open(dsn)
	if err != nil {
		return nil, err
	}
	return &faultyConn{Conn: c, f: faultsOf(dsn)}, nil
}

type faultyConn struct {
	driver.Conn
	f *Faults
}

func (c *faultyConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *faultyConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &faultyStmt{Stmt: st, f: c.f, query: query}, nil
}

func (c *faultyConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts) // both drivers implement it
}

func (c *faultyConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	return e.ExecContext(ctx, query, args)
}

func (c *faultyConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	return q.QueryContext(ctx, query, args)
}

func (c *faultyConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *faultyConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *faultyConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *faultyConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type faultyStmt struct {
	driver.Stmt
	f     *Faults
	query string
}

func (s *faultyStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.f.check(s.query); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args) // both drivers implement it
}

func (s *faultyStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.f.check(s.query); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args) // both drivers implement it
}

func (s *faultyStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
