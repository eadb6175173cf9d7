package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentsvc/svc/internal/platform/sseread"
)

// The stream of an OpenAI-compatible chat completion is read here instead of through the SDK's
// ssestream.Stream and ChatCompletionAccumulator: those decode every chunk twice (gjson for the
// error check and the raw fields, then the SDK's reflection-based JSON) and reconcile the whole
// answer after each chunk, which made the stream half of a step's allocation and a sixth of the
// worker's CPU (docs/benchmarks.md, "Closing issue 14"). A real model sends one chunk per token
// or two, so the per-chunk cost is what matters. The SDK still sends the request and turns an
// error status into *openai.Error (classify).

// Bounds of one streamed answer: a line of the stream (one event's data) and the text the
// answer accumulates (content, reasoning and tool-call arguments together). A server past
// them is answered GATEWAY_ERROR like a malformed stream.
const (
	maxStreamLine    = 16 << 20
	maxStreamAnswer  = 32 << 20
	maxStreamToolIdx = 255
)

// openaiStreamChunk is the part of a chat.completion.chunk the driver reads. The reasoning fields
// are non-standard (DeepSeek, vLLM, Ollama, OpenRouter) and kept raw: a server that sends them
// as something other than a string is ignored there, not refused.
type openaiStreamChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// errChunkBreak is a chunk that cannot continue the answer (another completion's id, a tool
// call index out of range, an answer past maxStreamAnswer).
var errChunkBreak = errors.New("openai stream sent a chunk that does not continue the answer")

// openaiAnswer accumulates the first choice of a streamed completion.
type openaiAnswer struct {
	id        string
	content   []byte
	reasoning []byte
	calls     []openai.ChatCompletionMessageToolCallUnion
	args      [][]byte
	finish    string
	usage     openai.CompletionUsage
	size      int
}

// readOpenAIStream reads the server-sent events of body until [DONE] or the end, reporting each
// content and reasoning piece of the first choice to onDelta. It returns the accumulated answer
// (finish empty when no finish_reason came), or: an *ssestream.StreamError for an error event,
// errChunkBreak, a JSON error for a malformed chunk, the body's read error.
func readOpenAIStream(body io.Reader, onDelta func(Delta)) (*openaiAnswer, error) {
	ans := &openaiAnswer{}
	err := sseread.Read(body, maxStreamLine, func(data []byte) error {
		switch {
		case bytes.HasPrefix(data, []byte("[DONE]")):
			return sseread.ErrStop
		case len(bytes.TrimSpace(data)) == 0:
			return nil // an empty event carries nothing
		}
		return ans.add(data, onDelta)
	})
	if errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("openai stream sent an event over %d bytes: %w", maxStreamLine, errChunkBreak)
	}
	if err != nil {
		return nil, err
	}
	return ans, nil
}

// add folds one chunk's data into the answer.
func (a *openaiAnswer) add(data []byte, onDelta func(Delta)) error {
	var c openaiStreamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("openai stream sent a malformed chunk: %w", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return &ssestream.StreamError{Message: "received error while streaming: " + string(c.Error), Event: ssestream.Event{Data: bytes.Clone(data)}}
	}
	if c.ID != "" {
		if a.id != "" && a.id != c.ID {
			return errChunkBreak
		}
		a.id = c.ID
	}
	if c.Usage != nil && (c.Usage.PromptTokens != 0 || c.Usage.CompletionTokens != 0) {
		a.usage = openai.CompletionUsage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens} // the last report is the total
		a.usage.PromptTokensDetails.CachedTokens = c.Usage.PromptTokensDetails.CachedTokens
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		r := reasoningText(d.ReasoningContent)
		if r == "" {
			r = reasoningText(d.Reasoning)
		}
		a.size += len(d.Content) + len(r)
		a.content = append(a.content, d.Content...)
		a.reasoning = append(a.reasoning, r...)
		for _, tc := range d.ToolCalls {
			if tc.Index < 0 || tc.Index > maxStreamToolIdx {
				return errChunkBreak
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, openai.ChatCompletionMessageToolCallUnion{})
				a.args = append(a.args, nil)
			}
			call := &a.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			a.args[tc.Index] = append(a.args[tc.Index], tc.Function.Arguments...)
			a.size += len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		if a.size > maxStreamAnswer {
			return fmt.Errorf("openai stream answer over %d bytes: %w", maxStreamAnswer, errChunkBreak)
		}
		if d.Content != "" || r != "" {
			onDelta(Delta{Text: d.Content, Reasoning: r})
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return nil
}

// reasoningText is a reasoning field's text when it is a JSON string.
func reasoningText(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// completion is the answer in the SDK's shape, for the mapping the plain call uses.
func (a *openaiAnswer) completion() *openai.ChatCompletion {
	msg := openai.ChatCompletionMessage{Content: string(a.content), ToolCalls: a.calls}
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].Function.Arguments = string(a.args[i])
	}
	return &openai.ChatCompletion{
		ID:      a.id,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: a.finish}},
		Usage:   a.usage,
	}
}
