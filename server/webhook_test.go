package server_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/webhook"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// hookRequest is one callback as the receiver saw it.
type hookRequest struct {
	header http.Header
	body   []byte
}

// TestChatCallbacksEndToEnd: a chat started through the per-agent API with a callback_url
// blocks on a tool that needs approval; the receiver (an https server) gets a signed
// PENDING_APPROVAL chat record, which it verifies as an integrator would (HMAC keyed by the hex
// SHA-256 of the key secret, over "<timestamp>.<raw body>"); after the approval it gets a
// second callback with COMPLETED.
func TestChatCallbacksEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir) // the scripted driver reads its script relative to the working directory
	script := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1+1"}}], "usage": {"input_tokens": 12, "output_tokens": 4}},
	  {"text": "The result is 42.", "usage": {"input_tokens": 30, "output_tokens": 6}}
	]`
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}

	received := make(chan hookRequest, 10)
	rc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- hookRequest{header: r.Header.Clone(), body: body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	pool := x509.NewCertPool()
	pool.AddCert(rc.Certificate())

	env := apitest.NewWith(t, apitest.Options{Net: netguard.Options{AllowLoopback: true, RootCAs: pool}}, "SVC_AGENT_API=true")
	c, _ := env.UserClient("ada@example.com") // the first user: an administrator (scripted configs need it)
	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	c.Post("/groups", map[string]any{"name": "Lab"}).Expect(t, 201).Decode(t, &g)
	c.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Calc", "system_prompt": "Compute.", "principal_id": g.Data.Group.PrincipalId}).Expect(t, 201).Decode(t, &a)
	agentID := a.Data.Agent.Id
	ap := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", agentID)
	c.Post(ap+"/enable", nil).Expect(t, 200)
	c.Patch(ap+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": false}).Expect(t, 200)

	var minted gen.AgentApiKeyCreatedResponse
	c.Post(fmt.Sprintf("/agents/%d/api-keys", agentID), map[string]any{"name": "receiver"}).Expect(t, http.StatusCreated).Decode(t, &minted)
	key := minted.Data
	parts := strings.SplitN(key.Key, "_", 3)
	if len(parts) != 3 {
		t.Fatalf("key %q is not svk_<id>_<secret>", key.Key)
	}
	digest := webhook.SecretDigest(parts[2]) // what the integrator derives from the key it holds
	bearer := map[string]string{"Authorization": "Bearer " + key.Key}

	var started gen.ChatResponse
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Header: bearer,
		Body: map[string]any{"text": "What is 6*7?", "callback_url": rc.URL + "/hooks/svc?src=test"}}).
		Expect(t, http.StatusAccepted).Decode(t, &started)
	chatID := started.Data.Chat.Id

	loop, hooks := env.App.Loop, env.App.Webhooks
	// drive runs the chat until it is quiescent, then sends what settled.
	drive := func() hookRequest {
		t.Helper()
		got, err := env.App.Store.ClaimQueued(ctx, "e2e", time.Minute, 1)
		if err != nil || len(got) != 1 || got[0].ID != chatID {
			t.Fatalf("ClaimQueued = %+v, %v", got, err)
		}
		loop.Run(ctx, nil, &got[0], "e2e")
		if n, err := hooks.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("RunOnce = %d, %v; want one delivery", n, err)
		}
		select {
		case r := <-received:
			return r
		default:
			t.Fatal("the receiver got no callback")
			return hookRequest{}
		}
	}
	// verify checks a callback as a receiver must, and returns the chat record.
	verify := func(r hookRequest) gen.Chat {
		t.Helper()
		if r.header.Get(webhook.HeaderKeyID) != key.Id || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers = %v", r.header)
		}
		ts := r.header.Get(webhook.HeaderTimestamp)
		if ts != strconv.FormatInt(env.Clock.Now().Unix(), 10) {
			t.Fatalf("timestamp %s, want the service clock's %d", ts, env.Clock.Now().Unix())
		}
		if err := webhook.Verify(digest, ts, r.header.Get(webhook.HeaderSignature), r.body, env.Clock.Now()); err != nil {
			t.Fatalf("signature: %v", err)
		}
		if err := webhook.Verify(digest, ts, r.header.Get(webhook.HeaderSignature), append(r.body, ' '), env.Clock.Now()); err == nil {
			t.Fatal("a modified body verified")
		}
		var chat gen.Chat
		dec := json.NewDecoder(strings.NewReader(string(r.body)))
		dec.DisallowUnknownFields() // the bare chat record, no envelope
		if err := dec.Decode(&chat); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		return chat
	}

	blocked := verify(drive())
	if blocked.Id != chatID || blocked.AgentId != agentID || blocked.Status != gen.TaskStatusPENDINGAPPROVAL || blocked.Blocked == nil ||
		blocked.Blocked.Reason != gen.ChatBlockedReasonPENDINGAPPROVAL || blocked.Blocked.ToolCalls == nil || len(*blocked.Blocked.ToolCalls) != 1 {
		t.Fatalf("blocked callback = %+v", blocked)
	}
	if call := (*blocked.Blocked.ToolCalls)[0]; call.Name != "calculator" || call.Description == "" || call.Arguments["expression"] != "1+1" {
		t.Fatalf("blocked tool call = %+v", call)
	}

	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: fmt.Sprintf("/agent-api/chats/%d/approve", chatID), Header: bearer,
		Body: map[string]any{"decisions": []map[string]any{{"provider_call_id": "c1", "decision": "approve", "arguments": map[string]any{"expression": "6*7"}}}}}).
		Expect(t, http.StatusAccepted)
	if n, err := hooks.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("approving enqueued a callback: %d, %v", n, err)
	}
	done := verify(drive())
	if done.Id != chatID || done.Status != gen.TaskStatusCOMPLETED || done.Blocked != nil || done.Answer == nil || *done.Answer != "The result is 42." {
		t.Fatalf("completed callback = %+v", done)
	}

	ds, err := env.App.Store.WebhookDeliveries(ctx, chatID)
	if err != nil || len(ds) != 2 || ds[0].Status != taskstate.PendingApproval || ds[1].Status != taskstate.Completed ||
		ds[0].State != store.DeliveryDelivered || ds[1].State != store.DeliveryDelivered {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
	if len(received) != 0 {
		t.Fatalf("%d extra callbacks", len(received))
	}

	// Running in the background, the dispatcher is woken by the tick that settles a chat (its
	// poll is pushed out of the way here).
	hooks.Poll = time.Hour
	hooks.Start(ctx)
	env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Header: bearer,
		Body: map[string]any{"text": "And 2*3?", "callback_url": rc.URL + "/hooks/svc"}}).
		Expect(t, http.StatusAccepted).Decode(t, &started)
	chatID = started.Data.Chat.Id
	got, err := env.App.Store.ClaimQueued(ctx, "e2e", time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != chatID {
		t.Fatalf("ClaimQueued = %+v, %v", got, err)
	}
	loop.Run(ctx, nil, &got[0], "e2e")
	select {
	case r := <-received:
		if chat := verify(r); chat.Id != chatID || chat.Status != gen.TaskStatusPENDINGAPPROVAL {
			t.Fatalf("background callback = %+v", chat)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the settling tick did not wake the dispatcher")
	}
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := hooks.Stop(stop); err != nil {
		t.Fatal(err)
	}
}
