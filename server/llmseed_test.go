package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/llm/llmfake"
	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/account"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/server"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// fakeOpenAI is an OpenAI-compatible /chat/completions endpoint answering with plain text; it
// records the model and the Authorization header of each call.
type fakeOpenAI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // "model|authorization"
}

func newFakeOpenAI(t *testing.T, answer string) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.calls = append(f.calls, req.Model+"|"+r.Header.Get("Authorization"))
		f.mu.Unlock()
		llmfake.WriteOpenAIAnswer(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": answer}, "stop")
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// runQueued claims the oldest queued task and runs it to a quiescent state, synchronously.
func runQueued(t *testing.T, app *server.App) *store.Task {
	t.Helper()
	ctx := context.Background()
	got, err := app.Store.ClaimQueued(ctx, "test-worker", time.Hour, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	app.Loop.Run(ctx, nil, &got[0], "test-worker")
	if _, err := app.DrainNotifications(ctx); err != nil { // what the run's transitions tell
		t.Fatal(err)
	}
	tk, err := app.Store.Task(ctx, got[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// openOn starts the service on st with env, as svc serve would on a restart.
func openOn(t *testing.T, st *store.Store, env ...string) *server.App {
	t.Helper()
	dir := t.TempDir()
	environ := append([]string{
		"SVC_CONFIG_FILE=" + filepath.Join(dir, "config.yaml"),
		"SVC_SECRET_KEY=BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
		"SVC_LOG_PATH=stdout",
	}, env...)
	app, err := server.Open(context.Background(), config.NewLoader(environ), server.Options{
		Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Hash: account.HashParams{MemoryKiB: 1024, Time: 1, Threads: 1},
	})
	if err != nil {
		t.Fatalf("open app: %v", err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// globalConfigs lists every global model configuration of every group.
func globalConfigs(t *testing.T, st *store.Store) []store.LLMConfig {
	t.Helper()
	ctx := context.Background()
	groups, err := st.ListGroups(ctx, 0, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.LLMConfig
	for _, g := range groups {
		cs, err := st.ListLLMConfigs(ctx, g.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.IsGlobal {
				out = append(out, c)
			}
		}
	}
	return out
}

// A new user's personal agent runs with the configuration seeded from SVC_LLM_*.
func TestLLMSeedRunsANewUsersFirstTask(t *testing.T) {
	t.Parallel()
	fake := newFakeOpenAI(t, "Hello from the seeded model.")
	env := apitest.New(t, "SVC_LLM_DRIVER=openai", "SVC_LLM_MODEL=gpt-seed", "SVC_LLM_BASE_URL="+fake.srv.URL+"/v1",
		"SVC_LLM_API_KEY=sk-seed-secret")
	_, _ = env.UserClient("admin@example.com") // the first account is the administrator
	c, _ := env.UserClient("new@example.com")

	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Helper", "system_prompt": "Be brief."}).Expect(t, 201).Decode(t, &a)
	c.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": "Hi"}).Expect(t, 201)
	tk := runQueued(t, env.App)
	if tk.Status != taskstate.Completed || tk.Answer == nil || *tk.Answer != "Hello from the seeded model." {
		t.Fatalf("task = %s %v %+v", tk.Status, tk.Answer, tk.Error)
	}
	if calls := fake.Calls(); len(calls) != 1 || calls[0] != "gpt-seed|Bearer sk-seed-secret" {
		t.Errorf("model calls %q", calls)
	}

	// The configuration is visible as a global one, its key set but never shown.
	cfgs := globalConfigs(t, env.App.Store)
	if len(cfgs) != 1 || !cfgs[0].IsDefault || cfgs[0].Name != "Default model" || cfgs[0].APIKeySealed == "" ||
		cfgs[0].APIKeySealed == "sk-seed-secret" {
		t.Fatalf("global configurations %+v", cfgs)
	}
	admin := env.Client()
	admin.Login("admin@example.com", "password-admin@example.com")
	r := admin.Get(fmt.Sprintf("/groups/%d/llm-configs", cfgs[0].GroupID)).Expect(t, 200)
	if body := string(r.Body); !json.Valid(r.Body) || strings.Contains(body, "sk-seed-secret") || !strings.Contains(body, `"api_key_set":true`) {
		t.Errorf("listing: %s", body)
	}
}

// A restart with a new model updates the seeded configuration in place; without SVC_LLM_*
// nothing is seeded and nothing is removed.
func TestLLMSeedRestart(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	openOn(t, st).Close()
	if cfgs := globalConfigs(t, st); len(cfgs) != 0 {
		t.Fatalf("seeded without SVC_LLM_*: %+v", cfgs)
	}

	openOn(t, st, "SVC_LLM_DRIVER=openai", "SVC_LLM_MODEL=m1", "SVC_LLM_API_KEY=k1").Close()
	first := globalConfigs(t, st)
	if len(first) != 1 || first[0].Model != "m1" || !first[0].IsDefault || first[0].BaseURL != nil {
		t.Fatalf("first start: %+v", first)
	}

	openOn(t, st, "SVC_LLM_DRIVER=anthropic", "SVC_LLM_MODEL=m2", "SVC_LLM_API_KEY=k1",
		"SVC_LLM_BASE_URL=http://127.0.0.1:9/anthropic").Close()
	second := globalConfigs(t, st)
	if len(second) != 1 || second[0].ID != first[0].ID || second[0].Model != "m2" || second[0].Driver != "anthropic" ||
		second[0].BaseURL == nil || *second[0].BaseURL != "http://127.0.0.1:9/anthropic" {
		t.Fatalf("restart: %+v", second)
	}
	if second[0].APIKeySealed != first[0].APIKeySealed {
		t.Error("the same key was sealed again on restart")
	}

	openOn(t, st, "SVC_LLM_DRIVER=anthropic", "SVC_LLM_MODEL=m2", "SVC_LLM_API_KEY=k2").Close()
	third := globalConfigs(t, st)
	if len(third) != 1 || third[0].APIKeySealed == second[0].APIKeySealed {
		t.Fatalf("new key not stored: %+v", third)
	}

	openOn(t, st).Close()
	if cfgs := globalConfigs(t, st); len(cfgs) != 1 || cfgs[0].ID != first[0].ID {
		t.Fatalf("start without SVC_LLM_*: %+v", cfgs)
	}
}

// Nothing is seeded without the environment: a new user's task fails with NO_LLM_CONFIGURATION.
func TestLLMSeedNothingWithoutEnv(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("solo@example.com")
	var a gen.AgentResponse
	c.Post("/agents", map[string]any{"name": "Helper", "system_prompt": "Be brief."}).Expect(t, 201).Decode(t, &a)
	c.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": "Hi"}).Expect(t, 201)
	tk := runQueued(t, env.App)
	if tk.Status != taskstate.Failed || tk.Error == nil || tk.Error.Code != taskstate.CodeNoLLMConfiguration {
		t.Fatalf("task = %s %+v", tk.Status, tk.Error)
	}
	if cfgs := globalConfigs(t, env.App.Store); len(cfgs) != 0 {
		t.Fatalf("seeded: %+v", cfgs)
	}
}

// TestFakeModelsStream: the fake OpenAI-compatible endpoints answer a streamed call (the agent
// loop streams every model call) with the same answer as a plain one.
func TestFakeModelsStream(t *testing.T) {
	t.Parallel()
	complete := func(t *testing.T, base string, req llm.Request) (*llm.Response, string) {
		t.Helper()
		d, err := llm.New(llm.Config{Driver: llm.DriverOpenAI, Model: "m", BaseURL: base + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		var streamed strings.Builder
		req.OnDelta = func(d llm.Delta) { streamed.WriteString(d.Text) }
		res, err := d.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.OnDelta = nil
		plain, err := d.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, plain) {
			t.Errorf("streamed %+v, plain %+v", res, plain)
		}
		return res, streamed.String()
	}
	res, text := complete(t, newFakeOpenAI(t, "Hello from the fake").srv.URL, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}})
	if res.Text != "Hello from the fake" || text != res.Text || res.Usage != (llm.Usage{InputTokens: 5, OutputTokens: 3}) {
		t.Errorf("seed fake: %+v, deltas %q", res, text)
	}
	drill := newDrillModel(t, "http://hits.invalid")
	res, _ = complete(t, drill.URL, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "drill-7"}},
		Tools: []llm.ToolDef{{Name: "read_url"}}})
	if len(res.ToolCalls) != drillCalls || res.StopReason != llm.StopToolUse || res.ToolCalls[0].Name != "read_url" || res.ToolCalls[0].ID != "call_7_0_0" {
		t.Errorf("drill fake: %+v", res)
	}
}
