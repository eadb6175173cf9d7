package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/pgwake"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// waitListening waits until l listens, having connected at least connects times.
func waitListening(t *testing.T, l *pgwake.Listener, connects int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for l.Connects() < connects || !l.Connected() {
		if time.Now().After(deadline) {
			t.Fatalf("wake-up listener: connects = %d (want %d), connected = %v", l.Connects(), connects, l.Connected())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWakeupsAcrossProcesses is issue 28 item 3 on PostgreSQL: an API-only process A and a
// worker process B on one database, every poll of both set to an hour (the claim poll, the
// chores, the event streams' poll and keep-alive), so only the NOTIFY path can explain what
// happens within the test: a chat created through A starts on B's worker; the events B's run
// writes reach a stream served by A; after both listeners' connections were ended on the server
// (pg_terminate_backend) and they reconnected, an approval made through A resumes the task on B
// and its events reach A's stream to the end.
func TestWakeupsAcrossProcesses(t *testing.T) {
	if storetest.Dialect() != store.DialectPostgres {
		t.Skip("wake-ups cross processes on PostgreSQL only (" + storetest.EnvPostgresDSN + ")")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "2+2"}}]},
	  {"text": "Four."}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	envA := apitest.NewWith(t, apitest.Options{APIOnly: true},
		"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000", "SVC_WORKER_RUNTIME_MODE=server")
	envB := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, envA.App.Store)},
		"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000", "SVC_WORKER_RUNTIME_MODE=server")
	owner, _ := envA.UserClient("ada@example.com")
	k := scriptedCalcAgent(t, owner, "script.json")
	addrA := serve(t, envA)
	for _, env := range []*apitest.Env{envA, envB} {
		env.App.Events.Poll, env.App.Events.KeepAlive = time.Hour, time.Hour
		env.App.Daemon.Poll, env.App.Daemon.ChoresEvery = time.Hour, time.Hour
	}
	runWorker(t, envA) // API only: the listener, the streams' loop, the outboxes; no daemon
	runWorker(t, envB)
	waitListening(t, envA.App.Wakeups, 1)
	waitListening(t, envB.App.Wakeups, 1)
	for envB.App.Daemon.LastPoll().IsZero() { // B's first claim pass is over: the chat comes after it
		time.Sleep(10 * time.Millisecond)
	}
	auth := map[string]string{"Authorization": "Bearer " + k.key.Key}

	var started gen.ChatResponse
	envA.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "2+2?"},
		Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &started)
	id := started.Data.Chat.Id
	live, _ := streamLive(t, fmt.Sprintf("http://%s%s/agent-api/chats/%d/events", addrA, apitest.API, id), auth)
	var seen []sseEvent
	for {
		ev, ok := nextStreamEvent(t, live)
		if !ok {
			t.Fatalf("A's stream ended before the pause: %s", eventKinds(seen))
		}
		seen = append(seen, ev)
		if ev.Data.Status != nil && ev.Data.Status.Status == gen.TaskStatusPENDINGAPPROVAL {
			break
		}
	}

	if n := storetest.KillWakeListeners(t, envA.App.Store); n != 2 {
		t.Fatalf("ended %d listener connections, want 2 (A's and B's)", n)
	}
	waitListening(t, envA.App.Wakeups, 2)
	waitListening(t, envB.App.Wakeups, 2)
	envA.Client().Do(apitest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/agent-api/chats/%d/approve", id), Header: auth,
		Body: map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}}).Expect(t, http.StatusAccepted)
	seen = append(seen, drainStream(t, live)...)
	if last := seen[len(seen)-1].Data.Status; last == nil || last.Status != gen.TaskStatusCOMPLETED {
		t.Fatalf("A's stream ended with %s (%s)", seen[len(seen)-1].Raw, eventKinds(seen))
	}
	for i, ev := range seen {
		if ev.Data.Sequence != int64(i+1) {
			t.Fatalf("gap or duplicate at %d: sequence %d", i, ev.Data.Sequence)
		}
	}
}
