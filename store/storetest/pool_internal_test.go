package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentsvc/svc/store"
)

// poolOf skips t on SQLite, which has no pool, and returns the process's pool.
func poolOf(t *testing.T) *pool {
	t.Helper()
	if Dialect() == store.DialectSQLite {
		t.Skip("SQLite has no database pool")
	}
	return getPool(t)
}

// lastFree is the database most recently given back to p.
func lastFree(t *testing.T, p *pool) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		t.Fatal("no database went back to the pool")
	}
	return p.free[len(p.free)-1]
}

func exists(t *testing.T, p *pool, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM pg_namespace WHERE nspname = $1"
	if p.dialect == store.DialectMySQL {
		q = "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?"
	}
	var n int
	if err := p.admin.QueryRowContext(context.Background(), q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestPoolReset: a test's rows are gone when its database goes back to the pool, and the
// migrations' own rows are back as they were (not parallel: no other test takes the database
// in between).
func TestPoolReset(t *testing.T) {
	p := poolOf(t)
	ctx := context.Background()
	t.Run("dirty", func(t *testing.T) {
		s := New(t)
		u := User(t, s)
		g := Group(t, s, u)
		Task(t, s, Agent(t, s, g.PrincipalID), u.ID) // the user and the agent bump the versions
		if v, err := s.ConfigVersion(ctx); err != nil || v < 2 {
			t.Fatalf("config version %d, %v: want bumped", v, err)
		}
	})
	name := lastFree(t, p)
	tables, seed, err := p.readSeed(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tables, p.tables) || !reflect.DeepEqual(seed, p.seed) {
		t.Fatalf("after the reset %s has tables %v and rows %v, want %v and %v", name, tables, seed, p.tables, p.seed)
	}
	if len(p.seed) == 0 {
		t.Fatal("the migrations seeded no rows: the check above checks nothing")
	}
}

// TestPoolSchemaChanged: a database whose tables a test changed (a plugin's migration) is
// dropped, not reused.
func TestPoolSchemaChanged(t *testing.T) {
	p := poolOf(t)
	var name string
	t.Run("plugin", func(t *testing.T) {
		s := New(t)
		migs := []store.PluginMigration{{Version: 1, Name: "1.sql", Statements: []string{"CREATE TABLE poolplug_a (id INTEGER)"}}}
		if _, err := s.MigratePlugin(context.Background(), "poolplug", migs); err != nil {
			t.Fatal(err)
		}
		name = databaseName(t, s)
	})
	p.mu.Lock()
	reused := slices.Contains(p.free, name)
	p.mu.Unlock()
	if reused || exists(t, p, name) {
		t.Fatalf("%s: back in the pool %v, on the server %v; want dropped", name, reused, exists(t, p, name))
	}
}

// TestPoolSweep: a new pool drops the pooled databases of gone processes and keeps those of
// live ones.
func TestPoolSweep(t *testing.T) {
	p := poolOf(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s%d_%s", poolPrefix, gone.Process.Pid, randomHex(6))
	live := fmt.Sprintf("%s%d_%s", poolPrefix, os.Getppid(), randomHex(6))
	for _, n := range []string{dead, live} {
		stmt := "CREATE SCHEMA " + n
		if p.dialect == store.DialectMySQL {
			stmt = "CREATE DATABASE `" + n + "`"
		}
		if _, err := p.admin.ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.drop(n) })
	}
	p.sweep(t)
	if exists(t, p, dead) || !exists(t, p, live) {
		t.Fatalf("after the sweep: %s (gone process) exists %v, %s (live process) exists %v; want false, true",
			dead, exists(t, p, dead), live, exists(t, p, live))
	}
}

// databaseName is the database (PostgreSQL: schema) a store of this package works in.
func databaseName(t *testing.T, s *store.Store) string {
	t.Helper()
	o, ok := opened.Load(s)
	if !ok {
		t.Fatal("a store storetest did not open")
	}
	opts := o.(store.Options)
	if opts.Driver == "mysql" {
		cfg, err := gomysql.ParseDSN(opts.MySQLDSN)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.DBName
	}
	u, err := url.Parse(opts.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}
