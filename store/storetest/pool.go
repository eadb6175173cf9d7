package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/agentsvc/svc/store"
)

// The pool of migrated databases of a test process, on MySQL/MariaDB and PostgreSQL.
//
// Creating a database (a PostgreSQL schema) and running every migration took ~0.45 s on MariaDB
// and ~0.6 s on PostgreSQL, most of a typical test's time and the bulk of CI's database suites
// (a SQLite file costs little, so SQLite keeps a fresh file per test). So New, NewWithClock,
// NewShared and NewFaulty take a migrated database from this process's pool, and when the test
// ends (after its stores closed) it goes back reset: every table's rows deleted and the rows the
// migrations seeded (read once, from the process's first migrated database) put back, in one
// transaction. Rows are all a store leaves behind, with two exceptions a reset cannot undo, so
// the database is dropped instead: a failed test's (its state may be what failed it), and one
// whose tables are no longer the migrations' (a plugin's migrations add tables). Counters of
// auto-increment and identity columns go on after a reset: tests must not assume ids.
// NewUnmigrated, MySQLDatabase and PostgresDatabase still create fresh databases (svc_t_<random>),
// dropped when the test ends.
//
// Pooled databases are named svc_p_<pid>_<random>: a test process has no hook that runs when it
// exits, so its pool stays on the server, and the next process that builds a pool on that server
// drops those whose process is gone (its own pid's too: a reused pid's leftovers). Processes in
// different PID namespaces (containers) must therefore not share one server.
type pool struct {
	dialect string
	dsn     string  // the server's DSN (EnvMySQLDSN's or EnvPostgresDSN's)
	admin   *sql.DB // on dsn: resets the databases; tables are named with their database

	mu     sync.Mutex
	free   []string    // reset databases, ready for a test
	tables []string    // every table of a migrated database, sorted; nil until one was read
	seed   []seedTable // the rows of those tables right after the migrations, read with tables
}

// seedTable is a table's rows right after the migrations (its generated columns left out).
type seedTable struct {
	name string
	cols []string
	rows [][]any
}

const poolPrefix = "svc_p_"

var thePool struct {
	once sync.Once
	p    *pool
	err  error
}

// getPool returns the process's pool on the server Dialect names (MySQL or PostgreSQL),
// sweeping the server of gone processes' pools when it is built.
func getPool(t testing.TB) *pool {
	t.Helper()
	thePool.once.Do(func() { thePool.p, thePool.err = newPool(t) })
	if thePool.err != nil {
		t.Fatalf("storetest: database pool: %v", thePool.err)
	}
	return thePool.p
}

func newPool(t testing.TB) (*pool, error) {
	p := &pool{dialect: Dialect()}
	var err error
	switch p.dialect {
	case store.DialectMySQL:
		p.dsn = os.Getenv(EnvMySQLDSN)
		var cfg *gomysql.Config
		if cfg, err = gomysql.ParseDSN(p.dsn); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvMySQLDSN, err)
		}
		// A reset deletes from every table in one statement batch, in any order: foreign keys
		// are not checked on these connections, which do nothing else.
		cfg.MultiStatements = true
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["foreign_key_checks"] = "0"
		p.admin, err = sql.Open("mysql", cfg.FormatDSN())
	default:
		p.dsn = os.Getenv(EnvPostgresDSN)
		p.admin, err = sql.Open("pgx", p.dsn)
	}
	if err != nil {
		return nil, err
	}
	p.sweep(t)
	return p, nil
}

// sweep drops the pooled databases of processes that are gone (and of this process's pid, which
// has no pool yet: the leftovers of an earlier process that had it).
func (p *pool) sweep(t testing.TB) {
	q := "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1"
	if p.dialect == store.DialectMySQL {
		q = "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE ?"
	}
	var names []string
	err := eachRow(context.Background(), p.admin, q, []any{`svc\_p\_%`}, func(r *sql.Rows) error {
		var n string
		err := r.Scan(&n)
		names = append(names, n)
		return err
	})
	if err != nil {
		t.Logf("storetest: list the pools of earlier processes: %v", err)
		return
	}
	for _, n := range names {
		pid, _, _ := strings.Cut(strings.TrimPrefix(n, poolPrefix), "_")
		id, err := strconv.Atoi(pid)
		if err != nil || (id != os.Getpid() && processAlive(id)) {
			continue
		}
		if err := p.drop(n); err != nil {
			t.Logf("storetest: drop %s of gone process %d: %v", n, id, err)
		}
	}
}

// processAlive reports whether a process of this id runs (signal 0 checks without sending).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// options returns the options of a store on a migrated database of the pool, which goes back to
// the pool reset when the test ends (its cleanup runs after those of stores opened later), or
// is dropped if the test failed or its tables changed.
func (p *pool) options(t testing.TB) store.Options {
	t.Helper()
	p.mu.Lock()
	var name string
	if n := len(p.free); n > 0 {
		name, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if name == "" {
		name = p.create(t)
	}
	t.Cleanup(func() { p.giveBack(t, name) })
	return p.storeOptions(t, name)
}

// storeOptions are the options of a store on database (schema) name of the server.
func (p *pool) storeOptions(t testing.TB, name string) store.Options {
	t.Helper()
	opts := store.Options{Logger: testLogger(t)}
	if p.dialect == store.DialectMySQL {
		opts.Driver, opts.MySQLDSN = "mysql", mysqlDSN(t, p.dsn, name)
	} else {
		opts.Driver, opts.PostgresDSN = "postgres", withPostgresParam(t, p.dsn, "search_path", name)
	}
	return opts
}

// create makes a database for the pool and migrates it; the first one's rows become the seed.
func (p *pool) create(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	name := poolPrefix + strconv.Itoa(os.Getpid()) + "_" + randomHex(6)
	stmt := "CREATE SCHEMA " + name
	if p.dialect == store.DialectMySQL {
		stmt = "CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
	}
	if _, err := p.admin.ExecContext(ctx, stmt); err != nil {
		t.Fatalf("storetest: %s: %v", stmt, err)
	}
	err := func() error {
		s, err := store.Open(ctx, p.storeOptions(t, name))
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Migrate(ctx); err != nil {
			return err
		}
		p.mu.Lock()
		read := p.tables != nil
		p.mu.Unlock()
		if read {
			return nil
		}
		tables, seed, err := p.readSeed(ctx, name)
		if err != nil {
			return fmt.Errorf("read the migrations' rows: %w", err)
		}
		p.mu.Lock()
		if p.tables == nil {
			p.tables, p.seed = tables, seed
		}
		p.mu.Unlock()
		return nil
	}()
	if err != nil {
		_ = p.drop(name)
		t.Fatalf("storetest: migrate pooled %s database %s: %v", p.dialect, name, err)
	}
	return name
}

// giveBack puts database name back into the pool, reset, or drops it when the test failed or the
// reset could not be done.
func (p *pool) giveBack(t testing.TB, name string) {
	if !t.Failed() {
		err := p.reset(name)
		if err == nil {
			p.mu.Lock()
			p.free = append(p.free, name)
			p.mu.Unlock()
			return
		}
		t.Logf("storetest: %s not reused: %v", name, err)
	}
	if err := p.drop(name); err != nil {
		t.Errorf("storetest: %v", err)
	}
}

// reset deletes every row of database name and puts the seed's rows back, in one transaction.
// It fails, so the database is dropped, when the tables are not the migrated ones.
func (p *pool) reset(name string) error {
	ctx := context.Background()
	tables, err := p.listTables(ctx, name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	want, seed := p.tables, p.seed
	p.mu.Unlock()
	if !slices.Equal(tables, want) {
		return fmt.Errorf("its tables are not the migrations' (%d, want %d)", len(tables), len(want))
	}
	// Foreign keys are not checked while the rows go (the admin connections' setting on MySQL;
	// on PostgreSQL the replica role skips the triggers that check them), so the tables go in
	// any order.
	var b strings.Builder
	if p.dialect == store.DialectPostgres {
		b.WriteString("SET LOCAL session_replication_role = replica;\n")
	}
	for _, tb := range tables {
		fmt.Fprintf(&b, "DELETE FROM %s;\n", p.qualified(name, tb))
	}
	tx, err := p.admin.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("delete the rows: %w", err)
	}
	for _, st := range seed {
		q, args := p.insert(name, st)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("restore %s: %w", st.name, err)
		}
	}
	return tx.Commit()
}

// readSeed reads the tables of database name and the rows of those that have any.
func (p *pool) readSeed(ctx context.Context, name string) ([]string, []seedTable, error) {
	tables, err := p.listTables(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	q := `SELECT c.relname, a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE c.oid IN (` + pgSchemaRelations + `) AND c.relkind IN ('r', 'p')
		AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY c.relname, a.attnum`
	if p.dialect == store.DialectMySQL {
		q = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ? AND COALESCE(generation_expression, '') = '' ORDER BY table_name, ordinal_position"
	}
	cols := map[string][]string{}
	err = eachRow(ctx, p.admin, q, []any{name}, func(r *sql.Rows) error {
		var tb, col string
		if err := r.Scan(&tb, &col); err != nil {
			return err
		}
		cols[tb] = append(cols[tb], col)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var seed []seedTable
	for _, tb := range tables {
		st := seedTable{name: tb, cols: cols[tb]}
		quoted := make([]string, len(st.cols))
		for i, c := range st.cols {
			quoted[i] = p.quote(c)
		}
		err := eachRow(ctx, p.admin, "SELECT "+strings.Join(quoted, ", ")+" FROM "+p.qualified(name, tb), nil, func(r *sql.Rows) error {
			vals := make([]any, len(st.cols))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				return err
			}
			st.rows = append(st.rows, vals)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if len(st.rows) > 0 {
			seed = append(seed, st)
		}
	}
	return tables, seed, nil
}

// insert is the statement that puts st's rows into database name, and its arguments.
func (p *pool) insert(name string, st seedTable) (string, []any) {
	quoted := make([]string, len(st.cols))
	for i, c := range st.cols {
		quoted[i] = p.quote(c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) ", p.qualified(name, st.name), strings.Join(quoted, ", "))
	if p.dialect == store.DialectPostgres {
		b.WriteString("OVERRIDING SYSTEM VALUE ") // the seed's own values for identity columns
	}
	b.WriteString("VALUES ")
	var args []any
	for i, row := range st.rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j, v := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			args = append(args, v)
			if p.dialect == store.DialectMySQL {
				b.WriteString("?")
			} else {
				b.WriteString("$" + strconv.Itoa(len(args)))
			}
		}
		b.WriteString(")")
	}
	return b.String(), args
}

// pgSchemaRelations selects the relations of schema $1 on PostgreSQL by their dependency on it
// (pg_depend's index): pg_class has no index on the schema, and this machine's server runs with
// autovacuum off, so after a day of test runs creating and dropping schemas a scan of it
// (pg_tables, information_schema) took 0.2 s.
const pgSchemaRelations = `SELECT d.objid FROM pg_depend d WHERE d.refclassid = 'pg_namespace'::regclass
	AND d.refobjid = $1::regnamespace AND d.classid = 'pg_class'::regclass`

// listTables lists the tables of database (schema) name, sorted.
func (p *pool) listTables(ctx context.Context, name string) ([]string, error) {
	q := "SELECT relname FROM pg_class WHERE oid IN (" + pgSchemaRelations + ") AND relkind IN ('r', 'p')"
	if p.dialect == store.DialectMySQL {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE'"
	}
	var out []string
	err := eachRow(ctx, p.admin, q, []any{name}, func(r *sql.Rows) error {
		var tb string
		err := r.Scan(&tb)
		out = append(out, tb)
		return err
	})
	slices.Sort(out)
	return out, err
}

func (p *pool) quote(ident string) string {
	if p.dialect == store.DialectMySQL {
		return "`" + ident + "`"
	}
	return pgx.Identifier{ident}.Sanitize()
}

func (p *pool) qualified(db, table string) string { return p.quote(db) + "." + p.quote(table) }

// drop removes database (schema) name. On PostgreSQL two sessions dropping schemas at once can
// deadlock on the catalog (SQLSTATE 40P01, seen under load): the victim tries again.
func (p *pool) drop(name string) error {
	stmt := "DROP SCHEMA IF EXISTS " + name + " CASCADE"
	if p.dialect == store.DialectMySQL {
		stmt = "DROP DATABASE IF EXISTS `" + name + "`"
	}
	for attempt := 1; ; attempt++ {
		_, err := p.admin.ExecContext(context.Background(), stmt)
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "40P01") {
			if err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
			return nil
		}
		time.Sleep(time.Duration(attempt*50) * time.Millisecond)
	}
}

// eachRow runs query q and calls fn on each row.
func eachRow(ctx context.Context, db *sql.DB, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
