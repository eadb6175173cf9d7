package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer answers each request with the next scripted reply and records the request.
type fakeServer struct {
	t       *testing.T
	mu      sync.Mutex
	reqs    []recorded
	replies []reply
	srv     *httptest.Server
}

type recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration
	// events, when set, are sent as a text/event-stream (each a complete SSE frame, flushed
	// one by one) instead of body; then the server waits hang and, if cut, drops the
	// connection without ending the response.
	events []string
	hang   time.Duration
	cut    bool
}

func newFake(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: raw})
	var rep reply
	if len(f.replies) > 0 {
		rep, f.replies = f.replies[0], f.replies[1:]
	} else {
		rep = reply{status: 500, body: `{"error":{"message":"no reply scripted"}}`}
	}
	f.mu.Unlock()
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.events != nil {
		f.serveEvents(w, r, rep)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status == 0 {
		rep.status = 200
	}
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (f *fakeServer) serveEvents(w http.ResponseWriter, r *http.Request, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	for _, e := range rep.events {
		_, _ = io.WriteString(w, e)
		fl.Flush()
	}
	if rep.hang > 0 {
		select {
		case <-time.After(rep.hang):
		case <-r.Context().Done():
			return
		}
	}
	if rep.cut {
		panic(http.ErrAbortHandler) // closes the connection mid-response
	}
}

// sseData is an SSE frame with data only (the OpenAI wire format).
func sseData(data string) string { return "data: " + data + "\n\n" }

// sseEvent is an SSE frame with an event name (the Anthropic wire format).
func sseEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

// deltaLog records the deltas of a streamed call.
type deltaLog struct{ got []Delta }

func (l *deltaLog) add(d Delta) { l.got = append(l.got, d) }

func (l *deltaLog) text() string {
	var b strings.Builder
	for _, d := range l.got {
		b.WriteString(d.Text)
	}
	return b.String()
}

func (l *deltaLog) reasoning() string {
	var b strings.Builder
	for _, d := range l.got {
		b.WriteString(d.Reasoning)
	}
	return b.String()
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// jsonEqual compares a decoded request fragment with the JSON text expected.
func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got  %s\n want %s", what, gb, wb)
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *llm.Error", err, err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func errorsIsCanceled(err error) bool { return errors.Is(err, context.Canceled) }
