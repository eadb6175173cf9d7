package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm/llmfake"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store"
)

// countingModel is a zero-latency OpenAI-compatible model that answers every call "done" and
// counts the connections opened to it and the calls made.
type countingModel struct {
	srv          *httptest.Server
	conns, calls atomic.Int64
}

func newCountingModel(t *testing.T) *countingModel {
	m := &countingModel{}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		_, _ = io.Copy(io.Discard, r.Body)
		m.calls.Add(1)
		llmfake.WriteOpenAIAnswer(w, req.Stream, "m", map[string]any{"role": "assistant", "content": "done"}, "stop")
	}))
	m.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			m.conns.Add(1)
		}
	}
	m.srv.Start()
	t.Cleanup(m.srv.Close)
	return m
}

// openDrainApp opens the service in a temporary directory with default worker settings
// (max_workers and db_max_open_conns unset) and the global default model at m, plus env.
func openDrainApp(t *testing.T, m *countingModel, env ...string) *server.App {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir) // storage/ (SQLite file) is relative to the working directory
	environ := append([]string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_KEY_PATH=" + filepath.Join(dir, "secret.key"),
		"SVC_LOG_LEVEL=warning", "SVC_LOG_PATH=stderr", "SVC_WORKER_RUNTIME_MODE=server",
		"SVC_LLM_DRIVER=openai", "SVC_LLM_BASE_URL=" + m.srv.URL + "/v1", "SVC_LLM_MODEL=m",
	}, env...)
	if db := networkDBEnv(t); db != nil {
		environ = append(environ, db...)
	} else {
		environ = append(environ, "SVC_DB_DRIVER=sqlite", "SVC_DB_NAME=drain")
	}
	app, err := server.Open(context.Background(), config.NewLoader(environ),
		server.Options{Logger: slog.New(slog.NewTextHandler(&prefixWriter{t: t, prefix: "app: "}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// TestDrainWithDefaultWorkers: with max_workers unset the daemon runs the dialect's automatic
// number of tasks at once (16 on SQLite, 32 on MySQL/MariaDB, 24 on PostgreSQL; the claimer
// lingers 1 ms after a wake-up on MySQL/MariaDB only), within a bounded connection
// pool, and drains 200 queued tasks completely: none is left RUNNING or QUEUED. The model
// calls, sequential and concurrent, go through one client per configuration whose idle
// connections cover the workers: connections are reused, not opened per call.
func TestDrainWithDefaultWorkers(t *testing.T) {
	m := newCountingModel(t)
	app := openDrainApp(t, m)
	ctx := context.Background()
	wantWorkers, wantPool, wantLinger := 16, 16, time.Duration(0)
	switch app.Store.Dialect() {
	case store.DialectMySQL:
		wantWorkers, wantPool, wantLinger = 32, 32, time.Millisecond
	case store.DialectPostgres:
		wantWorkers, wantPool = 24, 24
	}
	if app.Daemon.MaxWorkers != wantWorkers || app.Store.MaxOpenConns() != wantPool {
		t.Fatalf("workers %d, pool %d; want %d, %d", app.Daemon.MaxWorkers, app.Store.MaxOpenConns(), wantWorkers, wantPool)
	}
	// The claimer waits after a wake-up only where a claim is many round trips (MySQL/MariaDB).
	if app.Daemon.ClaimLinger != wantLinger {
		t.Fatalf("claim linger %v, want %v", app.Daemon.ClaimLinger, wantLinger)
	}
	agentID, principalID, userID := drillAgent(t, app)
	enqueue := func(n int) []int64 {
		ids := make([]int64, 0, n)
		for i := range n {
			tk, err := app.Store.CreateTask(ctx, store.NewTask{AgentID: agentID, PrincipalID: principalID, UserID: userID,
				MaxSteps: 5, Prompt: fmt.Sprintf("task %d", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		app.Daemon.Notify()
		return ids
	}
	app.Start(ctx)
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := app.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()
	wait := func(ids []int64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !allSettled(ctx, t, app.Store, ids) {
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		counts := map[string]int{}
		for _, id := range ids {
			tk, err := app.Store.Task(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			counts[tk.Status]++
		}
		if counts[taskstate.Completed] != len(ids) {
			t.Fatalf("tasks by status %v, want all %d COMPLETED", counts, len(ids))
		}
	}
	for range 10 { // sequential calls
		wait(enqueue(1))
	}
	wait(enqueue(200)) // concurrent calls
	// At most a connection per worker, plus one per worker whose next call started before its
	// previous connection was back in the pool (then kept: idle connections are twice the
	// workers). Go's default transport keeps 2 idle per host: 75 to 90 connections here.
	if calls, conns := m.calls.Load(), m.conns.Load(); calls != 210 || conns > int64(2*wantWorkers) {
		t.Fatalf("%d model calls opened %d connections, want at most %d (two per worker)", calls, conns, 2*wantWorkers)
	}
	t.Logf("%d model calls, %d connections", m.calls.Load(), m.conns.Load())
}

// TestMaxWorkersCappedByThePool: an explicit max_workers above db_max_open_conns is capped at
// the pool; one below it is kept.
func TestMaxWorkersCappedByThePool(t *testing.T) {
	m := newCountingModel(t)
	app := openDrainApp(t, m, "SVC_MAX_WORKERS=64", "SVC_DB_MAX_OPEN_CONNS=8")
	if app.Daemon.MaxWorkers != 8 || app.Store.MaxOpenConns() != 8 {
		t.Fatalf("workers %d, pool %d; want 8, 8", app.Daemon.MaxWorkers, app.Store.MaxOpenConns())
	}
	_ = app.Close()
	app = openDrainApp(t, m, "SVC_MAX_WORKERS=3", "SVC_DB_MAX_OPEN_CONNS=8")
	if app.Daemon.MaxWorkers != 3 {
		t.Fatalf("workers %d, want 3", app.Daemon.MaxWorkers)
	}
}
