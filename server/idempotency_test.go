package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// countTasks is how many tasks c's user has.
func countTasks(t *testing.T, c *apitest.Client) int {
	t.Helper()
	var l gen.TaskListResponse
	c.Get("/tasks?per_page=100").Expect(t, http.StatusOK).Decode(t, &l)
	return len(l.Data.Tasks)
}

// TestIdempotentTaskCreate (issue 13): a repeated POST /tasks with the same Idempotency-Key
// and body answers the first answer without starting a second task; another body with the key
// is 422; repeats arriving at once start exactly one task; keys are per caller.
func TestIdempotentTaskCreate(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Helper"}).Expect(t, http.StatusCreated).Decode(t, &a)
	post := func(c *apitest.Client, key, prompt string) *apitest.Response {
		return c.Do(apitest.Request{Method: http.MethodPost, Path: "/tasks", Header: map[string]string{"Idempotency-Key": key},
			Body: map[string]any{"agent_id": a.Data.Agent.Id, "prompt": prompt}})
	}
	first := post(c, "k-1", "Hello").Expect(t, http.StatusCreated)
	again := post(c, "k-1", "Hello").Expect(t, http.StatusCreated)
	if !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("replay: %s / %s (replayed %q)", first.Body, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	if n := countTasks(t, c); n != 1 {
		t.Fatalf("%d tasks after a repeat, want 1", n)
	}
	post(c, "k-1", "Something else").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	post(c, "has space", "Hello").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	post(c, "k-2", "Hello").Expect(t, http.StatusCreated)
	if n := countTasks(t, c); n != 2 {
		t.Fatalf("%d tasks, want 2 (another key acts)", n)
	}
	// Another user's k-1 is another key.
	b, _ := env.UserClient("bob@example.com")
	var ba gen.AgentResponse
	b.Post("/agents", map[string]any{"name": "Bob's"}).Expect(t, http.StatusCreated).Decode(t, &ba)
	b.Do(apitest.Request{Method: http.MethodPost, Path: "/tasks", Header: map[string]string{"Idempotency-Key": "k-1"},
		Body: map[string]any{"agent_id": ba.Data.Agent.Id, "prompt": "Hello"}}).Expect(t, http.StatusCreated)

	// Eight sessions of the same user send one key at once: one task, eight identical answers.
	clients := make([]*apitest.Client, 8)
	for i := range clients {
		clients[i] = env.Client()
		clients[i].Login("ada@example.com", "password-ada@example.com")
	}
	bodies := make([][]byte, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(cl, "k-burst", "At once")
			if r.Status == http.StatusCreated {
				bodies[i] = r.Body
			}
		}()
	}
	wg.Wait()
	for i := range bodies {
		if !bytes.Equal(bodies[i], bodies[0]) || bodies[i] == nil {
			t.Fatalf("answer %d differs: %s vs %s", i, bodies[i], bodies[0])
		}
	}
	if n := countTasks(t, c); n != 3 {
		t.Fatalf("%d tasks after the burst, want 3", n)
	}
}

// TestIdempotentChatAcrossRestart: a chat start through the per-agent API with a key and an
// inline file is answered again after a restart of the service; the same key with another file
// (same name) is 422; ten identical starts at once make one chat.
func TestIdempotentChatAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, map[string]any{"name": "Files"}, map[string]any{"name": "Other"})
	start := func(file string) *apitest.Response {
		return e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats",
			Header: map[string]string{"Authorization": "Bearer " + e.a.key.Key, "Idempotency-Key": "chat-1"},
			Body:   map[string]any{"text": "with a file", "files": []map[string]any{{"filename": "a.txt", "data_url": dataURL("text/plain", []byte(file))}}}})
	}
	first := start("first contents").Expect(t, http.StatusAccepted)
	start("first contents").Expect(t, http.StatusAccepted)
	start("other contents").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	if n := len(e.list(t, e.a, "?per_page=100")); n != 1 {
		t.Fatalf("%d chats, want 1", n)
	}

	// Ten identical starts with a new key at once: one chat, ten identical answers.
	var wg sync.WaitGroup
	answers := make([][]byte, 10)
	for i := range answers {
		cl := e.env.Client()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := cl.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats",
				Header: map[string]string{"Authorization": "Bearer " + e.a.key.Key, "Idempotency-Key": "chat-burst"},
				Body:   map[string]any{"text": "at once"}})
			if r.Status == http.StatusAccepted {
				answers[i] = r.Body
			}
		}()
	}
	wg.Wait()
	for i := range answers {
		if answers[i] == nil || !bytes.Equal(answers[i], answers[0]) {
			t.Fatalf("answer %d: %s vs %s", i, answers[i], answers[0])
		}
	}
	if n := len(e.list(t, e.a, "?per_page=100")); n != 2 {
		t.Fatalf("%d chats after ten identical starts, want 2", n)
	}

	restarted := openOn(t, e.env.App.Store, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	body := fmt.Sprintf(`{"text":"with a file","files":[{"data_url":%q,"filename":"a.txt"}]}`, dataURL("text/plain", []byte("first contents")))
	req := httptest.NewRequest(http.MethodPost, apitest.API+"/agent-api/chats", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.a.key.Key)
	req.Header.Set("Idempotency-Key", "chat-1")
	rec := httptest.NewRecorder()
	restarted.HTTP.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || !bytes.Equal(rec.Body.Bytes(), first.Body) || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after a restart: %d %s (want the first answer %s)", rec.Code, rec.Body, first.Body)
	}
}
