package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store/storetest"
)

// TestUnsupportedContentType: a body in a type the operation does not take is 415 with the
// accepted types in the message. Every operation with a body documents the 415, and the 503 of
// TestRequestBodyCap.
func TestUnsupportedContentType(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("root@example.com")
	res := c.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-templates/validate", Body: "<id/>", ContentType: "application/xml"}).
		Expect(t, 415, "UNSUPPORTED_MEDIA_TYPE")
	if msg := string(res.Body); !strings.Contains(msg, `\"application/xml\"`) || !strings.Contains(msg, "application/json, application/yaml or text/plain") {
		t.Errorf("message = %s", res.Body)
	}

	doc := apitest.Contract(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil && op.Responses.Status(http.StatusUnsupportedMediaType) == nil {
				t.Errorf("%s %s (%s) takes a body but does not document 415", method, path, op.OperationID)
			}
			// Every operation reads the database (at least the session): storage that is
			// unavailable answers 503 with Retry-After anywhere.
			if r := op.Responses.Status(http.StatusServiceUnavailable); r == nil || r.Value == nil || r.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s %s (%s) does not document 503 with Retry-After", method, path, op.OperationID)
			}
		}
	}
}

// TestTrailingBytesAfterJSONBody: a JSON body is one value; bytes after it are refused (issue 23,
// item 7: `{…}}}` was accepted with 201).
func TestTrailingBytesAfterJSONBody(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("root@example.com")
	for _, body := range []string{`{"name":"trailing"}}}`, `{"name":"trailing"} {"name":"again"}`, `{"name":"trailing"}x`} {
		res := c.Do(apitest.Request{Method: http.MethodPost, Path: "/agents", Body: []byte(body)}).Expect(t, 400, "BAD_REQUEST")
		if !strings.Contains(string(res.Body), "after the JSON value") {
			t.Errorf("%s: message = %s", body, res.Body)
		}
	}
	c.Do(apitest.Request{Method: http.MethodPost, Path: "/agents", Body: []byte("{\"name\":\"trailing\"} \r\n\t")}).Expect(t, 201)
}

// TestSecurityHeaders: every response carries nosniff, DENY and a restrictive CSP; production
// adds HSTS.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  []string
		hsts bool
	}{
		{"development", nil, false},
		{"production", []string{"SVC_APP_ENV=production", "SVC_APP_URL=https://svc.example/svc",
			"SVC_SECRET_KEY=AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := apitest.New(t, tt.env...)
			c := env.Client()
			for _, res := range []*apitest.Response{
				c.Get("/auth/me").Expect(t, 401),
				c.Get("/config").Expect(t, 200),
				c.Get(apitest.Prefix+"/healthz").Expect(t, 200),
				c.Get("/no/such/route").Expect(t, 404),
			} {
				h := res.Header
				if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" ||
					!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
					t.Errorf("security headers missing: %v", h)
				}
				if got := h.Get("Strict-Transport-Security") != ""; got != tt.hsts {
					t.Errorf("HSTS present = %v, want %v", got, tt.hsts)
				}
			}
		})
	}
}

// TestRequestLog: one line per request with method, route, status, duration, the caller and
// a failure's code; never a password, cookie or CSRF token.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	env := apitest.NewWith(t, apitest.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	c, u := env.UserClient("ada@example.com")
	c.Get("/auth/me").Expect(t, 200)
	c.Get("/agents/12345").Expect(t, 404)
	c.Post("/auth/login", map[string]any{"email": "ada@example.com", "password": "wrong password"}).Expect(t, 401)

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	find := func(method, route string, status int) map[string]any {
		t.Helper()
		for _, m := range lines {
			if m["method"] == method && m["route"] == route && m["status"] == float64(status) {
				if _, ok := m["duration_ms"]; !ok {
					t.Errorf("no duration: %v", m)
				}
				return m
			}
		}
		t.Fatalf("no request line for %s %s %d in %s", method, route, status, buf.String())
		return nil
	}
	if m := find("GET", apitest.API+"/agents/:id", 404); m["user_id"] != float64(u.Id) || m["code"] != "NOT_FOUND" {
		t.Errorf("failed request line = %v", m)
	}
	if m := find("POST", apitest.API+"/auth/login", 401); m["code"] != "UNAUTHENTICATED" {
		t.Errorf("failed login line = %v", m)
	}
	if m := find("GET", apitest.API+"/auth/me", 200); m["user_id"] != float64(u.Id) || m["code"] != nil {
		t.Errorf("request line = %v", m)
	}
	for _, secret := range []string{"password-ada@example.com", "wrong password", c.CSRF} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve runs env's server on a loopback port until the test ends and returns its address.
func serve(t testing.TB, env *apitest.Env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.App.HTTP.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// promiseBody opens a connection that sends a request promising a body of 100 bytes and sends
// only part of it.
func promiseBody(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s/auth/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\"", apitest.API, addr)
	return conn
}

// TestSlowBodyIsCutOff: a request that promises a body and never sends it is let go within the
// read timeout, not held for minutes.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_HTTP_READ_TIMEOUT=1")
	conn := promiseBody(t, serve(t, env))
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(5 * time.Second))
	answer, err := io.ReadAll(conn) // until the server closes the connection
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still held after %v (answer %q)", time.Since(start), answer)
	}
	if !strings.HasPrefix(string(answer), "HTTP/1.1 400 ") || !strings.Contains(string(answer), `"code":"BAD_REQUEST"`) {
		t.Errorf("answer %q, want 400 BAD_REQUEST", answer)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("closed after %v, want about the read timeout (1s)", d)
	}
}

// TestRequestBodyCap: with every body slot taken by a slow sender, a further request with a
// body waits half the read timeout, then answers 503 in the envelope.
func TestRequestBodyCap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_HTTP_READ_TIMEOUT=4", "SVC_MAX_REQUEST_BODIES=1")
	addr := serve(t, env)
	promiseBody(t, addr)
	time.Sleep(300 * time.Millisecond) // the slow request holds the only slot
	start := time.Now()
	res, err := http.Post("http://"+addr+apitest.API+"/auth/login", "application/json",
		strings.NewReader(`{"email":"ada@example.com","password":"correct horse"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || res.StatusCode != 503 || e.Error.Code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("answer %d %+v (%v), want 503 SERVICE_UNAVAILABLE", res.StatusCode, e, err)
	}
	if d := time.Since(start); d < 1500*time.Millisecond || d > 3500*time.Millisecond {
		t.Errorf("refused after %v, want about 2s", d)
	}
	// Once the slow request is gone, bodies are received again.
	time.Sleep(2 * time.Second)
	if status := failedLogin(t, addr); status != 401 {
		t.Fatalf("after the slot freed: %d, want 401", status)
	}
}

// failedLogin posts a login with wrong credentials to the server on addr and returns the status:
// 401 when its body was received.
func failedLogin(t *testing.T, addr string) int {
	t.Helper()
	res, err := http.Post("http://"+addr+apitest.API+"/auth/login", "application/json",
		strings.NewReader(`{"email":"ada@example.com","password":"correct horse"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestEventStreamOutlivesWriteTimeout: the write timeout does not end an event stream.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_HTTP_WRITE_TIMEOUT=1")
	addr := serve(t, env)
	c, u := env.UserClient("ada@example.com")
	g := authorize(t, c, "")
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+hubPath+"?topic="+url.QueryEscape(push.TaskTopic(u.Id)), nil)
	req.Header.Set("Authorization", "Bearer "+g.Data.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("subscribe: %d", res.StatusCode)
	}
	time.Sleep(2 * time.Second)
	if err := env.App.Push.Publish(context.Background(), push.TaskTopic(u.Id), []byte(`{"late":true}`)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"late":true`) {
			return
		}
	}
	t.Fatalf("stream ended before the event: %v", sc.Err())
}

// TestSeedIsLogged: every start with SVC_LLM_* logs the seed at info, also when nothing
// changed, and never the key.
func TestSeedIsLogged(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	for _, want := range []string{"created", "unchanged"} {
		var buf syncBuffer
		app, err := server.Open(context.Background(), config.NewLoader([]string{
			"SVC_CONFIG_FILE=" + t.TempDir() + "/none.yaml",
			"SVC_SECRET_KEY=BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
			"SVC_LLM_DRIVER=openai", "SVC_LLM_MODEL=m1", "SVC_LLM_API_KEY=sk-seeded-secret",
		}), server.Options{Store: st, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
			Hash: account.HashParams{MemoryKiB: 1024, Time: 1, Threads: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_ = app.Close()
		if !strings.Contains(buf.String(), `"msg":"model configuration seed applied","outcome":"`+want+`"`) {
			t.Errorf("start %s: seed not logged: %s", want, buf.String())
		}
		if strings.Contains(buf.String(), "sk-seeded-secret") {
			t.Errorf("the key was logged: %s", buf.String())
		}
	}
}
