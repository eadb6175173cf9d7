package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
)

// trickle opens a connection that posts to the anonymous email confirmation from the client
// address from (behind the trusted proxy on 127.0.0.1), promising a body of 100 bytes and
// sending only its first bytes.
func trickle(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s/auth/email/confirm HTTP/1.1\r\nHost: %s\r\nX-Forwarded-For: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"sel",
		apitest.API, addr, from)
	return conn
}

// answerOf reads the answer on conn (waiting up to wait) and returns its status line and body.
func answerOf(t *testing.T, conn net.Conn, wait time.Duration) (status int, body string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestBodySlotsAreFairPerClient: one client address trickling bodies into an anonymous
// operation takes no more than max_request_bodies_per_client of the max_request_bodies slots —
// its further requests answer 503 at once — so a signed-in request from another address is
// served rather than refused (issue 22, item 2: 70 trickling sockets made it wait 30 s for a
// 503).
func TestBodySlotsAreFairPerClient(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_HTTP_READ_TIMEOUT=6", "SVC_MAX_REQUEST_BODIES=4",
		"SVC_MAX_REQUEST_BODIES_PER_CLIENT=2", "SVC_TRUSTED_PROXIES=127.0.0.1")
	owner, _ := env.UserClient("owner@example.com")
	addr := serve(t, env)

	var slow []net.Conn
	for range 6 {
		slow = append(slow, trickle(t, addr, "203.0.113.7"))
	}
	time.Sleep(300 * time.Millisecond) // the trickling requests have asked for their slots

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+apitest.API+"/agents", strings.NewReader(`{"name":"Fair"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", owner.CookieHeader())
	req.Header.Set("X-CSRF-Token", owner.CSRF)
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Errorf("the signed-in request from another address: %d %s, want 201", res.StatusCode, b)
	}

	refused := 0
	for _, conn := range slow {
		status, body := answerOf(t, conn, 20*time.Second)
		switch {
		case status == 503 && strings.Contains(body, `"code":"SERVICE_UNAVAILABLE"`):
			refused++
		case status == 400 && strings.Contains(body, `"code":"BAD_REQUEST"`): // admitted, then cut off
		default:
			t.Errorf("a trickling request: %d %s", status, body)
		}
	}
	if refused != 4 {
		t.Errorf("%d of the 6 trickling requests refused, want 4 (2 admitted for the address)", refused)
	}
}

// TestTricklingBodyIsCutOff: a body that arrives at one byte a second is cut off when its first
// window (10 s) ends without min_body_bytes_per_second — long before http_read_timeout (60 s,
// where it was let run to) — answering 400 with the rate in the message, and its slot is free
// again at once: the only slot takes the next request.
func TestTricklingBodyIsCutOff(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_MAX_REQUEST_BODIES=1", "SVC_MIN_BODY_BYTES_PER_SECOND=64",
		"SVC_TRUSTED_PROXIES=127.0.0.1")
	addr := serve(t, env)
	conn := trickle(t, addr, "203.0.113.8")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one more byte a second
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, "e"); err != nil {
					return
				}
			}
		}
	}()
	status, body := answerOf(t, conn, 40*time.Second) // well before the read timeout
	if status != 400 || !strings.Contains(body, `"code":"BAD_REQUEST"`) || !strings.Contains(body, "slower than 64 bytes per second") {
		t.Fatalf("the trickling request: %d %s, want 400 naming the minimum rate", status, body)
	}

	if status := failedLogin(t, addr); status != 401 {
		t.Fatalf("the next body after the cut: %d, want 401 (the slot is free)", status)
	}
}

// TestAnonymousOperationsAreCapped: the operations that need no session take small bodies (8 KiB:
// 413 beyond) and are rate limited per client address (429 after 10 a minute), the email
// confirmation and verification among them (issue 22, item 2: they had neither).
func TestAnonymousOperationsAreCapped(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	big := strings.Repeat("x", 9000)
	for _, path := range []string{"/auth/register", "/auth/login", "/auth/forgot-password", "/auth/reset-password", "/auth/email/confirm"} {
		c := env.Client()
		c.IP = "192.0.2.50"
		res := c.Post(path, map[string]any{"email": "a@example.com", "password": big, "selector": "s", "token": big})
		if res.Status != 413 || !strings.Contains(string(res.Body), `"code":"PAYLOAD_TOO_LARGE"`) {
			t.Errorf("%s with a 9000-byte body: %d %s, want 413", path, res.Status, res.Body)
		}
	}

	for _, tc := range []struct {
		name string
		do   func(c *apitest.Client) *apitest.Response
	}{
		{"email confirmation", func(c *apitest.Client) *apitest.Response {
			return c.Post("/auth/email/confirm", map[string]any{"selector": "nope", "token": "nope"})
		}},
		{"email verification", func(c *apitest.Client) *apitest.Response {
			return c.Get("/auth/verify/nope?token=nope")
		}},
	} {
		c := env.Client()
		c.IP = "192.0.2.51"
		for i := range 10 {
			if res := tc.do(c); res.Status == 429 {
				t.Fatalf("%s: attempt %d refused: %s", tc.name, i+1, res.Body)
			}
		}
		res := tc.do(c)
		if res.Status != 429 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: the 11th attempt in a minute: %d %s, want 429 with Retry-After", tc.name, res.Status, res.Body)
		}
		other := env.Client()
		other.IP = "192.0.2.52"
		if res := tc.do(other); res.Status == 429 {
			t.Errorf("%s: another address refused: %s", tc.name, res.Body)
		}
	}
}
