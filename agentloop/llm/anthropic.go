package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// anthropicDriver talks to the Anthropic Messages API through the official SDK.
type anthropicDriver struct {
	cfg    Config
	client anthropic.Client
}

func newAnthropic(cfg Config) *anthropicDriver {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // never pick up ANTHROPIC_API_KEY and friends
		option.WithHTTPClient(httpClient(cfg.HTTPClient)),
		option.WithMaxRetries(0), // the task's retry chain decides
	}
	if base := strings.TrimSpace(cfg.BaseURL); base != "" {
		// The SDK appends "v1/messages"; accept the ".../v1" form people copy from the docs.
		base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
		opts = append(opts, option.WithBaseURL(base))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &anthropicDriver{cfg: cfg, client: anthropic.NewClient(opts...)}
}

func (d *anthropicDriver) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := validateRequest(&req); err != nil {
		return nil, err
	}
	names := newNameMap(&req)
	params := d.params(&req, names)
	ctx, cancel := withTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	if req.OnDelta != nil {
		return d.stream(ctx, params, names, req.OnDelta)
	}
	res, err := d.client.Messages.New(ctx, params)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	return d.response(res, names), nil
}

// stream performs the call with stream=true, accumulating the events into a message and
// reporting text and thinking deltas to onDelta. Only a stream that reached message_stop gives
// a response.
func (d *anthropicDriver) stream(ctx context.Context, params anthropic.MessageNewParams, names *nameMap, onDelta func(Delta)) (*Response, error) {
	st := d.client.Messages.NewStreaming(ctx, params)
	defer st.Close()
	var msg anthropic.Message
	stopped, textBlocks := false, 0
	for st.Next() {
		ev := st.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, newError(taskstate.CodeGatewayError, "anthropic stream is inconsistent: "+sanitize(err.Error(), d.cfg.APIKey), 0, err)
		}
		switch ev.Type {
		case "content_block_start":
			// The response joins text blocks with a newline; so do the deltas.
			if ev.ContentBlock.Type == "text" {
				if textBlocks > 0 {
					onDelta(Delta{Text: "\n"})
				}
				textBlocks++
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(Delta{Text: ev.Delta.Text})
				}
			case "thinking_delta":
				if ev.Delta.Thinking != "" {
					onDelta(Delta{Reasoning: ev.Delta.Thinking})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := st.Err(); err != nil {
		return nil, d.classifyStream(ctx, err)
	}
	if !stopped {
		if err := ctx.Err(); err != nil {
			return nil, classifyTransport(ctx, "anthropic", d.cfg.Timeout, err)
		}
		return nil, newError(taskstate.CodeGatewayError, "anthropic stream ended before message_stop", 0, io.ErrUnexpectedEOF)
	}
	return d.response(&msg, names), nil
}

// anthropicErrorStatus is the HTTP status the Messages API documents for each error type; an
// error event inside a stream (sent after the 200 answer) is classified as that status.
var anthropicErrorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// classifyStream classifies a failed stream: an HTTP error status or a transport failure as in
// classify; an error event by its type's documented status (an unknown type is a server
// error); a stream that broke off or could not be decoded as an unreachable endpoint
// (GATEWAY_ERROR), which is what a connection failure of the plain call gives.
func (d *anthropicDriver) classifyStream(ctx context.Context, err error) *Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 {
		return d.classify(ctx, err)
	}
	if ctx.Err() != nil {
		return classifyTransport(ctx, "anthropic", d.cfg.Timeout, err)
	}
	if apiErr != nil {
		// An error event after the 200 answer.
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		status, ok := anthropicErrorStatus[body.Error.Type]
		if !ok {
			status = http.StatusInternalServerError
		}
		msg := "anthropic stream failed"
		if body.Error.Type != "" {
			msg += " with " + sanitize(body.Error.Type, d.cfg.APIKey)
		}
		if m := sanitize(body.Error.Message, d.cfg.APIKey); m != "" {
			msg += ": " + m
		}
		return newError(codeForStatus(status), msg, 0, err)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return classifyTransport(ctx, "anthropic", d.cfg.Timeout, err)
	}
	if strings.HasPrefix(err.Error(), "received error while streaming") {
		// An error event the SDK could not decode.
		return newError(taskstate.CodeServerError, "anthropic stream failed: "+sanitize(err.Error(), d.cfg.APIKey), 0, err)
	}
	return newError(taskstate.CodeGatewayError, "anthropic stream broke off: "+sanitize(err.Error(), d.cfg.APIKey), 0, err)
}

func (d *anthropicDriver) params(req *Request, names *nameMap) anthropic.MessageNewParams {
	maxTokens := pickMaxTokens(req, &d.cfg)
	if maxTokens == 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(d.cfg.Model)}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if d.cfg.ThinkingBudget > 0 {
		// The API wants max_tokens above the budget and no temperature with thinking.
		if maxTokens <= d.cfg.ThinkingBudget {
			maxTokens += d.cfg.ThinkingBudget
		}
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(d.cfg.ThinkingBudget))
	} else if t := pickTemperature(req, &d.cfg); t != nil {
		p.Temperature = anthropic.Float(*t)
	}
	p.MaxTokens = int64(maxTokens)
	p.Messages = anthropicMessages(req.Messages, names)
	for _, t := range req.Tools {
		schema := schemaObject(t.Parameters)
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type": // always "object", written by the SDK
			case "properties":
				in.Properties = v
			case "required":
				var req []string
				if json.Unmarshal(v, &req) == nil {
					in.Required = req
				} else {
					in.ExtraFields[k] = v
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: names.encode(t.Name), InputSchema: in}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p
}

// anthropicMessages converts the conversation. Tool results travel as tool_result blocks of a
// user message; consecutive messages of the same wire role are merged into one, because the
// results of one assistant turn must all arrive in the single user message that follows it.
func anthropicMessages(msgs []Message, names *nameMap) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			if m.Text != "" { // the API refuses empty text blocks
				add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(m.Text))
			}
		case RoleTool:
			if m.Text == "" {
				add(anthropic.MessageParamRoleUser, anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{
					ToolUseID: m.ToolCallID, IsError: anthropic.Bool(m.IsError)}})
			} else {
				add(anthropic.MessageParamRoleUser, anthropic.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			for _, r := range m.Reasoning {
				switch {
				case r.Signature == "":
					// Thinking without a signature (another provider's) cannot be sent back.
				case r.Redacted:
					blocks = append(blocks, anthropic.NewRedactedThinkingBlock(r.Signature))
				default:
					blocks = append(blocks, anthropic.NewThinkingBlock(r.Signature, r.Text))
				}
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, toolArguments(c.Arguments), names.encode(c.Name)))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		}
	}
	return out
}

func (d *anthropicDriver) response(res *anthropic.Message, names *nameMap) *Response {
	out := &Response{Usage: Usage{
		InputTokens:       res.Usage.InputTokens + res.Usage.CacheCreationInputTokens + res.Usage.CacheReadInputTokens,
		OutputTokens:      res.Usage.OutputTokens,
		CachedInputTokens: res.Usage.CacheReadInputTokens,
	}}
	var text []string
	for _, b := range res.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "thinking":
			out.Reasoning = append(out.Reasoning, Reasoning{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out.Reasoning = append(out.Reasoning, Reasoning{Signature: b.Data, Redacted: true})
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{
				ID:        b.ID,
				Name:      names.decode(b.Name),
				Arguments: wireArguments(string(b.Input)),
			})
		}
	}
	out.Text = strings.Join(text, "\n")
	switch res.StopReason {
	case "end_turn", "stop_sequence":
		out.StopReason = StopEndTurn
	case "tool_use":
		out.StopReason = StopToolUse
	case "max_tokens":
		out.StopReason = StopMaxTokens
	default:
		out.StopReason = string(res.StopReason)
	}
	return out
}

func (d *anthropicDriver) classify(ctx context.Context, err error) *Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		code := codeForStatus(apiErr.StatusCode)
		switch apiErr.Type() {
		case "overloaded_error":
			code = taskstate.CodeServerOverloaded
		case "rate_limit_error":
			code = taskstate.CodeRateLimit
		}
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return httpError(code, "anthropic", apiErr.StatusCode, body.Error.Message, d.cfg.APIKey, h, err)
	}
	return classifyTransport(ctx, "anthropic", d.cfg.Timeout, err)
}
