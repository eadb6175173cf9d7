package plugins

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentsvc/svc/plugins/sqlscope"
)

// TestLoadMigrations holds the migration file rules the store applied before they moved here.
func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ok := fstest.MapFS{
		"sqlite/demo_0002_more.sql":  file("SELECT 2;"),
		"sqlite/demo_0001_first.sql": file("SELECT 1;"),
		"mysql/demo_0001_first.sql":  file("SELECT 1;"),
	}
	migs, err := loadMigrations(ok, "sqlite", "demo", 0)
	if err != nil || len(migs) != 2 || migs[0].Version != 1 || migs[1].Name != "demo_0002_more.sql" || !slices.Equal(migs[1].Statements, []string{"SELECT 2"}) {
		t.Fatalf("loadMigrations = %+v, %v", migs, err)
	}
	if migs, err := loadMigrations(ok, "postgres", "demo", 0); err != nil || len(migs) != 0 {
		t.Fatalf("missing dialect folder = %+v, %v", migs, err)
	}
	for name, tc := range map[string]struct {
		fs   fstest.MapFS
		want string
	}{
		"no prefix":  {fstest.MapFS{"sqlite/0001_x.sql": file("")}, "the name must be demo_NNNN_name.sql"},
		"gap":        {fstest.MapFS{"sqlite/demo_0001_a.sql": file(""), "sqlite/demo_0003_c.sql": file("")}, "without gaps or repeats"},
		"repeat":     {fstest.MapFS{"sqlite/demo_0001_a.sql": file(""), "sqlite/demo_0001_b.sql": file("")}, "without gaps or repeats"},
		"users":      {fstest.MapFS{"sqlite/demo_0001_a.sql": file("CREATE TABLE demo_a (id INT);"), "sqlite/demo_0002_b.sql": file("UPDATE users SET name='x';")}, "migration sqlite/demo_0002_b.sql: statement 1 (UPDATE users SET name='x'): table users is not one of the plugin's"},
		"core index": {fstest.MapFS{"sqlite/demo_0001_a.sql": file("DROP INDEX users_email_key;")}, "index users_email_key is not one of the plugin's"},
		"too big":    {fstest.MapFS{"sqlite/demo_0001_a.sql": file(strings.Repeat(" ", sqlscope.MaxBytes+1))}, "larger than"},
	} {
		if _, err := loadMigrations(tc.fs, "sqlite", "demo", 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// TestReservedPrefix: a slug whose prefix is the start of a service table's name ("users" and
// users_email_key, "plugin" and plugin_migrations) may not touch those names; and two plugins
// whose prefixes overlap are told apart.
func TestReservedPrefix(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for slug, sql := range map[string]string{
		"users":  "DROP INDEX users_email_key;",
		"plugin": "DELETE FROM plugin_migrations;",
		"task":   "UPDATE task_events SET seq = 0;",
		"schema": "DROP TABLE schema_migrations;",
	} {
		fsys := fstest.MapFS{"mysql/" + slug + "_0001_x.sql": file(sql)}
		if _, err := loadMigrations(fsys, "mysql", slug, 0); err == nil || !strings.Contains(err.Error(), "belongs to the service") {
			t.Errorf("%s: %q: %v", slug, sql, err)
		}
	}
	for _, tc := range []struct {
		slug     string
		migrated []string
		want     string
	}{
		{"a", []string{"a_b"}, "a_b"}, {"a_b", []string{"a"}, "a"}, {"a", []string{"a", "ab", "a-b"}, ""}, {"x", nil, ""},
	} {
		if got := sharedPrefix(tc.slug, tc.migrated); got != tc.want {
			t.Errorf("sharedPrefix(%s, %v) = %q, want %q", tc.slug, tc.migrated, got, tc.want)
		}
	}
}

// TestAppliedMigrationsNotChecked: files already applied are neither read nor checked (they
// never run again; a plugin installed before the check keeps loading) and carry no statements;
// the pending ones are checked.
func TestAppliedMigrationsNotChecked(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		"sqlite/demo_0001_old.sql": file("CREATE INDEX idx_old ON demo_a (x);"),
		"sqlite/demo_0002_new.sql": file("CREATE TABLE demo_b (id INT);"),
	}
	migs, err := loadMigrations(fsys, "sqlite", "demo", 1)
	if err != nil || len(migs) != 2 || migs[0].Statements != nil || !slices.Equal(migs[1].Statements, []string{"CREATE TABLE demo_b (id INT)"}) {
		t.Fatalf("loadMigrations after version 1 = %+v, %v", migs, err)
	}
	if _, err := loadMigrations(fsys, "sqlite", "demo", 0); err == nil || !strings.Contains(err.Error(), "index idx_old is not one of the plugin's") {
		t.Fatalf("pending: %v", err)
	}
}
