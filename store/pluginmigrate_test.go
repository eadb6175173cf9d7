package store_test

import (
	"context"
	"fmt"
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
			SQL: fmt.Sprintf("CREATE TABLE plug_conc_%d (id INTEGER PRIMARY KEY);\nINSERT INTO plug_conc_%d (id) VALUES (1);", v, v)})
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
