package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/push"
)

// hubSubscribe opens a subscription to topic on the embedded hub of the live server at addr
// (HTTP/1.1: the hub takes the connection over), with header; the response's body is closed when
// the test ends.
func hubSubscribe(t *testing.T, addr, topic string, header map[string]string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+hubPath+"?"+url.Values{"topic": {topic}}.Encode(), nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// hubOpen is hubSubscribe of a subscription that must open; it returns a channel closed when the
// subscription ends.
func hubOpen(t *testing.T, addr, topic string, header map[string]string) <-chan struct{} {
	t.Helper()
	res := hubSubscribe(t, addr, topic, header)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("subscribe: %d %s", res.StatusCode, b)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, res.Body)
	}()
	return ended
}

// hubRefused checks that res answers status with the error envelope's code (an open stream
// is not read: it would not end).
func hubRefused(t *testing.T, res *http.Response, status int, code string) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("status %d (%s), want %d", res.StatusCode, res.Header.Get("Content-Type"), status)
	}
	b, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != code {
		t.Fatalf("body %s, want code %s", b, code)
	}
}

func endsWithin(t *testing.T, ended <-chan struct{}, within time.Duration, why string) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(within):
		t.Fatalf("the push subscription was still open %s after %s", within, why)
	}
}

// TestPushEndsWithTheSession: a subscriber token from /sse/authorize is bound to the session that
// asked for it: the embedded hub refuses it once that session ended, and an open push
// subscription (token or cookie) ends within a couple of seconds of its session (issue 22, item
// 1: the token kept opening subscriptions for its hour after logout).
func TestPushEndsWithTheSession(t *testing.T) {
	env := apitest.New(t)
	_, u := env.UserClient("ada@example.com")
	addr := serve(t, env)
	topic := push.TaskTopic(u.Id)
	login := func() *apitest.Client {
		c := env.Client()
		c.Login("ada@example.com", "password-ada@example.com")
		return c
	}
	token := func(c *apitest.Client) map[string]string {
		var g gen.SseAuthorizeResponse
		c.Get("/sse/authorize").Expect(t, http.StatusOK).Decode(t, &g)
		return map[string]string{"Authorization": "Bearer " + g.Data.Token}
	}

	t.Run("token refused after logout", func(t *testing.T) {
		c := login()
		bearer := token(c)
		c.Post("/auth/logout", nil).Expect(t, http.StatusOK)
		hubRefused(t, hubSubscribe(t, addr, topic, bearer), http.StatusUnauthorized, "UNAUTHENTICATED")
	})

	t.Run("open token subscription ends with logout", func(t *testing.T) {
		c := login()
		ended := hubOpen(t, addr, topic, token(c))
		c.Post("/auth/logout", nil).Expect(t, http.StatusOK)
		endsWithin(t, ended, 3*time.Second, "its session logged out")
	})

	t.Run("open cookie subscription ends with logout", func(t *testing.T) {
		c := login()
		ended := hubOpen(t, addr, topic, map[string]string{"Cookie": c.CookieHeader()})
		c.Post("/auth/logout", nil).Expect(t, http.StatusOK)
		endsWithin(t, ended, 3*time.Second, "its session logged out")
	})

	t.Run("a password change ending the session ends its subscription", func(t *testing.T) {
		c, other := login(), login()
		ended := hubOpen(t, addr, topic, token(other))
		c.Patch("/auth/password", map[string]any{"current_password": "password-ada@example.com", "new_password": "another horse battery"}).Expect(t, http.StatusOK)
		endsWithin(t, ended, 3*time.Second, "a password change ended its session")
	})

	t.Run("a subscription whose session stands stays open", func(t *testing.T) {
		c := env.Client()
		c.Login("ada@example.com", "another horse battery")
		ended := hubOpen(t, addr, topic, token(c))
		select {
		case <-ended:
			t.Fatal("the subscription of a signed-in session ended")
		case <-time.After(2500 * time.Millisecond):
		}
	})
}

// TestPushSubscriptionsPerUserCap: one user holds at most event_streams_per_user push
// subscriptions open (tokens and cookies together); one more answers 429 TOO_MANY_REQUESTS with
// Retry-After, and a slot is free again once a subscription ends (issue 22, item 1: one user
// held 150).
func TestPushSubscriptionsPerUserCap(t *testing.T) {
	env := apitest.New(t)
	c, u := env.UserClient("ada@example.com")
	addr := serve(t, env)
	topic := push.TaskTopic(u.Id)
	var g gen.SseAuthorizeResponse
	c.Get("/sse/authorize").Expect(t, http.StatusOK).Decode(t, &g)
	bearer := map[string]string{"Authorization": "Bearer " + g.Data.Token}
	cookie := map[string]string{"Cookie": c.CookieHeader()}
	var first *http.Response
	for i := range 32 {
		h := bearer
		if i%2 == 1 {
			h = cookie
		}
		res := hubSubscribe(t, addr, topic, h)
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("subscription %d: %d %s", i+1, res.StatusCode, b)
		}
		if first == nil {
			first = res
		}
	}
	res := hubSubscribe(t, addr, topic, bearer)
	if ra := res.Header.Get("Retry-After"); ra == "" {
		t.Errorf("the 33rd subscription's answer has no Retry-After (status %d)", res.StatusCode)
	}
	hubRefused(t, res, http.StatusTooManyRequests, "TOO_MANY_REQUESTS")

	// Another user is not limited by ada's subscriptions.
	c2, u2 := env.UserClient("bob@example.com")
	hubOpen(t, addr, push.TaskTopic(u2.Id), map[string]string{"Cookie": c2.CookieHeader()})

	first.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := hubSubscribe(t, addr, topic, cookie)
		if res.StatusCode == http.StatusOK {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no slot after a subscription ended: %d", res.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
