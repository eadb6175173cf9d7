package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

const anthropicKey = "sk-ant-test-SECRET-42"

func anthropicMessage(content, stop string) string {
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":` + content +
		`,"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":7,"cache_creation_input_tokens":3,"cache_read_input_tokens":5}}`
}

func newAnthropicTest(t *testing.T, f *fakeServer, cfg Config) Driver {
	t.Helper()
	cfg.Driver, cfg.Model, cfg.BaseURL, cfg.APIKey = DriverAnthropic, "claude-sonnet-4-5", f.srv.URL, anthropicKey
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAnthropicPlainAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: anthropicMessage(`[{"type":"text","text":"Hello"},{"type":"text","text":"there"}]`, "end_turn")})
	d := newAnthropicTest(t, f, Config{Temperature: ptr(0.5)})
	res, err := d.Complete(context.Background(), Request{System: "Be brief.", Messages: []Message{{Role: RoleUser, Text: "Hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello\nthere" || res.StopReason != StopEndTurn {
		t.Errorf("response = %+v", res)
	}
	if res.Usage != (Usage{InputTokens: 28, OutputTokens: 7, CachedInputTokens: 5}) { // 5 of the 28 read from the cache
		t.Errorf("usage = %+v", res.Usage)
	}
	r := f.requests()[0]
	if r.Path != "/v1/messages" {
		t.Errorf("path = %s", r.Path)
	}
	if r.Header.Get("X-Api-Key") != anthropicKey || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("headers = %v", r.Header)
	}
	jsonEqual(t, "system", r.Body["system"], `[{"type":"text","text":"Be brief."}]`)
	jsonEqual(t, "messages", r.Body["messages"], `[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`)
	jsonEqual(t, "max_tokens", r.Body["max_tokens"], `4096`)
	jsonEqual(t, "temperature", r.Body["temperature"], `0.5`)
}

func TestAnthropicBaseURLWithV1(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: anthropicMessage(`[{"type":"text","text":"ok"}]`, "end_turn")})
	d, err := New(Config{Driver: DriverAnthropic, Model: "m", BaseURL: f.srv.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if p := f.requests()[0].Path; p != "/v1/messages" {
		t.Errorf("path = %s", p)
	}
}

func TestAnthropicToolUseAndThinking(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		reply{body: anthropicMessage(`[
			{"type":"thinking","thinking":"I need the weather twice.","signature":"sig-AAA"},
			{"type":"redacted_thinking","data":"opaque-BBB"},
			{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_01","name":"weather__forecast","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_02","name":"weather__forecast","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"toolu_03","name":"time","input":{}}]`, "tool_use")},
		reply{body: anthropicMessage(`[{"type":"text","text":"Paris sunny, Oslo rain."}]`, "end_turn")},
	)
	d := newAnthropicTest(t, f, Config{ThinkingBudget: 2048, MaxTokensOutput: 1000, Temperature: ptr(0.3)})
	ctx := context.Background()
	msgs := []Message{{Role: RoleUser, Text: "Weather in Paris and Oslo?"}}
	res, err := d.Complete(ctx, Request{Messages: msgs, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopToolUse || res.Text != "Checking." || len(res.ToolCalls) != 3 {
		t.Fatalf("response = %+v", res)
	}
	wantCalls := []ToolCall{
		{ID: "toolu_01", Name: "weather:forecast", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "toolu_02", Name: "weather:forecast", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
		{ID: "toolu_03", Name: "time", Arguments: json.RawMessage(`{}`)},
	}
	for i, c := range res.ToolCalls {
		if c.ID != wantCalls[i].ID || c.Name != wantCalls[i].Name || string(c.Arguments) != string(wantCalls[i].Arguments) {
			t.Errorf("call %d = %+v", i, c)
		}
	}
	wantReasoning := []Reasoning{{Text: "I need the weather twice.", Signature: "sig-AAA"}, {Signature: "opaque-BBB", Redacted: true}}
	if len(res.Reasoning) != 2 || res.Reasoning[0] != wantReasoning[0] || res.Reasoning[1] != wantReasoning[1] {
		t.Errorf("reasoning = %+v", res.Reasoning)
	}
	r := f.requests()[0]
	jsonEqual(t, "thinking", r.Body["thinking"], `{"type":"enabled","budget_tokens":2048}`)
	jsonEqual(t, "max_tokens", r.Body["max_tokens"], `3048`)
	if _, ok := r.Body["temperature"]; ok {
		t.Error("temperature sent with thinking enabled")
	}
	jsonEqual(t, "tools", r.Body["tools"], `[
		{"name":"weather__forecast","description":"Forecast","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
		{"name":"read_url","description":"Fetch a URL","input_schema":{"type":"object","properties":{"url":{"type":"string","maxLength":2048}},"required":["url"],"additionalProperties":false}},
		{"name":"time","input_schema":{"type":"object","properties":{}}}]`)

	// The follow-up carries the thinking blocks unchanged, the tool_use blocks and all results
	// in one user message, then the user's next words.
	msgs = append(msgs,
		Message{Role: RoleAssistant, Text: res.Text, Reasoning: res.Reasoning, ToolCalls: res.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "toolu_01", Text: "sunny"},
		Message{Role: RoleTool, ToolCallID: "toolu_02", Text: "service down", IsError: true},
		Message{Role: RoleTool, ToolCallID: "toolu_03", Text: "12:00"},
		Message{Role: RoleUser, Text: "Thanks"},
	)
	res, err = d.Complete(ctx, Request{Messages: msgs, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Paris sunny, Oslo rain." {
		t.Errorf("text = %q", res.Text)
	}
	jsonEqual(t, "follow-up messages", f.requests()[1].Body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"Weather in Paris and Oslo?"}]},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"I need the weather twice.","signature":"sig-AAA"},
			{"type":"redacted_thinking","data":"opaque-BBB"},
			{"type":"text","text":"Checking."},
			{"type":"tool_use","id":"toolu_01","name":"weather__forecast","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_02","name":"weather__forecast","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"toolu_03","name":"time","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_01","is_error":false,"content":[{"type":"text","text":"sunny"}]},
			{"type":"tool_result","tool_use_id":"toolu_02","is_error":true,"content":[{"type":"text","text":"service down"}]},
			{"type":"tool_result","tool_use_id":"toolu_03","is_error":false,"content":[{"type":"text","text":"12:00"}]},
			{"type":"text","text":"Thanks"}]}]`)
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011"}`
	}
	tests := []struct {
		name      string
		rep       reply
		code      string
		transient bool
		retry     time.Duration
	}{
		{"429", reply{status: 429, header: map[string]string{"Retry-After": "30"}, body: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")}, taskstate.CodeRateLimit, true, 30 * time.Second},
		{"529", reply{status: 529, body: errBody("overloaded_error", "Overloaded")}, taskstate.CodeServerOverloaded, true, 0},
		{"overloaded as 500", reply{status: 500, body: errBody("overloaded_error", "Overloaded")}, taskstate.CodeServerOverloaded, true, 0},
		{"500", reply{status: 500, body: errBody("api_error", "Internal server error")}, taskstate.CodeServerError, true, 0},
		{"502", reply{status: 502, body: `upstream connect error`}, taskstate.CodeGatewayError, true, 0},
		{"401", reply{status: 401, body: errBody("authentication_error", "invalid x-api-key "+anthropicKey)}, taskstate.CodeAuthError, false, 0},
		{"403", reply{status: 403, body: errBody("permission_error", "no access")}, taskstate.CodeAuthError, false, 0},
		{"400", reply{status: 400, body: errBody("invalid_request_error", "messages: roles must alternate")}, taskstate.CodeBadRequest, false, 0},
		{"too long", reply{status: 400, body: errBody("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")}, taskstate.CodeContextTooLong, false, 0},
		{"404", reply{status: 404, body: errBody("not_found_error", "model: claude-x")}, taskstate.CodeBadRequest, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.rep)
			_, err := newAnthropicTest(t, f, Config{}).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
			e := asError(t, err)
			if e.Code != tc.code || e.Transient != tc.transient || e.RetryAfter != tc.retry || e.StatusCode != tc.rep.status {
				t.Errorf("error = %+v", e)
			}
			if strings.Contains(e.Error(), anthropicKey) {
				t.Errorf("message leaks the API key: %s", e.Error())
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests: the SDK retried", n)
			}
		})
	}
	t.Run("message", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, reply{status: 400, body: errBody("invalid_request_error", "messages.1: bad")})
		_, err := newAnthropicTest(t, f, Config{}).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
		if got := asError(t, err).Message; got != "anthropic answered HTTP 400: messages.1: bad" {
			t.Errorf("message = %q", got)
		}
	})
}

func TestAnthropicTimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{delay: 5 * time.Second, body: anthropicMessage(`[{"type":"text","text":"late"}]`, "end_turn")})
	start := time.Now()
	_, err := newAnthropicTest(t, f, Config{Timeout: 100 * time.Millisecond}).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	e := asError(t, err)
	if e.Code != taskstate.CodeLLMTimeout || !e.Transient {
		t.Errorf("error = %+v", e)
	}
	if time.Since(start) > 3*time.Second {
		t.Error("timeout not applied")
	}
}

func TestAnthropicEmptyTextsAndForeignReasoning(t *testing.T) {
	t.Parallel()
	msgs := anthropicMessages([]Message{
		{Role: RoleUser, Text: "go"},
		{Role: RoleAssistant, Reasoning: []Reasoning{{Text: "from another provider"}}, ToolCalls: []ToolCall{{ID: "t1", Name: "p:x"}}},
		{Role: RoleTool, ToolCallID: "t1"},
		{Role: RoleUser},
	}, buildNameMap([]string{"p:x"}))
	b, _ := json.Marshal(msgs)
	var got any
	_ = json.Unmarshal(b, &got)
	jsonEqual(t, "messages", got, `[
		{"role":"user","content":[{"type":"text","text":"go"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"p__x","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":false}]}]`)
}
