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
