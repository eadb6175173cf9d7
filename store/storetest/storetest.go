// Package storetest gives tests a migrated store with no rows but the migrations' own: a fresh
// SQLite file by default; when SVC_TEST_MYSQL_DSN is set (e.g. "root@tcp(127.0.0.1:3306)/test"),
// a database on that MySQL/MariaDB server; when SVC_TEST_POSTGRES_DSN is set instead (e.g.
// "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), a schema in that PostgreSQL
// database (the connections' search_path). Server databases come from a per-process pool, reset
// between tests (pool.go); NewUnmigrated's are fresh and dropped when the test ends.
// The same suites therefore run on every dialect.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentsvc/svc/store"
)

// EnvMySQLDSN names the environment variable that switches the suites to MySQL/MariaDB.
const EnvMySQLDSN = "SVC_TEST_MYSQL_DSN"

// EnvPostgresDSN names the environment variable that switches the suites to PostgreSQL (when
// EnvMySQLDSN is not set).
const EnvPostgresDSN = "SVC_TEST_POSTGRES_DSN"

// Dialect reports which dialect New uses in this process ("sqlite", "mysql" or "postgres"),
// for logs and for the rare test that must know.
func Dialect() string {
	if os.Getenv(EnvMySQLDSN) != "" {
		return store.DialectMySQL
	}
	if os.Getenv(EnvPostgresDSN) != "" {
		return store.DialectPostgres
	}
	return store.DialectSQLite
}

// freshOptions are the options of a store on a fresh, empty database of the dialect Dialect
// names (dropped when the test ends), with logger.
func freshOptions(t testing.TB) store.Options {
	t.Helper()
	opts := store.Options{Logger: testLogger(t)}
	switch Dialect() {
	case store.DialectMySQL:
		opts.Driver = "mysql"
		opts.MySQLDSN = createMySQLDatabase(t, os.Getenv(EnvMySQLDSN))
	case store.DialectPostgres:
		opts.Driver = "postgres"
		opts.PostgresDSN = createPostgresSchema(t, os.Getenv(EnvPostgresDSN))
	default:
		opts.Driver = "sqlite"
		opts.SQLitePath = filepath.Join(sqliteDir(t), "svc.sqlite")
	}
	return opts
}

// migratedOptions are the options of a store on a migrated database: on MySQL and PostgreSQL
// one of the process's pool (pool.go); on SQLite a fresh file, a copy of the process's migrated
// template (sqliteTemplate).
func migratedOptions(t testing.TB) store.Options {
	t.Helper()
	if Dialect() != store.DialectSQLite {
		return getPool(t).options(t)
	}
	opts := freshOptions(t)
	file, err := sqliteTemplate()
	if err != nil {
		t.Fatalf("storetest: migrated SQLite template: %v", err)
	}
	if err := os.WriteFile(opts.SQLitePath, file, 0o600); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return opts
}

// sqliteTemplate is the file of a migrated SQLite database, made once per test process: a
// test's database starts as a copy of it rather than running every migration, which took over a
// third of the server package's test CPU on SQLite (as the pool spares the server databases).
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "storetest-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "svc.sqlite")
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Driver: "sqlite", SQLitePath: path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into the file and removes it:
	// the file alone is the database.
	if err := s.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("%s-wal outlived the store", path)
	}
	return os.ReadFile(path)
})

// New returns a migrated store, closed in t.Cleanup: on a fresh SQLite file (a copy of a migrated
// one), or on MySQL and PostgreSQL on a database of the process's pool, emptied of the earlier test's rows. It uses the
// real clock (apitest gives its store the service's fake clock).
func New(t testing.TB) *store.Store {
	t.Helper()
	return NewWithClock(t, nil)
}

// NewWithClock is New with the store's clock replaced (pass (*Clock).Now).
func NewWithClock(t testing.TB, clock func() time.Time) *store.Store {
	t.Helper()
	opts := migratedOptions(t)
	opts.Clock = clock
	return open(t, opts)
}

// NewFresh is New on a database of its own, dropped when the test ends, for a test whose premise
// is something a pool's reset does not restore: PostgreSQL's planner statistics of tables never
// analyzed, say.
func NewFresh(t testing.TB) *store.Store {
	t.Helper()
	s := NewUnmigrated(t, nil)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("storetest: migrate %s store: %v", s.Dialect(), err)
	}
	return s
}

// NewUnmigrated returns a store on a fresh, empty database (for migration tests); clock may be
// nil.
func NewUnmigrated(t testing.TB, clock func() time.Time) *store.Store {
	t.Helper()
	opts := freshOptions(t)
	opts.Clock = clock
	return open(t, opts)
}

// sqliteDir makes the folder of a test's SQLite database, removed after the store closed (its
// cleanup is registered first, so it runs last). Unlike t.TempDir's cleanup it retries: a
// closing SQLite connection may still be unlinking its -wal and -shm files when the folder is
// removed, which failed t.TempDir's cleanup with "directory not empty" on a loaded machine.
func sqliteDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "storetest-")
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		for attempt := 0; ; attempt++ {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if attempt == 10 {
				t.Logf("storetest: remove %s: %v", dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

// opened remembers how each store was opened, for Twin.
var opened sync.Map // *store.Store → store.Options

func open(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("storetest: open %s store: %v", opts.Driver, err)
	}
	opened.Store(s, opts)
	// Registered after the database drop, so it runs before it (cleanups run last-in first-out).
	t.Cleanup(func() {
		opened.Delete(s)
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	return s
}

// Twin opens a second store on the database of s (a store of this package), with its own
// connections and hooks, as a second svc process would: for tests of what crosses processes.
// Each of with may change its options (VersionTTL, say).
func Twin(t testing.TB, s *store.Store, with ...func(*store.Options)) *store.Store {
	t.Helper()
	o, ok := opened.Load(s)
	if !ok {
		t.Fatal("storetest: Twin of a store storetest did not open")
	}
	opts := o.(store.Options)
	for _, f := range with {
		f(&opts)
	}
	return open(t, opts)
}

// MySQLDatabase creates a throwaway database on the server of dsn (removed when the test ends)
// and returns where it is, for a test that hands the database to another process through the
// service's settings (db_host, db_port, db_name, db_user, db_password).
func MySQLDatabase(t testing.TB, dsn string) (host string, port int, name, user, password string) {
	t.Helper()
	cfg, err := gomysql.ParseDSN(createMySQLDatabase(t, dsn))
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	h, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		t.Fatalf("storetest: address %q: %v", cfg.Addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil {
		t.Fatalf("storetest: port %q: %v", p, err)
	}
	return h, port, cfg.DBName, cfg.User, cfg.Passwd
}

// createMySQLDatabase creates svc_t_<random> on the server of dsn, schedules its removal and
// returns a DSN for it.
func createMySQLDatabase(t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvMySQLDSN, err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("storetest: connect to MySQL: %v", err)
	}
	defer admin.Close()

	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "svc_t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("storetest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Errorf("storetest: connect to drop %s: %v", name, err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("storetest: drop database %s: %v", name, err)
		}
	})
	return mysqlDSN(t, dsn, name)
}

// mysqlDSN is dsn (a server's) on database name, with the parameters the store expects.
func mysqlDSN(t testing.TB, dsn, name string) string {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvMySQLDSN, err)
	}
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.MultiStatements = true
	cfg.Collation = "utf8mb4_unicode_ci"
	// The driver keeps its charset list unexported; add the parameter to the formatted DSN.
	out := cfg.FormatDSN()
	if strings.Contains(out, "?") {
		return out + "&charset=utf8mb4"
	}
	return out + "?charset=utf8mb4"
}

// testLogger sends the store's warnings to the test log until the test's cleanups are done
// (a straggling goroutine must not log into a finished test, which panics).
func testLogger(t testing.TB) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.done.Store(true) }) // registered first, runs last
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct {
	t    testing.TB
	done atomic.Bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
