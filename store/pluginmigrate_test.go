package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestMigratePluginConcurrently: two processes loading the same plugin at once apply each of
// its migrations exactly once between them, and both succeed (on MySQL/MariaDB, where DDL
// commits implicitly, only the migration lock keeps the second from creating the table again).
func TestMigratePluginConcurrently(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	other := storetest.Twin(t, s)
	var migs []store.PluginMigration
	for v := 1; v <= 3; v++ {
		migs = append(migs, store.PluginMigration{Version: v, Name: fmt.Sprintf("%04d_t.sql", v),
			Statements: []string{fmt.Sprintf("CREATE TABLE plug_conc_%d (id INTEGER PRIMARY KEY)", v), fmt.Sprintf("INSERT INTO plug_conc_%d (id) VALUES (1)", v)}})
	}
	var wg sync.WaitGroup
	applied := make([]int, 2)
	errs := make([]error, 2)
	for i, st := range []*store.Store{s, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = st.MigratePlugin(context.Background(), "conc", migs)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || applied[0]+applied[1] != len(migs) {
		t.Fatalf("applied %v, errors %v; want %d applied in all", applied, errs, len(migs))
	}
	if v, err := s.PluginSchemaVersion(context.Background(), "conc"); err != nil || v != 3 {
		t.Fatalf("schema version = %d, %v", v, err)
	}
	for v := 1; v <= 3; v++ {
		var n int64
		if err := s.GormDBForTest().Raw(fmt.Sprintf("SELECT COUNT(*) FROM plug_conc_%d", v)).Row().Scan(&n); err != nil || n != 1 {
			t.Fatalf("plug_conc_%d rows = %d, %v", v, n, err)
		}
	}
}

// TestReservedSchemaName: the names of the service's tables, indexes and bookkeeping tables
// (both dialects) are reserved; a plugin's are not.
func TestReservedSchemaName(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"users", "task_events", "plugin_migrations", "schema_migrations", "users_email_key", "tasks_status_user_idx", "sessions"} {
		if !store.ReservedSchemaName(n) {
			t.Errorf("%s is not reserved", n)
		}
	}
	for _, n := range []string{"notes_notes", "weather_cities", "users_extra", "if", "not"} {
		if store.ReservedSchemaName(n) {
			t.Errorf("%s is reserved", n)
		}
	}
}

// TestPluginMigrationSlugs lists each slug with applied migrations once.
func TestPluginMigrationSlugs(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := context.Background()
	for _, slug := range []string{"beta", "alpha"} {
		migs := []store.PluginMigration{
			{Version: 1, Name: "1.sql", Statements: []string{"CREATE TABLE " + slug + "_a (id INTEGER)"}},
			{Version: 2, Name: "2.sql", Statements: []string{"CREATE TABLE " + slug + "_b (id INTEGER)"}},
		}
		if _, err := s.MigratePlugin(ctx, slug, migs); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.PluginMigrationSlugs(ctx); err != nil || strings.Join(got, ",") != "alpha,beta" {
		t.Fatalf("PluginMigrationSlugs = %v, %v", got, err)
	}
}
