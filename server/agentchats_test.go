package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
)

// chatResolver resolves the callback hosts of the chat tests without DNS.
type chatResolver map[string][]netip.Addr

func (r chatResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if as, ok := r[host]; ok {
		return as, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

var chatHosts = chatResolver{
	"hooks.example.test": {netip.MustParseAddr("93.184.216.34")},
	"loop.example.test":  {netip.MustParseAddr("127.0.0.1")},
	"mixed.example.test": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.9.8.7")},
}

const chatAppURL = "https://svc.example.test/svc"

// chatKey is an agent with a key of the per-agent API.
type chatKey struct {
	agent gen.Agent
	key   gen.AgentApiKeyWithSecret
}

// chatEnv is a service with the per-agent API on, an owner and two keyed agents.
type chatEnv struct {
	env   *apitest.Env
	owner *apitest.Client
	a, b  chatKey
}

func newChatEnv(t *testing.T, agentA, agentB map[string]any) *chatEnv {
	t.Helper()
	e := &chatEnv{env: apitest.NewWith(t, apitest.Options{Net: netguard.Options{Resolver: chatHosts}},
		"SVC_AGENT_API=true", "SVC_APP_URL="+chatAppURL, "SVC_AGENT_API_RATE_LIMIT_MAX=100000")}
	e.owner, _ = e.env.UserClient("owner@example.com")
	e.a.agent = mkAgent(t, e.owner, agentA)
	e.a.key = mintKey(t, e.owner, e.a.agent.Id, "A")
	e.b.agent = mkAgent(t, e.owner, agentB)
	e.b.key = mintKey(t, e.owner, e.b.agent.Id, "B")
	return e
}

// call sends a per-agent API request with k's key.
func (e *chatEnv) call(k chatKey, method, path string, body any) *apitest.Response {
	return e.env.Client().Do(apitest.Request{Method: method, Path: path, Body: body,
		Header: map[string]string{"Authorization": "Bearer " + k.key.Key}})
}

func (e *chatEnv) start(t *testing.T, k chatKey, body map[string]any) gen.Chat {
	t.Helper()
	var r gen.ChatResponse
	e.call(k, http.MethodPost, "/agent-api/chats", body).Expect(t, http.StatusAccepted).Decode(t, &r)
	if r.Data.Chat.Status != gen.TaskStatusQUEUED || r.Data.Chat.AgentId != k.agent.Id || r.Data.Chat.Blocked != nil {
		t.Fatalf("started chat = %+v", r.Data.Chat)
	}
	return r.Data.Chat
}

func (e *chatEnv) list(t *testing.T, k chatKey, query string) []gen.Chat {
	t.Helper()
	var r gen.ChatListResponse
	e.call(k, http.MethodGet, "/agent-api/chats"+query, nil).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.Chats
}

func (e *chatEnv) status(t *testing.T, k chatKey, id int64) gen.Chat {
	t.Helper()
	var r gen.ChatResponse
	e.call(k, http.MethodGet, fmt.Sprintf("/agent-api/chats/%d/status", id), nil).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.Chat
}

func (e *chatEnv) messages(t *testing.T, k chatKey, id int64, query string) []gen.ChatMessage {
	t.Helper()
	var r gen.ChatMessageListResponse
	e.call(k, http.MethodGet, fmt.Sprintf("/agent-api/chats/%d/messages%s", id, query), nil).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.Messages
}

func (e *chatEnv) transcript(t *testing.T, k chatKey, id int64, query string) gen.ChatTranscriptResponse {
	t.Helper()
	var r gen.ChatTranscriptResponse
	e.call(k, http.MethodGet, fmt.Sprintf("/agent-api/chats/%d/transcript%s", id, query), nil).Expect(t, http.StatusOK).Decode(t, &r)
	return r
}

func dataURL(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// TestAgentChatRequests covers the request rules of the chat endpoints without a worker: body
// errors, the callback screen (422 and no chat), step clamps, inline files and media_ids, the
// list's paging and since, follow-ups of a queued chat, the 409s and the key's scope.
func TestAgentChatRequests(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, map[string]any{"name": "Alpha"}, map[string]any{"name": "Beta", "max_steps": 7})
	chats := "/agent-api/chats"

	t.Run("body errors", func(t *testing.T) {
		e.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: chats, Body: "not json", ContentType: "application/json",
			Header: map[string]string{"Authorization": "Bearer " + e.a.key.Key}}).Expect(t, http.StatusBadRequest)
		for _, body := range []map[string]any{{}, {"text": "   "}, {"prompt": ""}, {"text": 5}} {
			e.call(e.a, http.MethodPost, chats, body).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		}
	})

	t.Run("callback screen", func(t *testing.T) {
		before := len(e.list(t, e.a, "?per_page=100"))
		for _, cb := range []string{
			"http://hooks.example.test/cb", "https://10.0.0.1/cb", "https://loop.example.test/cb", "https://127.0.0.1/cb",
			"https://mixed.example.test/cb", "https://unknown.example.test/cb", "ftp://hooks.example.test/",
			"https://hooks.example.test/" + strings.Repeat("x", 2048), "", "hooks.example.test/cb",
		} {
			res := e.call(e.a, http.MethodPost, chats, map[string]any{"text": "hi", "callback_url": cb})
			if res.Status != http.StatusUnprocessableEntity {
				t.Errorf("callback_url %.50q: %d %s", cb, res.Status, res.Body)
			}
		}
		if after := len(e.list(t, e.a, "?per_page=100")); after != before {
			t.Fatalf("refused callbacks created chats: %d → %d", before, after)
		}
		c := e.start(t, e.a, map[string]any{"text": "hi", "callback_url": "https://hooks.example.test/cb?x=1"})
		task := getTask(t, e.owner, c.Id)
		if task.Status != gen.TaskStatusQUEUED || task.AgentId != e.a.agent.Id {
			t.Fatalf("chat as a task = %+v", task)
		}
		// Schemes are case-insensitive (RFC 3986).
		e.start(t, e.a, map[string]any{"text": "hi", "callback_url": "HTTPS://hooks.example.test/cb"})
	})

	t.Run("steps are clamped", func(t *testing.T) {
		for _, tc := range []struct {
			body map[string]any
			k    chatKey
			want int
		}{
			{map[string]any{"text": "x", "max_steps": 0}, e.a, 1},
			{map[string]any{"text": "x", "max_steps": -5}, e.a, 1},
			{map[string]any{"text": "x", "max_steps": 500}, e.a, 100},
			{map[string]any{"text": "x", "max_steps": 12}, e.a, 12},
			{map[string]any{"text": "x"}, e.a, 10},
			{map[string]any{"text": "x"}, e.b, 7},
			{map[string]any{"text": "x", "additional_steps": 3}, e.b, 3},
			{map[string]any{"text": "x", "additional_steps": 1000}, e.b, 100},
			{map[string]any{"text": "x", "max_steps": 4, "additional_steps": 9}, e.b, 4},
		} {
			c := e.start(t, tc.k, tc.body)
			if got := getTask(t, e.owner, c.Id).MaxSteps; got != tc.want {
				t.Errorf("%v: max_steps %d, want %d", tc.body, got, tc.want)
			}
		}
	})

	var fileID string
	t.Run("inline files", func(t *testing.T) {
		text := func(s string) map[string]any {
			return map[string]any{"filename": s + ".txt", "data_url": dataURL("text/plain", []byte("file "+s))}
		}
		files := []map[string]any{
			text("one"),
			{"filename": "big.txt", "data_url": dataURL("text/plain", []byte(strings.Repeat("a", 16<<20+1)))},
			{"filename": "x.zip", "data_url": dataURL("application/zip", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00binary\x00\x01\x02"))},
			text("four"), text("five"), text("six"), text("seven"), text("eight"),
			text("nine"),
		}
		c := e.start(t, e.a, map[string]any{"text": "with files", "prompt": "ignored", "files": files})
		ms := e.messages(t, e.a, c.Id, "")
		if len(ms) != 1 || ms[0].Role != gen.ChatMessageRoleUser || ms[0].Text != "with files" || ms[0].Sequence != 1 {
			t.Fatalf("messages = %+v", ms)
		}
		if ms[0].Attachments == nil || len(*ms[0].Attachments) != 6 {
			t.Fatalf("attachments = %+v, want 6 (one, four … eight)", ms[0].Attachments)
		}
		for _, at := range *ms[0].Attachments {
			if at.Kind != gen.ChatMediaKindDocument || at.Url != chatAppURL+"/api/v1/agent-api/media/"+at.MediaId {
				t.Fatalf("attachment = %+v", at)
			}
		}
		fileID = (*ms[0].Attachments)[0].MediaId
		tr := e.transcript(t, e.a, c.Id, "")
		if a := tr.Data.Messages[0].Attachments; a == nil || len(*a) != 6 || (*a)[0].MediaId != fileID {
			t.Fatalf("transcript attachments = %+v", a)
		}
		// The prompt alias alone works.
		c = e.start(t, e.a, map[string]any{"prompt": "alias only"})
		if ms := e.messages(t, e.a, c.Id, ""); ms[0].Text != "alias only" || ms[0].Attachments != nil {
			t.Fatalf("alias messages = %+v", ms)
		}
	})

	t.Run("malformed inline files", func(t *testing.T) {
		before := len(e.list(t, e.a, "?per_page=100"))
		for _, bad := range []string{"data:text/plain;base64,@@@@", "data:text/plain,%zz", "data:;base64,aGk=", "data:,hi"} {
			files := []map[string]any{{"filename": "good.txt", "data_url": dataURL("text/plain", []byte("fine"))}, {"filename": "broken.txt", "data_url": bad}}
			r := e.call(e.a, http.MethodPost, "/agent-api/chats", map[string]any{"text": "x", "files": files}).Expect(t, 422, "VALIDATION_ERROR")
			if !strings.Contains(string(r.Body), "broken.txt") {
				t.Errorf("%q: message %s does not name the file", bad, r.Body)
			}
		}
		if after := len(e.list(t, e.a, "?per_page=100")); after != before {
			t.Fatalf("refused chats were started: %d chats, want %d", after, before)
		}
	})

	t.Run("media ids", func(t *testing.T) {
		for _, ids := range [][]string{{"med_nope"}, {""}, {fileID, "med_nope"}} {
			e.call(e.a, http.MethodPost, chats, map[string]any{"text": "x", "media_ids": ids}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		}
		// Agent B's key cannot attach agent A's asset.
		e.call(e.b, http.MethodPost, chats, map[string]any{"text": "x", "media_ids": []string{fileID}}).Expect(t, http.StatusUnprocessableEntity)
		// The session API takes media_ids of assets its caller can see.
		e.owner.Post("/tasks", map[string]any{"agent_id": e.a.agent.Id, "prompt": "see", "media_ids": []string{fileID}}).Expect(t, 201)
		other, _ := e.env.UserClient("other@example.com")
		oa := mkAgent(t, other, map[string]any{"name": "Other"})
		other.Post("/tasks", map[string]any{"agent_id": oa.Id, "prompt": "see", "media_ids": []string{fileID}}).Expect(t, 422, "VALIDATION_ERROR")
		c := e.start(t, e.a, map[string]any{"text": "again", "media_ids": []string{fileID}})
		ms := e.messages(t, e.a, c.Id, "")
		if ms[0].Attachments == nil || len(*ms[0].Attachments) != 1 || (*ms[0].Attachments)[0].MediaId != fileID {
			t.Fatalf("attachments = %+v", ms[0].Attachments)
		}
	})

	t.Run("scope", func(t *testing.T) {
		c := e.start(t, e.a, map[string]any{"text": "mine"})
		var session gen.TaskResponse
		e.owner.Post("/tasks", map[string]any{"agent_id": e.a.agent.Id, "prompt": "session task"}).Expect(t, 201).Decode(t, &session)
		for _, id := range []string{fmt.Sprint(c.Id), fmt.Sprint(session.Data.Task.Id), "999999", "abc", "0", "01"} {
			k := e.b
			if id != fmt.Sprint(c.Id) {
				k = e.a
			}
			for _, p := range []struct{ method, path string }{
				{http.MethodGet, "/status"}, {http.MethodGet, "/messages"}, {http.MethodGet, "/transcript"},
			} {
				e.call(k, p.method, chats+"/"+id+p.path, nil).Expect(t, http.StatusNotFound, "NOT_FOUND")
			}
			e.call(k, http.MethodPost, chats+"/"+id+"/messages", map[string]any{"text": "x"}).Expect(t, http.StatusNotFound)
			e.call(k, http.MethodPost, chats+"/"+id+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, http.StatusNotFound)
			e.call(k, http.MethodPost, chats+"/"+id+"/reject", map[string]any{"reason": "no"}).Expect(t, http.StatusNotFound)
			e.call(k, http.MethodPost, chats+"/"+id+"/answer", map[string]any{"tool_call_id": "q", "content": "x"}).Expect(t, http.StatusNotFound)
		}
		for _, ch := range e.list(t, e.b, "?per_page=100") {
			if ch.AgentId != e.b.agent.Id {
				t.Fatalf("key B lists %+v", ch)
			}
		}
		for _, ch := range e.list(t, e.a, "?per_page=100") {
			if ch.Id == session.Data.Task.Id {
				t.Fatal("a session task is listed as a chat")
			}
		}
	})

	t.Run("queued chat", func(t *testing.T) {
		c := e.start(t, e.a, map[string]any{"text": "first", "max_steps": 3})
		p := fmt.Sprintf("%s/%d", chats, c.Id)
		e.call(e.a, http.MethodPost, p+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, http.StatusConflict, "INVALID_STATE")
		e.call(e.a, http.MethodPost, p+"/reject", map[string]any{"reason": "no"}).Expect(t, http.StatusConflict, "INVALID_STATE")
		e.call(e.a, http.MethodPost, p+"/answer", map[string]any{"tool_call_id": "q1", "content": "x"}).Expect(t, http.StatusConflict, "INVALID_STATE")
		e.call(e.a, http.MethodPost, p+"/reject", map[string]any{}).Expect(t, http.StatusUnprocessableEntity)
		e.call(e.a, http.MethodPost, p+"/messages", map[string]any{}).Expect(t, http.StatusUnprocessableEntity)
		var r gen.ChatResponse
		e.call(e.a, http.MethodPost, p+"/messages", map[string]any{"prompt": "second",
			"files": []map[string]any{{"filename": "n.txt", "data_url": dataURL("text/plain", []byte("note"))}}}).Expect(t, http.StatusAccepted).Decode(t, &r)
		if r.Data.Chat.Status != gen.TaskStatusQUEUED {
			t.Fatalf("follow-up = %+v", r.Data.Chat)
		}
		if got := getTask(t, e.owner, c.Id).MaxSteps; got != 3 {
			t.Fatalf("max_steps %d after a follow-up without additional_steps", got)
		}
		e.call(e.a, http.MethodPost, p+"/messages", map[string]any{"text": "third", "additional_steps": 0}).Expect(t, http.StatusAccepted)
		if got := getTask(t, e.owner, c.Id).MaxSteps; got != 1 {
			t.Fatalf("max_steps %d after additional_steps 0 (clamped to 1)", got)
		}
		ms := e.messages(t, e.a, c.Id, "")
		if len(ms) != 3 || ms[1].Text != "second" || ms[1].Attachments == nil || ms[2].Text != "third" {
			t.Fatalf("messages = %+v", ms)
		}
		if ms := e.messages(t, e.a, c.Id, "?since_sequence=2"); len(ms) != 1 || ms[0].Sequence != 3 {
			t.Fatalf("since_sequence=2: %+v", ms)
		}
		// An aborted chat takes a follow-up too.
		e.owner.Post(fmt.Sprintf("/tasks/%d/abort", c.Id), nil).Expect(t, 200)
		e.call(e.a, http.MethodPost, p+"/messages", map[string]any{"text": "after abort"}).Expect(t, http.StatusAccepted)
	})

	t.Run("list", func(t *testing.T) {
		f := newChatEnv(t, map[string]any{"name": "L"}, map[string]any{"name": "M"})
		var ids []int64
		var times []time.Time
		for i := range 3 {
			f.env.Clock.Advance(time.Minute)
			c := f.start(t, f.a, map[string]any{"text": fmt.Sprint("chat ", i)})
			ids, times = append(ids, c.Id), append(times, c.UpdatedAt)
		}
		got := f.list(t, f.a, "")
		if len(got) != 3 || got[0].Id != ids[2] || got[2].Id != ids[0] {
			t.Fatalf("list = %+v", got)
		}
		if p := f.list(t, f.a, "?per_page=2"); len(p) != 2 || p[0].Id != ids[2] {
			t.Fatalf("page 1 = %+v", p)
		}
		if p := f.list(t, f.a, "?per_page=2&page=2"); len(p) != 1 || p[0].Id != ids[0] {
			t.Fatalf("page 2 = %+v", p)
		}
		since := func(ts string) []gen.Chat { return f.list(t, f.a, "?since="+url.QueryEscape(ts)) }
		if s := since("2000-01-01T00:00:00Z"); len(s) != 3 {
			t.Fatalf("since 2000 = %d chats", len(s))
		}
		if s := since(times[0].Format(time.RFC3339Nano)); len(s) != 2 || s[1].Id != ids[1] {
			t.Fatalf("since the first = %+v", s)
		}
		if s := since(times[1].Add(-time.Microsecond).Format(time.RFC3339Nano)); len(s) != 2 {
			t.Fatalf("since with fractions = %d chats", len(s))
		}
		if s := since(times[2].In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)); len(s) != 0 {
			t.Fatalf("since the last, with an offset = %+v", s)
		}
		for _, bad := range []string{"yesterday", "2025-05-01", "2025-05-01 12:00:00", "1714564800"} {
			f.call(f.a, http.MethodGet, chats+"?since="+url.QueryEscape(bad), nil).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		}
		if l := f.list(t, f.b, ""); len(l) != 0 {
			t.Fatalf("agent B lists %+v", l)
		}
	})
}

// TestAgentChatRun drives chats through the worker with the scripted model: start →
// PENDING_APPROVAL → approve with edited arguments by provider_call_id → COMPLETED, and a
// question → answer → COMPLETED, with messages and transcripts.
func TestAgentChatRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	scripts := map[string]string{
		"approve.json": `[
		  {"reasoning": "I should compute.", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1+1"}}], "usage": {"input_tokens": 12, "output_tokens": 4}},
		  {"text": "The result is 42.", "usage": {"input_tokens": 30, "output_tokens": 6}},
		  {"text": "Still 42."}
		]`,
		"ask.json": `[
		  {"tool_calls": [{"id": "q1", "name": "ask_user_question", "arguments": {"questions": [{"question": "Which format?", "header": "Format", "options": ["PDF", "Markdown"], "multiple": false, "allowFreeText": false}]}}]},
		  {"text": "Done as asked."}
		]`,
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, u := env.UserClient("ada@example.com") // the first user: an administrator (scripted configs need it)
	mk := func(group, script, tool, op string, autoApprove bool) chatKey {
		a := scriptedAgent(t, owner, group, script, tool, op, autoApprove)
		return chatKey{agent: a, key: mintKey(t, owner, a.Id, group)}
	}
	e := &chatEnv{env: env, owner: owner, a: mk("Calc", "approve.json", "core.CalculatorTool", "calculate", false),
		b: mk("Ask", "ask.json", "core.AskUserQuestionTool", "ask", true)}

	// Follow the owner's task events (chats are tasks of the key's minter).
	events := followTasks(t, env, owner, u.Id)
	daemon := runWorker(t, env)

	// Approval.
	c := e.start(t, e.a, map[string]any{"text": "What is 6*7?"})
	daemon.Notify()
	waitEvent(t, events, c.Id, gen.TaskStatusPENDINGAPPROVAL)
	st := e.status(t, e.a, c.Id)
	if st.Blocked == nil || st.Blocked.Reason != gen.ChatBlockedReasonPENDINGAPPROVAL || st.Blocked.ToolCalls == nil || st.Blocked.Questions != nil {
		t.Fatalf("blocked = %+v", st.Blocked)
	}
	bc := (*st.Blocked.ToolCalls)[0]
	if len(*st.Blocked.ToolCalls) != 1 || bc.Name != "calculator" || bc.Operation != "calculate" || bc.Description == "" || bc.Arguments["expression"] != "1+1" {
		t.Fatalf("blocked tool call = %+v", bc)
	}
	tr := e.transcript(t, e.a, c.Id, "")
	if len(tr.Data.ToolCalls) != 1 || tr.Data.ToolCalls[0].ProviderCallId != "c1" || tr.Data.ToolCalls[0].DecidedBy != nil ||
		tr.Data.ToolCalls[0].Status != gen.TaskToolCallStatusPENDINGAPPROVAL {
		t.Fatalf("pending transcript tool calls = %+v", tr.Data.ToolCalls)
	}
	p := fmt.Sprintf("/agent-api/chats/%d", c.Id)
	e.call(e.a, http.MethodPost, p+"/answer", map[string]any{"tool_call_id": "c1", "content": "x"}).Expect(t, http.StatusConflict, "INVALID_STATE")
	e.call(e.a, http.MethodPost, p+"/messages", map[string]any{"text": "hurry"}).Expect(t, http.StatusConflict, "INVALID_STATE")
	e.call(e.b, http.MethodPost, p+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, http.StatusNotFound)
	for _, pc := range []string{fmt.Sprint(bc.Id), "nope"} {
		e.call(e.a, http.MethodPost, p+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": pc, "decision": "approve"}}}).
			Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	}
	var ar gen.ChatResponse
	e.call(e.a, http.MethodPost, p+"/approve", map[string]any{"decisions": []map[string]any{
		{"provider_call_id": "c1", "decision": "approve", "arguments": map[string]any{"expression": "6*7"}},
	}}).Expect(t, http.StatusAccepted).Decode(t, &ar)
	if ar.Data.Chat.Status != gen.TaskStatusQUEUED || ar.Data.Chat.Blocked != nil {
		t.Fatalf("approved chat = %+v", ar.Data.Chat)
	}
	daemon.Notify()
	waitEvent(t, events, c.Id, gen.TaskStatusCOMPLETED)
	st = e.status(t, e.a, c.Id)
	if st.Answer == nil || *st.Answer != "The result is 42." || st.Blocked != nil || st.Error != nil {
		t.Fatalf("completed chat = %+v", st)
	}
	ms := e.messages(t, e.a, c.Id, "")
	if len(ms) != 2 || ms[0].Role != gen.ChatMessageRoleUser || ms[0].Text != "What is 6*7?" ||
		ms[1].Role != gen.ChatMessageRoleAssistant || ms[1].Text != "The result is 42." || ms[1].Sequence != 3 {
		t.Fatalf("messages = %+v", ms)
	}
	tr = e.transcript(t, e.a, c.Id, "")
	d := tr.Data
	if len(d.Messages) != 4 || d.Messages[1].Role != gen.TranscriptMessageRoleAssistant || len(d.Messages[1].ProviderCallIds) != 1 ||
		d.Messages[1].ProviderCallIds[0] != "c1" || d.Messages[1].Reasoning == nil || *d.Messages[1].Reasoning != "I should compute." ||
		d.Messages[2].Role != gen.TranscriptMessageRoleTool || d.Messages[2].ProviderCallId == nil || *d.Messages[2].ProviderCallId != "c1" ||
		d.Messages[2].Sequence != 2 || !strings.Contains(d.Messages[2].Text, "42") || d.Messages[3].Sequence != 3 ||
		d.Messages[0].ProviderCallId != nil || len(d.Messages[0].ProviderCallIds) != 0 {
		t.Fatalf("transcript messages = %+v", d.Messages)
	}
	tc := d.ToolCalls[0]
	if tc.ProviderCallId != "c1" || tc.Status != gen.TaskToolCallStatusEXECUTED || tc.ApprovedArguments == nil ||
		(*tc.ApprovedArguments)["expression"] != "6*7" || tc.Arguments["expression"] != "1+1" || tc.DecidedBy == nil ||
		*tc.DecidedBy != "key:"+e.a.key.Id || tc.Result == nil || !strings.Contains(*tc.Result, "42") || tc.Sequence != 2 {
		t.Fatalf("transcript tool call = %+v", tc)
	}
	if d.Usage.InputTokens != 42 || d.Usage.OutputTokens != 10 || d.Chat.Id != c.Id || d.Data == nil {
		t.Fatalf("transcript usage/chat = %+v %+v", d.Usage, d.Chat)
	}
	// Each assistant turn carries the tokens of the call that wrote it; other turns none.
	if u := d.Messages[1].Usage; u == nil || *u != (gen.MessageUsage{InputTokens: 12, OutputTokens: 4}) {
		t.Fatalf("first assistant turn usage = %+v", u)
	}
	if u := d.Messages[3].Usage; u == nil || *u != (gen.MessageUsage{InputTokens: 30, OutputTokens: 6}) {
		t.Fatalf("answer turn usage = %+v", u)
	}
	if d.Messages[0].Usage != nil || d.Messages[2].Usage != nil {
		t.Fatalf("user and tool turns carry usage: %+v %+v", d.Messages[0].Usage, d.Messages[2].Usage)
	}
	if tr := e.transcript(t, e.a, c.Id, "?since_sequence=2"); len(tr.Data.Messages) != 1 || len(tr.Data.ToolCalls) != 0 {
		t.Fatalf("transcript since 2 = %+v", tr.Data)
	}
	if tr := e.transcript(t, e.a, c.Id, "?since_sequence=1"); len(tr.Data.ToolCalls) != 1 {
		t.Fatalf("transcript since 1 tool calls = %+v", tr.Data.ToolCalls)
	}
	e.call(e.a, http.MethodPost, p+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, http.StatusConflict, "INVALID_STATE")
	// A follow-up on the completed chat (the worker may run it before the budget is read).
	stepsBefore := getTask(t, owner, c.Id).StepsUsed
	var fr gen.ChatResponse
	e.call(e.a, http.MethodPost, p+"/messages", map[string]any{"text": "And again?", "additional_steps": 500}).Expect(t, http.StatusAccepted).Decode(t, &fr)
	if fr.Data.Chat.Status != gen.TaskStatusQUEUED || fr.Data.Chat.Answer != nil {
		t.Fatalf("follow-up = %+v", fr.Data.Chat)
	}
	if task := getTask(t, owner, c.Id); task.MaxSteps != stepsBefore+100 {
		t.Fatalf("follow-up budget %d after %d steps", task.MaxSteps, stepsBefore)
	}
	daemon.Notify()
	waitEvent(t, events, c.Id, gen.TaskStatusCOMPLETED)
	if ms := e.messages(t, e.a, c.Id, "?since_sequence=3"); len(ms) != 2 || ms[0].Text != "And again?" || ms[1].Text != "Still 42." {
		t.Fatalf("follow-up messages = %+v", ms)
	}

	// Question.
	q := e.start(t, e.b, map[string]any{"prompt": "Write the report."})
	daemon.Notify()
	waitEvent(t, events, q.Id, gen.TaskStatusAWAITINGINPUT)
	st = e.status(t, e.b, q.Id)
	if st.Blocked == nil || st.Blocked.Reason != gen.ChatBlockedReasonAWAITINGINPUT || st.Blocked.Questions == nil ||
		len(*st.Blocked.Questions) != 1 || (*st.Blocked.Questions)[0].ToolCallId != "q1" || st.Blocked.ToolCalls != nil {
		t.Fatalf("blocked = %+v", st.Blocked)
	}
	qp := fmt.Sprintf("/agent-api/chats/%d", q.Id)
	e.call(e.b, http.MethodPost, qp+"/approve", map[string]any{"decisions": []map[string]any{{"provider_call_id": "q1", "decision": "approve"}}}).Expect(t, http.StatusConflict, "INVALID_STATE")
	e.call(e.b, http.MethodPost, qp+"/reject", map[string]any{"reason": "no"}).Expect(t, http.StatusConflict, "INVALID_STATE")
	e.call(e.b, http.MethodPost, qp+"/answer", map[string]any{"tool_call_id": "nope", "content": "x"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	e.call(e.b, http.MethodPost, qp+"/answer", map[string]any{"tool_call_id": "q1", "content": "  "}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	e.call(e.a, http.MethodPost, qp+"/answer", map[string]any{"tool_call_id": "q1", "content": "x"}).Expect(t, http.StatusNotFound)
	var qr gen.ChatResponse
	// Free text, though the question allows none: the per-agent API answers with text.
	e.call(e.b, http.MethodPost, qp+"/answer", map[string]any{"tool_call_id": "q1", "content": "Plain text, please."}).Expect(t, http.StatusAccepted).Decode(t, &qr)
	if qr.Data.Chat.Status != gen.TaskStatusQUEUED {
		t.Fatalf("answered chat = %+v", qr.Data.Chat)
	}
	daemon.Notify()
	waitEvent(t, events, q.Id, gen.TaskStatusCOMPLETED)
	if st := e.status(t, e.b, q.Id); st.Answer == nil || *st.Answer != "Done as asked." {
		t.Fatalf("completed question chat = %+v", st)
	}
	qt := e.transcript(t, e.b, q.Id, "")
	if len(qt.Data.Messages) != 4 || !strings.Contains(qt.Data.Messages[2].Text, "Plain text, please.") {
		t.Fatalf("question transcript = %+v", qt.Data.Messages)
	}
	if ms := e.messages(t, e.b, q.Id, ""); len(ms) != 2 {
		t.Fatalf("question messages = %+v", ms)
	}
	// Each key lists only its agent's chats.
	if l := e.list(t, e.a, ""); len(l) != 1 || l[0].Id != c.Id {
		t.Fatalf("key A lists %+v", l)
	}
	if l := e.list(t, e.b, ""); len(l) != 1 || l[0].Id != q.Id {
		t.Fatalf("key B lists %+v", l)
	}
}
