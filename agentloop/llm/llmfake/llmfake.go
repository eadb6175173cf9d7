// Package llmfake answers like an OpenAI-compatible model server, for the fakes of tests and of
// programs that drive the service (bench/svcbench): the wire format the drivers accept, in one
// place.
package llmfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Request is the part of a /chat/completions request the fakes read: the model, whether to
// stream, the conversation (content as sent: a string, or parts) and the offered tools' names.
type Request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// WriteOpenAIAnswer answers a fake /chat/completions call with msg (role, content and
// tool_calls as in a chat.completion message): one JSON chat.completion, or, for a request
// with "stream": true, the chat.completion.chunk events of the same answer (the content in
// two pieces, the tool calls with their index, the finish reason, a usage chunk, [DONE]).
func WriteOpenAIAnswer(w http.ResponseWriter, stream bool, model string, msg map[string]any, finish string) {
	usage := map[string]any{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
			"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(choices []map[string]any, usage any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
			"model": model, "choices": choices, "usage": usage})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	delta := func(d map[string]any) { chunk([]map[string]any{{"index": 0, "delta": d, "finish_reason": nil}}, nil) }
	delta(map[string]any{"role": "assistant", "content": ""})
	if text, _ := msg["content"].(string); text != "" {
		runes := []rune(text)
		delta(map[string]any{"content": string(runes[:len(runes)/2])})
		delta(map[string]any{"content": string(runes[len(runes)/2:])})
	}
	calls, _ := msg["tool_calls"].([]map[string]any)
	for i, c := range calls {
		streamed := map[string]any{"index": i}
		for k, v := range c {
			streamed[k] = v
		}
		delta(map[string]any{"tool_calls": []map[string]any{streamed}})
	}
	chunk([]map[string]any{{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	chunk([]map[string]any{}, usage)
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// AnthropicRequest is the part of a Messages API request the fakes read: the model, whether
// to stream, the system prompt (a string, or text blocks) and the conversation.
type AnthropicRequest struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	MaxTokens int    `json:"max_tokens"`
	System    any    `json:"system"`
	Messages  []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// WriteAnthropicAnswer answers a fake Messages API call with text: one JSON message, or, for a
// request with "stream": true, the events of the same answer (message_start, the text in two
// deltas, message_delta with the stop reason and usage, message_stop).
func WriteAnthropicAnswer(w http.ResponseWriter, stream bool, model, text string, inputTokens int) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content":     []map[string]any{{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": inputTokens, "output_tokens": 3},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": inputTokens, "output_tokens": 1}}})
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	runes := []rune(text)
	for _, part := range []string{string(runes[:len(runes)/2]), string(runes[len(runes)/2:])} {
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 3}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// RefuseOpenAITooLong answers as OpenAI does a request of tokens tokens past a window of limit:
// HTTP 400 with the error code context_length_exceeded.
func RefuseOpenAITooLong(w http.ResponseWriter, limit, tokens int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
			"Please reduce the length of the messages.", limit, tokens),
		"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
}

// RefuseAnthropicTooLong answers as Anthropic does a request of tokens tokens past a window of
// limit: HTTP 400, invalid_request_error, "prompt is too long".
func RefuseAnthropicTooLong(w http.ResponseWriter, limit, tokens int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{
		"type": "invalid_request_error", "message": fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, limit)}})
}
