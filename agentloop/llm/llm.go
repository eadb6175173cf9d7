// Package llm hides the model providers behind one small interface, [Driver].
//
// A driver turns a provider-neutral [Request] (system prompt, conversation, tool definitions)
// into one call of the provider's API and the answer back into a [Response]. Three drivers exist:
// "openai" (any OpenAI-compatible /chat/completions endpoint), "anthropic" (the Messages API) and
// "scripted" (replies read from a script, for tests and demos). Every failure is an [*Error]
// carrying one of the task error codes, so the runner can record it and decide on retries
// without knowing the provider.
//
// A request with [Request.OnDelta] set is streamed: the openai driver reads the server-sent
// chat.completion.chunk events (asking for the final usage chunk), the anthropic driver the
// Messages API events, and the scripted driver replays a turn's chunks. Each piece of text or
// thinking is reported to OnDelta as it arrives, and Complete still returns the whole
// [Response], the same as the plain call would. A stream that breaks off, carries a malformed
// event or an error event, or outlives the timeout fails with an [*Error] classified like the
// plain call's failures (a cut connection is GATEWAY_ERROR, as for an unreachable endpoint);
// nothing partial is returned.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// Roles of a [Message].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Normalised stop reasons of a [Response]; other provider values are passed through unchanged.
const (
	StopEndTurn   = "end_turn"   // the model finished its answer
	StopToolUse   = "tool_use"   // the model wants tool calls executed
	StopMaxTokens = "max_tokens" // the answer was cut at the output token limit
)

// Driver names accepted by [Config].
const (
	DriverOpenAI    = "openai"
	DriverAnthropic = "anthropic"
	DriverScripted  = "scripted"
)

// DefaultTimeout is the model call timeout used when [Config.Timeout] is zero (the
// `llm_timeout` setting's default of 300 seconds).
const DefaultTimeout = 300 * time.Second

// DefaultAnthropicMaxTokens is the output limit sent to the Messages API (where it is
// mandatory) when neither the request nor the configuration sets one.
const DefaultAnthropicMaxTokens = 4096

// Reasoning is one block of the model's visible or redacted thinking.
//
// Anthropic requires thinking blocks to be sent back unchanged, with their signature, on the
// next turn; for a redacted block the opaque payload is kept in Signature and Text is empty.
type Reasoning struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  bool   `json:"redacted,omitempty"`
}

// ToolCall is one function call proposed by the model.
type ToolCall struct {
	// ID is the provider's call id; the matching tool message carries it as ToolCallID.
	ID string `json:"id"`
	// Name is the model-facing tool name as the caller declared it (plugin tools contain ':');
	// drivers encode it for the wire and decode it back, so it is never a provider-mangled name.
	Name string `json:"name"`
	// Arguments is a JSON value, normally an object. Arguments the model produced that are not
	// valid JSON arrive as a JSON string holding the raw text, so the value is always valid JSON.
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one entry of the conversation.
type Message struct {
	Role      string      `json:"role"` // RoleUser, RoleAssistant or RoleTool
	Text      string      `json:"text,omitempty"`
	Reasoning []Reasoning `json:"reasoning,omitempty"`  // assistant only
	ToolCalls []ToolCall  `json:"tool_calls,omitempty"` // assistant only
	// ToolCallID is, for RoleTool, the provider call id this result answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool result that reports a failure (sent as is_error to Anthropic; the
	// OpenAI wire format has no such flag, so there the text alone must say it).
	IsError bool `json:"is_error,omitempty"`
}

// ToolDef declares a tool to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema of an object; empty means no parameters
}

// Request is one model call.
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolDef
	// Temperature and MaxTokens override the configuration's values when set.
	Temperature *float64
	MaxTokens   int
	// OnDelta, when set, makes the driver stream the call and report each piece of output, in
	// order, on the calling goroutine, before Complete returns. The Response is the same as without it.
	OnDelta func(Delta)
	// Summary marks a compaction call (the model is asked to summarise the conversation in
	// Messages); the scripted driver answers it without spending a turn.
	Summary bool
	// Compacted is how many assistant turns a summary replaces in Messages; the scripted driver
	// counts them among the turns already answered, so compaction never changes its script.
	Compacted int
}

// Delta is a piece of model output that arrived while a turn streams.
type Delta struct {
	Text      string // visible answer text
	Reasoning string // thinking text (Anthropic thinking deltas; OpenAI-compatible servers' reasoning_content if present)
}

// Usage counts the tokens of one call. InputTokens includes cached prompt tokens.
type Usage struct {
	InputTokens  int64 `json:"input_tokens" yaml:"input_tokens"`
	OutputTokens int64 `json:"output_tokens" yaml:"output_tokens"`
	// CachedInputTokens are the prompt tokens read from the provider's cache (part of
	// InputTokens), priced at the configuration's cached-input price.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty" yaml:"cached_input_tokens,omitempty"`
}

// Response is the model's answer to one [Request].
type Response struct {
	Text       string
	Reasoning  []Reasoning
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string // StopEndTurn, StopToolUse, StopMaxTokens or the provider's own value
}

// Driver performs model calls. Implementations are safe for concurrent use.
type Driver interface {
	// Complete sends one request. Every error it returns is an [*Error].
	Complete(ctx context.Context, req Request) (*Response, error)
}

// Config selects and configures a driver; it mirrors a stored model configuration.
type Config struct {
	Driver  string // DriverOpenAI, DriverAnthropic or DriverScripted
	Model   string
	BaseURL string // provider endpoint; for "scripted" the script path, relative to the working directory
	APIKey  string
	// Temperature and MaxTokensOutput are the defaults of every request; nil and 0 leave them to
	// the provider (Anthropic requires a limit: DefaultAnthropicMaxTokens applies).
	Temperature     *float64
	MaxTokensOutput int
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient is used for provider calls; nil means a fresh client without its own timeout.
	HTTPClient *http.Client
	// ThinkingBudget enables Anthropic extended thinking with this many tokens (0: off). Ignored
	// by the other drivers.
	ThinkingBudget int
}

// New builds the driver cfg names. It returns a plain error (not an [*Error]) for a
// configuration that cannot work: unknown driver, missing model, negative limits, an
// unreadable or malformed script.
func New(cfg Config) (Driver, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: timeout must not be negative")
	}
	if cfg.MaxTokensOutput < 0 {
		return nil, fmt.Errorf("llm: max_tokens_output must not be negative")
	}
	if cfg.ThinkingBudget < 0 {
		return nil, fmt.Errorf("llm: thinking budget must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch cfg.Driver {
	case DriverOpenAI:
		if strings.TrimSpace(cfg.Model) == "" {
			return nil, fmt.Errorf("llm: the openai driver needs a model")
		}
		return newOpenAI(cfg), nil
	case DriverAnthropic:
		if strings.TrimSpace(cfg.Model) == "" {
			return nil, fmt.Errorf("llm: the anthropic driver needs a model")
		}
		return newAnthropic(cfg), nil
	case DriverScripted:
		if strings.TrimSpace(cfg.BaseURL) == "" {
			return nil, fmt.Errorf("llm: the scripted driver needs the script path in base_url")
		}
		s, err := LoadScript(cfg.BaseURL)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return s, nil
	default:
		return nil, fmt.Errorf("llm: unknown driver %q (want openai, anthropic or scripted)", cfg.Driver)
	}
}

// validateRequest checks what every driver relies on, so a malformed conversation fails with
// BAD_REQUEST before anything is sent.
func validateRequest(req *Request) error {
	if req.MaxTokens < 0 {
		return newError(taskstate.CodeBadRequest, "max_tokens must not be negative", 0, nil)
	}
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if t.Name == "" {
			return newError(taskstate.CodeBadRequest, fmt.Sprintf("tools[%d]: name is empty", i), 0, nil)
		}
		if seen[t.Name] {
			return newError(taskstate.CodeBadRequest, fmt.Sprintf("tools[%d]: duplicate tool name %q", i, t.Name), 0, nil)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(t.Parameters, &obj); err != nil {
				return newError(taskstate.CodeBadRequest, fmt.Sprintf("tools[%d] (%s): parameters are not a JSON object", i, t.Name), 0, nil)
			}
		}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
		case RoleAssistant:
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return newError(taskstate.CodeBadRequest, fmt.Sprintf("messages[%d].tool_calls[%d]: id and name are required", i, j), 0, nil)
				}
				if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
					return newError(taskstate.CodeBadRequest, fmt.Sprintf("messages[%d].tool_calls[%d]: arguments are not valid JSON", i, j), 0, nil)
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return newError(taskstate.CodeBadRequest, fmt.Sprintf("messages[%d]: a tool message needs tool_call_id", i), 0, nil)
			}
		default:
			return newError(taskstate.CodeBadRequest, fmt.Sprintf("messages[%d]: unknown role %q", i, m.Role), 0, nil)
		}
	}
	return nil
}

// toolArguments returns the JSON object text sent for a call's arguments ("{}" when empty).
func toolArguments(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// wireArguments turns the arguments text a model produced into valid JSON: empty becomes {},
// text that is not JSON becomes a JSON string holding it.
func wireArguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// schemaObject parses a tool's parameter schema; an empty schema is an object without properties.
func schemaObject(raw json.RawMessage) map[string]json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &obj) // validated by validateRequest
	}
	if _, ok := obj["type"]; !ok {
		obj["type"] = json.RawMessage(`"object"`)
	}
	if _, ok := obj["properties"]; !ok {
		obj["properties"] = json.RawMessage(`{}`)
	}
	return obj
}

// withTimeout applies the configured call timeout.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = DefaultTimeout
	}
	return context.WithTimeout(ctx, d)
}

func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{}
}

// Probe makes the smallest real call a configuration answers ("Reply with the word OK.", at
// most 16 output tokens, no tools), so an administrator sees at once whether the endpoint,
// key and model work. Errors: the driver's [*Error].
func Probe(ctx context.Context, d Driver) (*Response, error) {
	return d.Complete(ctx, Request{Messages: []Message{{Role: RoleUser, Text: "Reply with the word OK."}}, MaxTokens: 16})
}
