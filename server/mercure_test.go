package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/push"
)

// mercureBinEnv names the Mercure hub binary (the Mercure project's hub library on a plain HTTP
// listener) the real-hub test runs; scripts/mercure-build.sh builds it and .ci/run exports it.
const mercureBinEnv = "SVC_TEST_MERCURE_BIN"

// mercureHub is a real Mercure hub on 127.0.0.1 (transport local, HS256 publisher and subscriber
// keys), stopped at the end of the test.
type mercureHub struct {
	URL string // the hub endpoint, http://127.0.0.1:PORT/.well-known/mercure
	Key string // the publisher and subscriber JWT key
}

func startMercure(t *testing.T) *mercureHub {
	t.Helper()
	bin := os.Getenv(mercureBinEnv)
	if bin == "" {
		t.Skipf("%s is not set: build the hub with scripts/mercure-build.sh and export %s=<its output> to run this test",
			mercureBinEnv, mercureBinEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", mercureBinEnv, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	key := "svc-mercure-test-key-0123456789abcdef"
	dir := t.TempDir()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:"+strconv.Itoa(port), "-key", key)
	cmd.Dir = dir
	logFile, err := os.Create(filepath.Join(dir, "hub.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the Mercure hub: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	hub := &mercureHub{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/.well-known/mercure", Key: key}
	// Ready when the hub answers an anonymous subscription with 401 (anonymous is off).
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(hub.URL + "?topic=probe")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return hub
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "hub.log"))
			t.Fatalf("the Mercure hub exited: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond): // readiness poll of an external process
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "hub.log"))
			t.Fatalf("the Mercure hub did not answer within 15s\n%s", log)
		}
	}
}

// TestMercureHubEndToEnd points the service at a real Mercure hub: /sse/status and
// /sse/authorize describe it, a subscriber holding the token /sse/authorize hands out receives
// the task update published on user/{id}/tasks after the step, and the hub refuses anonymous
// subscribers (updates are private).
func TestMercureHubEndToEnd(t *testing.T) {
	t.Parallel()
	hub := startMercure(t)
	fake := newFakeOpenAI(t, "Pushed through Mercure.")
	env := apitest.New(t, "SVC_MERCURE_URL="+hub.URL, "SVC_MERCURE_JWT_KEY="+hub.Key,
		"SVC_LLM_DRIVER=openai", "SVC_LLM_MODEL=m", "SVC_LLM_BASE_URL="+fake.srv.URL+"/v1")
	// The hub checks the tokens' expiry against the real time, so the service's clock must read it
	// (the harness starts on a fixed date, which an hour later is past every token's expiry).
	env.Clock.Set(time.Now())
	c, u := env.UserClient("ada@example.com")

	var st gen.SseStatusResponse
	c.Get("/sse/status").Expect(t, 200).Decode(t, &st)
	if st.Data.Hub != gen.SseHub(push.KindMercure) || !st.Data.Available {
		t.Fatalf("status %+v", st.Data)
	}
	grant := authorize(t, c, "")
	if grant.Data.HubUrl != hub.URL || grant.Data.Hub != gen.SseHub(push.KindMercure) {
		t.Fatalf("grant %+v", grant.Data)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	subscribe := func(token string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, grant.Data.HubUrl+"?"+
			url.Values{"topic": {push.TaskTopic(u.Id)}}.Encode(), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	if resp := subscribe(""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous subscription: %d", resp.StatusCode)
	}
	resp := subscribe(grant.Data.Token)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscription with the granted token: %d", resp.StatusCode)
	}
	events := sseStream(t, resp) // the hub registers the subscriber before it answers

	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Pusher", "system_prompt": "Answer."}).Expect(t, 201).Decode(t, &a)
	var created gen.TaskResponse
	c.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": "Hi"}).Expect(t, 201).Decode(t, &created)
	tk := runQueued(t, env.App)
	if tk.ID != created.Data.Task.Id || tk.Status != "COMPLETED" {
		t.Fatalf("task %d %s", tk.ID, tk.Status)
	}
	var ev gen.Task
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &ev); err != nil {
		t.Fatalf("event is no task: %v", err)
	}
	if ev.Id != tk.ID || ev.Status != gen.TaskStatusCOMPLETED || ev.Answer == nil || *ev.Answer != "Pushed through Mercure." {
		t.Fatalf("event %+v", ev)
	}
}
