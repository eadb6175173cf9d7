package llm

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// openaiChunk is one chat.completion.chunk event's data; delta and finish are JSON.
func openaiChunk(delta, finish string) string {
	return sseData(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":null,` +
		`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}],"usage":null}`)
}

// openaiUsageChunk is the last chunk include_usage asks for (no choices).
const openaiUsageChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4}}}` + "\n\n"

const sseDone = "data: [DONE]\n\n"

func TestOpenAIStreamText(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{
		openaiChunk(`{"role":"assistant","content":"","refusal":null}`, "null"),
		openaiChunk(`{"reasoning_content":"thinking"}`, "null"),
		openaiChunk(`{"reasoning_content":"..."}`, "null"),
		openaiChunk(`{"reasoning":{"effort":"low"}}`, "null"), // not a string: ignored, not refused
		openaiChunk(`{"content":"Hello"}`, "null"),
		": keep-alive comment\n\n",
		openaiChunk(`{"content":" there"}`, "null"),
		openaiChunk(`{}`, `"stop"`),
		openaiUsageChunk,
		sseDone,
	}})
	var log deltaLog
	res, err := newOpenAITest(t, f, 0).Complete(context.Background(), Request{System: "Be brief.", Messages: []Message{{Role: RoleUser, Text: "Hi"}}, OnDelta: log.add})
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{Text: "Hello there", Reasoning: []Reasoning{{Text: "thinking..."}}, Usage: Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 4}, StopReason: StopEndTurn}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v, want %+v", res, want)
	}
	wantDeltas := []Delta{{Reasoning: "thinking"}, {Reasoning: "..."}, {Text: "Hello"}, {Text: " there"}}
	if !reflect.DeepEqual(log.got, wantDeltas) {
		t.Errorf("deltas = %+v", log.got)
	}
	r := f.requests()[0]
	jsonEqual(t, "stream", r.Body["stream"], `true`)
	jsonEqual(t, "stream_options", r.Body["stream_options"], `{"include_usage":true}`)
	jsonEqual(t, "messages", r.Body["messages"], `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]`)

	// Without OnDelta the call is not streamed.
	g := newFake(t, reply{body: openaiCompletion(`{"role":"assistant","content":"Hello there"}`, "stop")})
	if _, err := newOpenAITest(t, g, 0).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "Hi"}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.requests()[0].Body["stream"]; ok {
		t.Error("stream sent without OnDelta")
	}
}

func TestOpenAIStreamToolCalls(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{
		openaiChunk(`{"role":"assistant","content":null}`, "null"),
		openaiChunk(`{"content":"Checking."}`, "null"),
		openaiChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather__forecast","arguments":""}}]}`, "null"),
		openaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`, "null"),
		openaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]}`, "null"),
		openaiChunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]}`, "null"),
		openaiChunk(`{}`, `"tool_calls"`),
		openaiUsageChunk,
		sseDone,
	}})
	var log deltaLog
	res, err := newOpenAITest(t, f, 0).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "Weather?"}}, Tools: testTools, OnDelta: log.add})
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{Text: "Checking.", StopReason: StopToolUse, Usage: Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 4}, ToolCalls: []ToolCall{
		{ID: "call_1", Name: "weather:forecast", Arguments: json.RawMessage(`{"city": "Paris"}`)},
		{ID: "call_2", Name: "time", Arguments: json.RawMessage(`{}`)},
	}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v, want %+v", res, want)
	}
	if log.text() != "Checking." {
		t.Errorf("deltas = %+v", log.got)
	}
	jsonEqual(t, "tool names on the wire", f.requests()[0].Body["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"], `"weather__forecast"`)
}

func TestOpenAIStreamFailures(t *testing.T) {
	t.Parallel()
	partial := []string{
		openaiChunk(`{"role":"assistant","content":""}`, "null"),
		openaiChunk(`{"content":"Hel"}`, "null"),
		openaiChunk(`{"content":"lo"}`, "null"),
	}
	with := func(extra ...string) []string { return append(append([]string(nil), partial...), extra...) }
	tests := []struct {
		name    string
		rep     reply
		timeout time.Duration
		code    string
	}{
		{"cut", reply{events: partial, cut: true}, 0, taskstate.CodeGatewayError},
		{"ended without finish", reply{events: with(sseDone)}, 0, taskstate.CodeGatewayError},
		{"malformed chunk", reply{events: with(sseData(`{"choices":[{"index":0,"delta":{"content":`))}, 0, taskstate.CodeGatewayError},
		{"error event", reply{events: with(sseData(`{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`))}, 0, taskstate.CodeServerError},
		{"error event with status", reply{events: with(sseData(`{"error":{"message":"overloaded","type":"server_error","code":503}}`))}, 0, taskstate.CodeServerOverloaded},
		{"rate limit event", reply{events: with(sseData(`{"error":{"message":"slow down","type":"tokens","code":"rate_limit_exceeded"}}`))}, 0, taskstate.CodeRateLimit},
		{"timeout", reply{events: partial, hang: 5 * time.Second}, 200 * time.Millisecond, taskstate.CodeLLMTimeout},
		{"another completion's chunk", reply{events: with(sseData(`{"id":"chatcmpl-2","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`))}, 0, taskstate.CodeGatewayError},
		{"tool call index out of range", reply{events: with(openaiChunk(`{"tool_calls":[{"index":100000000,"id":"c","type":"function","function":{"name":"x","arguments":""}}]}`, `"tool_calls"`))}, 0, taskstate.CodeGatewayError},
		{"event over the line bound", reply{events: with(sseData(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", maxStreamLine) + `"}}]}`))}, 0, taskstate.CodeGatewayError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.rep)
			var log deltaLog
			res, err := newOpenAITest(t, f, tc.timeout).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, OnDelta: log.add})
			if res != nil {
				t.Errorf("partial response %+v", res)
			}
			e := asError(t, err)
			if e.Code != tc.code || e.Transient != taskstate.IsTransient(tc.code) || e.StatusCode != 0 {
				t.Errorf("error = %+v", e)
			}
			if log.text() != "Hello" {
				t.Errorf("deltas before the failure = %+v", log.got)
			}
		})
	}
}

// TestStreamHTTPErrorsLikePlainCalls: an error status answering a streamed call is classified
// as the plain call's.
func TestStreamHTTPErrorsLikePlainCalls(t *testing.T) {
	t.Parallel()
	type driverCase struct {
		name string
		make func(t *testing.T, f *fakeServer) Driver
		body func(status int) string
	}
	drivers := []driverCase{
		{"openai", func(t *testing.T, f *fakeServer) Driver { return newOpenAITest(t, f, 0) }, func(int) string {
			return `{"error":{"message":"nope","type":"server_error","param":null,"code":null}}`
		}},
		{"anthropic", func(t *testing.T, f *fakeServer) Driver { return newAnthropicTest(t, f, Config{}) }, func(status int) string {
			typ := "api_error"
			if status == 529 {
				typ = "overloaded_error"
			}
			return `{"type":"error","error":{"type":"` + typ + `","message":"nope"}}`
		}},
	}
	for _, dc := range drivers {
		for _, status := range []int{400, 401, 404, 429, 500, 502, 503, 529} {
			rep := reply{status: status, header: map[string]string{"Retry-After": "3"}, body: dc.body(status)}
			f := newFake(t, rep, rep)
			d := dc.make(t, f)
			msgs := []Message{{Role: RoleUser, Text: "x"}}
			_, plainErr := d.Complete(context.Background(), Request{Messages: msgs})
			res, streamErr := d.Complete(context.Background(), Request{Messages: msgs, OnDelta: func(Delta) { t.Error("delta on an error status") }})
			p, s := asError(t, plainErr), asError(t, streamErr)
			if res != nil || p.Code != s.Code || p.Transient != s.Transient || p.StatusCode != s.StatusCode || p.RetryAfter != s.RetryAfter || p.Message != s.Message {
				t.Errorf("%s %d: plain %+v, streamed %+v", dc.name, status, p, s)
			}
		}
	}
}

func TestStreamUnreachable(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	url := f.srv.URL
	f.srv.Close()
	for _, cfg := range []Config{{Driver: DriverOpenAI, Model: "m", BaseURL: url}, {Driver: DriverAnthropic, Model: "m", BaseURL: url}} {
		d, _ := New(cfg)
		_, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, OnDelta: func(Delta) {}})
		if e := asError(t, err); e.Code != taskstate.CodeGatewayError || !e.Transient {
			t.Errorf("%s: %+v", cfg.Driver, e)
		}
	}
}

// anthropicStream is the event sequence of the answer TestAnthropicToolUseAndThinking gets
// in one piece, with the thinking, text and tool inputs split into deltas.
func anthropicStream() []string {
	return []string{
		sseEvent("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1,"cache_creation_input_tokens":3,"cache_read_input_tokens":5}}}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		sseEvent("ping", `{"type": "ping"}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I need the weather"}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" twice."}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-AAA"}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque-BBB"}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":1}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Check"}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"ing."}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":2}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01","name":"weather__forecast","input":{}}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":3}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_03","name":"time","input":{}}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":4}`),
		sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`),
		sseEvent("message_stop", `{"type":"message_stop"}`),
	}
}

func TestAnthropicStreamThinkingAndTools(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: anthropicStream()})
	d := newAnthropicTest(t, f, Config{ThinkingBudget: 2048, MaxTokensOutput: 1000})
	var log deltaLog
	res, err := d.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "Weather?"}}, Tools: testTools, OnDelta: log.add})
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{
		Text:      "Checking.",
		Reasoning: []Reasoning{{Text: "I need the weather twice.", Signature: "sig-AAA"}, {Signature: "opaque-BBB", Redacted: true}},
		ToolCalls: []ToolCall{
			{ID: "toolu_01", Name: "weather:forecast", Arguments: json.RawMessage(`{"city": "Paris"}`)},
			{ID: "toolu_03", Name: "time", Arguments: json.RawMessage(`{}`)},
		},
		Usage:      Usage{InputTokens: 28, OutputTokens: 7, CachedInputTokens: 5},
		StopReason: StopToolUse,
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v\nwant %+v", res, want)
	}
	wantDeltas := []Delta{{Reasoning: "I need the weather"}, {Reasoning: " twice."}, {Text: "Check"}, {Text: "ing."}}
	if !reflect.DeepEqual(log.got, wantDeltas) {
		t.Errorf("deltas = %+v", log.got)
	}
	r := f.requests()[0]
	jsonEqual(t, "stream", r.Body["stream"], `true`)
	jsonEqual(t, "thinking", r.Body["thinking"], `{"type":"enabled","budget_tokens":2048}`)
}

func TestAnthropicStreamTextBlocksJoined(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{
		sseEvent("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":1}}}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		sseEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		sseEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"there"}}`),
		sseEvent("content_block_stop", `{"type":"content_block_stop","index":1}`),
		sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`),
		sseEvent("message_stop", `{"type":"message_stop"}`),
	}})
	var log deltaLog
	res, err := newAnthropicTest(t, f, Config{}).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "Hi"}}, OnDelta: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello\nthere" || log.text() != res.Text || res.StopReason != StopEndTurn || res.Usage != (Usage{InputTokens: 4, OutputTokens: 3}) {
		t.Errorf("response = %+v, deltas %+v", res, log.got)
	}
}

func TestAnthropicStreamFailures(t *testing.T) {
	t.Parallel()
	partial := anthropicStream()[:12] // up to the last text delta
	with := func(extra ...string) []string { return append(append([]string(nil), partial...), extra...) }
	tests := []struct {
		name    string
		rep     reply
		timeout time.Duration
		code    string
	}{
		{"cut", reply{events: partial, cut: true}, 0, taskstate.CodeGatewayError},
		{"ended without message_stop", reply{events: partial}, 0, taskstate.CodeGatewayError},
		{"malformed event", reply{events: with(sseEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":`))}, 0, taskstate.CodeGatewayError},
		{"inconsistent event", reply{events: with(sseEvent("content_block_delta", `{"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"x"}}`))}, 0, taskstate.CodeGatewayError},
		{"overloaded event", reply{events: with(sseEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))}, 0, taskstate.CodeServerOverloaded},
		{"api error event", reply{events: with(sseEvent("error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`))}, 0, taskstate.CodeServerError},
		{"rate limit event", reply{events: with(sseEvent("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`))}, 0, taskstate.CodeRateLimit},
		{"timeout", reply{events: partial, hang: 5 * time.Second}, 200 * time.Millisecond, taskstate.CodeLLMTimeout},
		{"another completion's chunk", reply{events: with(sseData(`{"id":"chatcmpl-2","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`))}, 0, taskstate.CodeGatewayError},
		{"tool call index out of range", reply{events: with(openaiChunk(`{"tool_calls":[{"index":100000000,"id":"c","type":"function","function":{"name":"x","arguments":""}}]}`, `"tool_calls"`))}, 0, taskstate.CodeGatewayError},
		{"event over the line bound", reply{events: with(sseData(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", maxStreamLine) + `"}}]}`))}, 0, taskstate.CodeGatewayError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.rep)
			var log deltaLog
			res, err := newAnthropicTest(t, f, Config{Timeout: tc.timeout}).Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, OnDelta: log.add})
			if res != nil {
				t.Errorf("partial response %+v", res)
			}
			e := asError(t, err)
			if e.Code != tc.code || e.Transient != taskstate.IsTransient(tc.code) || e.StatusCode != 0 {
				t.Errorf("error = %+v", e)
			}
			if log.reasoning() != "I need the weather twice." || log.text() != "Checking." {
				t.Errorf("deltas before the failure = %+v", log.got)
			}
			if strings.Contains(e.Error(), anthropicKey) {
				t.Errorf("key leaked: %v", e)
			}
		})
	}
}

func TestScriptedStream(t *testing.T) {
	t.Parallel()
	s, err := ParseScript([]byte(`
- reasoning: Let me think.
  chunks: ["It ", "is ", "sunny."]
  chunk_delay_ms: 30
- text: Plain answer.
- chunks: ["Partial ", "answer"]
  error: {code: GATEWAY_ERROR, message: stream dropped}
- chunks: ["a", "b", "c", "d"]
  chunk_delay_ms: 2000
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn := func(n int) []Message {
		msgs := []Message{{Role: RoleUser, Text: "go"}}
		for range n {
			msgs = append(msgs, Message{Role: RoleAssistant, Text: "x"}, Message{Role: RoleUser, Text: "more"})
		}
		return msgs
	}

	var log deltaLog
	start := time.Now()
	res, err := s.Complete(ctx, Request{Messages: turn(0), OnDelta: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("chunks not delayed: %s", d)
	}
	if !reflect.DeepEqual(log.got, []Delta{{Reasoning: "Let me think."}, {Text: "It "}, {Text: "is "}, {Text: "sunny."}}) {
		t.Errorf("deltas = %+v", log.got)
	}
	plain, _ := s.Complete(ctx, Request{Messages: turn(0)})
	if res.Text != "It is sunny." || !reflect.DeepEqual(res, plain) {
		t.Errorf("streamed %+v, plain %+v", res, plain)
	}

	log = deltaLog{}
	if res, err = s.Complete(ctx, Request{Messages: turn(1), OnDelta: log.add}); err != nil || res.Text != "Plain answer." {
		t.Fatalf("turn 2 = %+v, %v", res, err)
	}
	if !reflect.DeepEqual(log.got, []Delta{{Text: "Plain answer."}}) {
		t.Errorf("turn 2 deltas = %+v", log.got)
	}

	log = deltaLog{}
	res, err = s.Complete(ctx, Request{Messages: turn(2), OnDelta: log.add})
	if e := asError(t, err); res != nil || e.Code != taskstate.CodeGatewayError || !e.Transient || e.Message != "stream dropped" {
		t.Errorf("turn 3 = %+v, %+v", res, e)
	}
	if log.text() != "Partial answer" {
		t.Errorf("turn 3 deltas = %+v", log.got)
	}

	// Cancelled while waiting between chunks.
	cctx, cancel := context.WithCancel(ctx)
	log = deltaLog{}
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	res, err = s.Complete(cctx, Request{Messages: turn(3), OnDelta: log.add})
	if e := asError(t, err); res != nil || e.Code != taskstate.CodeUnknown || !errorsIsCanceled(err) {
		t.Errorf("cancelled = %+v, %+v", res, e)
	}
	if time.Since(start) > time.Second || log.text() != "a" {
		t.Errorf("cancellation not honoured: %s, %+v", time.Since(start), log.got)
	}
	// A deadline is a timeout.
	tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer tcancel()
	_, err = s.Complete(tctx, Request{Messages: turn(3), OnDelta: func(Delta) {}})
	if e := asError(t, err); e.Code != taskstate.CodeLLMTimeout || !e.Transient {
		t.Errorf("deadline = %+v", e)
	}

	// Past the end, the end text is one delta.
	log = deltaLog{}
	if res, err = s.Complete(ctx, Request{Messages: turn(4), OnDelta: log.add}); err != nil || log.text() != ScriptEndText || res.Text != ScriptEndText {
		t.Errorf("past the end = %+v, %v, %+v", res, err, log.got)
	}
}

func TestScriptedChunksRefused(t *testing.T) {
	t.Parallel()
	for script, want := range map[string]string{
		`[{"text":"ab","chunks":["a","b"]}]`:     "text or chunks, not both",
		`[{"chunks":["a"],"chunk_delay_ms":-1}]`: "chunk_delay_ms must not be negative",
		`[{"chunk":["a"]}]`:                      "field chunk not found",
	} {
		if _, err := ParseScript([]byte(script)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", script, err, want)
		}
	}
	turns := []ScriptTurn{{Chunks: []string{"a", "b"}}}
	s, err := NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	turns[0].Chunks[0] = "z"
	if res, _ := s.Complete(context.Background(), Request{}); res.Text != "ab" {
		t.Errorf("NewScripted shares the chunks: %q", res.Text)
	}
}

func TestStreamCancelled(t *testing.T) {
	t.Parallel()
	for name, events := range map[string][]string{
		"openai":    {openaiChunk(`{"role":"assistant","content":"Hel"}`, "null")},
		"anthropic": anthropicStream()[:4],
	} {
		f := newFake(t, reply{events: events, hang: 5 * time.Second})
		var d Driver
		if name == "openai" {
			d = newOpenAITest(t, f, 0)
		} else {
			d = newAnthropicTest(t, f, Config{})
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		res, err := d.Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "x"}}, OnDelta: func(Delta) { n++; cancel() }})
		e := asError(t, err)
		if res != nil || n != 1 || e.Code != taskstate.CodeUnknown || e.Transient || !errorsIsCanceled(err) {
			t.Errorf("%s: %+v, %d deltas, %+v", name, res, n, e)
		}
		cancel()
	}
}
