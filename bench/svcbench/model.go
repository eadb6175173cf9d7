package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsvc/svc/agentloop/llm/llmfake"
)

// fakeModel is a zero-latency OpenAI-compatible /v1/chat/completions endpoint speaking the wire
// format the service's openai driver reads: a streamed request (the loop always streams) gets
// chat.completion.chunk events (role, the content in two pieces or the tool calls with their
// index, the finish reason, a usage chunk, [DONE]); a plain one a chat.completion.
//
// When the request offers a calculator tool and carries no tool result yet, the answer is one
// calculator call (a two-turn task); otherwise it is a short text (a one-step task). While held
// (hold), calls wait until release, so that many tasks can be in flight at once.
type fakeModel struct {
	srv   *http.Server
	ln    net.Listener
	calls atomic.Int64
	open  atomic.Int64 // calls being answered (or held) right now

	mu   sync.Mutex
	gate chan struct{} // nil: answer at once; else wait until closed
}

func newFakeModel() (*fakeModel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &fakeModel{ln: ln}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// BaseURL is the base URL a model configuration names (the driver appends /chat/completions).
func (m *fakeModel) BaseURL() string { return "http://" + m.ln.Addr().String() + "/v1" }

func (m *fakeModel) Close() { _ = m.srv.Close() }

// hold makes every call from now on wait until release (or bound, whichever comes first).
func (m *fakeModel) hold() {
	m.mu.Lock()
	m.gate = make(chan struct{})
	m.mu.Unlock()
}

// release answers the held calls and stops holding.
func (m *fakeModel) release() {
	m.mu.Lock()
	if m.gate != nil {
		close(m.gate)
		m.gate = nil
	}
	m.mu.Unlock()
}

// holdBound is the longest a held call waits, so a bench that fails never strands the service.
const holdBound = 60 * time.Second

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	m.calls.Add(1)
	m.open.Add(1)
	defer m.open.Add(-1)
	var req llmfake.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		case <-time.After(holdBound):
		}
	}
	calc := ""
	for _, t := range req.Tools {
		if strings.Contains(strings.ToLower(t.Function.Name), "calculator") {
			calc = t.Function.Name
		}
	}
	answered := false
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			answered = true
		}
	}
	if calc != "" && !answered {
		call := map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": calc, "arguments": `{"expression":"6*7"}`}}
		llmfake.WriteOpenAIAnswer(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{call}}, "tool_calls")
		return
	}
	llmfake.WriteOpenAIAnswer(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "The answer is 42."}, "stop")
}
