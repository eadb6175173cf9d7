// Package store keeps the service's state in SQLite (the default), MySQL/MariaDB or PostgreSQL
// through GORM.
//
// The schema comes from versioned SQL migrations embedded per dialect (never AutoMigrate). GORM
// models stay inside this package; callers see plain structs (User, Session, Token …). Every
// method takes a context; exported methods own their transaction and unexported helpers take the
// transaction they run in. Failures carry a svcerr category (ErrNotFound, ErrConflict,
// ErrInvalid, ErrInvalidState); driver errors are translated once, by TranslateError, from
// GORM's typed errors and never by matching message text.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/mattn/go-sqlite3"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	gormlogger "gorm.io/gorm/logger"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Dialect names returned by Store.Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectMySQL    = "mysql"
	DialectPostgres = "postgres"
)

// DefaultSQLiteBusyTimeout is used when Options.SQLiteBusyTimeout is zero.
const DefaultSQLiteBusyTimeout = 5000

// Options selects and configures the database.
type Options struct {
	// Driver is "sqlite" (default when empty), "mysql", "mariadb" or "postgres".
	Driver string
	// SQLitePath is the database file; its parent directory is created when missing.
	SQLitePath string
	// SQLiteBusyTimeout is how long (milliseconds) a connection waits for a lock held by
	// another writer before failing; zero means DefaultSQLiteBusyTimeout.
	SQLiteBusyTimeout int
	// MySQLDSN is a go-sql-driver DSN ("user:pass@tcp(host:3306)/db"). The store forces
	// parseTime=true, loc=UTC, a utf8mb4 connection, clientFoundRows=true (so "rows
	// affected" counts matched rows on both dialects), and multiStatements with
	// interpolateParams (a step's writes go as one text).
	MySQLDSN string
	// PostgresDSN is a pgx connection string ("postgres://user:pass@host:5432/db?sslmode=disable"
	// or "host=… dbname=…"). The store forces the session's time zone to UTC.
	PostgresDSN string
	// Logger receives slow-query and unexpected-error reports (never SQL parameters).
	// Nil discards them.
	Logger *slog.Logger
	// Clock is the source of every timestamp the store writes or compares against; nil
	// means time.Now. Its values are used in UTC, truncated to microseconds.
	Clock func() time.Time
	// MaxOpenConns bounds the connection pool (db_max_open_conns); zero means
	// DefaultMaxOpenConns of the dialect. Idle connections are kept up to the same number, so a
	// busy pool does not close and reopen connections.
	MaxOpenConns int
	// SQLDriverName is the database/sql driver to open ("": SQLiteDriverName, MySQLDriverName or
	// pgx). A wrapper of the real one (counting statements, injecting failures in tests) wraps
	// SQLiteDriver or MySQLDriver.
	SQLDriverName string
	// VersionTTL is how long the store trusts its last read of the versions that guard its
	// caches and the callers' (ConfigVersion, sessions): a change made through another process
	// reaches this one within it. Zero means DefaultVersionTTL; negative reads every time.
	VersionTTL time.Duration
}

// preparedStatements bounds the statement texts kept prepared (stmtPool). Each is prepared on
// every pool connection that runs it, so a process holds at most this many times db_max_open_conns on the
// server: 128 × 32 = 4,096 on MySQL/MariaDB, a quarter of the server's default
// max_prepared_stmt_count (16,382) shared by every process; the service's hot path uses about 60.
const preparedStatements = 128

// DefaultMaxOpenConns is the pool size of a dialect when Options.MaxOpenConns is zero: SQLite
// has one writer at a time (WAL lets readers go on beside it), so a few connections keep it
// busy and more only wait for its lock (in the busy handler's sleeps); MySQL/MariaDB run
// writers in parallel but refuse connections beyond max_connections (151 by default) shared
// by every process; PostgreSQL likewise, with a smaller max_connections (100 by default, and a
// process per connection on the server). See docs/decisions.md, "Store and databases".
func DefaultMaxOpenConns(dialect string) int {
	switch dialect {
	case DialectMySQL:
		return 32
	case DialectPostgres:
		return 24
	}
	return 16
}

// Store is the database handle. It is safe for concurrent use.
type Store struct {
	// The aggregates (aggregates.go): each holds its exported methods, promoted here.
	Tasks
	Agents
	Principals
	Outboxes
	Inbox
	Media

	db        *gorm.DB
	dialect   string
	clock     func() time.Time
	log       *slog.Logger
	listeners []func(Commit) // AfterCommit
	// writers queues this process's transactions on SQLite (one token): a waiter is woken when
	// the one before it ends, instead of polling the write lock in SQLite's busy handler (which
	// sleeps 1 to 100 ms between tries). nil on MySQL/MariaDB.
	writers chan struct{}
	// busyWait bounds a wait in writers; past it the transaction goes on to SQLite's own busy
	// timeout, as it would without the queue.
	busyWait time.Duration
	vers     versions                      // ConfigVersion, the session cache
	sessions sessionCache                  // SessionByDigest
	stmts    *stmtPool                     // the statements kept prepared
	wake     wake                          // PostgreSQL: the NOTIFY channel of cross-process wake-ups (wake.go)
	group    commitGroup                   // the writes groupTx commits together (commitgroup.go)
	zone     atomic.Pointer[time.Location] // the instance's time zone (SetTimeZone; nil: UTC)
}

// Open connects to the database described by opts and checks that it answers. It does not
// migrate; call Migrate. Errors: ErrInvalid for unusable options; connection failures are
// returned uncategorised.
func Open(ctx context.Context, opts Options) (*Store, error) {
	s := &Store{clock: opts.Clock, log: opts.Logger}
	s.Tasks, s.Agents, s.Principals, s.Outboxes, s.Inbox, s.Media = Tasks{s}, Agents{s}, Principals{s}, Outboxes{s}, Inbox{s}, Media{s}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}

	if opts.MaxOpenConns < 0 {
		return nil, fmt.Errorf("store: max open connections %d: %w", opts.MaxOpenConns, svcerr.ErrInvalid)
	}
	var dialector gorm.Dialector
	switch strings.ToLower(opts.Driver) {
	case "", "sqlite", "sqlite3":
		s.dialect = DialectSQLite
		s.writers = make(chan struct{}, 1)
		s.group.lanes, s.group.linger = 1, sqliteCommitLinger
		s.busyWait = time.Duration(opts.SQLiteBusyTimeout) * time.Millisecond
		if s.busyWait == 0 {
			s.busyWait = time.Duration(DefaultSQLiteBusyTimeout) * time.Millisecond
		}
		dsn, err := sqliteDSN(opts.SQLitePath, opts.SQLiteBusyTimeout)
		if err != nil {
			return nil, err
		}
		if err := createSQLite(opts.SQLitePath); err != nil {
			return nil, err
		}
		dialector = sqlite.New(sqlite.Config{DSN: dsn, DriverName: cmp.Or(opts.SQLDriverName, SQLiteDriverName)})
	case "mysql", "mariadb":
		s.dialect = DialectMySQL
		s.group.lanes, s.group.maxHeld = 1, maxGroupHeld
		dsn, err := mysqlDSN(opts.MySQLDSN)
		if err != nil {
			return nil, err
		}
		dialector = mysql.New(mysql.Config{DSN: dsn, DriverName: cmp.Or(opts.SQLDriverName, MySQLDriverName)})
	case "postgres", "postgresql":
		s.dialect = DialectPostgres
		s.group.lanes = commitLanes
		dsn, err := postgresDSN(opts.PostgresDSN)
		if err != nil {
			return nil, err
		}
		dialector = postgres.New(postgres.Config{DSN: dsn, DriverName: opts.SQLDriverName})
		s.wake.dsn = dsn
	default:
		return nil, fmt.Errorf("store: driver %q (want sqlite, mysql, mariadb or postgres): %w", opts.Driver, svcerr.ErrInvalid)
	}

	db, err := gorm.Open(dialector, &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true, // exported methods open their own transactions
		NowFunc:                s.now,
		Logger:                 newGormLogger(s.log),
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", s.dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", s.dialect, err)
	}
	// Statements are prepared once per connection and kept (stmtPool, an LRU of
	// preparedStatements texts), in transactions too: compiling a statement cost SQLite more
	// than running it on the request path and in the drain (issue 14), and on MySQL/MariaDB an
	// unprepared statement with arguments is three round trips (prepare, execute, close).
	s.stmts = newStmtPool(sqlDB, preparedStatements)
	db.ConnPool, db.Statement.ConnPool = s.stmts, s.stmts
	s.db = db
	s.sessions.clock = s.now
	s.vers.ttl = opts.VersionTTL
	if s.vers.ttl == 0 {
		s.vers.ttl = DefaultVersionTTL
	}
	if err := s.registerVersions(db); err != nil {
		return nil, err
	}
	pool := opts.MaxOpenConns
	if pool == 0 {
		pool = DefaultMaxOpenConns(s.dialect)
	}
	// Bounded on both dialects: beyond the bound callers wait for a connection (bounded by their
	// context) instead of piling onto SQLite's write lock or exhausting the server's
	// max_connections.
	sqlDB.SetMaxOpenConns(pool)
	sqlDB.SetMaxIdleConns(pool)
	// A connection idle for a minute is closed (an idle service keeps little: each SQLite
	// connection has its own page cache), a busy pool keeps its connections.
	sqlDB.SetConnMaxIdleTime(time.Minute)
	if s.dialect != DialectSQLite {
		// Servers close idle connections (wait_timeout) and proxies drop them: renew them first.
		sqlDB.SetConnMaxLifetime(5 * time.Minute)
	}
	if err := s.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	if err := s.openWake(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return s, nil
}

// SQLiteDriverName is the database/sql driver the store opens SQLite files with: SQLiteDriver.
const SQLiteDriverName = "svc-sqlite3"

func init() { sql.Register(SQLiteDriverName, SQLiteDriver()) }

// SQLiteDriver returns the SQLite driver whose connections the store needs (SQLiteDriverName
// registers it; a wrapper that observes the connections wraps it): each connection keeps
// SQLite's temporary storage in memory (temp_store = MEMORY). Every UPDATE … RETURNING and
// INSERT … RETURNING — a claim, a step's status change, the rate-limit window, GORM's inserts —
// gathers its rows in an ephemeral table, and on the default file-backed temporary storage each
// such statement set up and tore down a pager for it, on the C heap: ~250 µs a statement where
// the same upsert without RETURNING takes 10 (docs/benchmarks.md, "SQLite's temporary storage").
// The temporary storage also holds the sorts no index serves; the store's lists are bounded by
// their pages.
func SQLiteDriver() *sqlite3.SQLiteDriver {
	return &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA temp_store = MEMORY", nil)
		return err
	}}
}

// SQLiteDSN is the data source name the store opens a SQLite file with (WAL, busy timeout,
// foreign keys, immediate transactions), for benchmarks that time raw commits beside the store.
func SQLiteDSN(path string) (string, error) { return sqliteDSN(path, 0) }

func sqliteDSN(path string, busyTimeout int) (string, error) {
	if path == "" {
		return "", fmt.Errorf("store: sqlite path is empty: %w", svcerr.ErrInvalid)
	}
	if strings.ContainsAny(path, "?#") {
		return "", fmt.Errorf("store: sqlite path %q must not contain '?' or '#': %w", path, svcerr.ErrInvalid)
	}
	if busyTimeout < 0 {
		return "", fmt.Errorf("store: sqlite busy timeout %d: %w", busyTimeout, svcerr.ErrInvalid)
	}
	if busyTimeout == 0 {
		busyTimeout = DefaultSQLiteBusyTimeout
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("store: create directory for %s: %w", path, err)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", strconv.Itoa(busyTimeout))
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode(), nil
}

// SQLitePageSize is the page size of a database file the store creates: 1 KiB, not SQLite's
// 4 KiB. In WAL mode a commit appends every page it changed, whole, and a step changes a few
// bytes in each of a dozen or more pages (the task row and its indexes, the usage ledger and
// rollup, the message, the events): with 1 KiB pages a one-step task writes ~19 KB instead of
// ~47 KB, at the same drain rate and GET throughput (docs/benchmarks.md, issue 28). A file
// that exists keeps the size it was created with (WAL mode cannot change it).
const SQLitePageSize = 1024

// createSQLite creates the database file at path, when it does not exist or is empty, with
// SQLitePageSize pages and in WAL mode (which fixes the page size). Errors: the file system's
// or SQLite's, uncategorised.
func createSQLite(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA page_size = " + strconv.Itoa(SQLitePageSize) + "; PRAGMA journal_mode = WAL"); err != nil {
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	return nil
}

func mysqlDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("store: mysql DSN is empty: %w", svcerr.ErrInvalid)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("store: mysql DSN: %v: %w", err, svcerr.ErrInvalid)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	// A step's blind writes go to the server as one multi-statement text (blindwrite.go), which
	// MySQL does not prepare: its arguments are written into the text by the driver, which
	// escapes them for the connection's charset (utf8mb4 below; the driver refuses the
	// multi-byte charsets where that is unsafe) and truncates times to microseconds as the
	// binary protocol of prepared statements does.
	cfg.MultiStatements = true
	cfg.InterpolateParams = true
	if err := cfg.Apply(gomysql.TimeTruncate(time.Microsecond)); err != nil {
		return "", fmt.Errorf("store: mysql DSN: %v: %w", err, svcerr.ErrInvalid)
	}
	if cfg.Collation == "" || !strings.HasPrefix(cfg.Collation, "utf8mb4") {
		cfg.Collation = "utf8mb4_unicode_ci"
	}
	return cfg.FormatDSN(), nil
}

// postgresDSN checks a pgx connection string and sets the session's time zone to UTC (the
// store keeps UTC in TIMESTAMP columns; now() and casts then agree with it).
func postgresDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("store: postgres DSN is empty: %w", svcerr.ErrInvalid)
	}
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return "", fmt.Errorf("store: postgres DSN: %v: %w", err, svcerr.ErrInvalid)
	}
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("store: postgres DSN: %v: %w", err, svcerr.ErrInvalid)
		}
		q := u.Query()
		q.Set("timezone", "UTC")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " timezone=UTC", nil
}

// Close releases the connection pool.
func (s *Store) Close() error {
	s.stmts.close()
	return s.stmts.db.Close()
}

// MaxOpenConns reports the bound of the connection pool.
func (s *Store) MaxOpenConns() int {
	sqlDB, err := s.db.DB()
	if err != nil {
		return 0
	}
	return sqlDB.Stats().MaxOpenConnections
}

// Dialect reports "sqlite", "mysql" (MariaDB reports "mysql") or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// Ping checks that the database answers. Errors are uncategorised (ErrUnavailable is the
// caller's choice).
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping %s: %w", s.dialect, err)
	}
	return nil
}

// now is the store clock in UTC at the precision both dialects keep (microseconds).
func (s *Store) now() time.Time { return normTime(s.clock()) }

func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// tx runs fn in a transaction bound to ctx and translates its error. On SQLite the transaction
// starts with BEGIN IMMEDIATE (the DSN's _txlock), so write transactions never deadlock and are
// serialised by the busy timeout.
// What the transaction created for after the commit (notifications) is handed on once it
// committed, never for a transaction that rolled back.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	var c *created
	var err error
	for attempt := 1; ; attempt++ {
		c = &created{}
		release := s.queueWriter(ctx)
		err = s.db.WithContext(withCreated(ctx, c)).Transaction(fn)
		release()
		// MySQL/MariaDB roll a deadlock's victim back whole; running it again is what the server
		// asks for (two creates of one user against a claim's row locks, seen in the drill).
		if !isDeadlock(err) || attempt == maxDeadlockAttempts || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt)*5*time.Millisecond + time.Duration(rand.IntN(5000))*time.Microsecond)
	}
	err = TranslateError(err)
	if err == nil {
		s.committed(ctx, c)
	}
	return err
}

// queueWriter waits for this process's turn to write on SQLite (see Store.writers), at most
// busyWait or until ctx ends, and returns what ends the turn; on MySQL/MariaDB it returns at once.
func (s *Store) queueWriter(ctx context.Context) (release func()) {
	if s.writers == nil {
		return func() {}
	}
	select {
	case s.writers <- struct{}{}:
		return func() { <-s.writers }
	default:
	}
	t := time.NewTimer(s.busyWait)
	defer t.Stop()
	select {
	case s.writers <- struct{}{}:
		return func() { <-s.writers }
	case <-ctx.Done():
	case <-t.C:
	}
	return func() {} // not queued: SQLite's busy timeout decides, as without the queue
}

// MySQLDriverName is the database/sql driver the store opens MySQL/MariaDB with: MySQLDriver.
const MySQLDriverName = "svc-mysql"

func init() { sql.Register(MySQLDriverName, MySQLDriver()) }

// MySQLDriver returns the MySQL/MariaDB driver whose connections the store needs
// (MySQLDriverName registers it; a wrapper that observes the connections wraps it): each
// connection's transactions run under READ COMMITTED, as PostgreSQL's do by default, so that a
// locking read locks the rows it returns and no gaps. The claim needs it: under REPEATABLE READ
// its FOR UPDATE held gap locks on the queue's index that concurrent task inserts deadlocked
// against (the 10,000-task drill). Set once a connection, not a transaction: the driver sends an
// isolation level given to BeginTx as a statement of its own, a round trip more in each claim
// (nine instead of eight), which is serial. The statement is the standard one because the
// variable's name differs (MariaDB before 11.1: tx_isolation; MySQL 8: transaction_isolation).
func MySQLDriver() driver.Driver { return readCommittedMySQL{} }

// readCommittedMySQL is the driver's Open only (not its OpenConnector, which database/sql
// would prefer, skipping the statement).
type readCommittedMySQL struct{}

func (readCommittedMySQL) Open(dsn string) (driver.Conn, error) {
	c, err := (gomysql.MySQLDriver{}).Open(dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := c.(driver.ExecerContext)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("store: the MySQL driver's connection runs no statements")
	}
	if _, err := ex.ExecContext(context.Background(), "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// inTx is tx for a transaction that produces a value: it runs fn in a transaction bound to ctx
// (BEGIN IMMEDIATE on SQLite) and returns fn's value once the transaction committed. On any
// error (fn's, or the commit's) it returns the zero value and the error translated by
// TranslateError, so callers return both as they are.
func inTx[T any](ctx context.Context, s *Store, fn func(tx *gorm.DB) (T, error)) (T, error) {
	return valueOf(func(run func(tx *gorm.DB) error) error { return s.tx(ctx, run) }, fn)
}

// inGroupTx is inTx on groupTx: fn's transaction may be shared with other writes arriving at
// the same time, run in the order of their keys (commitgroup.go).
func inGroupTx[T any](ctx context.Context, s *Store, key int64, fn func(tx *gorm.DB) (T, error)) (T, error) {
	return valueOf(func(run func(tx *gorm.DB) error) error { return s.groupTx(ctx, key, run) }, fn)
}

// valueOf runs fn through transact and returns its value, or the zero value with the error.
func valueOf[T any](transact func(func(tx *gorm.DB) error) error, fn func(tx *gorm.DB) (T, error)) (T, error) {
	var out T
	err := transact(func(tx *gorm.DB) error {
		var err error
		out, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// conn returns the handle for single-statement work bound to ctx.
func (s *Store) conn(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// lockAccounts serialises transactions that must see a stable set of users and administrators.
// MySQL/MariaDB: a row lock on account_lock held to the end of tx; it must be the transaction's
// first statement so that its consistent snapshot starts after the lock is granted. SQLite: the
// immediate transaction already holds the database write lock (the sqlite dialector drops the
// FOR UPDATE clause).
func lockAccounts(tx *gorm.DB) error {
	var id int64
	err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Table("account_lock").Select("id").Where("id = ?", 1).Scan(&id).Error
	if err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	return nil
}

// TranslateError maps GORM's typed errors onto svcerr categories: gorm.ErrRecordNotFound →
// ErrNotFound, gorm.ErrDuplicatedKey → ErrConflict, gorm.ErrForeignKeyViolated → ErrInvalid.
// Errors that already carry a category, context errors and anything else are returned as they
// are. It never inspects message text; it relies on gorm.Config.TranslateError.
func TranslateError(err error) error {
	if err == nil {
		return nil
	}
	if _, _, ok := svcerr.Public(err); ok {
		return err
	}
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("%w: %w", svcerr.ErrNotFound, err)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("%w: %w", svcerr.ErrConflict, err)
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("%w: %w", svcerr.ErrInvalid, err)
	}
	return err
}

// gormLogger reports slow queries and unexpected errors to slog at warn level. It never sees
// SQL parameters (ParamsFilter drops them before GORM renders the statement).
type gormLogger struct {
	log   *slog.Logger
	level gormlogger.LogLevel
	slow  time.Duration
}

func newGormLogger(l *slog.Logger) *gormLogger {
	return &gormLogger{log: l.With("component", "store"), level: gormlogger.Warn, slow: 200 * time.Millisecond}
}

var _ gormlogger.Interface = (*gormLogger)(nil)
var _ gorm.ParamsFilter = (*gormLogger)(nil)

func (l *gormLogger) LogMode(level gormlogger.LogLevel) gormlogger.Interface {
	c := *l
	c.level = level
	return &c
}

func (l *gormLogger) Info(ctx context.Context, msg string, args ...any) {
	if l.level >= gormlogger.Info {
		l.log.InfoContext(ctx, fmt.Sprintf(msg, args...))
	}
}

func (l *gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	if l.level >= gormlogger.Warn {
		l.log.WarnContext(ctx, fmt.Sprintf(msg, args...))
	}
}

func (l *gormLogger) Error(ctx context.Context, msg string, args ...any) {
	if l.level >= gormlogger.Error {
		l.log.ErrorContext(ctx, fmt.Sprintf(msg, args...))
	}
}

// ParamsFilter keeps parameters (passwords hashes, tokens, emails) out of every log line.
func (l *gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

func (l *gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if l.level < gormlogger.Warn {
		return
	}
	elapsed := time.Since(begin)
	switch {
	case err != nil && !expectedError(err):
		sql, _ := fc()
		l.log.WarnContext(ctx, "sql error", "sql", sql, "error", err.Error(), "duration", elapsed)
	case elapsed > l.slow:
		sql, rows := fc()
		l.log.WarnContext(ctx, "slow sql", "sql", sql, "rows", rows, "duration", elapsed)
	}
}

// expectedError reports errors that are answers rather than failures; callers handle them.
func expectedError(err error) bool {
	return errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, gorm.ErrDuplicatedKey) ||
		errors.Is(err, gorm.ErrForeignKeyViolated) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// pageWindow turns the page and per_page of a list request into LIMIT and OFFSET: page starts at
// 1 (lower values mean 1), perPage defaults to 25 below 1 and is at most 100. ok is false for a
// page beyond any table this service holds (the page is empty).
func pageWindow(page, perPage int) (limit, offset int, ok bool) {
	page, per := max(page, 1), min(perPage, limits.MaxPerPage)
	if per < 1 {
		per = limits.DefaultPerPage
	}
	if page-1 > math.MaxInt32/per {
		return 0, 0, false
	}
	return per, (page - 1) * per, true
}
