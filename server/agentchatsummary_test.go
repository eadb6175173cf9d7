package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// TestAgentChatTranscriptShowsSummaries: a per-agent API chat continued past its model's small
// context window is compacted, and its transcript keeps every message while listing the
// summaries (which messages each replaces, the model and configuration that wrote it, its
// usage, counted in the chat's usage).
func TestAgentChatTranscriptShowsSummaries(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	var turns []string
	for i := 1; i <= 8; i++ {
		turns = append(turns, fmt.Sprintf(`{"text": "Answer %d.", "usage": {"input_tokens": 10, "output_tokens": 2}}`, i))
	}
	if err := os.WriteFile(filepath.Join(dir, "long.json"), []byte("["+strings.Join(turns, ",")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, "SVC_AGENT_API=true", "SVC_AGENT_API_RATE_LIMIT_MAX=100000")
	owner, u := env.UserClient("ada@example.com") // an administrator: scripted configurations need one
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	owner.Post("/groups", map[string]any{"name": "Long"}).Expect(t, 201).Decode(t, &g)
	var cfg gen.LlmConfigResponse
	owner.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "long.json", "is_default": true,
		"context_window": 2000, "max_tokens_output": 200,
	}).Expect(t, 201).Decode(t, &cfg)
	a := mkAgent(t, owner, map[string]any{"name": "Long bot", "system_prompt": "Talk.", "principal_id": g.Data.Group.PrincipalId})
	e := &chatEnv{env: env, owner: owner, a: chatKey{agent: a, key: mintKey(t, owner, a.Id, "long")}}
	events := followTasks(t, env, owner, u.Id)
	daemon := runWorker(t, env)

	say := func(i int) string { return fmt.Sprintf("Message %d: ", i) + strings.Repeat("lorem ipsum ", 100) }
	c := e.start(t, e.a, map[string]any{"text": say(1)})
	daemon.Notify()
	waitEvent(t, events, c.Id, gen.TaskStatusCOMPLETED)
	for i := 2; i <= 8; i++ {
		e.call(e.a, http.MethodPost, fmt.Sprintf("/agent-api/chats/%d/messages", c.Id), map[string]any{"text": say(i)}).Expect(t, http.StatusAccepted)
		daemon.Notify()
		waitEvent(t, events, c.Id, gen.TaskStatusCOMPLETED)
	}
	tr := e.transcript(t, e.a, c.Id, "")
	users := 0
	for _, m := range tr.Data.Messages {
		if m.Role == gen.TranscriptMessageRoleUser {
			users++
		}
	}
	if users != 8 || len(tr.Data.Messages) != 16 || tr.Data.Chat.Answer == nil || *tr.Data.Chat.Answer != "Answer 8." {
		t.Fatalf("transcript: %d messages, %d from the user, answer %v", len(tr.Data.Messages), users, tr.Data.Chat.Answer)
	}
	if len(tr.Data.Summaries) == 0 {
		t.Fatal("no summaries in the transcript of a compacted chat")
	}
	var spent int64 = 8 * 10
	from := int64(1)
	for _, s := range tr.Data.Summaries {
		sm := s.Summary
		if sm.FromSequence != from || sm.ThroughSequence < sm.FromSequence || sm.Model != "script" || sm.LlmConfigId == nil ||
			*sm.LlmConfigId != cfg.Data.LlmConfig.Id || sm.Text == "" || s.EventSequence == 0 {
			t.Fatalf("summary %+v (want from %d)", s, from)
		}
		from = sm.ThroughSequence + 1
		spent += sm.Usage.InputTokens
	}
	if tr.Data.Usage.InputTokens != spent {
		t.Fatalf("usage %d input tokens, want %d (answers and summaries)", tr.Data.Usage.InputTokens, spent)
	}
}
