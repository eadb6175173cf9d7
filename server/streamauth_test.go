package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// streamEnds waits for a live stream to end (its channel closed) within the bound; events it
// still delivers meanwhile are read and dropped.
func streamEnds(t *testing.T, ch <-chan sseEvent, within time.Duration, why string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("the stream was still open %s after %s", within, why)
		}
	}
}

// TestEventStreamEndsWithItsCredential: an open event stream ends within a couple of seconds
// of the session that opened it logging out, of a password change that ended that session, and
// of the per-agent key that opened it being revoked (issue 22, item 1: they stayed open and
// kept delivering).
func TestEventStreamEndsWithItsCredential(t *testing.T) {
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, _ := env.UserClient("ada@example.com")
	k := scriptedCalcAgent(t, owner, "script.json") // no worker runs: the tasks stay QUEUED, their streams open
	addr := serve(t, env)
	live := func(c *apitest.Client, path string, header map[string]string) <-chan sseEvent {
		t.Helper()
		if header == nil {
			header = map[string]string{"Cookie": c.CookieHeader()}
		}
		ch, _ := streamLive(t, fmt.Sprintf("http://%s%s%s", addr, apitest.API, path), header)
		return ch
	}
	newTask := func(c *apitest.Client) int64 {
		t.Helper()
		var r gen.TaskResponse
		c.Post("/tasks", map[string]any{"agent_id": k.agent.Id, "prompt": "6*7?"}).Expect(t, http.StatusCreated).Decode(t, &r)
		return r.Data.Task.Id
	}

	t.Run("logout", func(t *testing.T) {
		c := env.Client()
		c.Login("ada@example.com", "password-ada@example.com")
		ch := live(c, fmt.Sprintf("/tasks/%d/events", newTask(c)), nil)
		c.Post("/auth/logout", nil).Expect(t, http.StatusOK)
		streamEnds(t, ch, 5*time.Second, "its session logged out")
	})

	t.Run("password change ends the other session", func(t *testing.T) {
		other := env.Client()
		other.Login("ada@example.com", "password-ada@example.com")
		ch := live(other, fmt.Sprintf("/tasks/%d/events", newTask(other)), nil)
		owner.Patch("/auth/password", map[string]any{"current_password": "password-ada@example.com", "new_password": "another horse battery"}).Expect(t, http.StatusOK)
		streamEnds(t, ch, 5*time.Second, "a password change ended its session")
	})

	t.Run("revoked key", func(t *testing.T) {
		auth := map[string]string{"Authorization": "Bearer " + k.key.Key}
		var started gen.ChatResponse
		env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "6*7?"},
			Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &started)
		ch := live(nil, fmt.Sprintf("/agent-api/chats/%d/events", started.Data.Chat.Id), auth)
		owner.Delete(apiKeysPath(k.agent.Id)+"/"+k.key.Id).Expect(t, http.StatusOK)
		streamEnds(t, ch, 5*time.Second, "its key was revoked")
	})

	t.Run("a stream whose credential stands stays open", func(t *testing.T) {
		ch := live(owner, fmt.Sprintf("/tasks/%d/events", newTask(owner)), nil)
		select {
		case _, ok := <-ch:
			for ok {
				select {
				case _, ok = <-ch:
				case <-time.After(3 * time.Second):
					return
				}
			}
			t.Fatal("the stream of a signed-in session ended")
		case <-time.After(3 * time.Second):
		}
	})
}
