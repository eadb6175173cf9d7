package push

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawSubscribe opens a subscription over a bare TCP connection (no client goroutines) and reads
// the response head; it returns the connection positioned at the body, and the head's lines.
func rawSubscribe(t testing.TB, addr, topic, tok string) (net.Conn, *bufio.Reader, []string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /?topic=%s HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\n\r\n", url.QueryEscape(topic), tok)
	br := bufio.NewReader(conn)
	var head []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read head: %v (so far %q)", err, head)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return conn, br, head
		}
		head = append(head, line)
	}
}

// The hub takes HTTP/1.1 connections over: the head keeps the headers set before Subscribe,
// the body is neither chunked nor length-delimited (it ends with the connection), events
// arrive as written.
func TestHubHijackedStream(t *testing.T) {
	t.Parallel()
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff") // as the server's middleware does
		if err := h.Subscribe(w, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	defer srv.Close()
	defer h.Close()
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	_, br, head := rawSubscribe(t, srv.Listener.Addr().String(), TaskTopic(1), tok)
	joined := strings.Join(head, "\n")
	for _, want := range []string{"HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache",
		"Connection: close", "X-Content-Type-Options: nosniff", "X-Accel-Buffering: no"} {
		if !strings.Contains(joined, want) {
			t.Errorf("head lacks %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "Transfer-Encoding") || strings.Contains(joined, "Content-Length") {
		t.Errorf("head delimits the body:\n%s", joined)
	}
	if err := h.Publish(context.Background(), TaskTopic(1), []byte("one\ntwo")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v", err)
		}
		got = append(got, line)
	}
	if !strings.HasPrefix(got[0], "id: urn:uuid:") || got[1] != "data: one\n" || got[2] != "data: two\n" || got[3] != "\n" {
		t.Errorf("event %q", got)
	}
	// Close ends the hijacked stream: the client reads the end of the body.
	_ = h.Close()
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("stream still open after Close")
	}
}

// A response that cannot be hijacked (HTTP/2, or a wrapping writer) is streamed through the
// ResponseWriter: same events, and a client going away ends the subscription.
func TestHubStreamsWithoutHijack(t *testing.T) {
	t.Parallel()
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Subscribe(noHijack{w}, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	defer srv.Close()
	defer h.Close()
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	s, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok))
	if s.resp.TransferEncoding == nil || s.resp.TransferEncoding[0] != "chunked" {
		t.Errorf("transfer encoding %v: not streamed through the ResponseWriter", s.resp.TransferEncoding)
	}
	waitFor(t, func() bool { return h.Subscribers() == 1 })
	if err := h.Publish(context.Background(), TaskTopic(1), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if ev := s.next(t); ev.Data != "hello" {
		t.Fatalf("event %q", ev.Data)
	}
	s.cancel()
	waitFor(t, func() bool { return h.Subscribers() == 0 })
}

// noHijack hides the Hijacker (and every other interface) of a ResponseWriter but Flush.
type noHijack struct{ w http.ResponseWriter }

func (n noHijack) Header() http.Header         { return n.w.Header() }
func (n noHijack) Write(b []byte) (int, error) { return n.w.Write(b) }
func (n noHijack) WriteHeader(code int)        { n.w.WriteHeader(code) }
func (n noHijack) Flush()                      { n.w.(http.Flusher).Flush() }

// What an open subscription costs the process: at most two goroutines (its writer and the
// watch for the client leaving; the request's own goroutine has returned) and at most 10 KiB of
// heap and stack, the bare-TCP client's connection included (about 8 KiB; a subscription
// streamed through the ResponseWriter cost three goroutines and about 34 KiB).
// Not parallel: it reads the process's goroutine count and memory.
func TestHubSubscriptionCost(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 500 connections")
	}
	h, srv := plainHub(t)
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	addr := srv.Listener.Addr().String()
	rawSubscribe(t, addr, TaskTopic(1), tok) // warm up
	waitFor(t, func() bool { return h.Subscribers() == 1 })

	const n = 500
	g0, m0 := goroutinesAndMemory()
	for range n {
		rawSubscribe(t, addr, TaskTopic(1), tok)
	}
	waitFor(t, func() bool { return h.Subscribers() == n+1 })
	time.Sleep(50 * time.Millisecond) // the request goroutines return after the hand-over
	g1, m1 := goroutinesAndMemory()
	perG := float64(g1-g0) / n
	perB := float64(m1-m0) / n
	t.Logf("per subscription: %.2f goroutines, %.0f bytes of heap and stack", perG, perB)
	if perG > 2.05 {
		t.Errorf("%.2f goroutines per subscription, want at most 2", perG)
	}
	if perB > 10<<10 && !raceEnabled {
		t.Errorf("%.0f bytes of heap and stack per subscription, want at most 10 KiB", perB)
	}
}

func goroutinesAndMemory() (int, uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapInuse + ms.StackInuse
}

// plainHub is a hub without heartbeats nor a per-user cap (its tests open hundreds of one user's
// subscriptions) behind a test server whose only handler subscribes; both are closed when the
// test ends.
func plainHub(tb testing.TB) (*Hub, *httptest.Server) {
	tb.Helper()
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: -1, MaxPerUser: func() int { return 1 << 30 }})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Subscribe(w, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	tb.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return h, srv
}
