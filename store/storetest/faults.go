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
//
// The same driver counts what the store sends (Counts): statements, transactions, and write
// transactions (a transaction that ran a write statement, or a write outside a transaction:
// each is one commit), for tests and benchmarks of what a code path costs.
type Faults struct {
	on     atomic.Bool
	failed atomic.Int64
	mysql  bool

	statements, writes, txs, writeTxs atomic.Int64
	trace                             atomic.Pointer[func(query string)]
}

// Trace makes every statement sent (and BEGIN/COMMIT) be told to f; nil stops.
func (f *Faults) Trace(fn func(query string)) {
	if fn == nil {
		f.trace.Store(nil)
		return
	}
	f.trace.Store(&fn)
}

func (f *Faults) traced(q string) {
	if fn := f.trace.Load(); fn != nil {
		(*fn)(q)
	}
}

// Counts is what a store opened by NewFaulty (or NewCounted) sent to its database.
type Counts struct {
	Statements int64 // every statement, reads and writes (BEGIN and COMMIT not included)
	Writes     int64 // INSERT, UPDATE, DELETE, REPLACE statements
	Txs        int64 // transactions begun
	WriteTxs   int64 // commits that wrote: transactions with a write, plus writes outside one
}

// Sub is c minus an earlier reading.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Statements: c.Statements - o.Statements, Writes: c.Writes - o.Writes, Txs: c.Txs - o.Txs, WriteTxs: c.WriteTxs - o.WriteTxs}
}

// Counts reads the counters.
func (f *Faults) Counts() Counts {
	return Counts{Statements: f.statements.Load(), Writes: f.writes.Load(), Txs: f.txs.Load(), WriteTxs: f.writeTxs.Load()}
}

// NewCounted is NewFaulty for a test that only counts statements (it never turns faults on).
func NewCounted(t testing.TB) (*store.Store, *Faults) {
	t.Helper()
	return NewFaulty(t)
}

// isWrite reports whether query writes.
func isWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) >= len(w) && strings.EqualFold(q[:len(w)], w) {
			return true
		}
	}
	return false
}

// counted records one statement sent on conn c.
func (c *faultyConn) counted(query string) {
	if c.f == nil {
		return
	}
	c.f.statements.Add(1)
	c.f.traced(query)
	if isWrite(query) {
		c.f.writes.Add(1)
		if c.inTx {
			c.txWrote = true
		} else {
			c.f.writeTxs.Add(1)
		}
	}
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
	f             *Faults
	inTx, txWrote bool // a connection is used by one goroutine at a time
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
	return &faultyStmt{Stmt: st, f: c.f, query: query, c: c}, nil
}

func (c *faultyConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts) // both drivers implement it
	if err != nil {
		return nil, err
	}
	if c.f != nil {
		c.f.txs.Add(1)
		c.f.traced("BEGIN")
	}
	c.inTx, c.txWrote = true, false
	return &countedTx{Tx: tx, c: c}, nil
}

// countedTx counts a committed transaction that wrote.
type countedTx struct {
	driver.Tx
	c *faultyConn
}

func (t *countedTx) Commit() error {
	err := t.Tx.Commit()
	if t.c.f != nil {
		if err == nil && t.c.txWrote {
			t.c.f.writeTxs.Add(1)
		}
		t.c.f.traced("COMMIT")
	}
	t.c.inTx, t.c.txWrote = false, false
	return err
}

func (t *countedTx) Rollback() error {
	t.c.inTx, t.c.txWrote = false, false
	return t.Tx.Rollback()
}

func (c *faultyConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	res, err := e.ExecContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.counted(query)
	}
	return res, err
}

func (c *faultyConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.f.check(query); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.counted(query)
	}
	return rows, err
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
	c     *faultyConn
}

func (s *faultyStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.f.check(s.query); err != nil {
		return nil, err
	}
	s.c.counted(s.query)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args) // both drivers implement it
}

func (s *faultyStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.f.check(s.query); err != nil {
		return nil, err
	}
	s.c.counted(s.query)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args) // both drivers implement it
}

func (s *faultyStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
