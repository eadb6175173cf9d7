//go:build ignore

// Command sdkflow is the integrator's walkthrough run by scripts/sdk-check.sh with the Go client
// generated from openapi.yaml (oapi-codegen defaults) against a running svc: register, log in
// (cookie + CSRF token), create an agent whose calculator needs approval, run a task with the
// scripted driver, approve it and see it complete; then mint a per-agent key, start a chat with
// it, approve that too and read its event stream, whole and resumed. docs/integrators.md shows
// the same code.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"time"

	client "github.com/agentsvc/svc/_sdk/goclient"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:8080/svc/api/v1", "API base URL")
	flag.Parse()
	ctx := context.Background()

	// A session client: the cookie jar keeps svc_session, the editor sends the CSRF token.
	jar, _ := cookiejar.New(nil)
	csrf := ""
	c, err := client.NewClientWithResponses(*base,
		client.WithHTTPClient(&http.Client{Jar: jar, Timeout: 30 * time.Second}),
		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			if csrf != "" {
				r.Header.Set("X-CSRF-Token", csrf)
			}
			return nil
		}))
	check(err)
	reg, err := c.RegisterWithResponse(ctx, client.RegisterJSONRequestBody{Email: "integrator@example.com", Password: "integrator-password"})
	check(err)
	expect("register", reg.StatusCode(), http.StatusCreated)
	login, err := c.LoginWithResponse(ctx, client.LoginJSONRequestBody{Email: "integrator@example.com", Password: "integrator-password"})
	check(err)
	expect("login", login.StatusCode(), http.StatusOK)
	csrf = login.JSON200.Data.CsrfToken

	name, prompt := "Calculator", "Compute with the calculator."
	agent, err := c.CreateAgentWithResponse(ctx, client.CreateAgentJSONRequestBody{Name: name, SystemPrompt: &prompt})
	check(err)
	expect("create agent", agent.StatusCode(), http.StatusCreated)
	agentID := fmt.Sprint(agent.JSON201.Data.Agent.Id)
	en, err := c.EnableAgentToolWithResponse(ctx, agentID, "core.CalculatorTool")
	check(err)
	expect("enable calculator", en.StatusCode(), http.StatusOK)
	yes, no := true, false
	op, err := c.UpdateAgentToolOperationWithResponse(ctx, agentID, "core.CalculatorTool", "calculate",
		client.UpdateAgentToolOperationJSONRequestBody{Enabled: &yes, AutoApprove: &no})
	check(err)
	expect("require approval", op.StatusCode(), http.StatusOK)

	// An Idempotency-Key makes the create safe to retry: the repeat answers the same task.
	idem := client.IdempotencyKey("walkthrough-task-1")
	body := client.CreateTaskJSONRequestBody{AgentId: agent.JSON201.Data.Agent.Id, Prompt: "What is 6*7?"}
	task, err := c.CreateTaskWithResponse(ctx, &client.CreateTaskParams{IdempotencyKey: &idem}, body)
	check(err)
	expect("create task", task.StatusCode(), http.StatusCreated)
	again, err := c.CreateTaskWithResponse(ctx, &client.CreateTaskParams{IdempotencyKey: &idem}, body)
	check(err)
	if again.StatusCode() != http.StatusCreated || again.JSON201.Data.Task.Id != task.JSON201.Data.Task.Id ||
		again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		log.Fatalf("the retried create started another task: %s", again.Body)
	}
	taskID := fmt.Sprint(task.JSON201.Data.Task.Id)
	waitTask(ctx, c, taskID, client.TaskStatusPENDINGAPPROVAL)
	ap, err := c.ApproveTaskWithResponse(ctx, taskID, nil, client.ApproveTaskJSONRequestBody{Decisions: []client.TaskToolCallDecision{
		{ProviderCallId: "c1", Decision: client.TaskToolCallDecisionDecisionApprove}}})
	check(err)
	expect("approve task", ap.StatusCode(), http.StatusOK)
	waitTask(ctx, c, taskID, client.TaskStatusCOMPLETED)
	log.Printf("task %s completed", taskID)

	// The per-agent API: a key minted by the agent's manager, sent as a bearer token.
	key, err := c.CreateAgentApiKeyWithResponse(ctx, agentID, client.CreateAgentApiKeyJSONRequestBody{Name: "integration"})
	check(err)
	expect("mint key", key.StatusCode(), http.StatusCreated)
	bearer := key.JSON201.Data.Key
	k, err := client.NewClientWithResponses(*base, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+bearer)
		return nil
	}))
	check(err)
	text := "What is 6*7?"
	chat, err := k.StartAgentChatWithResponse(ctx, nil, client.StartAgentChatJSONRequestBody{Text: &text})
	check(err)
	expect("start chat", chat.StatusCode(), http.StatusAccepted)
	chatID := fmt.Sprint(chat.JSON202.Data.Chat.Id)
	waitChat(ctx, k, chatID, func(ch client.Chat) bool { return ch.Blocked != nil })
	ca, err := k.ApproveAgentChatWithResponse(ctx, chatID, nil, client.ApproveAgentChatJSONRequestBody{Decisions: []client.TaskToolCallDecision{
		{ProviderCallId: "c1", Decision: client.TaskToolCallDecisionDecisionApprove}}})
	check(err)
	expect("approve chat", ca.StatusCode(), http.StatusAccepted)
	waitChat(ctx, k, chatID, func(ch client.Chat) bool { return ch.Status == client.TaskStatusCOMPLETED })
	log.Printf("chat %s completed", chatID)

	// The chat's event stream: a replay of the whole log that ends with the terminal status;
	// reconnecting with Last-Event-ID delivers exactly the events after it.
	all := streamEvents(ctx, k, chatID, nil)
	if len(all) < 4 || all[len(all)-1].Type != "status" || all[len(all)-1].Status.Status != "COMPLETED" {
		log.Fatalf("event stream of chat %s: %+v", chatID, all)
	}
	cursor := fmt.Sprint(all[2].Sequence)
	rest := streamEvents(ctx, k, chatID, &cursor)
	if len(rest) != len(all)-3 || rest[0].Sequence != all[3].Sequence {
		log.Fatalf("resumed after %s: %d events, want %d", cursor, len(rest), len(all)-3)
	}
	log.Printf("chat %s: %d events, %d after event %s", chatID, len(all), len(rest), cursor)
}

// taskEvent is the part of a TaskEvent (the data line of an event stream) the flow reads.
type taskEvent struct {
	Sequence int64  `json:"sequence"`
	Type     string `json:"type"`
	Status   *struct {
		Status string `json:"status"`
	} `json:"status"`
}

// streamEvents reads a chat's event stream to its end (the run is over), from the event after
// lastEventID when set.
func streamEvents(ctx context.Context, k *client.ClientWithResponses, id string, lastEventID *string) []taskEvent {
	res, err := k.StreamAgentChatEvents(ctx, id, &client.StreamAgentChatEventsParams{LastEventID: lastEventID})
	check(err)
	defer res.Body.Close()
	expect("event stream", res.StatusCode, http.StatusOK)
	var out []taskEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev taskEvent
			check(json.Unmarshal([]byte(data), &ev))
			out = append(out, ev)
		}
	}
	check(sc.Err())
	return out
}

func waitTask(ctx context.Context, c *client.ClientWithResponses, id string, want client.TaskStatus) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := c.GetTaskWithResponse(ctx, id)
		check(err)
		expect("get task", r.StatusCode(), http.StatusOK)
		if r.JSON200.Data.Task.Status == want {
			return
		}
	}
	log.Fatalf("task %s did not reach %s", id, want)
}

func waitChat(ctx context.Context, k *client.ClientWithResponses, id string, done func(client.Chat) bool) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := k.GetAgentChatStatusWithResponse(ctx, id)
		check(err)
		expect("chat status", r.StatusCode(), http.StatusOK)
		if done(r.JSON200.Data.Chat) {
			return
		}
	}
	log.Fatalf("chat %s did not reach the expected state", id)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func expect(what string, got, want int) {
	if got != want {
		log.Fatalf("%s: status %d, want %d", what, got, want)
	}
}
