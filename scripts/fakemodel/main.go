// Command fakemodel is a stand-in OpenAI-compatible model server on loopback for
// scripts/doc-snippets.sh: the README's and docs/integrators.md's snippets configure a real
// provider by its base URL, and CI points that URL here, because CI has no model. It answers
// POST {base}/chat/completions: when the calculator tool is offered and no tool result is in the
// conversation yet, it calls the calculator with the first arithmetic expression of the last user
// message; otherwise it answers with the last tool result (or "Hello."). It prints its base URL
// and serves until killed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentsvc/svc/agentloop/llm/llmfake"
)

var expression = regexp.MustCompile(`\d+(\s*[-+*/]\s*\d+)+`)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve on")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	http.HandleFunc("POST /v1/chat/completions", answer)
	log.Fatal(http.Serve(ln, nil))
}

func answer(w http.ResponseWriter, r *http.Request) {
	var req llmfake.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	calc, prompt, result := "", "", ""
	for _, t := range req.Tools {
		if strings.Contains(t.Function.Name, "calculator") {
			calc = t.Function.Name
		}
	}
	for _, m := range req.Messages {
		text, _ := m.Content.(string)
		switch m.Role {
		case "user":
			prompt = text
		case "tool":
			result = text
		}
	}
	if e := expression.FindString(prompt); calc != "" && result == "" && e != "" {
		args, _ := json.Marshal(map[string]string{"expression": e})
		call := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": calc, "arguments": string(args)}}
		llmfake.WriteOpenAIAnswer(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{call}}, "tool_calls")
		return
	}
	text := "Hello."
	if result != "" {
		text = "The result: " + result
	}
	llmfake.WriteOpenAIAnswer(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": text}, "stop")
}
