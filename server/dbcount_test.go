package server_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/server"
)

// The binary's store counts what it sends: svc_db_statements_total and
// svc_db_transactions_total{kind} on /metrics move with the work done (a read adds statements
// and no write transaction; creating an account adds a write transaction).
func TestDatabaseCountersOnMetrics(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // storage/ (SQLite file, key) is relative to the working directory
	environ := []string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"), "SVC_KEY_PATH=" + filepath.Join(dir, "secret.key"),
		"SVC_LOG_PATH=stderr", "SVC_LOG_LEVEL=error",
	}
	if db := networkDBEnv(t); db != nil {
		environ = append(environ, db...)
	} else {
		environ = append(environ, "SVC_DB_DRIVER=sqlite", "SVC_DB_NAME=counted")
	}
	ctx := context.Background()
	app, err := server.Open(ctx, config.NewLoader(environ), server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Hash: account.HashParams{MemoryKiB: 1024, Time: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	read := func() (stmts, writes, reads float64) {
		t.Helper()
		fams, err := app.Metrics.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				switch f.GetName() {
				case "svc_db_statements_total":
					stmts, found = m.GetCounter().GetValue(), found+1
				case "svc_db_transactions_total":
					if m.GetLabel()[0].GetValue() == "write" {
						writes = m.GetCounter().GetValue()
					} else {
						reads = m.GetCounter().GetValue()
					}
					found++
				}
			}
		}
		if found != 3 {
			t.Fatalf("%d of the 3 database series on /metrics", found)
		}
		return
	}
	s0, w0, _ := read()
	if s0 == 0 || w0 == 0 {
		t.Fatalf("after start-up (migrations, settings, seed): %v statements, %v write transactions", s0, w0)
	}
	if _, err := app.Store.Settings(ctx); err != nil {
		t.Fatal(err)
	}
	s1, w1, _ := read()
	if s1 <= s0 || w1 != w0 {
		t.Fatalf("a read: statements %v → %v, write transactions %v → %v", s0, s1, w0, w1)
	}
	if _, err := app.Accounts.CreateUser(ctx, "counted@example.com", "counted-password-1", "Counted", false, true); err != nil {
		t.Fatal(err)
	}
	s2, w2, _ := read()
	if s2 <= s1 || w2 <= w1 {
		t.Fatalf("creating an account: statements %v → %v, write transactions %v → %v", s1, s2, w1, w2)
	}
}
