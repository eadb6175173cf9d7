package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

const openaiKey = "sk-test-SECRET-0123456789"

func openaiCompletion(message string, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o",
"choices":[{"index":0,"message":` + message + `,"logprobs":null,"finish_reason":"` + finish + `"}],
"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":0}}}`
}

func newOpenAITest(t *testing.T, f *fakeServer, timeout time.Duration) Driver {
	t.Helper()
	d, err := New(Config{Driver: DriverOpenAI, Model: "gpt-4o", BaseURL: f.srv.URL + "/v1", APIKey: openaiKey,
		Temperature: ptr(0.2), MaxTokensOutput: 256, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var testTools = []ToolDef{
	{Name: "weather:forecast", Description: "Forecast", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "read_url", Description: "Fetch a URL", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","maxLength":2048}},"required":["url"],"additionalProperties":false}`)},
	{Name: "time"},
}

func TestOpenAIPlainAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: openaiCompletion(`{"role":"assistant","content":"Hello there","refusal":null,"reasoning_content":"thinking..."}`, "stop")})
	d := newOpenAITest(t, f, 0)
	res, err := d.Complete(context.Background(), Request{System: "Be brief.", Messages: []Message{{Role: RoleUser, Text: "Hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello there" || res.StopReason != StopEndTurn || len(res.ToolCalls) != 0 {
		t.Errorf("response = %+v", res)
	}
	if res.Usage != (Usage{InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("usage = %+v", res.Usage)
	}
	if len(res.Reasoning) != 1 || res.Reasoning[0].Text != "thinking..." {
		t.Errorf("reasoning = %+v", res.Reasoning)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s", r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+openaiKey {
		t.Errorf("authorization = %q", got)
	}
	jsonEqual(t, "messages", r.Body["messages"], `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]`)
	jsonEqual(t, "model", r.Body["model"], `"gpt-4o"`)
	jsonEqual(t, "temperature", r.Body["temperature"], `0.2`)
	jsonEqual(t, "max_tokens", r.Body["max_tokens"], `256`)
	if _, ok := r.Body["tools"]; ok {
		t.Error("tools sent without tools")
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		reply{body: openaiCompletion(`{"role":"assistant","content":null,"refusal":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"weather__forecast","arguments":"{\"city\":\"Paris\"}"}}]}`, "tool_calls")},
		reply{body: openaiCompletion(`{"role":"assistant","content":"Let me check both.","refusal":null,"tool_calls":[
			{"id":"call_2","type":"function","function":{"name":"weather__forecast","arguments":"{\"city\":\"Oslo\"}"}},
			{"id":"call_3","type":"function","function":{"name":"read_url","arguments":"{\"url\":\"https://example.com\"}"}},
			{"id":"call_4","type":"function","function":{"name":"time","arguments":""}}]}`, "tool_calls")},
		reply{body: openaiCompletion(`{"role":"assistant","content":"Done.","refusal":null}`, "stop")},
	)
	d := newOpenAITest(t, f, 0)
	ctx := context.Background()
	msgs := []Message{{Role: RoleUser, Text: "Weather?"}}

	// One tool call; the plugin name is encoded on the wire and decoded in the answer.
	res, err := d.Complete(ctx, Request{Messages: msgs, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopToolUse || len(res.ToolCalls) != 1 {
		t.Fatalf("response = %+v", res)
	}
	if c := res.ToolCalls[0]; c.ID != "call_1" || c.Name != "weather:forecast" || string(c.Arguments) != `{"city":"Paris"}` {
		t.Errorf("call = %+v", c)
	}
	jsonEqual(t, "tools", f.requests()[0].Body["tools"], `[
		{"type":"function","function":{"name":"weather__forecast","description":"Forecast","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
		{"type":"function","function":{"name":"read_url","description":"Fetch a URL","parameters":{"type":"object","properties":{"url":{"type":"string","maxLength":2048}},"required":["url"],"additionalProperties":false}}},
		{"type":"function","function":{"name":"time","parameters":{"type":"object","properties":{}}}}]`)

	// Several calls in one turn, after the first call's result.
	msgs = append(msgs, Message{Role: RoleAssistant, ToolCalls: res.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "call_1", Text: "sunny"})
	res, err = d.Complete(ctx, Request{Messages: msgs, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Let me check both." || len(res.ToolCalls) != 3 {
		t.Fatalf("response = %+v", res)
	}
	want := []ToolCall{
		{ID: "call_2", Name: "weather:forecast", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
		{ID: "call_3", Name: "read_url", Arguments: json.RawMessage(`{"url":"https://example.com"}`)},
		{ID: "call_4", Name: "time", Arguments: json.RawMessage(`{}`)},
	}
	for i, c := range res.ToolCalls {
		if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Arguments) != string(want[i].Arguments) {
			t.Errorf("call %d = %+v, want %+v", i, c, want[i])
		}
	}
	jsonEqual(t, "follow-up messages", f.requests()[1].Body["messages"], `[
		{"role":"user","content":"Weather?"},
		{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather__forecast","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}]`)

	// Results of all three calls go back, each with its call id.
	msgs = append(msgs, Message{Role: RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "call_2", Text: "rain"},
		Message{Role: RoleTool, ToolCallID: "call_3", Text: "page", IsError: true},
		Message{Role: RoleTool, ToolCallID: "call_4", Text: "12:00"})
	res, err = d.Complete(ctx, Request{Messages: msgs, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Done." {
		t.Errorf("text = %q", res.Text)
	}
	got := f.requests()[2].Body["messages"].([]any)
	jsonEqual(t, "assistant with calls", got[3], `{"role":"assistant","content":"Let me check both.","tool_calls":[
		{"id":"call_2","type":"function","function":{"name":"weather__forecast","arguments":"{\"city\":\"Oslo\"}"}},
		{"id":"call_3","type":"function","function":{"name":"read_url","arguments":"{\"url\":\"https://example.com\"}"}},
		{"id":"call_4","type":"function","function":{"name":"time","arguments":"{}"}}]}`)
	jsonEqual(t, "tool results", got[4:], `[
		{"role":"tool","tool_call_id":"call_2","content":"rain"},
		{"role":"tool","tool_call_id":"call_3","content":"page"},
		{"role":"tool","tool_call_id":"call_4","content":"12:00"}]`)
}

func TestOpenAIInvalidArgumentsStayValidJSON(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: openaiCompletion(`{"role":"assistant","content":"","tool_calls":[
		{"id":"","type":"function","function":{"name":"time","arguments":"{not json"}}]}`, "stop")})
	res, err := newOpenAITest(t, f, 0).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	c := res.ToolCalls[0]
	if string(c.Arguments) != `"{not json"` || !strings.HasPrefix(c.ID, "call_") || res.StopReason != StopToolUse {
		t.Errorf("call = %+v, stop %s", c, res.StopReason)
	}
}

func TestOpenAIMaxCompletionTokensForOpenAIHost(t *testing.T) {
	t.Parallel()
	d := newOpenAI(Config{Model: "o3", MaxTokensOutput: 100})
	p := d.params(&Request{}, buildNameMap(nil))
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"max_completion_tokens":100`) || strings.Contains(string(b), `"max_tokens"`) {
		t.Errorf("params = %s", b)
	}
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	errBody := func(msg, typ string) string {
		return `{"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":null}}`
	}
	tests := []struct {
		name      string
		rep       reply
		code      string
		transient bool
		retry     time.Duration
	}{
		{"429", reply{status: 429, header: map[string]string{"Retry-After": "7"}, body: errBody("Rate limit reached", "requests")}, taskstate.CodeRateLimit, true, 7 * time.Second},
		{"429 ms", reply{status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, body: errBody("slow down", "tokens")}, taskstate.CodeRateLimit, true, 1500 * time.Millisecond},
		{"500", reply{status: 500, body: errBody("The server had an error", "server_error")}, taskstate.CodeServerError, true, 0},
		{"502", reply{status: 502, body: `<html>Bad Gateway</html>`}, taskstate.CodeGatewayError, true, 0},
		{"504", reply{status: 504, body: errBody("timeout", "server_error")}, taskstate.CodeGatewayError, true, 0},
		{"503", reply{status: 503, body: errBody("overloaded", "server_error")}, taskstate.CodeServerOverloaded, true, 0},
		{"529", reply{status: 529, body: errBody("overloaded", "server_error")}, taskstate.CodeServerOverloaded, true, 0},
		{"401", reply{status: 401, body: errBody("Incorrect API key provided: "+openaiKey, "invalid_request_error")}, taskstate.CodeAuthError, false, 0},
		{"403", reply{status: 403, body: errBody("forbidden", "invalid_request_error")}, taskstate.CodeAuthError, false, 0},
		{"400", reply{status: 400, body: errBody("bad schema", "invalid_request_error")}, taskstate.CodeBadRequest, false, 0},
		{"404", reply{status: 404, body: errBody("model not found", "invalid_request_error")}, taskstate.CodeBadRequest, false, 0},
		{"422", reply{status: 422, body: errBody("unprocessable", "invalid_request_error")}, taskstate.CodeBadRequest, false, 0},
		// A request longer than the model's window: OpenAI's code, a compatible server's wording.
		{"context length", reply{status: 400, body: `{"error":{"message":"Please shorten your prompt.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
			taskstate.CodeContextTooLong, false, 0},
		{"context window", reply{status: 400, body: errBody("This model's maximum context length is 4000 tokens. However, you requested 5120 tokens.", "invalid_request_error")},
			taskstate.CodeContextTooLong, false, 0},
		{"418", reply{status: 418, body: errBody("teapot", "x")}, taskstate.CodeUnknown, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.rep)
			_, err := newOpenAITest(t, f, 0).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
			e := asError(t, err)
			if e.Code != tc.code || e.Transient != tc.transient || e.RetryAfter != tc.retry || e.StatusCode != tc.rep.status {
				t.Errorf("error = %+v", e)
			}
			if strings.Contains(e.Error(), openaiKey) {
				t.Errorf("message leaks the API key: %s", e.Error())
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests: the SDK retried", n)
			}
		})
	}
}

func TestOpenAITimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{delay: 5 * time.Second, body: openaiCompletion(`{"role":"assistant","content":"late"}`, "stop")})
	start := time.Now()
	_, err := newOpenAITest(t, f, 100*time.Millisecond).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	e := asError(t, err)
	if e.Code != taskstate.CodeLLMTimeout || !e.Transient {
		t.Errorf("error = %+v", e)
	}
	if time.Since(start) > 3*time.Second {
		t.Error("timeout not applied")
	}
}

func TestOpenAIUnreachableAndCancelled(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	url := f.srv.URL
	f.srv.Close()
	d, _ := New(Config{Driver: DriverOpenAI, Model: "m", BaseURL: url})
	_, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	if e := asError(t, err); e.Code != taskstate.CodeGatewayError || !e.Transient {
		t.Errorf("unreachable: %+v", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	if e := asError(t, err); e.Code != taskstate.CodeUnknown || e.Transient || !errorsIsCanceled(err) {
		t.Errorf("cancelled: %+v", e)
	}
}

func TestOpenAIHTTPClientTimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{delay: 5 * time.Second, body: openaiCompletion(`{"role":"assistant","content":"late"}`, "stop")})
	d, err := New(Config{Driver: DriverOpenAI, Model: "m", BaseURL: f.srv.URL, HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	if e := asError(t, err); e.Code != taskstate.CodeLLMTimeout || !e.Transient {
		t.Errorf("error = %+v", e)
	}
}

// TestProviderErrorExcerpt: a provider's error text reaches the task error only as a short
// excerpt without control characters (an internal endpoint's body must not be copied out).
func TestProviderErrorExcerpt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ami-id\\nhostname\\r\\n\\u001b[31minstance-identity\\t", 40)
	for name, body := range map[string]string{
		"json": `{"error":{"message":"` + long + `","type":"server_error","param":null,"code":null}}`,
		"raw":  strings.Repeat("ami-id\nhostname\r\n\x1b[31minstance-identity\t", 40),
	} {
		f := newFake(t, reply{status: 500, body: body})
		_, err := newOpenAITest(t, f, 0).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
		msg := asError(t, err).Message
		if n := len([]rune(msg)); n > 240 {
			t.Errorf("%s: message of %d characters: %q", name, n, msg)
		}
		if strings.ContainsFunc(msg, unicode.IsControl) {
			t.Errorf("%s: control characters in %q", name, msg)
		}
	}
}

// TestOpenAIScreenedBaseURL: a base URL whose address the outbound screen refuses (loopback,
// not among llm_allowed_hosts) fails as BAD_REQUEST, which is not retried, rather than as an
// unreachable gateway.
func TestOpenAIScreenedBaseURL(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: openaiCompletion(`{"role":"assistant","content":"never"}`, "stop")})
	d, _ := New(Config{Driver: DriverOpenAI, Model: "m", BaseURL: f.srv.URL, HTTPClient: netguard.Client(5*time.Second, netguard.Options{})})
	_, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
	if e := asError(t, err); e.Code != taskstate.CodeBadRequest || e.Transient || !strings.Contains(e.Message, "llm_allowed_hosts") {
		t.Errorf("screened: %+v", e)
	}
}

// TestOpenAIIgnoresTheProcessEnvironment: a configuration without a key sends none, and one with
// a base URL posts there, whatever OPENAI_API_KEY, OPENAI_BASE_URL or OPENAI_ORG_ID the server's
// process has (the SDK's NewClient would add them to every request).
func TestOpenAIIgnoresTheProcessEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-from-the-environment")
	f := newFake(t, reply{body: openaiCompletion(`{"role":"assistant","content":"Hi","refusal":null}`, "stop")})
	d, err := New(Config{Driver: DriverOpenAI, Model: "local", BaseURL: f.srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached the configured server", len(reqs))
	}
	for _, h := range []string{"Authorization", "OpenAI-Organization"} {
		if got := reqs[0].Header.Get(h); got != "" {
			t.Errorf("%s = %q, want none", h, got)
		}
	}
}
