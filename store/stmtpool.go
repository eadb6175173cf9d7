package store

import (
	"container/list"
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// stmtPool is the connection pool GORM runs the store's statements through: it keeps the
// statements it runs prepared on the database (an LRU of preparedStatements texts; each is
// prepared on a connection the first time it runs there) and runs them inside transactions
// through Tx.StmtContext, which reuses the connection's prepared statement.
//
// Why not GORM's own PrepareStmt: a statement it first meets inside a transaction is prepared
// on that transaction, and database/sql re-prepares a transaction's statement every time it is
// used again (Tx.StmtContext of a statement bound to another transaction), then closes it with
// the transaction. Every statement of the drain runs in a transaction, so each was compiled on
// every run: a third of SQLite's time in a claim (BenchmarkClaim), and three round trips instead
// of one on MySQL/MariaDB.
//
// Only data statements are prepared (SELECT, INSERT, UPDATE, DELETE, REPLACE, WITH); the rest
// (DDL, PRAGMA, SAVEPOINT, SET) run as they are, and so does a statement the server refuses to
// prepare (MySQL's max_prepared_stmt_count reached, say).
type stmtPool struct {
	db     *sql.DB
	paused atomic.Int32 // > 0 while a migration runs: nothing is prepared (duringMigration)

	mu    sync.Mutex
	max   int
	order *list.List // of *cachedStmt, most recently used first
	byKey map[string]*list.Element
}

type cachedStmt struct {
	query     string
	stmt      *sql.Stmt // nil until prepared
	preparing bool
	retryAt   time.Time // after a refusal: run unprepared until then
}

func newStmtPool(db *sql.DB, max int) *stmtPool {
	return &stmtPool{db: db, max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// preparable reports whether query is a data statement worth keeping prepared: not a text of
// several statements (held blind writes on MySQL, which prepares no such text; the store's
// statements hold no semicolon otherwise).
func preparable(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	if len(q) < 4 || strings.Contains(q, ";") {
		return false
	}
	switch strings.ToUpper(q[:4]) {
	case "SELE", "INSE", "UPDA", "DELE", "REPL", "WITH":
		return true
	}
	return false
}

// stmt returns the pool's prepared statement of query, preparing it on first use; nil when
// query is not worth preparing or not prepared (yet): the caller runs it unprepared. Inside a
// transaction (inTx) a first use prepares in the background instead: preparing on the database
// takes a connection of the pool, and with every connection held by a transaction waiting for
// one, none would come.
func (p *stmtPool) stmt(ctx context.Context, query string, inTx bool) *sql.Stmt {
	if !preparable(query) || p.paused.Load() > 0 {
		return nil
	}
	p.mu.Lock()
	var c *cachedStmt
	if e, ok := p.byKey[query]; ok {
		c = e.Value.(*cachedStmt)
		if c.stmt != nil {
			p.order.MoveToFront(e)
			p.mu.Unlock()
			return c.stmt
		}
		if c.preparing || time.Now().Before(c.retryAt) {
			p.mu.Unlock()
			return nil
		}
	} else {
		c = &cachedStmt{query: query}
		p.byKey[query] = p.order.PushFront(c)
	}
	c.preparing = true
	p.mu.Unlock()
	if inTx {
		go p.prepare(context.WithoutCancel(ctx), c)
		return nil
	}
	return p.prepare(ctx, c)
}

// prepareRetry is how long a statement the database refused to prepare runs unprepared before
// it is prepared again: a statement met inside a transaction that created its table is
// prepared (in the background, on another connection) before that table exists for others;
// MySQL refuses every prepare once its max_prepared_stmt_count is reached.
const prepareRetry = 10 * time.Second

// evictedGrace is how long a statement evicted from the cache stays open.
const evictedGrace = 10 * time.Second

// prepare prepares c's query on the database and keeps it, evicting the least recently used
// statements beyond max.
func (p *stmtPool) prepare(ctx context.Context, c *cachedStmt) *sql.Stmt {
	st, err := p.db.PrepareContext(ctx, c.query)
	p.mu.Lock()
	defer p.mu.Unlock()
	c.preparing = false
	if err != nil {
		c.retryAt = time.Now().Add(prepareRetry)
		return nil
	}
	if e, ok := p.byKey[c.query]; !ok || e.Value != c { // evicted meanwhile
		_ = st.Close()
		return nil
	}
	c.stmt = st
	for p.order.Len() > p.max {
		old := p.order.Remove(p.order.Back()).(*cachedStmt)
		delete(p.byKey, old.query)
		if old.stmt != nil {
			// Closed a little later: a caller may have taken it from the cache and not yet
			// begun to run it (once running, database/sql holds off the close itself).
			time.AfterFunc(evictedGrace, func() { _ = old.stmt.Close() })
		}
	}
	return st
}

// duringMigration runs fn, a migration, with nothing prepared meanwhile, then forgets what was
// compiled against the schema before it: the kept statements (closed after evictedGrace, as
// evicted ones) and the idle connections (idle: the pool's idle bound, restored). A SQLite
// connection keeps the schema it last read and compiles a new statement against it until it
// next runs one: a statement with a `table.*` column list compiled on a connection that sat
// idle through a migration lists the old columns while SQLite runs it, recompiled on its first
// step, with the new ones, so values came back under the wrong names (a session read failed
// with "storing string into *time.Time" when a connection that a background preparation had
// opened halfway through the migrations was reused afterwards).
func (p *stmtPool) duringMigration(idle int, fn func() error) error {
	p.paused.Add(1)
	defer func() {
		p.mu.Lock()
		for e := p.order.Front(); e != nil; e = e.Next() {
			if st := e.Value.(*cachedStmt).stmt; st != nil {
				time.AfterFunc(evictedGrace, func() { _ = st.Close() })
			}
		}
		p.order.Init()
		clear(p.byKey)
		p.mu.Unlock()
		p.db.SetMaxIdleConns(0) // closes the idle connections
		p.db.SetMaxIdleConns(idle)
		p.paused.Add(-1)
	}()
	return fn()
}

// close closes every kept statement.
func (p *stmtPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for e := p.order.Front(); e != nil; e = e.Next() {
		if st := e.Value.(*cachedStmt).stmt; st != nil {
			_ = st.Close()
		}
	}
	p.order.Init()
	clear(p.byKey)
}

func (p *stmtPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

func (p *stmtPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

func (p *stmtPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query, false); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

func (p *stmtPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query, false); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

func (p *stmtPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query, false); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// BeginTx starts a transaction whose statements reuse the pool's (gorm.ConnPoolBeginner).
func (p *stmtPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &stmtTx{Tx: tx, pool: p}, nil
}

// stmtTx is a transaction of a stmtPool (gorm.TxCommitter through the embedded *sql.Tx).
type stmtTx struct {
	*sql.Tx
	pool *stmtPool
}

func (t *stmtTx) GetDBConn() (*sql.DB, error) { return t.pool.db, nil }

func (t *stmtTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.pool.stmt(ctx, query, true); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *stmtTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.pool.stmt(ctx, query, true); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *stmtTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.pool.stmt(ctx, query, true); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
