package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store/storetest"
)

// retryAfter checks a refusal carries a usable Retry-After.
func retryAfter(t *testing.T, res *apitest.Response) {
	t.Helper()
	if wait, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || wait < 1 || wait > 120 {
		t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
}

// TestRateLimitsAcrossInstances runs two apps on one database (two API processes): the login,
// per-agent key and tick budgets are shared, N allowed in total, alternating between the two,
// and the N+1st refused on either with 429 and Retry-After.
func TestRateLimitsAcrossInstances(t *testing.T) {
	t.Parallel()
	t.Run("login and agent key", func(t *testing.T) {
		t.Parallel()
		const perKey = 7
		settings := []string{"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=" + strconv.Itoa(perKey)}
		a := apitest.New(t, settings...)
		b := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, a.App.Store)}, settings...)
		owner, _ := a.UserClient("owner@example.com")
		agent := mkAgent(t, owner, map[string]any{"name": "Keyed"})
		key := mintKey(t, owner, agent.Id, "shared")
		envs := []*apitest.Env{a, b}

		// Login: 10 attempts a minute per client address, whichever process answers.
		bad := map[string]any{"email": "owner@example.com", "password": "wrong-password"}
		clients := []*apitest.Client{a.Client(), b.Client()}
		for _, c := range clients {
			c.IP = "198.51.100.7"
		}
		for i := range 10 {
			clients[i%2].Post("/auth/login", bad).Expect(t, http.StatusUnauthorized)
		}
		for _, c := range clients {
			retryAfter(t, c.Post("/auth/login", bad).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS"))
		}

		// Per-agent key: perKey requests a minute in total.
		auth := "Bearer " + key.Key
		for i := range perKey {
			agentAPI(envs[i%2], nil, http.MethodGet, "/agent-api/chats", auth).Expect(t, http.StatusOK)
		}
		for _, e := range envs {
			retryAfter(t, agentAPI(e, nil, http.MethodGet, "/agent-api/chats", auth).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS"))
		}
	})
	t.Run("tick", func(t *testing.T) {
		t.Parallel()
		a := apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")
		b := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, a.App.Store)}, "SVC_WORKER_RUNTIME_MODE=client")
		ca, _ := a.UserClient("ticker@example.com")
		cb := b.Client()
		cb.Login("ticker@example.com", "password-ticker@example.com")
		// 120 ticks a minute per user; ticks of a task that does not exist count too.
		clients := []*apitest.Client{ca, cb}
		for i := range 120 {
			clients[i%2].Post(fmt.Sprintf("/tasks/%d/tick", 999999), nil).Expect(t, http.StatusNotFound)
		}
		for _, c := range clients {
			retryAfter(t, c.Post(fmt.Sprintf("/tasks/%d/tick", 999999), nil).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS"))
		}
	})
}

// TestChatStartLimitAcrossInstances: the per-key budget a chat start counts in its own write
// transaction (issue 28, item 7) is still shared by two apps on one database: perKey requests
// in total, alternating, count — chats started and a chat start refused by validation (counted
// after its handler) alike — and the next chat start is refused on either with 429 and
// Retry-After, with no task stored for it.
func TestChatStartLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	const perKey = 6
	settings := []string{"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=" + strconv.Itoa(perKey)}
	a := apitest.New(t, settings...)
	b := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, a.App.Store)}, settings...)
	owner, _ := a.UserClient("owner@example.com")
	agent := mkAgent(t, owner, map[string]any{"name": "Keyed"})
	key := mintKey(t, owner, agent.Id, "shared")
	hdr := map[string]string{"Authorization": "Bearer " + key.Key}
	envs := []*apitest.Env{a, b}
	start := func(e *apitest.Env, body map[string]any) *apitest.Response {
		return e.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: body, Header: hdr})
	}
	for i := range perKey - 1 {
		start(envs[i%2], map[string]any{"text": fmt.Sprintf("chat %d", i)}).Expect(t, http.StatusAccepted)
	}
	start(envs[1], map[string]any{"text": "   "}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	for _, e := range envs {
		retryAfter(t, start(e, map[string]any{"text": "one too many"}).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS"))
	}
	var list gen.ChatListResponse
	b.Client().Do(apitest.Request{Method: http.MethodGet, Path: "/agent-api/chats", Header: map[string]string{"Authorization": "Bearer " + mintKey(t, owner, agent.Id, "reader").Key}}).
		Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Data.Chats) != perKey-1 {
		t.Fatalf("%d chats stored, want %d", len(list.Data.Chats), perKey-1)
	}
}
