package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/store"
)

// TestLLMClientsScreenGroupConfigs: model calls of group configurations connect to public
// addresses and llm_allowed_hosts only, checked at dial time (a base URL screened when written
// may resolve elsewhere later); global configurations share one unscreened client, scripted
// ones need none.
func TestLLMClientsScreenGroupConfigs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(srv.Close)
	l := newLLMClients(netguard.Options{}, 4)
	if l.For(&store.LLMConfig{Driver: store.LLMDriverScripted}, "") != nil {
		t.Fatal("scripted configurations make no calls and need no client")
	}
	global := l.For(&store.LLMConfig{Driver: store.LLMDriverOpenAI, IsGlobal: true}, "")
	if global == nil || global != l.For(&store.LLMConfig{Driver: store.LLMDriverAnthropic, IsGlobal: true}, "x") {
		t.Fatal("global configurations share one client")
	}
	resp, err := global.Get(srv.URL) // trusted: not screened
	if err != nil {
		t.Fatalf("global client: %v", err)
	}
	resp.Body.Close()
	group := &store.LLMConfig{Driver: store.LLMDriverOpenAI}
	if _, err := l.For(group, "").Get(srv.URL); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("loopback call of a group configuration: %v, want blocked", err)
	}
	resp, err = l.For(group, "127.0.0.1").Get(srv.URL)
	if err != nil {
		t.Fatalf("call to an allowed host: %v", err)
	}
	resp.Body.Close()
	if c := l.For(group, "127.0.0.1"); c != l.For(group, "127.0.0.1") {
		t.Fatal("the client is rebuilt for an unchanged setting")
	}
}

// TestLLMClientsKeepConnectionsForEveryWorker: both clients keep idle connections for the
// workers, so rounds of concurrent calls (one per worker) reuse the connections of the first
// round instead of opening new ones (a call can start before the previous one's connection is
// back in the pool, so up to two per worker; with 8 or 2 idle connections per host, as before,
// each round would open 24 or 30 new ones).
func TestLLMClientsKeepConnectionsForEveryWorker(t *testing.T) {
	t.Parallel()
	const workers, rounds = 32, 5
	var conns atomic.Int64
	release := make(chan struct{})
	var inFlight atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if inFlight.Add(1) == workers {
			close(release) // the first round holds every connection at once
		}
		<-release
		w.WriteHeader(204)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	l := newLLMClients(netguard.Options{}, workers)
	for _, global := range []bool{false, true} {
		c := l.For(&store.LLMConfig{Driver: store.LLMDriverOpenAI, IsGlobal: global}, "127.0.0.1")
		conns.Store(0)
		for range rounds {
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					resp, err := c.Get(srv.URL)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				})
			}
			wg.Wait()
		}
		if n := conns.Load(); n > 2*workers {
			t.Errorf("global %t: %d connections for %d rounds of %d concurrent calls, want at most %d", global, n, rounds, workers, 2*workers)
		}
	}
}

// TestDriverCachedUntilTheConfigurationChanges: a configuration's driver is built once and
// rebuilt when the configuration (or llm_timeout, llm_allowed_hosts) changes; scripted drivers
// are never cached.
func TestDriverCachedUntilTheConfigurationChanges(t *testing.T) {
	t.Parallel()
	l := newLLMClients(netguard.Options{}, 4)
	builds := 0
	build := func() (llm.Driver, error) { builds++; return &countedDriver{n: builds}, nil }
	base := "https://api.example.com/v1"
	c := &store.LLMConfig{ID: 7, Driver: store.LLMDriverOpenAI, Model: "m", BaseURL: &base, UpdatedAt: time.Unix(100, 0)}
	get := func(c *store.LLMConfig, timeout int, hosts string) llm.Driver {
		d, err := l.driver(c, driverKey(c, timeout, hosts), build)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1 := get(c, 300, "")
	if d2 := get(c, 300, ""); d2 != d1 || builds != 1 {
		t.Fatalf("unchanged configuration rebuilt: %d builds", builds)
	}
	edited := *c
	edited.Model, edited.UpdatedAt = "m2", time.Unix(101, 0)
	if d := get(&edited, 300, ""); d == d1 || builds != 2 {
		t.Fatalf("edited configuration not rebuilt: %d builds", builds)
	}
	if get(&edited, 60, ""); builds != 3 {
		t.Fatalf("llm_timeout change not rebuilt: %d builds", builds)
	}
	if get(&edited, 60, "10.0.0.1"); builds != 4 {
		t.Fatalf("llm_allowed_hosts change not rebuilt: %d builds", builds)
	}
	script := &store.LLMConfig{ID: 8, Driver: store.LLMDriverScripted}
	get(script, 60, "")
	get(script, 60, "")
	if builds != 6 {
		t.Fatalf("scripted drivers cached: %d builds", builds)
	}
}

type countedDriver struct{ n int }

func (*countedDriver) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{}, nil
}
