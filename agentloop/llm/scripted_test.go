package llm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

const yamlScript = `
turns:
  - reasoning: I should look it up.
    tool_calls:
      - name: "weather:forecast"
        arguments: {city: Paris}
      - id: custom
        name: time
    usage: {input_tokens: 10, output_tokens: 4}
  - error: {code: RATE_LIMIT, message: slow down}
  - text: It is sunny.
`

func TestScriptedFromYAMLFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(yamlScript), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Driver: DriverScripted, BaseURL: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs := []Message{{Role: RoleUser, Text: "Weather?"}}
	res, err := d.Complete(ctx, Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopToolUse || len(res.ToolCalls) != 2 || res.Usage != (Usage{InputTokens: 10, OutputTokens: 4}) || res.Reasoning[0].Text != "I should look it up." {
		t.Fatalf("turn 1 = %+v", res)
	}
	if c := res.ToolCalls[0]; c.ID != "call_1_1" || c.Name != "weather:forecast" || string(c.Arguments) != `{"city":"Paris"}` {
		t.Errorf("call = %+v", c)
	}
	if c := res.ToolCalls[1]; c.ID != "custom" || string(c.Arguments) != `{}` {
		t.Errorf("call = %+v", c)
	}

	// The turn depends only on the request, so a repeat (a restarted process) gets the same.
	again, _ := d.Complete(ctx, Request{Messages: msgs})
	if again.ToolCalls[0].ID != "call_1_1" {
		t.Errorf("repeat = %+v", again)
	}

	msgs = append(msgs, Message{Role: RoleAssistant, ToolCalls: res.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "call_1_1", Text: "sunny"}, Message{Role: RoleTool, ToolCallID: "custom", Text: "noon"})
	_, err = d.Complete(ctx, Request{Messages: msgs})
	if e := asError(t, err); e.Code != taskstate.CodeRateLimit || !e.Transient || e.Message != "slow down" {
		t.Errorf("turn 2 = %+v", e)
	}

	msgs = append(msgs, Message{Role: RoleAssistant, Text: "(failed)"})
	if res, err = d.Complete(ctx, Request{Messages: msgs}); err != nil || res.Text != "It is sunny." || res.StopReason != StopEndTurn {
		t.Errorf("turn 3 = %+v, %v", res, err)
	}
	msgs = append(msgs, Message{Role: RoleAssistant, Text: res.Text}, Message{Role: RoleUser, Text: "more"})
	if res, err = d.Complete(ctx, Request{Messages: msgs}); err != nil || res.Text != ScriptEndText {
		t.Errorf("past the end = %+v, %v", res, err)
	}
}

func TestScriptedJSONListAndInMemory(t *testing.T) {
	t.Parallel()
	s, err := ParseScript([]byte(`[{"text":"hi"},{"tool_calls":[{"name":"p:t","arguments":"{\"a\": 1}"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Turns() != 2 || string(s.turns[1].ToolCalls[0].Arguments) != `{"a":1}` {
		t.Errorf("turns = %+v", s.turns)
	}
	y, err := ParseScript([]byte("- text: 1.50\n- text: 2024-01-01\n"))
	if err != nil || y.turns[0].Text != "1.50" || y.turns[1].Text != "2024-01-01" {
		t.Errorf("YAML scalars: %+v, %v", y, err)
	}
	turns := []ScriptTurn{{ToolCalls: []ScriptToolCall{{Name: "x"}}}}
	m, err := NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	if turns[0].ToolCalls[0].ID != "" {
		t.Error("NewScripted modified its argument")
	}
	res, _ := m.Complete(context.Background(), Request{})
	if res.ToolCalls[0].ID != "call_1_1" || string(res.ToolCalls[0].Arguments) != "{}" {
		t.Errorf("res = %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Complete(ctx, Request{}); asError(t, err).Code != taskstate.CodeUnknown {
		t.Errorf("cancelled: %v", err)
	}
}

func TestScriptedRefusesMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, script, want string }{
		{"empty", "  \n", "script is empty"},
		{"not yaml", "turns: [", "does not parse"},
		{"scalar", `"hello"`, "list of turns"},
		{"no turns", `{"steps": []}`, "field steps not found"},
		{"turns missing", `{}`, `no "turns"`},
		{"unknown field", `[{"txt": "a"}]`, "field txt not found"},
		{"unknown call field", `[{"tool_calls":[{"name":"a","args":{}}]}]`, "field args not found in tool call"},
		{"call not object", `[{"tool_calls":["a"]}]`, "a tool call is an object"},
		{"wrong type", `[{"text": {"a": 1}}]`, "cannot unmarshal"},
		{"empty turn", `[{}]`, "turn 1: needs text, chunks, tool_calls or error"},
		{"no name", `[{"text":"a"},{"tool_calls":[{"arguments":{}}]}]`, "turn 2: tool_calls[0]: name is required"},
		{"array args", `[{"tool_calls":[{"name":"a","arguments":[1]}]}]`, "must be a JSON object"},
		{"bad string args", `[{"tool_calls":[{"name":"a","arguments":"{oops"}]}]`, "must be a JSON object"},
		{"dup id", `[{"tool_calls":[{"id":"x","name":"a"},{"id":"x","name":"b"}]}]`, "duplicate id"},
		{"bad code", `[{"error":{"code":"TOOL_ERROR"}}]`, `error.code "TOOL_ERROR"`},
		{"error and text", `[{"text":"a","error":{"code":"UNKNOWN"}}]`, "an error turn has no text"},
		{"negative usage", `[{"text":"a","usage":{"input_tokens":-1}}]`, "usage must not be negative"},
		{"non-string keys", "- tool_calls: [{name: x, arguments: {1: a}}]", "non-string keys"},
		{"too large", "[" + strings.Repeat(" ", MaxScriptSize) + "]", "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseScript([]byte(tc.script))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestScriptFileErrors(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Driver: DriverScripted}); err == nil {
		t.Error("no path accepted")
	}
	if d, err := New(Config{Driver: DriverScripted, BaseURL: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil || d != nil {
		t.Errorf("missing file: %v, %v", d, err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`[{"text":"`+strings.Repeat("a", MaxScriptSize)+`"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
}

func TestNewAndRequestValidation(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Driver: "gemini", Model: "m"},
		{Driver: DriverOpenAI},
		{Driver: DriverAnthropic},
		{Driver: DriverOpenAI, Model: "m", Timeout: -1},
		{Driver: DriverOpenAI, Model: "m", MaxTokensOutput: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	d, _ := NewScripted(nil)
	for _, req := range []Request{
		{Messages: []Message{{Role: "system", Text: "x"}}},
		{Messages: []Message{{Role: RoleTool, Text: "x"}}},
		{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1"}}}}},
		{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "a", Arguments: json.RawMessage("{")}}}}},
		{Tools: []ToolDef{{Name: "a"}, {Name: "a"}}},
		{Tools: []ToolDef{{Name: ""}}},
		{Tools: []ToolDef{{Name: "a", Parameters: json.RawMessage(`[]`)}}},
		{MaxTokens: -1},
	} {
		_, err := d.Complete(context.Background(), req)
		if e := asError(t, err); e.Code != taskstate.CodeBadRequest || e.Transient {
			t.Errorf("%+v: %+v", req, e)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(yamlScript))
	f.Add([]byte(`[{"text":"hi"},{"tool_calls":[{"name":"p:t","arguments":"{\"a\":1}"}]},{"error":{"code":"SERVER_ERROR"}}]`))
	f.Add([]byte(`{"turns":[]}`))
	f.Add([]byte("- text: a\n- tool_calls: [{name: x, arguments: {k: [1, 2]}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			return
		}
		// A script that parses gives well-formed answers for every turn. Each turn is asked for
		// directly: through Complete, turn i needs a request of i messages, which makes the
		// target quadratic in the turns and stalls it on long scripts.
		for i := 0; i <= s.Turns(); i++ {
			res, err := s.answer(i)
			if err != nil {
				if e := asError(t, err); !validCode(e.Code) {
					t.Fatalf("turn %d: code %q", i, e.Code)
				}
			} else {
				for _, c := range res.ToolCalls {
					var obj map[string]any
					if c.ID == "" || c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil {
						t.Fatalf("turn %d: bad call %+v", i, c)
					}
				}
			}
		}
	})
}
