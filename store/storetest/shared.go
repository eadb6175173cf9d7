package storetest

import (
	"context"
	"testing"

	"github.com/agentsvc/svc/store"
)

// NewShared returns n independent stores (each with its own connection pool, as separate
// processes would have) on ONE migrated database, as New's: the same SQLite file (WAL) by
// default, one MySQL/MariaDB database when SVC_TEST_MYSQL_DSN is set, or one PostgreSQL schema
// when SVC_TEST_POSTGRES_DSN is set. Tests of cross-process behaviour (two worker daemons on one
// database) use it. All are closed in t.Cleanup.
func NewShared(t testing.TB, n int) []*store.Store {
	t.Helper()
	ctx := context.Background()
	opts := migratedOptions(t)
	out := make([]*store.Store, 0, n)
	for i := range n {
		s, err := store.Open(ctx, opts)
		if err != nil {
			t.Fatalf("storetest: open %s store %d: %v", opts.Driver, i, err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("storetest: close store %d: %v", i, err)
			}
		})
		out = append(out, s)
	}
	return out
}
