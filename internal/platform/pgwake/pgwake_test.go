package pgwake_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/pgwake"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// recorder collects what a listener hands on.
type recorder struct {
	mu      sync.Mutex
	commits []store.Commit
	resyncs int
	woke    chan struct{}
}

func newRecorder() *recorder { return &recorder{woke: make(chan struct{}, 64)} }

func (r *recorder) wake(c store.Commit) {
	r.mu.Lock()
	r.commits = append(r.commits, c)
	r.mu.Unlock()
	r.woke <- struct{}{}
}

func (r *recorder) resync(context.Context) {
	r.mu.Lock()
	r.resyncs++
	r.mu.Unlock()
}

// waitFor waits until some recorded commit satisfies ok; the deadline is generous (a loaded
// machine), what the test asserts is that the commit arrived through the listener at all.
func (r *recorder) waitFor(t *testing.T, what string, ok func(store.Commit) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		found := slices.ContainsFunc(r.commits, ok)
		r.mu.Unlock()
		if found {
			return
		}
		select {
		case <-r.woke:
		case <-deadline:
			t.Fatalf("no wake-up for %s", what)
		}
	}
}

func postgresOnly(t *testing.T) {
	if storetest.Dialect() != store.DialectPostgres {
		t.Skip("wake-ups cross processes on PostgreSQL only (" + storetest.EnvPostgresDSN + ")")
	}
}

func startListener(t *testing.T, l *pgwake.Listener) {
	t.Helper()
	l.Start(context.Background())
	t.Cleanup(func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !l.Connected() {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListenerCarriesCommitsAcrossStores: a task created through one store (process B) reaches
// the listener over another store on the same database (process A) as a Commit naming the task,
// and A's own commits are not handed back to it (its store's listeners had them).
func TestListenerCarriesCommitsAcrossStores(t *testing.T) {
	postgresOnly(t)
	t.Parallel()
	a := storetest.New(t)
	b := storetest.Twin(t, a)
	if a.WakeChannel() == "" || a.WakeChannel() != b.WakeChannel() {
		t.Fatalf("wake channels %q and %q", a.WakeChannel(), b.WakeChannel())
	}
	rec := newRecorder()
	startListener(t, &pgwake.Listener{Store: a, Wake: rec.wake, Resync: rec.resync})

	u := storetest.User(t, b)
	g := storetest.Group(t, b, u)
	ag := storetest.Agent(t, b, g.PrincipalID)
	own := storetest.Task(t, a, ag, u.ID)
	theirs := storetest.Task(t, b, ag, u.ID)
	rec.waitFor(t, "B's task", func(c store.Commit) bool { return c.TaskQueued && slices.Contains(c.EventTasks, theirs.ID) })
	// A's own task is announced too, but skipped by its origin; the notification of B's task
	// came after it on the channel, so it would have arrived first.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range rec.commits {
		if slices.Contains(c.EventTasks, own.ID) {
			t.Fatalf("A's own commit came back to it: %+v", c)
		}
	}
	if rec.resyncs != 1 {
		t.Fatalf("resyncs = %d, want 1 (the first connect)", rec.resyncs)
	}
}

// TestListenerReconnects: once its connection is ended on the server (pg_terminate_backend,
// as a failover does), the listener connects again, resyncs, and carries the next commits.
func TestListenerReconnects(t *testing.T) {
	postgresOnly(t)
	t.Parallel()
	a := storetest.New(t)
	b := storetest.Twin(t, a)
	rec := newRecorder()
	l := &pgwake.Listener{Store: a, Wake: rec.wake, Resync: rec.resync, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	startListener(t, l)
	if n := storetest.KillWakeListeners(t, a); n != 1 {
		t.Fatalf("ended %d listener connections, want 1", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.Connects() < 2 || !l.Connected() {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect: connects = %d, connected = %v", l.Connects(), l.Connected())
		}
		time.Sleep(10 * time.Millisecond)
	}
	u := storetest.User(t, b)
	g := storetest.Group(t, b, u)
	tk := storetest.Task(t, b, storetest.Agent(t, b, g.PrincipalID), u.ID)
	rec.waitFor(t, "the task after the reconnect", func(c store.Commit) bool { return slices.Contains(c.EventTasks, tk.ID) })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.resyncs != 2 {
		t.Fatalf("resyncs = %d, want 2 (connect, reconnect)", rec.resyncs)
	}
}

// TestListenerPingsAnIdleConnection: with nothing to hear, the listener checks its connection
// every Check and stays connected (the wait's timeout is not taken for a failure).
func TestListenerPingsAnIdleConnection(t *testing.T) {
	postgresOnly(t)
	t.Parallel()
	a := storetest.New(t)
	rec := newRecorder()
	l := &pgwake.Listener{Store: a, Wake: rec.wake, Resync: rec.resync, Check: 20 * time.Millisecond}
	startListener(t, l)
	time.Sleep(200 * time.Millisecond) // several checks
	if !l.Connected() || l.Connects() != 1 {
		t.Fatalf("after idle checks: connected = %v, connects = %d", l.Connected(), l.Connects())
	}
	b := storetest.Twin(t, a)
	u := storetest.User(t, b)
	g := storetest.Group(t, b, u)
	tk := storetest.Task(t, b, storetest.Agent(t, b, g.PrincipalID), u.ID)
	rec.waitFor(t, "a task after idle checks", func(c store.Commit) bool { return slices.Contains(c.EventTasks, tk.ID) })
}

// TestListenerOffPostgres: SQLite and MySQL/MariaDB have no wake channel; the listener stays
// off and Stop returns at once.
func TestListenerOffPostgres(t *testing.T) {
	if storetest.Dialect() == store.DialectPostgres {
		t.Skip("PostgreSQL has a wake channel")
	}
	t.Parallel()
	s := storetest.New(t)
	l := &pgwake.Listener{Store: s}
	if l.Enabled() || s.WakeChannel() != "" {
		t.Fatalf("enabled on %s", s.Dialect())
	}
	l.Start(context.Background())
	if err := l.Stop(context.Background()); err != nil || l.Connected() {
		t.Fatalf("stop = %v, connected = %v", err, l.Connected())
	}
	if _, err := s.ListenWake(context.Background()); err == nil {
		t.Fatal("ListenWake off PostgreSQL succeeded")
	}
}
