package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// bearer adds a per-agent key to every request of an HTTP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// protocolEnv is a service with the per-agent API on, served over real HTTP with its worker
// running, and two scripted agents with keys: calc (the calculator needs approval) and ask (a
// question first).
type protocolEnv struct {
	*chatEnv
	url string // the API base over real HTTP
}

func newProtocolEnv(t *testing.T) *protocolEnv {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	scripts := map[string]string{
		"approve.json": `[
		  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]},
		  {"text": "The result is 42."},
		  {"text": "Still 42."},
		  {"text": "Yes, 42."}
		]`,
		"ask.json": `[
		  {"tool_calls": [{"id": "q1", "name": "ask_user_question", "arguments": {"questions": [{"question": "Which format?", "header": "Format", "options": ["PDF", "Markdown"], "multiple": false, "allowFreeText": true}]}}]},
		  {"text": "Done as asked."}
		]`,
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000", "SVC_APP_URL="+chatAppURL)
	owner, _ := env.UserClient("ada@example.com")
	mk := func(group, script, tool, op string, autoApprove bool) chatKey {
		a := scriptedAgent(t, owner, group, script, tool, op, autoApprove)
		return chatKey{agent: a, key: mintKey(t, owner, a.Id, group)}
	}
	e := &protocolEnv{chatEnv: &chatEnv{env: env, owner: owner, a: mk("Calc", "approve.json", "core.CalculatorTool", "calculate", false),
		b: mk("Ask", "ask.json", "core.AskUserQuestionTool", "ask", true)}}
	daemon := runWorker(t, env)
	// The worker wakes on its own commits; the nudges keep the test quick whatever the clock.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			daemon.Notify()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	srv := httptest.NewServer(env.App.HTTP.Handler())
	t.Cleanup(srv.Close)
	e.url = srv.URL + apitest.API
	return e
}

// mcpSession connects the SDK's client to the MCP endpoint with k's key.
func (e *protocolEnv) mcpSession(t *testing.T, k chatKey, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress(r.Params) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "svc-test", Version: "1"}, opts)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/agent-api/mcp",
		HTTPClient: &http.Client{Transport: bearer{k.key.Key}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// callChat calls tool and decodes the chat record of its result; it fails on a tool error.
func callChat(t *testing.T, s *mcp.ClientSession, params *mcp.CallToolParams) gen.Chat {
	t.Helper()
	res := callTool(t, s, params)
	if res.IsError {
		t.Fatalf("%s: tool error %s", params.Name, toolText(res))
	}
	var c gen.Chat
	if err := json.Unmarshal([]byte(toolText(res)), &c); err != nil {
		t.Fatalf("%s: %v in %s", params.Name, err, toolText(res))
	}
	return c
}

func callTool(t *testing.T, s *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", res.Content[0])
}

// TestAgentMCP drives the agents through the MCP endpoint with the official SDK's client over
// real HTTP: the tools, a chat started and waited for (progress notifications) until it needs an
// approval, approved, followed up (once per idempotency key), a question answered, the
// resources, and the per-agent API's refusals as tool errors.
func TestAgentMCP(t *testing.T) {
	e := newProtocolEnv(t)
	var mu sync.Mutex
	var progress []string
	s := e.mcpSession(t, e.a, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, p.Message)
	})
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"answer_question", "approve_tool_calls", "get_chat", "get_transcript", "reject_tool_calls", "send_message", "start_chat"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v", names)
	}

	start := &mcp.CallToolParams{Name: "start_chat", Arguments: map[string]any{"text": "What is 6*7?", "wait_seconds": 30}}
	start.SetProgressToken("p1")
	c := callChat(t, s, start)
	if c.Status != gen.TaskStatusPENDINGAPPROVAL || c.Blocked == nil || c.Blocked.ToolCalls == nil || (*c.Blocked.ToolCalls)[0].Name != "calculator" {
		t.Fatalf("started chat = %+v", c)
	}
	// The client hands notifications to its handler on its own goroutine.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := slices.Clone(progress)
		mu.Unlock()
		if slices.Contains(got, "status: PENDING_APPROVAL") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress = %q", got)
		}
	}
	// Without a wait the call answers the chat as it is.
	if got := callChat(t, s, &mcp.CallToolParams{Name: "get_chat", Arguments: map[string]any{"chat_id": c.Id}}); got.Id != 0 {
		t.Fatalf("get_chat is not a bare chat: %+v", got)
	}
	res := callTool(t, s, &mcp.CallToolParams{Name: "answer_question", Arguments: map[string]any{"chat_id": c.Id, "content": "x", "wait_seconds": 0}})
	if !res.IsError || !strings.HasPrefix(toolText(res), "INVALID_STATE: ") {
		t.Fatalf("answer of a chat awaiting approval = %s", toolText(res))
	}
	c = callChat(t, s, &mcp.CallToolParams{Name: "approve_tool_calls", Arguments: map[string]any{"chat_id": c.Id}})
	if c.Status != gen.TaskStatusCOMPLETED || c.Answer == nil || *c.Answer != "The result is 42." {
		t.Fatalf("approved chat = %+v", c)
	}
	res = callTool(t, s, &mcp.CallToolParams{Name: "approve_tool_calls", Arguments: map[string]any{"chat_id": c.Id}})
	if !res.IsError || !strings.HasPrefix(toolText(res), "INVALID_STATE: ") {
		t.Fatalf("second approval = %s", toolText(res))
	}

	// A follow-up, retried with its idempotency key: one message, the same chat.
	send := map[string]any{"chat_id": c.Id, "text": "And again?", "idempotency_key": "follow-1"}
	first := callChat(t, s, &mcp.CallToolParams{Name: "send_message", Arguments: send})
	send["wait_seconds"] = 5 // another wait is the same request
	again := callChat(t, s, &mcp.CallToolParams{Name: "send_message", Arguments: send})
	if first.Status != gen.TaskStatusCOMPLETED || *first.Answer != "Still 42." || again.Id != first.Id || *again.Answer != "Still 42." {
		t.Fatalf("follow-up = %+v, repeat = %+v", first, again)
	}
	send["text"] = "Something else"
	if res := callTool(t, s, &mcp.CallToolParams{Name: "send_message", Arguments: send}); !res.IsError || !strings.HasPrefix(toolText(res), "VALIDATION_ERROR: ") {
		t.Fatalf("key reused for another message = %s", toolText(res))
	}
	res = callTool(t, s, &mcp.CallToolParams{Name: "get_chat", Arguments: map[string]any{"chat_id": c.Id}})
	var got struct {
		Chat     gen.Chat
		Messages []gen.ChatMessage
	}
	if err := json.Unmarshal([]byte(toolText(res)), &got); err != nil || got.Chat.Id != c.Id || len(got.Messages) != 4 || got.Messages[2].Text != "And again?" {
		t.Fatalf("get_chat = %s (%v)", toolText(res), err)
	}
	res = callTool(t, s, &mcp.CallToolParams{Name: "get_transcript", Arguments: map[string]any{"chat_id": c.Id}})
	var tr struct {
		ToolCalls []gen.TranscriptToolCall `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(toolText(res)), &tr); err != nil || len(tr.ToolCalls) != 1 || tr.ToolCalls[0].ProviderCallId != "c1" ||
		tr.ToolCalls[0].DecidedBy == nil || *tr.ToolCalls[0].DecidedBy != "key:"+e.a.key.Id {
		t.Fatalf("get_transcript = %s (%v)", toolText(res), err)
	}

	// Resources: the recent chats, one chat; another agent's chat is not found.
	rr, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "chats://recent"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, fmt.Sprintf(`"id":%d`, c.Id)) {
		t.Fatalf("chats://recent = %+v (%v)", rr, err)
	}
	rr, err = s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: fmt.Sprintf("chat://%d", c.Id)})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"status":"COMPLETED"`) {
		t.Fatalf("chat resource = %+v (%v)", rr, err)
	}
	sb := e.mcpSession(t, e.b, nil)
	if _, err := sb.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: fmt.Sprintf("chat://%d", c.Id)}); err == nil {
		t.Fatal("key B read a chat of agent A")
	}
	if res := callTool(t, sb, &mcp.CallToolParams{Name: "get_chat", Arguments: map[string]any{"chat_id": c.Id}}); !res.IsError || !strings.HasPrefix(toolText(res), "NOT_FOUND: ") {
		t.Fatalf("key B's get_chat of agent A's chat = %s", toolText(res))
	}

	// A question, answered (the first unanswered batch when no tool_call_id is given).
	q := callChat(t, sb, &mcp.CallToolParams{Name: "start_chat", Arguments: map[string]any{"text": "Write the report."}})
	if q.Status != gen.TaskStatusAWAITINGINPUT || q.Blocked == nil || q.Blocked.Questions == nil {
		t.Fatalf("question chat = %+v", q)
	}
	q = callChat(t, sb, &mcp.CallToolParams{Name: "answer_question", Arguments: map[string]any{"chat_id": q.Id, "content": "Markdown"}})
	if q.Status != gen.TaskStatusCOMPLETED || *q.Answer != "Done as asked." {
		t.Fatalf("answered chat = %+v", q)
	}
	if res := callTool(t, sb, &mcp.CallToolParams{Name: "start_chat", Arguments: map[string]any{"text": "  ", "wait_seconds": 0}}); !res.IsError || !strings.HasPrefix(toolText(res), "VALIDATION_ERROR: ") {
		t.Fatalf("blank prompt = %s", toolText(res))
	}
}

// TestAgentMCPGate: the MCP endpoint is behind the per-agent API's gate: no key 401, the API
// off 404 AGENT_API_DISABLED, a wrong method 405; and the transport's own refusals.
func TestAgentMCPGate(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, map[string]any{"name": "Alpha"}, map[string]any{"name": "Beta"})
	init := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}
	accept := map[string]string{"Accept": "application/json, text/event-stream"}
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/mcp", Body: init, Header: accept}).Expect(t, 401, "UNAUTHENTICATED")
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/mcp", Body: init,
		Header: map[string]string{"Accept": accept["Accept"], "Authorization": "Bearer svk_nope_nope"}}).Expect(t, 401, "UNAUTHENTICATED")
	e.call(e.a, http.MethodGet, "/agent-api/mcp", nil).Expect(t, 405, "METHOD_NOT_ALLOWED")
	e.call(e.a, http.MethodDelete, "/agent-api/mcp", nil).Expect(t, 405, "METHOD_NOT_ALLOWED")
	ok := e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/mcp", Body: init,
		Header: map[string]string{"Accept": accept["Accept"], "Authorization": "Bearer " + e.a.key.Key}}).Expect(t, 200)
	if !strings.Contains(string(ok.Body), `"serverInfo"`) || ok.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize = %s %v", ok.Body, ok.Header)
	}
	big := strings.Repeat("x", 1<<20)
	e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/mcp", Body: map[string]any{"jsonrpc": "2.0", "id": 2, "method": big},
		Header: map[string]string{"Accept": accept["Accept"], "Authorization": "Bearer " + e.a.key.Key}}).Expect(t, 413, "PAYLOAD_TOO_LARGE")
	off := apitest.New(t)
	off.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/mcp", Body: init,
		Header: map[string]string{"Accept": accept["Accept"], "Authorization": "Bearer " + e.a.key.Key}}).Expect(t, 404, "AGENT_API_DISABLED")
}
