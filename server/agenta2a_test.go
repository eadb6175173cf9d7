package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// a2aClient resolves k's agent card with the A2A project's own Go client and connects to the
// JSON-RPC endpoint it names, with k's key.
func (e *protocolEnv) a2aClient(t *testing.T, k chatKey) (*a2ago.AgentCard, *a2aclient.Client) {
	t.Helper()
	hc := &http.Client{Transport: bearer{k.key.Key}}
	card, err := agentcard.NewResolver(hc).Resolve(context.Background(), e.url+"/agent-api/a2a")
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	// The card names the public URL (app_url); the test reaches the same server over loopback.
	card.URL = e.url + "/agent-api/a2a"
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return card, c
}

func userText(taskID a2ago.TaskID, text string) *a2ago.MessageSendParams {
	m := a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.TextPart{Text: text})
	m.TaskID = taskID
	return &a2ago.MessageSendParams{Message: m}
}

// taskOf returns the task of a message/send result, failing t on an error or a message.
func taskOf(t *testing.T) func(a2ago.SendMessageResult, error) *a2ago.Task {
	return func(r a2ago.SendMessageResult, err error) *a2ago.Task {
		t.Helper()
		return asTask(t, r, err)
	}
}

func asTask(t *testing.T, r a2ago.SendMessageResult, err error) *a2ago.Task {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task, ok := r.(*a2ago.Task)
	if !ok {
		t.Fatalf("result %T, want a task", r)
	}
	return task
}

// TestAgentA2A drives the agents with the A2A project's Go client (a2a-go) over real HTTP: the
// card, a task that needs an approval (input-required) approved with a data part, a follow-up
// streamed, a question answered, tasks/get, and the refusals (cancel, another agent's task).
func TestAgentA2A(t *testing.T) {
	e := newProtocolEnv(t)
	card, c := e.a2aClient(t, e.a)
	if card.Name != "Calc bot" || !card.Capabilities.Streaming || !card.Capabilities.PushNotifications || card.ProtocolVersion != "0.3.0" ||
		len(card.Skills) != 2 || card.Skills[0].ID != "chat" || card.Skills[1].ID != "core.CalculatorTool" ||
		card.URL != chatAppURL+"/api/v1/agent-api/a2a" && card.URL != e.url+"/agent-api/a2a" {
		t.Fatalf("card = %+v", card)
	}
	ctx := context.Background()
	asTask := taskOf(t)
	task := asTask(c.SendMessage(ctx, userText("", "What is 6*7?")))
	if task.Status.State != a2ago.TaskStateInputRequired || task.Status.Message == nil || len(task.History) != 1 {
		t.Fatalf("started task = %+v", task)
	}
	// A text reply while an approval is pending is refused with the rules' code.
	if _, err := c.SendMessage(ctx, userText(task.ID, "yes")); err == nil || !strings.Contains(err.Error(), "invalid params") {
		t.Fatalf("text for an approval: %v", err)
	}
	approve := a2ago.NewMessage(a2ago.MessageRoleUser, a2ago.DataPart{Data: map[string]any{"decision": "approve"}})
	approve.TaskID = task.ID
	task = asTask(c.SendMessage(ctx, &a2ago.MessageSendParams{Message: approve}))
	if task.Status.State != a2ago.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("approved task = %+v", task)
	}
	if tp, ok := task.Artifacts[0].Parts[0].(a2ago.TextPart); !ok || tp.Text != "The result is 42." {
		t.Fatalf("answer artifact = %+v", task.Artifacts[0].Parts)
	}
	// A follow-up, streamed: the task, status updates, the answer, the final completed.
	var states []a2ago.TaskState
	var final bool
	for ev, err := range c.SendStreamingMessage(ctx, userText(task.ID, "And again?")) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch ev := ev.(type) {
		case *a2ago.Task:
			states = append(states, ev.Status.State)
		case *a2ago.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
			final = ev.Final
		}
	}
	if !final || states[len(states)-1] != a2ago.TaskStateCompleted || states[0] != a2ago.TaskStateSubmitted {
		t.Fatalf("stream states = %v final %v", states, final)
	}
	got, err := c.GetTask(ctx, &a2ago.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != a2ago.TaskStateCompleted || len(got.History) != 4 {
		t.Fatalf("tasks/get = %+v %v", got, err)
	}
	if _, err := c.CancelTask(ctx, &a2ago.TaskIDParams{ID: task.ID}); err == nil {
		t.Fatal("a task was canceled through the per-agent API")
	}
	if _, err := c.GetTaskPushConfig(ctx, &a2ago.GetTaskPushConfigParams{TaskID: task.ID}); err == nil {
		t.Fatal("push config of a task without a callback")
	}

	// Another agent's key: a question answered; agent A's task is not found.
	_, cb := e.a2aClient(t, e.b)
	if _, err := cb.GetTask(ctx, &a2ago.TaskQueryParams{ID: task.ID}); err == nil {
		t.Fatal("key B read a task of agent A")
	}
	q := asTask(cb.SendMessage(ctx, userText("", "Write the report.")))
	if q.Status.State != a2ago.TaskStateInputRequired {
		t.Fatalf("question task = %+v", q)
	}
	q = asTask(cb.SendMessage(ctx, userText(q.ID, "Markdown")))
	if q.Status.State != a2ago.TaskStateCompleted {
		t.Fatalf("answered task = %+v", q)
	}
}

// a2aRPC posts one raw JSON-RPC body to the A2A endpoint with k's key through the contract
// checking client.
func (e *chatEnv) a2aRPC(t *testing.T, k chatKey, body string) map[string]any {
	t.Helper()
	res := e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/a2a", Body: []byte(body),
		Header: map[string]string{"Authorization": "Bearer " + k.key.Key}}).Expect(t, 200)
	var out map[string]any
	if err := json.Unmarshal(res.Body, &out); err != nil {
		t.Fatalf("%s: %v", res.Body, err)
	}
	return out
}

func rpcCode(out map[string]any) (int, string) {
	e, _ := out["error"].(map[string]any)
	if e == nil {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	data, _ := e["data"].(map[string]any)
	svcCode, _ := data["code"].(string)
	return int(code), svcCode
}

// TestAgentA2AConformance sends the specification's request shapes (A2A 0.3, JSON-RPC 2.0) and
// the malformed ones: the error codes, ids echoed, the card's shape, the gate's refusals.
func TestAgentA2AConformance(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, map[string]any{"name": "Alpha", "description": "Answers questions."}, map[string]any{"name": "Beta"})
	var card gen.A2AAgentCard
	e.call(e.a, http.MethodGet, "/agent-api/a2a/.well-known/agent-card.json", nil).Expect(t, 200).Decode(t, &card)
	if card.Name != "Alpha" || card.Description != "Answers questions." || card.Url != chatAppURL+"/api/v1/agent-api/a2a" ||
		card.PreferredTransport != gen.JSONRPC || card.SecuritySchemes == nil || (*card.SecuritySchemes)["agentKey"]["scheme"] != "bearer" {
		t.Fatalf("card = %+v", card)
	}
	e.env.Client().Get("/agent-api/a2a/.well-known/agent-card.json").Expect(t, 401, "UNAUTHENTICATED")
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/a2a", Body: []byte(`{}`)}).Expect(t, 401, "UNAUTHENTICATED")
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/a2a", Body: []byte(`{}`), ContentType: "text/plain",
		Header: map[string]string{"Authorization": "Bearer " + e.a.key.Key}}).Expect(t, 415, "UNSUPPORTED_MEDIA_TYPE")
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/a2a", Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 1<<20) + `"}`),
		Header: map[string]string{"Authorization": "Bearer " + e.a.key.Key}}).Expect(t, 413, "PAYLOAD_TOO_LARGE")

	for _, tt := range []struct {
		body      string
		code      int
		svcCode   string
		echoNilID bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700, "", true},
		{`[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"1"}}]`, -32600, "", true},
		{`{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`, -32600, "", false},
		{`{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"1"}}`, -32600, "", true},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tasks/get"}`, -32600, "", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":[1]}`, -32600, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`, -32601, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`, -32602, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":5}}`, -32602, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"999999"}}`, -32001, "NOT_FOUND", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"999999"}}`, -32001, "NOT_FOUND", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"hi"}]}}}`, -32602, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"file","file":{"uri":"https://x.example/a.pdf"}}]}}}`, -32005, "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, -32602, "VALIDATION_ERROR", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","parts":[{"kind":"text","text":"  "}]}}}`, -32602, "VALIDATION_ERROR", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m3","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"http://10.0.0.1/hook"}}}}`, -32602, "VALIDATION_ERROR", false},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m4","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"pushNotificationConfig":{"url":"https://hooks.example.test/h","token":"t"}}}}`, -32003, "", false},
	} {
		out := e.a2aRPC(t, e.a, tt.body)
		code, svcCode := rpcCode(out)
		if code != tt.code || svcCode != tt.svcCode || out["jsonrpc"] != "2.0" {
			t.Errorf("%.80s: %v", tt.body, out)
		}
		if id, ok := out["id"]; !ok || (tt.echoNilID != (id == nil)) {
			t.Errorf("%.80s: id %v", tt.body, out["id"])
		}
	}

	// A task started without waiting, with its push configuration (the chat's callback).
	start := `{"jsonrpc":"2.0","id":"s1","method":"message/send","params":{"message":{"kind":"message","messageId":"msg-1","role":"user",` +
		`"parts":[{"kind":"text","text":"hello"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"https://hooks.example.test/h"}}}}`
	out := e.a2aRPC(t, e.a, start)
	res, _ := out["result"].(map[string]any)
	status, _ := res["status"].(map[string]any)
	if out["id"] != "s1" || res["kind"] != "task" || status["state"] != "submitted" || res["id"] != res["contextId"] {
		t.Fatalf("message/send = %v", out)
	}
	id := res["id"].(string)
	// The same messageId again: the same task, no second chat.
	if again := e.a2aRPC(t, e.a, start); again["result"].(map[string]any)["id"] != id {
		t.Fatalf("repeated messageId = %v", again)
	}
	if l := e.list(t, e.a, ""); len(l) != 1 || fmt.Sprint(l[0].Id) != id || l[0].Status != gen.TaskStatusQUEUED {
		t.Fatalf("chats = %+v", l)
	}
	other := strings.Replace(start, `"hello"`, `"other"`, 1)
	if code, svcCode := rpcCode(e.a2aRPC(t, e.a, other)); code != -32602 || svcCode != "VALIDATION_ERROR" {
		t.Fatalf("messageId reused for another message: %d %s", code, svcCode)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/get","params":{"id":"` + id + `"}}`
	if out := e.a2aRPC(t, e.a, get); out["result"].(map[string]any)["pushNotificationConfig"].(map[string]any)["url"] != "https://hooks.example.test/h" {
		t.Fatalf("push config get = %v", out)
	}
	set := `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"` + id + `","pushNotificationConfig":{"url":"https://hooks.example.test/other"}}}`
	if code, _ := rpcCode(e.a2aRPC(t, e.a, set)); code != -32003 {
		t.Fatalf("push config changed: %d", code)
	}
	// Another key sees no task of agent A.
	if code, _ := rpcCode(e.a2aRPC(t, e.b, get)); code != -32001 {
		t.Fatalf("key B's push config get: %d", code)
	}
	// tasks/get with historyLength.
	out = e.a2aRPC(t, e.a, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"`+id+`","historyLength":0}}`)
	if r := out["result"].(map[string]any); r["history"] != nil || r["status"].(map[string]any)["state"] != "submitted" {
		t.Fatalf("tasks/get = %v", out)
	}
	// message/stream answers an event stream whose data lines are JSON-RPC responses; the
	// stream of a queued chat with no worker ends at the first event here only when the
	// client leaves, so read the first event and hang up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srvURL := serve(t, e.env)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+srvURL+apitest.API+"/agent-api/a2a", bytes.NewReader([]byte(
		`{"jsonrpc":"2.0","id":9,"method":"tasks/resubscribe","params":{"id":"`+id+`"}}`)))
	req.Header.Set("Authorization", "Bearer "+e.a.key.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadAtLeast(resp.Body, buf, 20)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || !strings.HasPrefix(string(buf[:n]), `data: {"jsonrpc":"2.0","id":9,"result":{"kind":"task"`) {
		t.Fatalf("resubscribe = %s %q", ct, buf[:n])
	}
}
