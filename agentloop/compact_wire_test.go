package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/llm/llmfake"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// wireModel is a model provider on loopback HTTP for the wire walks of issue 25. It counts a
// request's tokens as its JSON body's bytes over 2.5 — more than the loop's estimate, so some
// requests the loop lets through are over its window — and refuses those the provider's way
// (OpenAI: HTTP 400 context_length_exceeded; Anthropic: HTTP 400 "prompt is too long"). It
// answers a compaction (the summariser's system prompt) with notes and every other request
// with "Answer N.", and logs each request's kind in order.
type wireModel struct {
	anthropic bool
	limit     int

	mu       sync.Mutex
	log      []string // "answer", "refused", "summary" or "refused summary"
	answered int
}

const summariserPrefix = "You compact the conversation"

func (m *wireModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	tokens := len(raw) * 2 / 5
	var system, model string
	var stream bool
	if m.anthropic {
		var req llmfake.AnthropicRequest
		_ = json.Unmarshal(raw, &req)
		model, stream = req.Model, req.Stream
		switch s := req.System.(type) {
		case string:
			system = s
		case []any:
			for _, b := range s {
				if blk, ok := b.(map[string]any); ok {
					t, _ := blk["text"].(string)
					system += t
				}
			}
		}
	} else {
		var req llmfake.Request
		_ = json.Unmarshal(raw, &req)
		model, stream = req.Model, req.Stream
		for _, msg := range req.Messages {
			if s, ok := msg.Content.(string); ok && (msg.Role == "system" || msg.Role == "developer") {
				system += s
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	summary := strings.HasPrefix(system, summariserPrefix)
	if tokens > m.limit {
		m.log = append(m.log, map[bool]string{false: "refused", true: "refused summary"}[summary])
		if m.anthropic {
			llmfake.RefuseAnthropicTooLong(w, m.limit, tokens)
		} else {
			llmfake.RefuseOpenAITooLong(w, m.limit, tokens)
		}
		return
	}
	text := "Notes: the user sent numbered lorem ipsum messages; each was answered."
	if summary {
		m.log = append(m.log, "summary")
	} else {
		m.answered++
		m.log = append(m.log, "answer")
		text = fmt.Sprintf("Answer %d.", m.answered)
	}
	if m.anthropic {
		llmfake.WriteAnthropicAnswer(w, stream, model, text, tokens)
		return
	}
	llmfake.WriteOpenAIAnswer(w, stream, model, map[string]any{"role": "assistant", "content": text}, "stop")
}

// TestLongChatOverTheWire is issue 25's walk over the OpenAI-compatible and the Anthropic wire:
// 40 follow-ups of ~1,200 characters through a 3,000-token window, against a provider that
// refuses requests over it. All 40 complete with their own answers, the transcript keeps all
// 40 user messages with their answers and the summaries, and every refused request is
// followed by a compaction before anything else is sent (no over-window request is sent twice
// for one compaction; a summariser's request refused as too long is retried shorter).
func TestLongChatOverTheWire(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{store.LLMDriverOpenAI, store.LLMDriverAnthropic} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			window, reserve := 3000, 300
			model := &wireModel{anthropic: driver == store.LLMDriverAnthropic, limit: window}
			srv := httptest.NewServer(model)
			t.Cleanup(srv.Close)
			f := looptest.New(t, nil, store.AgentFields{AllowFollowup: ptr(true)}, true,
				looptest.WithLLMConfig(func(c *store.LLMConfig) {
					c.Driver, c.Model, c.BaseURL, c.ContextWindow, c.MaxTokensOutput = driver, "m", &srv.URL, &window, &reserve
				}))
			d, err := llm.New(llm.Config{Driver: driver, Model: "m", BaseURL: srv.URL, MaxTokensOutput: reserve})
			if err != nil {
				t.Fatal(err)
			}
			f.Rec.Driver = d
			tk := chatPast(t, f, 40)
			if tk.Status != taskstate.Completed || tk.Answer == nil || *tk.Answer != "Answer 40." {
				t.Fatalf("last turn: %s %v (%+v)", tk.Status, tk.Answer, tk.Error)
			}
			ctx := context.Background()
			msgs, err := f.Store.Messages(ctx, tk.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			users := 0
			for i, m := range msgs {
				if m.Role == store.RoleUser {
					users++
					if !strings.HasPrefix(m.Text, fmt.Sprintf("Message %d: ", users)) || msgs[i+1].Text != fmt.Sprintf("Answer %d.", users) {
						t.Fatalf("message %d: %q answered %q", users, text80(m.Text), msgs[i+1].Text)
					}
				}
			}
			if users != 40 || len(msgs) != 80 {
				t.Fatalf("transcript: %d messages, %d from the user", len(msgs), users)
			}
			sums, err := f.Store.Summaries(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			refused, summaries, retried := 0, 0, 0
			for i, kind := range model.log {
				switch kind {
				case "refused":
					refused++
					next := i + 1
					for next < len(model.log) && model.log[next] == "refused summary" {
						next++
					}
					if next >= len(model.log) || model.log[next] != "summary" {
						t.Fatalf("request %d was refused and not followed by a compaction: %v", i+1, model.log[i:min(i+4, len(model.log))])
					}
				case "summary":
					summaries++
				case "refused summary":
					retried++
				}
			}
			if refused == 0 || summaries == 0 || len(sums) != summaries || tk.SummarySeq != sums[len(sums)-1].Sequence {
				t.Fatalf("%d refusals, %d compactions, %d summary events (summary_seq %d)", refused, summaries, len(sums), tk.SummarySeq)
			}
			t.Logf("%s: %d requests, %d answers, %d compactions, %d of them after a refusal, %d summaries retried shorter",
				driver, len(model.log), model.answered, summaries, refused, retried)
		})
	}
}
