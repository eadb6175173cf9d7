package server_test

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/apikey"
)

// gateProbes are per-agent API requests that reach the gate; the handlers behind them are not
// what these tests check, only the gate's outcomes.
var gateProbes = []struct{ method, path string }{
	{http.MethodGet, "/agent-api/chats"},
	{http.MethodGet, "/agent-api/chats/1/status"},
	{http.MethodPost, "/agent-api/chats/1/reject"},
	{http.MethodGet, "/agent-api/media/med_x"},
}

// keyEnv is a service with one user, one agent and a key for it.
type keyEnv struct {
	env   *apitest.Env
	owner *apitest.Client
	agent gen.Agent
	key   gen.AgentApiKeyWithSecret
	// skew moves the configuration loader's clock, so a rewritten file is seen at once.
	skew atomic.Int64
}

func newKeyEnv(t *testing.T, env ...string) *keyEnv {
	t.Helper()
	k := &keyEnv{env: apitest.New(t, env...)}
	k.env.App.Config.WithClock(func() time.Time { return time.Now().Add(time.Duration(k.skew.Load())) })
	k.owner, _ = k.env.UserClient("owner@example.com")
	k.agent = mkAgent(t, k.owner, map[string]any{"name": "Keyed"})
	k.key = mintKey(t, k.owner, k.agent.Id, "integration")
	return k
}

// writeConfig replaces the configuration file and makes the loader look at it on the next
// request (it re-reads the file at most once a second).
func (k *keyEnv) writeConfig(t *testing.T, yaml string) {
	t.Helper()
	if err := os.WriteFile(k.env.App.Config.Path(), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	k.skew.Add(int64(2 * time.Second))
}

func (k *keyEnv) call(method, path, auth string) *apitest.Response {
	return agentAPI(k.env, nil, method, path, auth)
}

// expectDisabled checks that every probe, and every other method or path under /agent-api,
// answers 404 AGENT_API_DISABLED naming what to change (setting), even with a valid key.
func expectDisabled(t *testing.T, k *keyEnv, setting string) {
	t.Helper()
	probes := append([]struct{ method, path string }{}, gateProbes...)
	probes = append(probes, struct{ method, path string }{http.MethodDelete, "/agent-api/chats"},
		struct{ method, path string }{http.MethodGet, "/agent-api/nope"}, struct{ method, path string }{http.MethodGet, "/agent-api"})
	for _, p := range probes {
		for _, auth := range []string{"Bearer " + k.key.Key, "", "Bearer nonsense"} {
			res := k.call(p.method, p.path, auth).Expect(t, http.StatusNotFound, "AGENT_API_DISABLED")
			var env gen.Error
			res.Decode(t, &env)
			if msg := env.Error.Message; !strings.Contains(msg, setting) {
				t.Fatalf("%s %s (auth %q): message %q does not name %s", p.method, p.path, auth, msg, setting)
			}
		}
	}
}

// expectMounted checks that the gate lets a valid key through and refuses a request without one.
func expectMounted(t *testing.T, k *keyEnv) {
	t.Helper()
	for _, p := range gateProbes {
		k.call(p.method, p.path, "").Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")
		res := k.call(p.method, p.path, "Bearer "+k.key.Key)
		if res.Status == http.StatusUnauthorized || strings.Contains(string(res.Body), "no route for") {
			t.Fatalf("%s %s with a valid key = %d %s", p.method, p.path, res.Status, res.Body)
		}
	}
}

func TestAgentAPIMount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		off  string // "": mounted; else the setting the refusal names
	}{
		{"off by default", nil, "SVC_AGENT_API"},
		{"switched off", []string{"SVC_AGENT_API=false"}, "SVC_AGENT_API"},
		{"on in server mode", []string{"SVC_AGENT_API=true"}, ""},
		{"on in client mode", []string{"SVC_AGENT_API=true", "SVC_WORKER_RUNTIME_MODE=client"}, "SVC_WORKER_RUNTIME_MODE"},
		{"on in explicit server mode", []string{"SVC_AGENT_API=true", "SVC_WORKER_RUNTIME_MODE=server"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newKeyEnv(t, tc.env...) // key management works either way
			if tc.off == "" {
				expectMounted(t, k)
			} else {
				expectDisabled(t, k, tc.off)
			}
			listKeys(t, k.owner, k.agent.Id)
			k.owner.Delete(apiKeysPath(k.agent.Id)+"/"+k.key.Id).Expect(t, http.StatusOK)
		})
	}
}

func TestAgentAPIMountAtRuntime(t *testing.T) {
	t.Parallel()
	k := newKeyEnv(t)
	expectDisabled(t, k, "SVC_AGENT_API")
	k.writeConfig(t, "SVC_AGENT_API: true\n")
	expectMounted(t, k)
	k.writeConfig(t, "SVC_AGENT_API: true\nworker_runtime_mode: client\n")
	expectDisabled(t, k, "SVC_WORKER_RUNTIME_MODE")
	k.writeConfig(t, "SVC_AGENT_API: true\nworker_runtime_mode: server\n")
	expectMounted(t, k)
	k.writeConfig(t, "SVC_AGENT_API: false\n")
	expectDisabled(t, k, "SVC_AGENT_API")
}

func TestAgentAPIAuthentication(t *testing.T) {
	t.Parallel()
	k := newKeyEnv(t, "SVC_AGENT_API=true")
	revoked := mintKey(t, k.owner, k.agent.Id, "revoked")
	k.owner.Delete(apiKeysPath(k.agent.Id)+"/"+revoked.Id).Expect(t, http.StatusOK)
	id, secret, err := apikey.Parse(k.key.Key)
	if err != nil {
		t.Fatal(err)
	}
	wrong := []byte(secret)
	wrong[len(wrong)-1] ^= 1

	refused := []struct{ name, auth string }{
		{"missing", ""},
		{"basic", "Basic " + k.key.Key},
		{"no scheme", k.key.Key},
		{"empty bearer", "Bearer "},
		{"malformed", "Bearer svk_" + id},
		{"malformed secret", "Bearer svk_" + id + "_" + secret + "!"},
		{"unknown id", "Bearer " + apikey.Mint().Key},
		{"wrong secret", "Bearer svk_" + id + "_" + string(wrong)},
		{"revoked", "Bearer " + revoked.Key},
		{"secret alone", "Bearer " + secret},
	}
	var first string
	for _, tc := range refused {
		for _, p := range gateProbes {
			res := k.call(p.method, p.path, tc.auth).Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")
			if first == "" {
				first = string(res.Body)
			}
			if string(res.Body) != first {
				t.Fatalf("%s on %s %s = %s, other refusals = %s: refusals must be indistinguishable", tc.name, p.method, p.path, res.Body, first)
			}
		}
	}

	// A session cookie (with its CSRF token) is never accepted in place of a key, nor needed.
	for _, p := range gateProbes {
		agentAPI(k.env, k.owner, p.method, p.path, "").Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")
		if string(agentAPI(k.env, k.owner, p.method, p.path, "").Body) != first {
			t.Fatal("a session-only request is refused differently")
		}
		if res := agentAPI(k.env, k.owner, p.method, p.path, "Bearer "+k.key.Key); res.Status == http.StatusUnauthorized {
			t.Fatalf("a valid key with a session cookie = %d %s", res.Status, res.Body)
		}
	}
	if res := k.call(http.MethodGet, "/agent-api/chats", "bearer "+k.key.Key); res.Status != http.StatusOK {
		t.Fatalf("lower-case scheme = %d %s", res.Status, res.Body)
	}
}

func TestAgentAPIRateLimit(t *testing.T) {
	t.Parallel()
	k := newKeyEnv(t, "SVC_AGENT_API=true")
	other := mintKey(t, k.owner, k.agent.Id, "other")
	auth, otherAuth := "Bearer "+k.key.Key, "Bearer "+other.Key
	probe := func(auth string) *apitest.Response { return k.call(http.MethodGet, "/agent-api/chats", auth) }

	for i := range 60 {
		if res := probe(auth); res.Status != http.StatusOK {
			t.Fatalf("request %d = %d %s", i+1, res.Status, res.Body)
		}
	}
	res := probe(auth).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS")
	wait, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || wait < 1 || wait > 120 {
		t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
	// Refused requests still fail the other gate checks first: a bad key is 401, not 429.
	k.call(http.MethodGet, "/agent-api/chats", "Bearer "+apikey.Mint().Key).Expect(t, http.StatusUnauthorized)
	// The budget is per key.
	probe(otherAuth).Expect(t, http.StatusOK)

	k.env.Clock.Advance(time.Duration(wait-1) * time.Second)
	probe(auth).Expect(t, http.StatusTooManyRequests)
	k.env.Clock.Advance(time.Second)
	probe(auth).Expect(t, http.StatusOK)

	// A budget changed at runtime applies to the next request.
	k.writeConfig(t, "SVC_AGENT_API: true\nSVC_AGENT_API_RATE_LIMIT_MAX: 3\n")
	for range 3 {
		probe(otherAuth).Expect(t, http.StatusOK)
	}
	probe(otherAuth).Expect(t, http.StatusTooManyRequests, "TOO_MANY_REQUESTS")
	k.env.Clock.Advance(2 * time.Minute)
	probe(otherAuth).Expect(t, http.StatusOK)
}
