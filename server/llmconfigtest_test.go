package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsvc/svc/gen"
)

// refusingOpenAI answers every call 401 with the error body OpenAI sends for a wrong key.
func refusingOpenAI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (c *llmCast) test(t *testing.T, cl keyClient, id int64) gen.LlmConfigTest {
	t.Helper()
	var r gen.LlmConfigTestResponse
	cl.Post(c.cpath(id)+"/test", nil).Expect(t, 200).Decode(t, &r)
	return r.Data.Test
}

// TestTestLlmConfig: Test connection makes a real call through the step's driver and reports
// the provider's answer, its refusal (code, status, message) or the outbound screen's refusal;
// only those who may manage the configuration may spend its key.
func TestTestLlmConfig(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	ok := newFakeOpenAI(t, "OK")
	good := c.create(t, c.root, map[string]any{"name": "local", "driver": "openai", "model": "m1",
		"base_url": ok.srv.URL + "/v1", "api_key": keyMarker + "-1", "is_global": true})
	res := c.test(t, c.root, good.Id)
	if !res.Ok || res.Reply == nil || *res.Reply != "OK" || res.Model == nil || *res.Model != "m1" || res.ErrorCode != nil {
		t.Fatalf("test of a working configuration = %+v", res)
	}
	if calls := ok.Calls(); len(calls) != 1 || calls[0] != "m1|Bearer "+keyMarker+"-1" {
		t.Fatalf("provider saw %v, want one call with the configuration's model and key", calls)
	}

	bad := c.create(t, c.root, map[string]any{"name": "wrong key", "driver": "openai", "model": "m1",
		"base_url": refusingOpenAI(t).URL + "/v1", "api_key": keyMarker + "-2", "is_global": true})
	res = c.test(t, c.root, bad.Id)
	if res.Ok || res.ErrorCode == nil || *res.ErrorCode != "AUTH_ERROR" || res.StatusCode == nil || *res.StatusCode != 401 ||
		res.Message == nil || !strings.Contains(*res.Message, "Incorrect API key provided") {
		t.Fatalf("test of a refused key = %+v", res)
	}

	// A group configuration whose host llm_allowed_hosts no longer admits is refused at dial
	// time, and the answer names the setting.
	lan := c.create(t, c.owner, map[string]any{"name": "lan", "driver": "openai", "model": "llama", "base_url": "http://ollama.lan:11434/v1"})
	c.root.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"llm_allowed_hosts": "10.20.0.0/16"}}).Expect(t, 200)
	res = c.test(t, c.owner, lan.Id)
	if res.Ok || res.ErrorCode == nil || *res.ErrorCode != "BAD_REQUEST" || res.Message == nil || !strings.Contains(*res.Message, "llm_allowed_hosts") {
		t.Fatalf("test of a screened address = %+v", res)
	}

	c.member.Post(c.cpath(lan.Id)+"/test", nil).Expect(t, 403, "FORBIDDEN")
	c.stranger.Post(c.cpath(lan.Id)+"/test", nil).Expect(t, 404, "NOT_FOUND")
	c.owner.Post(c.cpath(good.Id)+"/test", nil).Expect(t, 403, "FORBIDDEN") // a global configuration spends the installation's key
	c.owner.Post(c.cpath(999999)+"/test", nil).Expect(t, 404, "NOT_FOUND")
}

// TestAgentLlmConfig: an agent shows the configuration its tasks would run with (its group's
// default, else the global default) or none; the global default is readable on its own.
func TestAgentLlmConfig(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	resolved := func(cl keyClient, path string) gen.ResolvedLlmConfigResponse {
		t.Helper()
		var r gen.ResolvedLlmConfigResponse
		cl.Get(path).Expect(t, 200).Decode(t, &r)
		return r
	}
	own := mkAgent(t, c.owner.Client, map[string]any{"name": "Mine"})
	grp := mkAgent(t, c.owner.Client, map[string]any{"name": "Team", "principal_id": c.group.PrincipalId})
	ownPath, grpPath := fmt.Sprintf("/agents/%d/llm-config", own.Id), fmt.Sprintf("/agents/%d/llm-config", grp.Id)
	for _, p := range []string{ownPath, grpPath, "/llm-configs/default"} {
		if r := resolved(c.owner, p); r.Data.LlmConfig != nil || r.Data.Source != nil {
			t.Fatalf("%s without any configuration = %+v", p, r.Data)
		}
	}

	global := c.create(t, c.root, map[string]any{"name": "everyone", "driver": "openai", "model": "g", "is_global": true, "is_default": true})
	for _, p := range []string{ownPath, grpPath, "/llm-configs/default"} {
		if r := resolved(c.owner, p); r.Data.LlmConfig == nil || r.Data.LlmConfig.Id != global.Id || *r.Data.Source != gen.ResolvedLlmConfigResponseDataSourceGlobal {
			t.Fatalf("%s with a global default = %+v", p, r.Data)
		}
	}
	team := c.create(t, c.owner, map[string]any{"name": "team", "driver": "openai", "model": "t", "is_default": true})
	if r := resolved(c.owner, grpPath); r.Data.LlmConfig == nil || r.Data.LlmConfig.Id != team.Id || *r.Data.Source != gen.ResolvedLlmConfigResponseDataSourceGroup {
		t.Fatalf("group agent with a group default = %+v", r.Data)
	}
	if r := resolved(c.owner, ownPath); r.Data.LlmConfig == nil || r.Data.LlmConfig.Id != global.Id {
		t.Fatalf("own agent = %+v, want the global default", r.Data)
	}
	c.stranger.Get(grpPath).Expect(t, 404, "NOT_FOUND")
}
