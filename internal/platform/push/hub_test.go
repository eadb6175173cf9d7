package push

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

var testMaster = []byte("0123456789abcdef0123456789abcdef")

// newTestHub starts a hub behind an HTTP server; the session cookie "uid" names the user.
func newTestHub(t *testing.T) (*Hub, *httptest.Server, *testkit.Clock) {
	t.Helper()
	clock := testkit.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	h, err := NewHub(HubOptions{MasterKey: testMaster, Clock: clock.Now, Heartbeat: -1,
		Session: func(r *http.Request) (int64, int64, error) {
			c, err := r.Cookie("uid")
			if err != nil {
				return 0, 0, svcerr.ErrUnauthenticated
			}
			switch c.Value {
			case "1":
				return 1, 1, nil
			case "2":
				return 2, 2, nil
			}
			return 0, 0, svcerr.ErrUnauthenticated
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Subscribe(w, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return h, srv, clock
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, svcerr.ErrBadRequest):
		return 400
	case errors.Is(err, svcerr.ErrUnauthenticated):
		return 401
	case errors.Is(err, svcerr.ErrForbidden):
		return 403
	case errors.Is(err, svcerr.ErrRateLimited):
		return 429
	case errors.Is(err, svcerr.ErrUnavailable):
		return 503
	}
	return 500
}

// sseEvent is one parsed server-sent event.
type sseEvent struct{ ID, Data string }

// stream is an open subscription whose events arrive on a channel.
type stream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// subscribe opens GET srv?query with the headers; on 200 the events are read in the background.
func subscribe(t *testing.T, base string, query url.Values, header http.Header) (*stream, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"?"+query.Encode(), nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	s := &stream{resp: resp, events: make(chan sseEvent, 16), cancel: cancel}
	go readEvents(resp.Body, s.events)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s, resp.StatusCode
}

func readEvents(r io.Reader, out chan<- sseEvent) {
	defer close(out)
	sc := bufio.NewScanner(r)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				ev.Data = strings.Join(data, "\n")
				out <- ev
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, "id: "):
			ev.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

func (s *stream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return sseEvent{}
}

// none checks that no event arrives for a moment.
func (s *stream) none(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func topics(ts ...string) url.Values { return url.Values{"topic": ts} }

func TestHubDeliversOwnTopic(t *testing.T) {
	t.Parallel()
	h, srv, _ := newTestHub(t)
	tok, _, err := h.Token(1, 0, OwnTopics(1), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, status := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok))
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	ctx := context.Background()
	if err := h.Publish(ctx, TaskTopic(1), []byte(`{"id":7,"state":"DONE"}`)); err != nil {
		t.Fatal(err)
	}
	ev := s.next(t)
	if ev.Data != `{"id":7,"state":"DONE"}` || !strings.HasPrefix(ev.ID, "urn:uuid:") {
		t.Fatalf("event %+v", ev)
	}
	// Another user's and another topic's events do not arrive; multi-line data stays one event.
	for _, topic := range []string{TaskTopic(2), NotificationTopic(1)} {
		if err := h.Publish(ctx, topic, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Publish(ctx, TaskTopic(1), []byte("a\nb")); err != nil {
		t.Fatal(err)
	}
	if ev := s.next(t); ev.Data != "a\nb" {
		t.Fatalf("event %+v", ev)
	}
	s.none(t)
}

func TestHubMergesTopicsAndAuthenticatesByQueryAndSession(t *testing.T) {
	t.Parallel()
	h, srv, _ := newTestHub(t)
	tok, _, _ := h.Token(2, 0, OwnTopics(2), time.Hour)
	q := topics(TaskTopic(2), NotificationTopic(2))
	q.Set("authorization", tok)
	byQuery, status := subscribe(t, srv.URL, q, nil)
	if status != 200 {
		t.Fatalf("query token: status %d", status)
	}
	bySession, status := subscribe(t, srv.URL, topics(NotificationTopic(2)), http.Header{"Cookie": {"uid=2"}})
	if status != 200 {
		t.Fatalf("session: status %d", status)
	}
	ctx := context.Background()
	_ = h.Publish(ctx, TaskTopic(2), []byte("task"))
	_ = h.Publish(ctx, NotificationTopic(2), []byte("note"))
	if a, b := byQuery.next(t).Data, byQuery.next(t).Data; a != "task" || b != "note" {
		t.Fatalf("merged stream got %q, %q", a, b)
	}
	if d := bySession.next(t).Data; d != "note" {
		t.Fatalf("session stream got %q", d)
	}
	bySession.none(t)
}

func TestHubRefusals(t *testing.T) {
	t.Parallel()
	h, srv, clock := newTestHub(t)
	own, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	tasksOnly, _, _ := h.Token(1, 0, []string{TaskTopic(1)}, time.Hour)
	short, _, _ := h.Token(1, 0, OwnTopics(1), time.Minute)
	other, _, _ := subscriberToken([]byte("another key of thirty-two bytes!"), 1, 0, OwnTopics(1), clock.Now(), time.Hour)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims{Mercure: mercureClaim{Subscribe: OwnTopics(1)},
		RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(clock.Now().Add(time.Hour))}}).
		SignedString(jwt.UnsafeAllowNoneSignatureType)
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{Mercure: mercureClaim{Subscribe: OwnTopics(1)}}).SignedString(h.key)
	clock.Advance(2 * time.Minute) // short has expired

	cases := []struct {
		name   string
		query  url.Values
		header http.Header
		want   int
	}{
		{"another user's topic by token", topics(TaskTopic(2)), bearer(own), 403},
		{"own and another user's topic", topics(TaskTopic(1), TaskTopic(2)), bearer(own), 403},
		{"topic outside the grant", topics(NotificationTopic(1)), bearer(tasksOnly), 403},
		{"another user's topic by session", topics(TaskTopic(2)), http.Header{"Cookie": {"uid=1"}}, 403},
		{"expired token", topics(TaskTopic(1)), bearer(short), 401},
		{"token of another key", topics(TaskTopic(1)), bearer(other), 401},
		{"unsigned token", topics(TaskTopic(1)), bearer(none), 401},
		{"token without expiry", topics(TaskTopic(1)), bearer(noExp), 401},
		{"garbage token", topics(TaskTopic(1)), bearer("x.y.z"), 401},
		{"basic auth", topics(TaskTopic(1)), http.Header{"Authorization": {"Basic dTpw"}}, 401},
		{"invalid token beats a valid session", topics(TaskTopic(1)), http.Header{"Authorization": {"Bearer x"}, "Cookie": {"uid=1"}}, 401},
		{"no credentials", topics(TaskTopic(1)), nil, 401},
		{"unknown session", topics(TaskTopic(1)), http.Header{"Cookie": {"uid=9"}}, 401},
		{"no topic", url.Values{}, bearer(own), 400},
		{"empty topic", topics(""), bearer(own), 400},
		{"too many topics", topics(strings.Split("a b c d e f g h i j k", " ")...), bearer(own), 400},
		{"too long topic", topics(strings.Repeat("t", 256)), bearer(own), 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, status := subscribe(t, srv.URL, tc.query, tc.header); status != tc.want {
				t.Fatalf("status %d, want %d", status, tc.want)
			}
		})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.streams) != 0 {
		t.Fatalf("refused subscriptions left streams: %v", h.streams)
	}
}

func TestHubLifecycle(t *testing.T) {
	t.Parallel()
	h, srv, _ := newTestHub(t)
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	if err := h.Publish(context.Background(), TaskTopic(1), nil); !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("empty data: %v", err)
	}
	if err := h.Publish(context.Background(), TaskTopic(1), []byte("nobody listens")); err != nil {
		t.Fatalf("publish without subscribers: %v", err)
	}
	s, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok))
	s2, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok))
	h.mu.Lock()
	if n := len(h.streams); n != 1 || h.streams[TaskTopic(1)].refs != 2 {
		t.Errorf("streams %v", h.streams)
	}
	h.mu.Unlock()

	// A client going away releases its share of the stream.
	s2.cancel()
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.streams[TaskTopic(1)].refs == 1 })

	// Close ends the open subscription and refuses new ones.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-s.events:
		if ok {
			t.Fatal("event after close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscription still open after Close")
	}
	if _, status := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok)); status != 503 {
		t.Fatalf("after close: status %d", status)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestHubHeartbeat(t *testing.T) {
	t.Parallel()
	h, err := NewHub(HubOptions{MasterKey: testMaster, Heartbeat: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Subscribe(w, r); err != nil {
			http.Error(w, err.Error(), statusOf(err))
		}
	}))
	defer srv.Close()
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"?topic="+TaskTopic(1), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != ": heartbeat\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
}

func TestNewHubNeedsKey(t *testing.T) {
	t.Parallel()
	if _, err := NewHub(HubOptions{MasterKey: []byte("short")}); err == nil {
		t.Fatal("short master key accepted")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHubSlowSubscriberOnlyLosesItsOwnEvents: of two subscribers of one topic, one never reads
// its connection. Publishing many large events never blocks, the reading subscriber receives
// every one of them promptly, and the slow one is disconnected once its buffer is full.
func TestHubSlowSubscriberOnlyLosesItsOwnEvents(t *testing.T) {
	t.Parallel()
	h, srv, _ := newTestHub(t)
	tok, _, _ := h.Token(1, 0, OwnTopics(1), time.Hour)

	// The slow subscriber: sends its request and never reads a byte.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /?topic=%s HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\n\r\n", url.QueryEscape(TaskTopic(1)), tok)
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.streams[TaskTopic(1)] != nil })

	fast, _ := subscribe(t, srv.URL, topics(TaskTopic(1)), bearer(tok))
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.streams[TaskTopic(1)].refs == 2 })

	data := []byte(strings.Repeat("x", 16<<10))
	const events, burst = 1024, 16 // 16 MiB: more than the slow client's socket buffers hold
	for i := range events {
		start := time.Now()
		if err := h.Publish(context.Background(), TaskTopic(1), data); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("publish %d took %v", i, d)
		}
		if (i+1)%burst == 0 { // the reader keeps up with each burst within a moment
			for range burst {
				select {
				case ev, ok := <-fast.events:
					if !ok || len(ev.Data) != len(data) {
						t.Fatalf("event %d: stream ended or short event (%d bytes)", i, len(ev.Data))
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("the reading subscriber is missing events of burst %d", i/burst)
				}
			}
		}
	}
	// The slow subscriber was dropped and its subscription ended; the reader's goes on.
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.streams[TaskTopic(1)].refs == 1 })
	if err := h.Publish(context.Background(), TaskTopic(1), []byte("after")); err != nil {
		t.Fatal(err)
	}
	if ev := fast.next(t); ev.Data != "after" {
		t.Fatalf("after the drop: %q", ev.Data)
	}
}
