// Package sqlcount wraps a database/sql driver to count what a process sends to its database:
// statements, write statements, transactions, and write transactions (commits that wrote: a
// transaction with a write statement, or a write outside a transaction). The service opens its
// store through it so that /metrics shows the database cost of its work
// (svc_db_statements_total, svc_db_transactions_total); tests wrap the same driver to count a
// code path's statements or to make writes fail the way a busy database fails them.
//
// The cost is an atomic add per statement and a look at the statement's first word, next to
// the driver's own work (a statement's compilation alone takes microseconds).
package sqlcount

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
)

// Counts are the counters of one wrapped driver (or one database of it). The zero value is
// ready; safe for concurrent use.
type Counts struct {
	statements, writes, txs, writeTxs, readTxs, prepares atomic.Int64
}

// Snapshot is a reading of Counts.
type Snapshot struct {
	Statements int64 // every statement, reads and writes (BEGIN and COMMIT not included)
	Writes     int64 // INSERT, UPDATE, DELETE, REPLACE statements
	Txs        int64 // transactions begun
	WriteTxs   int64 // commits that wrote: transactions with a write, plus writes outside one
	ReadTxs    int64 // transactions that ended (committed or rolled back) without a write
	Prepares   int64 // statements prepared through the driver (kept for reuse, or re-prepared)
}

// Sub is s minus an earlier reading o.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	return Snapshot{Statements: s.Statements - o.Statements, Writes: s.Writes - o.Writes, Txs: s.Txs - o.Txs,
		WriteTxs: s.WriteTxs - o.WriteTxs, ReadTxs: s.ReadTxs - o.ReadTxs, Prepares: s.Prepares - o.Prepares}
}

// Snapshot reads the counters.
func (c *Counts) Snapshot() Snapshot {
	return Snapshot{Statements: c.statements.Load(), Writes: c.writes.Load(), Txs: c.txs.Load(),
		WriteTxs: c.writeTxs.Load(), ReadTxs: c.readTxs.Load(), Prepares: c.prepares.Load()}
}

// Observer is what a wrapped connection reports to. Every field may be nil.
type Observer struct {
	// Counts receives the counts; nil counts nothing.
	Counts *Counts
	// Check is asked before each statement is sent, and with "COMMIT" before a transaction
	// commits; an error is returned instead of sending it (tests inject a busy database's
	// failures), and a refused commit rolls the transaction back.
	Check func(query string) error
	// Trace is told every statement sent, and BEGIN and COMMIT.
	Trace func(query string)
}

// Driver wraps Base: each connection opened reports to the Observer that Observe returns for
// the connection's data source name. Base's connections must implement driver.ConnBeginTx and
// its statements driver.StmtExecContext and StmtQueryContext (go-sqlite3 and
// go-sql-driver/mysql do).
type Driver struct {
	Base    driver.Driver
	Observe func(dsn string) Observer
}

var registered sync.Map // name → struct{}

// Register registers d under name with database/sql, once per name (later calls with the same
// name keep the first driver).
func Register(name string, d *Driver) {
	if _, loaded := registered.LoadOrStore(name, struct{}{}); !loaded {
		sql.Register(name, d)
	}
}

// Open opens a connection of the base driver and wraps it.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.Base.Open(dsn)
	if err != nil {
		return nil, err
	}
	var o Observer
	if d.Observe != nil {
		o = d.Observe(dsn)
	}
	return &conn{Conn: c, o: o}, nil
}

// IsWrite reports whether query is a write statement (INSERT, UPDATE, DELETE, REPLACE).
func IsWrite(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	for _, w := range [...]string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) >= len(w) && strings.EqualFold(q[:len(w)], w) {
			return true
		}
	}
	return false
}

// conn is a wrapped connection; database/sql uses a connection from one goroutine at a time.
type conn struct {
	driver.Conn
	o             Observer
	inTx, txWrote bool
}

func (c *conn) check(query string) error {
	if c.o.Check == nil {
		return nil
	}
	return c.o.Check(query)
}

// counted records one statement sent.
func (c *conn) counted(query string) {
	if c.o.Trace != nil {
		c.o.Trace(query)
	}
	n := c.o.Counts
	if n == nil {
		return
	}
	n.statements.Add(1)
	if IsWrite(query) {
		n.writes.Add(1)
		if c.inTx {
			c.txWrote = true
		} else {
			n.writeTxs.Add(1)
		}
	}
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
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
	if c.o.Counts != nil {
		c.o.Counts.prepares.Add(1)
	}
	return &stmt{Stmt: st, query: query, c: c}, nil
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.Conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errors.New("sqlcount: the wrapped driver's connections must implement driver.ConnBeginTx")
	}
	t, err := b.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if c.o.Counts != nil {
		c.o.Counts.txs.Add(1)
	}
	if c.o.Trace != nil {
		c.o.Trace("BEGIN")
	}
	c.inTx, c.txWrote = true, false
	return &tx{Tx: t, c: c}, nil
}

// tx counts how a transaction ended.
type tx struct {
	driver.Tx
	c *conn
}

func (t *tx) Commit() error {
	err := t.c.check("COMMIT")
	if err != nil {
		_ = t.Tx.Rollback()
	} else {
		err = t.Tx.Commit()
	}
	if n := t.c.o.Counts; n != nil {
		switch {
		case err == nil && t.c.txWrote:
			n.writeTxs.Add(1)
		case !t.c.txWrote:
			n.readTxs.Add(1)
		}
	}
	if t.c.o.Trace != nil {
		t.c.o.Trace("COMMIT")
	}
	t.c.inTx, t.c.txWrote = false, false
	return err
}

func (t *tx) Rollback() error {
	if n := t.c.o.Counts; n != nil && !t.c.txWrote {
		n.readTxs.Add(1)
	}
	t.c.inTx, t.c.txWrote = false, false
	return t.Tx.Rollback()
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.check(query); err != nil {
		return nil, err
	}
	res, err := e.ExecContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.counted(query)
	}
	return res, err
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.check(query); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.counted(query)
	}
	return rows, err
}

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type stmt struct {
	driver.Stmt
	query string
	c     *conn
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.check(s.query); err != nil {
		return nil, err
	}
	s.c.counted(s.query)
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	return nil, errors.New("sqlcount: the wrapped driver's statements must implement driver.StmtExecContext")
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.check(s.query); err != nil {
		return nil, err
	}
	s.c.counted(s.query)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	return nil, errors.New("sqlcount: the wrapped driver's statements must implement driver.StmtQueryContext")
}

// CheckNamedValue asks the wrapped statement, else its connection, as database/sql asks an
// unwrapped driver's: a driver whose statements have no checker of their own (pgx) takes
// arguments the default conversion refuses (a slice as an array) through its connection's.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}
