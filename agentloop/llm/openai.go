package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// openaiDriver talks to any OpenAI-compatible /chat/completions endpoint: it builds the request
// body (chatRequest) and reads a streamed answer (readOpenAIStream) itself, and leaves the HTTP
// exchange to the official SDK (headers, authentication, an error status as *openai.Error).
type openaiDriver struct {
	cfg Config
	// client posts the requests. Built as a literal: openai.NewClient would add the process's
	// OPENAI_* environment (a key, a base URL) to every configuration's requests.
	client openai.Client
	// maxCompletion sends max_completion_tokens (required by OpenAI's reasoning models) instead
	// of the max_tokens every compatible server understands.
	maxCompletion bool
}

func newOpenAI(cfg Config) *openaiDriver {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(httpClient(cfg.HTTPClient)),
		option.WithMaxRetries(0), // the task's retry chain decides
	}
	if cfg.APIKey != "" {
		// Set as the header: the client's generic Post applies no endpoint's authentication
		// scheme, which the SDK's ChatCompletionService.New did.
		opts = append(opts, option.WithHeader("Authorization", "Bearer "+cfg.APIKey))
	}
	d := &openaiDriver{cfg: cfg, client: openai.Client{Options: opts}}
	if u, err := url.Parse(base); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		d.maxCompletion = true
	}
	return d
}

func (d *openaiDriver) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := validateRequest(&req); err != nil {
		return nil, err
	}
	names := newNameMap(&req)
	body := d.params(&req, names)
	ctx, cancel := withTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	if req.OnDelta != nil {
		return d.stream(ctx, body, names, req.OnDelta)
	}
	res, err := d.send(ctx, body)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	return d.response(res, names)
}

// send posts body to /chat/completions through the SDK (headers, authentication, an error
// status as *openai.Error) and decodes the answer; with a raw destination in opts
// (option.WithResponseBodyInto) the body is left unread for the caller.
func (d *openaiDriver) send(ctx context.Context, body *chatRequest, opts ...option.RequestOption) (*openai.ChatCompletion, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai request: %w", err)
	}
	// Posted as bytes: the SDK's parameter types marshal through reflection and its own JSON
	// package (a tenth of a drained step's CPU), even empty ones replaced by a request body.
	var res *openai.ChatCompletion
	if err := d.client.Post(ctx, "chat/completions", b, &res, opts...); err != nil {
		return nil, err
	}
	return res, nil
}

// stream performs the call with stream=true, reporting each content and reasoning piece to
// onDelta. Only a stream that reached a finish_reason gives a response: one that ended
// without it, broke off, carried a malformed chunk or an error event fails like an
// unreachable endpoint (or with the error event's classification). The SDK sends the request
// and classifies an error status; the events are read by readOpenAIStream.
func (d *openaiDriver) stream(ctx context.Context, body *chatRequest, names *nameMap, onDelta func(Delta)) (*Response, error) {
	body.Stream, body.StreamOptions = true, &chatStreamOptions{IncludeUsage: true}
	var raw *http.Response
	if _, err := d.send(ctx, body, option.WithResponseBodyInto(&raw)); err != nil {
		if raw != nil && raw.Body != nil {
			_ = raw.Body.Close()
		}
		return nil, d.classify(ctx, err)
	}
	defer raw.Body.Close()
	ans, err := readOpenAIStream(raw.Body, onDelta)
	if errors.Is(err, errChunkBreak) {
		return nil, newError(taskstate.CodeGatewayError, sanitize(err.Error(), d.cfg.APIKey), 0, err)
	}
	if err != nil {
		return nil, d.classifyStream(ctx, err)
	}
	if ans.finish == "" {
		if err := ctx.Err(); err != nil {
			return nil, classifyTransport(ctx, "openai", d.cfg.Timeout, err)
		}
		return nil, newError(taskstate.CodeGatewayError, "openai stream ended before the answer was complete", 0, io.ErrUnexpectedEOF)
	}
	out, err := d.response(ans.completion(), names)
	if err != nil {
		return nil, err
	}
	if len(ans.reasoning) > 0 {
		out.Reasoning = []Reasoning{{Text: string(ans.reasoning)}}
	}
	return out, nil
}

// classifyStream classifies a failed stream: an HTTP error status or a transport failure as
// in classify; an error event sent in the stream by its status code, if it carries one, or as
// a server error; a stream that broke off or could not be decoded as an unreachable endpoint
// (GATEWAY_ERROR), which is what a connection failure of the plain call gives.
func (d *openaiDriver) classifyStream(ctx context.Context, err error) *Error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return d.classify(ctx, err)
	}
	if ctx.Err() != nil {
		return classifyTransport(ctx, "openai", d.cfg.Timeout, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &body)
		code := taskstate.CodeServerError
		status := 0
		switch c := body.Error.Code.(type) {
		case float64:
			status = int(c)
		case string:
			status, _ = strconv.Atoi(c)
		}
		if status >= 400 && status <= 599 {
			code = codeForStatus(status)
		} else if strings.Contains(body.Error.Type, "rate_limit") || body.Error.Code == "rate_limit_exceeded" {
			code = taskstate.CodeRateLimit
		}
		msg := "openai stream failed"
		if m := sanitize(body.Error.Message, d.cfg.APIKey); m != "" {
			msg += ": " + m
		}
		return newError(code, msg, 0, err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return classifyTransport(ctx, "openai", d.cfg.Timeout, err)
	}
	return newError(taskstate.CodeGatewayError, "openai stream broke off: "+sanitize(err.Error(), d.cfg.APIKey), 0, err)
}

// chatRequest is the body of a chat completion request, in the wire format of OpenAI's
// /chat/completions that compatible servers accept.
type chatRequest struct {
	Model               string             `json:"model"`
	Messages            []chatMessage      `json:"messages"`
	Tools               []chatTool         `json:"tools,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	MaxTokens           int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *chatStreamOptions `json:"stream_options,omitempty"`
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message; Content is left out of an assistant turn that only calls tools.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	Parameters  map[string]json.RawMessage `json:"parameters"` // raw values keep numbers and key order inside them intact
}

func (d *openaiDriver) params(req *Request, names *nameMap) *chatRequest {
	p := &chatRequest{Model: d.cfg.Model, Messages: make([]chatMessage, 0, len(req.Messages)+1)}
	text := func(s string) *string { return &s }
	if req.System != "" {
		p.Messages = append(p.Messages, chatMessage{Role: "system", Content: text(req.System)})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, chatMessage{Role: "user", Content: text(m.Text)})
		case RoleTool:
			p.Messages = append(p.Messages, chatMessage{Role: "tool", Content: text(m.Text), ToolCallID: m.ToolCallID})
		case RoleAssistant:
			// Reasoning is not sent back: chat completions has no field for it.
			a := chatMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content = text(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
					Function: chatFunctionCall{Name: names.encode(c.Name), Arguments: string(toolArguments(c.Arguments))}})
			}
			p.Messages = append(p.Messages, a)
		}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: chatFunction{Name: names.encode(t.Name),
			Description: t.Description, Parameters: schemaObject(t.Parameters)}})
	}
	p.Temperature = pickTemperature(req, &d.cfg)
	if n := pickMaxTokens(req, &d.cfg); n > 0 {
		if d.maxCompletion {
			p.MaxCompletionTokens = n
		} else {
			p.MaxTokens = n
		}
	}
	return p
}

func (d *openaiDriver) response(res *openai.ChatCompletion, names *nameMap) (*Response, error) {
	if len(res.Choices) == 0 {
		return nil, newError(taskstate.CodeUnknown, "openai answered without choices", 0, nil)
	}
	ch := res.Choices[0]
	out := &Response{
		Text: ch.Message.Content,
		Usage: Usage{InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens,
			CachedInputTokens: min(res.Usage.PromptTokensDetails.CachedTokens, res.Usage.PromptTokens)},
	}
	// OpenAI-compatible servers (DeepSeek, vLLM, Ollama, OpenRouter) report thinking in one of
	// these non-standard fields.
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if f, ok := ch.Message.JSON.ExtraFields[key]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				out.Reasoning = append(out.Reasoning, Reasoning{Text: s})
				break
			}
		}
	}
	for _, c := range ch.Message.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			continue // custom tools are never declared by this driver
		}
		id := c.ID
		if id == "" {
			id = newCallID()
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{
			ID:        id,
			Name:      names.decode(c.Function.Name),
			Arguments: wireArguments(c.Function.Arguments),
		})
	}
	switch ch.FinishReason {
	case "stop":
		out.StopReason = StopEndTurn
	case "tool_calls", "function_call":
		out.StopReason = StopToolUse
	case "length":
		out.StopReason = StopMaxTokens
	default:
		out.StopReason = ch.FinishReason
	}
	if len(out.ToolCalls) > 0 && out.StopReason == StopEndTurn {
		out.StopReason = StopToolUse // some compatible servers answer "stop" with tool calls
	}
	return out, nil
}

func (d *openaiDriver) classify(ctx context.Context, err error) *Error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := codeForStatus(apiErr.StatusCode)
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		msg := apiErr.Message
		if apiErr.Code == "context_length_exceeded" && !tooLong(msg) {
			msg = apiErr.Code + ": " + msg
		}
		return httpError(code, "openai", apiErr.StatusCode, msg, d.cfg.APIKey, h, err)
	}
	return classifyTransport(ctx, "openai", d.cfg.Timeout, err)
}

// newCallID invents an id for servers that send tool calls without one.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

func pickTemperature(req *Request, cfg *Config) *float64 {
	if req.Temperature != nil {
		return req.Temperature
	}
	return cfg.Temperature
}

func pickMaxTokens(req *Request, cfg *Config) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return cfg.MaxTokensOutput
}
