package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store/storetest"
)

// sseEvent is one event of a task event stream as the wire carries it.
type sseEvent struct {
	ID    string
	Event string
	Data  gen.TaskEvent
	Raw   string
}

// parseSSE reads the events of body until it ends (a stream that ended, or a recorded body),
// checking each data line against the contract's TaskEvent schema and its id and event lines
// against the data.
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		if ev, ok := parseBlock(t, block); ok {
			out = append(out, ev)
		}
	}
	return out
}

func parseBlock(t *testing.T, block string) (sseEvent, bool) {
	t.Helper()
	var ev sseEvent
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Raw = strings.TrimPrefix(line, "data: ")
		}
	}
	if ev.Raw == "" {
		return ev, false // a comment (keep-alive) or the trailing separator
	}
	checkTaskEvent(t, ev.Raw)
	if err := json.Unmarshal([]byte(ev.Raw), &ev.Data); err != nil {
		t.Fatalf("event data %s: %v", ev.Raw, err)
	}
	if ev.ID != strconv.FormatInt(ev.Data.Sequence, 10) || ev.Event != string(ev.Data.Type) {
		t.Fatalf("id %q / event %q do not match the data %s", ev.ID, ev.Event, ev.Raw)
	}
	return ev, true
}

// checkTaskEvent validates one data line against the contract's TaskEvent schema.
func checkTaskEvent(t *testing.T, raw string) {
	t.Helper()
	doc := apitest.Contract(t)
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("event data is no JSON: %s", raw)
	}
	if err := doc.Components.Schemas["TaskEvent"].Value.VisitJSON(v); err != nil {
		t.Fatalf("event data violates TaskEvent: %v\n%s", err, raw)
	}
}

// streamLive opens an event stream over real HTTP and delivers its events as they arrive;
// the channel closes when the stream ends. cancel cuts the connection.
func streamLive(t *testing.T, url string, header map[string]string) (<-chan sseEvent, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var block []string
		for sc.Scan() {
			if line := sc.Text(); line != "" {
				block = append(block, line)
				continue
			}
			if ev, ok := parseBlock(t, strings.Join(block, "\n")); ok {
				out <- ev
			}
			block = nil
		}
	}()
	t.Cleanup(cancel)
	return out, cancel
}

// nextStreamEvent waits for the next event of a live stream; ok is false when it ended.
func nextStreamEvent(t *testing.T, ch <-chan sseEvent) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no stream event within 10s")
		return sseEvent{}, false
	}
}

// drainStream reads a live stream to its end.
func drainStream(t *testing.T, ch <-chan sseEvent) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev, ok := nextStreamEvent(t, ch)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// eventKinds renders events compactly for comparison: "status:QUEUED", "message:user", …
func eventKinds(evs []sseEvent) string {
	parts := make([]string, 0, len(evs))
	for _, ev := range evs {
		d := ev.Data
		switch {
		case d.Status != nil:
			parts = append(parts, "status:"+string(d.Status.Status))
		case d.Message != nil:
			parts = append(parts, "message:"+string(d.Message.Role))
		case d.ToolCall != nil:
			parts = append(parts, string(d.Type)+":"+d.ToolCall.ProviderCallId)
		case d.QuestionBatch != nil:
			parts = append(parts, string(d.Type)+":"+d.QuestionBatch.ToolCallId)
		default:
			parts = append(parts, string(d.Type))
		}
	}
	return strings.Join(parts, " ")
}

// TestTaskEventStream: a task's event log through both APIs: the full replay of a finished
// task (ending with its terminal event), replay from a cursor (since_sequence, Last-Event-ID
// winning), a live stream that follows the task through approval to its end, and the refusals.
func TestTaskEventStream(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}], "usage": {"input_tokens": 10, "output_tokens": 2}},
	  {"text": "It is 42.", "usage": {"input_tokens": 20, "output_tokens": 3}}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, _ := env.UserClient("ada@example.com")
	other, _ := env.UserClient("bob@example.com")
	k := scriptedCalcAgent(t, owner, "script.json")
	addr := serve(t, env)
	daemon := runWorker(t, env)
	auth := map[string]string{"Authorization": "Bearer " + k.key.Key}

	var started gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "6*7?"},
		Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &started)
	id := started.Data.Chat.Id
	chatEvents := fmt.Sprintf("http://%s%s/agent-api/chats/%d/events", addr, apitest.API, id)

	// Live: the stream follows the chat from its start, through the pause, to the end.
	live, _ := streamLive(t, chatEvents, auth)
	daemon.Notify()
	var seen []sseEvent
	for {
		ev, ok := nextStreamEvent(t, live)
		if !ok {
			t.Fatalf("the stream ended before the pause: %s", eventKinds(seen))
		}
		seen = append(seen, ev)
		if ev.Data.Status != nil && ev.Data.Status.Status == gen.TaskStatusPENDINGAPPROVAL {
			break
		}
	}
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/agent-api/chats/%d/approve", id), Header: auth,
		Body: map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}}).Expect(t, http.StatusAccepted)
	daemon.Notify()
	seen = append(seen, drainStream(t, live)...)
	want := "status:QUEUED message:user status:RUNNING message:assistant tool_call.proposed:c1 status:PENDING_APPROVAL " +
		"tool_call.decided:c1 status:QUEUED status:RUNNING tool_call.executed:c1 message:assistant status:COMPLETED"
	if got := eventKinds(seen); got != want {
		t.Fatalf("live events:\n got %s\nwant %s", got, want)
	}
	for i, ev := range seen {
		if ev.Data.Sequence != int64(i+1) {
			t.Fatalf("event %d has sequence %d", i, ev.Data.Sequence)
		}
	}
	last := seen[len(seen)-1].Data.Status
	if last.Answer == nil || *last.Answer != "It is 42." || last.Usage.InputTokens != 30 || last.StepsUsed != 2 || last.Retrying {
		t.Fatalf("terminal event = %+v", last)
	}
	if tc := seen[9].Data.ToolCall; tc.Status != gen.TaskToolCallStatusEXECUTED || tc.Result == nil || !strings.Contains(*tc.Result, "42") {
		t.Fatalf("executed event = %+v", tc)
	}
	// Message events carry the tokens of their turn: none for the user's, the call's for each
	// assistant turn.
	if m := seen[1].Data.Message; m == nil || m.Usage != nil {
		t.Fatalf("user message event = %+v", m)
	}
	for i, want := range map[int]gen.MessageUsage{3: {InputTokens: 10, OutputTokens: 2}, 10: {InputTokens: 20, OutputTokens: 3}} {
		if m := seen[i].Data.Message; m == nil || m.Usage == nil || *m.Usage != want {
			t.Fatalf("assistant message event %d = %+v, want usage %+v", i, m, want)
		}
	}

	// Replay through the session API: the same events, and the stream ends.
	path := fmt.Sprintf("/tasks/%d/events", id)
	res := owner.Get(path).Expect(t, http.StatusOK)
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", res.Header.Get("Content-Type"))
	}
	if got := eventKinds(parseSSE(t, string(res.Body))); got != want {
		t.Fatalf("replay:\n got %s\nwant %s", got, want)
	}
	// From a cursor: since_sequence, and Last-Event-ID winning over it.
	after := parseSSE(t, string(owner.Get(path+"?since_sequence=9").Expect(t, http.StatusOK).Body))
	if len(after) != 3 || after[0].Data.Sequence != 10 {
		t.Fatalf("since 9: %s", eventKinds(after))
	}
	after = parseSSE(t, string(owner.Do(apitest.Request{Method: http.MethodGet, Path: path + "?since_sequence=2",
		Header: map[string]string{"Last-Event-ID": "11"}}).Expect(t, http.StatusOK).Body))
	if len(after) != 1 || after[0].Data.Sequence != 12 {
		t.Fatalf("Last-Event-ID 11: %s", eventKinds(after))
	}
	// Past the terminal event: an empty stream that ends at once.
	if after := parseSSE(t, string(owner.Get(path+"?since_sequence=12").Expect(t, http.StatusOK).Body)); len(after) != 0 {
		t.Fatalf("since 12: %s", eventKinds(after))
	}

	// Refusals: another user, another agent's key, unknown tasks, malformed cursors.
	other.Get(path).Expect(t, http.StatusNotFound, "NOT_FOUND")
	owner.Get("/tasks/999999/events").Expect(t, http.StatusNotFound, "NOT_FOUND")
	owner.Get(path+"?since_sequence=-1").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	owner.Do(apitest.Request{Method: http.MethodGet, Path: path, Header: map[string]string{"Last-Event-ID": "abc"}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	k2 := mintKey(t, owner, mkAgent(t, owner, map[string]any{"name": "Other"}).Id, "other")
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: fmt.Sprintf("/agent-api/chats/%d/events", id),
		Header: map[string]string{"Authorization": "Bearer " + k2.Key}}).Expect(t, http.StatusNotFound, "NOT_FOUND")
}

// TestTaskEventStreamAcrossInstances: a client cut off one svc instance reconnects to another
// on the same database with Last-Event-ID and receives exactly the events after it, through
// the terminal one, including those the first instance's worker writes after the switch.
func TestTaskEventStreamAcrossInstances(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "2+2"}}]},
	  {"text": "Four."}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	envA := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	// B runs no worker: every event it delivers was written by A.
	envB := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, envA.App.Store)},
		"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000", "SVC_WORKER_RUNTIME_MODE=server")
	owner, _ := envA.UserClient("ada@example.com")
	k := scriptedCalcAgent(t, owner, "script.json")
	addrA, addrB := serve(t, envA), serve(t, envB)
	envB.App.Events.Start(context.Background()) // B's poll, without B's worker
	t.Cleanup(func() { _ = envB.App.Events.Stop(context.Background()) })
	daemon := runWorker(t, envA)
	auth := map[string]string{"Authorization": "Bearer " + k.key.Key}

	var started gen.ChatResponse
	envA.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "2+2?"},
		Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &started)
	id := started.Data.Chat.Id
	events := fmt.Sprintf("%s/agent-api/chats/%d/events", apitest.API, id)

	live, cut := streamLive(t, "http://"+addrA+events, auth)
	daemon.Notify()
	var seen []sseEvent
	for len(seen) < 3 {
		ev, ok := nextStreamEvent(t, live)
		if !ok {
			t.Fatal("stream ended early")
		}
		seen = append(seen, ev)
	}
	cut()
	// Reconnect to B from the last event seen; approve through B once it is paused.
	authB := map[string]string{"Authorization": auth["Authorization"], "Last-Event-ID": seen[len(seen)-1].ID}
	liveB, _ := streamLive(t, "http://"+addrB+events, authB)
	for {
		ev, ok := nextStreamEvent(t, liveB)
		if !ok {
			t.Fatalf("B's stream ended before the pause: %s", eventKinds(seen))
		}
		seen = append(seen, ev)
		if ev.Data.Status != nil && ev.Data.Status.Status == gen.TaskStatusPENDINGAPPROVAL {
			break
		}
	}
	envB.Client().Do(apitest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/agent-api/chats/%d/approve", id), Header: auth,
		Body: map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}}).Expect(t, http.StatusAccepted)
	daemon.Notify()
	seen = append(seen, drainStream(t, liveB)...)

	all := parseSSE(t, string(envA.Client().Do(apitest.Request{Method: http.MethodGet, Path: events, Header: auth}).Expect(t, http.StatusOK).Body))
	if got, want := eventKinds(seen), eventKinds(all); got != want {
		t.Fatalf("across instances:\n got %s\nwant %s", got, want)
	}
	for i, ev := range seen {
		if ev.Data.Sequence != int64(i+1) {
			t.Fatalf("gap or duplicate at %d: sequence %d", i, ev.Data.Sequence)
		}
	}
	if all[len(all)-1].Data.Status == nil || all[len(all)-1].Data.Status.Status != gen.TaskStatusCOMPLETED {
		t.Fatalf("last event = %s", all[len(all)-1].Raw)
	}
}

// TestTaskEventStreamDeltas is the drill: a streaming turn's deltas reach the client
// as they are written; a client cut after 5 deltas reconnects with Last-Event-ID, to the same
// instance or to a second one on the same database, and receives exactly the events after the
// cut through the terminal one: increasing sequences, no duplicate, every stored event after
// the cut, and deltas that spell a prefix of the final message. A stream that drops mid-turn
// fails the step and leaves no delta behind.
func TestTaskEventStreamDeltas(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	chunks := []string{"The ", "answer ", "is ", "forty", "-two", ", ", "as ", "you ", "asked", "."}
	enc, _ := json.Marshal(chunks)
	scripts := map[string]string{
		"stream.json":  `[{"chunks": ` + string(enc) + `, "chunk_delay_ms": 150}]`,
		"dropped.json": `[{"chunks": ["Half ", "an ", "answer"], "chunk_delay_ms": 150, "error": {"code": "BAD_REQUEST", "message": "stream cut"}}]`,
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	envA := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	envB := apitest.NewWith(t, apitest.Options{Store: storetest.Twin(t, envA.App.Store)},
		"SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, _ := envA.UserClient("ada@example.com")
	streamKey := scriptedCalcAgent(t, owner, "stream.json")
	droppedKey := scriptedCalcAgent(t, owner, "dropped.json")
	addrA, addrB := serve(t, envA), serve(t, envB)
	envB.App.Events.Start(context.Background())
	t.Cleanup(func() { _ = envB.App.Events.Stop(context.Background()) })
	daemon := runWorker(t, envA)

	start := func(k chatKey) (int64, string) {
		var r gen.ChatResponse
		envA.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "go"},
			Header: map[string]string{"Authorization": "Bearer " + k.key.Key}}).Expect(t, http.StatusAccepted).Decode(t, &r)
		return r.Data.Chat.Id, fmt.Sprintf("%s/agent-api/chats/%d/events", apitest.API, r.Data.Chat.Id)
	}
	for _, target := range []struct{ name, addr string }{{"same instance", addrA}, {"second instance", addrB}} {
		t.Run(target.name, func(t *testing.T) {
			id, path := start(streamKey)
			auth := map[string]string{"Authorization": "Bearer " + streamKey.key.Key}
			live, cut := streamLive(t, "http://"+addrA+path, auth)
			daemon.Notify()
			var seen []sseEvent
			for deltas := 0; deltas < 5; {
				ev, ok := nextStreamEvent(t, live)
				if !ok {
					t.Fatalf("stream ended after %s", eventKinds(seen))
				}
				seen = append(seen, ev)
				if ev.Data.Delta != nil {
					deltas++
				}
			}
			cut()
			cutAt := seen[len(seen)-1].Data.Sequence
			resumed, _ := streamLive(t, "http://"+target.addr+path,
				map[string]string{"Authorization": auth["Authorization"], "Last-Event-ID": seen[len(seen)-1].ID})
			rest := drainStream(t, resumed)
			seen = append(seen, rest...)

			var text strings.Builder
			for i, ev := range seen {
				if i > 0 && ev.Data.Sequence <= seen[i-1].Data.Sequence {
					t.Fatalf("sequence %d after %d", ev.Data.Sequence, seen[i-1].Data.Sequence)
				}
				if ev.Data.Delta != nil {
					text.WriteString(ev.Data.Delta.Text)
				}
			}
			final := parseSSE(t, string(envA.Client().Do(apitest.Request{Method: http.MethodGet, Path: path, Header: auth}).Expect(t, http.StatusOK).Body))
			got := map[int64]bool{}
			for _, ev := range rest {
				got[ev.Data.Sequence] = true
			}
			var answer string
			for _, ev := range final {
				if ev.Data.Delta != nil {
					t.Fatalf("a delta outlived its turn: %s", ev.Raw)
				}
				if ev.Data.Sequence > cutAt && !got[ev.Data.Sequence] {
					t.Fatalf("event %d (%s) after the cut was not delivered; got %s", ev.Data.Sequence, ev.Data.Type, eventKinds(rest))
				}
				if ev.Data.Message != nil && ev.Data.Message.Role == gen.TranscriptMessageRoleAssistant {
					answer = ev.Data.Message.Text
				}
			}
			if answer != strings.Join(chunks, "") || !strings.HasPrefix(answer, text.String()) || text.Len() == 0 {
				t.Fatalf("deltas %q are no prefix of the answer %q", text.String(), answer)
			}
			last := seen[len(seen)-1].Data
			if last.Status == nil || last.Status.Status != gen.TaskStatusCOMPLETED {
				t.Fatalf("stream of chat %d ended with %s", id, seen[len(seen)-1].Raw)
			}
		})
	}

	t.Run("dropped model stream", func(t *testing.T) {
		_, path := start(droppedKey)
		auth := map[string]string{"Authorization": "Bearer " + droppedKey.key.Key}
		live, _ := streamLive(t, "http://"+addrA+path, auth)
		daemon.Notify()
		evs := drainStream(t, live)
		last := evs[len(evs)-1].Data.Status
		if last == nil || last.Status != gen.TaskStatusFAILED || last.Error == nil || string(last.Error.Code) != "BAD_REQUEST" {
			t.Fatalf("dropped stream ended with %s", evs[len(evs)-1].Raw)
		}
		for _, ev := range parseSSE(t, string(envA.Client().Do(apitest.Request{Method: http.MethodGet, Path: path, Header: auth}).Expect(t, http.StatusOK).Body)) {
			if ev.Data.Delta != nil || (ev.Data.Message != nil && ev.Data.Message.Role == gen.TranscriptMessageRoleAssistant) {
				t.Fatalf("a failed turn left %s", ev.Raw)
			}
		}
	})
}

// TestTaskEventStreamKeepAlive: an idle stream sends a comment line at the keep-alive period
// (15 s in service; shortened here) and stays open.
func TestTaskEventStreamKeepAlive(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_AGENT_API=true")
	env.App.Events.KeepAlive = 50 * time.Millisecond
	owner, _ := env.UserClient("ada@example.com")
	a := mkAgent(t, owner, map[string]any{"name": "Idle"})
	k := mintKey(t, owner, a.Id, "idle")
	var r gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "wait"},
		Header: map[string]string{"Authorization": "Bearer " + k.Key}}).Expect(t, http.StatusAccepted).Decode(t, &r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s%s/agent-api/chats/%d/events?since_sequence=2", serve(t, env), apitest.API, r.Data.Chat.Id), nil)
	req.Header.Set("Authorization", "Bearer "+k.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	alive := 0
	for alive < 3 && sc.Scan() {
		switch line := sc.Text(); {
		case line == ": keep-alive":
			alive++
		case line != "":
			t.Fatalf("unexpected line %q on an idle stream", line)
		}
	}
	if alive < 3 {
		t.Fatalf("%d keep-alives before the stream ended: %v", alive, sc.Err())
	}
	// Deleting the task ends its stream (no terminal event will come).
	owner.Delete(fmt.Sprintf("/tasks/%d", r.Data.Chat.Id)).Expect(t, http.StatusOK)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line != ": keep-alive" {
			t.Fatalf("unexpected line %q", line)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the stream of a deleted task did not end")
	}
}

// TestQueuedTaskIsClaimedAtOnce: a task this process queues (a new chat, then its approval) is
// claimed at once, not at the daemon's next poll (an hour here).
func TestQueuedTaskIsClaimedAtOnce(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	script := `[{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1+2"}}]}, {"text": "3"}]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, _ := env.UserClient("ada@example.com")
	k := scriptedCalcAgent(t, owner, "script.json")
	addr := serve(t, env)
	env.App.Daemon.Poll = time.Hour
	runWorker(t, env)
	auth := map[string]string{"Authorization": "Bearer " + k.key.Key}
	var r gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "1+2?"},
		Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &r)
	live, _ := streamLive(t, fmt.Sprintf("http://%s%s/agent-api/chats/%d/events", addr, apitest.API, r.Data.Chat.Id), auth)
	for {
		ev, ok := nextStreamEvent(t, live)
		if !ok {
			t.Fatal("stream ended before the pause")
		}
		if ev.Data.Status != nil && ev.Data.Status.Status == gen.TaskStatusPENDINGAPPROVAL {
			break
		}
	}
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/agent-api/chats/%d/approve", r.Data.Chat.Id), Header: auth,
		Body: map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}}).Expect(t, http.StatusAccepted)
	evs := drainStream(t, live)
	if last := evs[len(evs)-1].Data.Status; last == nil || last.Status != gen.TaskStatusCOMPLETED {
		t.Fatalf("ended with %s", evs[len(evs)-1].Raw)
	}
}

// TestTaskEventStreamAttachments: a message event carries its attachments with their kinds (the
// stream looks the media up once per page of events), as the transcript does.
func TestTaskEventStreamAttachments(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_AGENT_API=true")
	owner, _ := env.UserClient("ada@example.com")
	a := mkAgent(t, owner, map[string]any{"name": "Eyes"})
	k := mintKey(t, owner, a.Id, "eyes")
	auth := map[string]string{"Authorization": "Bearer " + k.Key}
	var r gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Header: auth, Body: map[string]any{
		"text": "look", "files": []map[string]any{
			{"filename": "p.png", "data_url": dataURL("image/png", mediaPNG(t, 4, 4))},
			{"filename": "n.txt", "data_url": dataURL("text/plain", []byte("note"))},
		}}}).Expect(t, http.StatusAccepted).Decode(t, &r)
	live, _ := streamLive(t, fmt.Sprintf("http://%s%s/agent-api/chats/%d/events", serve(t, env), apitest.API, r.Data.Chat.Id), auth)
	var msg *gen.TranscriptMessage
	for msg == nil {
		ev, ok := nextStreamEvent(t, live)
		if !ok {
			t.Fatal("stream ended before the user message")
		}
		msg = ev.Data.Message
	}
	if msg.Role != gen.TranscriptMessageRoleUser || msg.Text != "look" || msg.Attachments == nil || len(*msg.Attachments) != 2 {
		t.Fatalf("user message event = %+v", msg)
	}
	kinds := map[string]bool{}
	for _, at := range *msg.Attachments {
		kinds[string(at.Kind)] = at.MediaId != ""
	}
	if !kinds["image"] || len(kinds) != 2 {
		t.Fatalf("attachment kinds = %v", kinds)
	}
}

// TestEventStreamsPerOwnerCap: an agent key holds at most event_streams_per_user open streams
// on a process; one more answers 429 TOO_MANY_REQUESTS (as the contract says), and a slot is
// free again once a stream ends.
func TestEventStreamsPerOwnerCap(t *testing.T) {
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000", "SVC_EVENT_STREAMS_PER_USER=2")
	owner, _ := env.UserClient("ada@example.com")
	k := scriptedCalcAgent(t, owner, "script.json") // no worker runs: the chat stays QUEUED, its streams open
	addr := serve(t, env)
	auth := map[string]string{"Authorization": "Bearer " + k.key.Key}
	var started gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "6*7?"},
		Header: auth}).Expect(t, http.StatusAccepted).Decode(t, &started)
	path := fmt.Sprintf("/agent-api/chats/%d/events", started.Data.Chat.Id)
	url := fmt.Sprintf("http://%s%s%s", addr, apitest.API, path)
	_, cancelFirst := streamLive(t, url, auth)
	streamLive(t, url, auth)
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: path, Header: auth}).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS")
	cancelFirst()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", auth["Authorization"])
		res, err := http.DefaultClient.Do(req)
		code := 0
		if err == nil {
			code = res.StatusCode
			res.Body.Close()
		}
		cancel()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot after the first stream ended: %d %v", code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEventStreamReplaysEveryRun: the replay of a task that ran twice (a follow-up) delivers
// both runs and ends after the second's terminal event; a cursor inside the first run goes on
// into the second. Before, the replay ended at the first run's COMPLETED.
// Not parallel: the scripted driver reads its script from the working directory.
func TestEventStreamReplaysEveryRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(`[{"text": "First."}, {"text": "Second."}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t)
	owner, _ := env.UserClient("ada@example.com")
	a := scriptedAgent(t, owner, "Runs", "script.json", "core.CalculatorTool", "calculate", false)
	owner.Patch(fmt.Sprintf("/agents/%d", a.Id), map[string]any{"allow_followup": true}).Expect(t, http.StatusOK)
	var created gen.TaskResponse
	owner.Post("/tasks", map[string]any{"agent_id": a.Id, "prompt": "one"}).Expect(t, http.StatusCreated).Decode(t, &created)
	id := created.Data.Task.Id
	if tk := runQueued(t, env.App); tk.Status != taskstate.Completed {
		t.Fatalf("first run: %s", tk.Status)
	}
	owner.Post(taskPath(id, "continue"), map[string]any{"prompt": "two"}).Expect(t, http.StatusOK)
	if tk := runQueued(t, env.App); tk.Status != taskstate.Completed {
		t.Fatalf("second run: %s", tk.Status)
	}
	path := fmt.Sprintf("/tasks/%d/events", id)
	all := parseSSE(t, string(owner.Get(path).Expect(t, http.StatusOK).Body))
	want := "status:QUEUED message:user status:RUNNING message:assistant status:COMPLETED " +
		"status:QUEUED message:user status:RUNNING message:assistant status:COMPLETED"
	if got := eventKinds(all); got != want {
		t.Fatalf("replay:\n got %s\nwant %s", got, want)
	}
	from := parseSSE(t, string(owner.Get(path+"?since_sequence=4").Expect(t, http.StatusOK).Body))
	if len(from) != len(all)-4 || from[len(from)-1].Data.Status == nil || from[len(from)-1].Data.Status.Answer == nil ||
		*from[len(from)-1].Data.Status.Answer != "Second." {
		t.Fatalf("from 4: %s", eventKinds(from))
	}
}
