package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/platform/secret"
)

// Every API key in these tests contains keyMarker; no response body may contain it.
const keyMarker = "PLAINTEXT"

// keyClient is a client whose every response is checked for leaked API keys.
type keyClient struct {
	*apitest.Client
	t *testing.T
}

func (c keyClient) check(res *apitest.Response) *apitest.Response {
	c.t.Helper()
	if bytes.Contains(res.Body, []byte(keyMarker)) {
		c.t.Fatalf("an API key leaked into a response (%d): %s", res.Status, res.Body)
	}
	if bytes.Contains(res.Body, []byte(`"api_key":`)) {
		c.t.Fatalf("a response carries an api_key field: %s", res.Body)
	}
	return res
}

func (c keyClient) Get(path string) *apitest.Response {
	c.t.Helper()
	return c.check(c.Client.Get(path))
}
func (c keyClient) Post(path string, body any) *apitest.Response {
	c.t.Helper()
	return c.check(c.Client.Post(path, body))
}
func (c keyClient) Patch(path string, body any) *apitest.Response {
	c.t.Helper()
	return c.check(c.Client.Patch(path, body))
}
func (c keyClient) Delete(path string) *apitest.Response {
	c.t.Helper()
	return c.check(c.Client.Delete(path))
}

// llmCast is a groupCast whose clients check for leaked keys.
type llmCast struct {
	*groupCast
	root, owner, gadmin, member, stranger keyClient
	base                                  string // /groups/{id}/llm-configs
}

// llmHosts resolves the model endpoints of these tests; llm_allowed_hosts admits ollama.lan
// and 10.20.0.0/16.
var llmHosts = chatResolver{
	"llm.example.com":       {netip.MustParseAddr("93.184.216.34")},
	"ollama.lan":            {netip.MustParseAddr("192.168.7.7")},
	"internal.example.test": {netip.MustParseAddr("10.1.1.1")},
}

func newLLMCast(t *testing.T) *llmCast {
	t.Helper()
	g := groupCastOn(t, apitest.NewWith(t, apitest.Options{Net: netguard.Options{Resolver: llmHosts}},
		"SVC_LLM_ALLOWED_HOSTS=ollama.lan, 10.20.0.0/16"))
	w := func(c *apitest.Client) keyClient { return keyClient{Client: c, t: t} }
	return &llmCast{groupCast: g, root: w(g.root), owner: w(g.owner), gadmin: w(g.gadmin), member: w(g.member),
		stranger: w(g.stranger), base: g.path + "/llm-configs"}
}

func (c *llmCast) create(t *testing.T, cl keyClient, body map[string]any) gen.LlmConfig {
	t.Helper()
	var r gen.LlmConfigResponse
	cl.Post(c.base, body).Expect(t, 201).Decode(t, &r)
	return r.Data.LlmConfig
}

func (c *llmCast) list(t *testing.T, cl keyClient, query string) []gen.LlmConfig {
	t.Helper()
	var l gen.LlmConfigListResponse
	cl.Get(c.base+query).Expect(t, 200).Decode(t, &l)
	return l.Data.LlmConfigs
}

func (c *llmCast) cpath(id int64) string { return fmt.Sprintf("%s/%d", c.base, id) }

// sealedKey reads the stored form of a configuration's key, under the API.
func (c *llmCast) sealedKey(t *testing.T, id int64) string {
	t.Helper()
	cfg, err := c.env.App.Store.LLMConfig(context.Background(), c.group.Id, id)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.APIKeySealed
}

func configNames(cs []gen.LlmConfig) string {
	var out []string
	for _, c := range cs {
		flags := ""
		if c.IsDefault {
			flags += "*"
		}
		if c.IsGlobal {
			flags += "^"
		}
		out = append(out, c.Name+flags)
	}
	return strings.Join(out, ",")
}

func f32(v float32) *float32 { return &v }

func TestCreateLlmConfig(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	key := "sk-" + keyMarker + "-owner-0001"
	got := c.create(t, c.owner, map[string]any{
		"name": " GPT ", "driver": "openai", "model": "gpt-4.1-mini", "api_key": key, "temperature": 0.2,
		"max_tokens_output": 4096, "context_window": 128000, "timeout": 60, "is_default": true,
	})
	want := gen.LlmConfig{
		Id: got.Id, GroupId: c.group.Id, PrincipalId: c.group.PrincipalId, Name: "GPT", Driver: "openai", Model: "gpt-4.1-mini",
		ApiKeySet: true, Temperature: f32(0.2), MaxTokensOutput: ptrTo(4096), ContextWindow: ptrTo(128000), Timeout: ptrTo(60),
		IsDefault: true, CreatedAt: got.CreatedAt, UpdatedAt: got.CreatedAt,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}

	// At rest the key is sealed with the master key: no plaintext in the column.
	sealed := c.sealedKey(t, got.Id)
	if sealed == "" || strings.Contains(sealed, keyMarker) || strings.Contains(sealed, key) || !strings.HasPrefix(sealed, "v1:") {
		t.Fatalf("stored key = %q", sealed)
	}
	box, err := secret.NewBox(c.env.App.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := box.Open(sealed); err != nil || string(plain) != key {
		t.Fatalf("stored key opens to %q, %v", plain, err)
	}

	// A group admin creates too; an empty key means none.
	local := c.create(t, c.gadmin, map[string]any{"name": "Local", "driver": "openai", "model": "llama3.1:8b",
		"base_url": "http://10.20.0.5:11434/v1", "api_key": ""})
	if local.ApiKeySet || local.BaseUrl == nil || *local.BaseUrl != "http://10.20.0.5:11434/v1" || local.IsDefault || local.Temperature != nil {
		t.Fatalf("group admin's config = %+v", local)
	}
	// Administrators may create global configurations and scripted ones, in any group.
	shared := c.create(t, c.root, map[string]any{"name": "Shared", "driver": "anthropic", "model": "claude-sonnet",
		"api_key": "sk-" + keyMarker + "-root", "is_global": true, "is_default": true})
	if !shared.IsGlobal || !shared.IsDefault || !shared.ApiKeySet {
		t.Fatalf("global config = %+v", shared)
	}
	script := c.create(t, c.root, map[string]any{"name": "Script", "driver": "scripted", "model": "demo", "base_url": "scripts/demo.yaml"})
	if script.Driver != "scripted" || *script.BaseUrl != "scripts/demo.yaml" {
		t.Fatalf("scripted config = %+v", script)
	}
	const all = "GPT*,Local,Script,Shared*^"
	if got := configNames(c.list(t, c.owner, "")); got != all {
		t.Fatalf("configs = %s", got)
	}

	valid := func(mod map[string]any) map[string]any {
		b := map[string]any{"name": "New", "driver": "openai", "model": "gpt"}
		for k, v := range mod {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		cl     keyClient
		path   string
		body   any
		status int
		code   string
	}{
		{"plain member", c.member, c.base, valid(nil), 403, "FORBIDDEN"},
		{"stranger", c.stranger, c.base, valid(nil), 404, "NOT_FOUND"},
		{"unknown group", c.owner, "/groups/999999/llm-configs", valid(nil), 404, "NOT_FOUND"},
		{"owner makes it global", c.owner, c.base, valid(map[string]any{"is_global": true}), 403, "FORBIDDEN"},
		{"group admin uses the scripted driver", c.gadmin, c.base, valid(map[string]any{"driver": "scripted", "base_url": "s.yaml"}), 403, "FORBIDDEN"},
		{"name taken", c.owner, c.base, valid(map[string]any{"name": "GPT"}), 409, "CONFLICT"},
		{"name taken after trimming", c.gadmin, c.base, valid(map[string]any{"name": "Local  "}), 409, "CONFLICT"},
		{"missing model", c.owner, c.base, valid(map[string]any{"model": nil}), 422, "VALIDATION_ERROR"},
		{"missing driver", c.owner, c.base, valid(map[string]any{"driver": nil}), 422, "VALIDATION_ERROR"},
		{"unknown driver", c.owner, c.base, valid(map[string]any{"driver": "gemini"}), 422, "VALIDATION_ERROR"},
		{"blank name", c.owner, c.base, valid(map[string]any{"name": "  "}), 422, "VALIDATION_ERROR"},
		{"blank model", c.owner, c.base, valid(map[string]any{"model": " "}), 422, "VALIDATION_ERROR"},
		{"temperature out of range", c.owner, c.base, valid(map[string]any{"temperature": 2.5}), 422, "VALIDATION_ERROR"},
		{"temperature not a number", c.owner, c.base, valid(map[string]any{"temperature": "hot"}), 422, "VALIDATION_ERROR"},
		{"timeout out of range", c.owner, c.base, valid(map[string]any{"timeout": 3601}), 422, "VALIDATION_ERROR"},
		{"max tokens zero", c.owner, c.base, valid(map[string]any{"max_tokens_output": 0}), 422, "VALIDATION_ERROR"},
		{"base_url not a URL", c.owner, c.base, valid(map[string]any{"base_url": "api.example.com"}), 422, "VALIDATION_ERROR"},
		{"base_url ftp", c.owner, c.base, valid(map[string]any{"base_url": "ftp://example.com"}), 422, "VALIDATION_ERROR"},
		{"base_url with credentials", c.owner, c.base, valid(map[string]any{"base_url": "https://u:" + keyMarker + "@example.com"}), 422, "VALIDATION_ERROR"},
		{"scripted path outside", c.root, c.base, valid(map[string]any{"driver": "scripted", "base_url": "../../etc/passwd"}), 422, "VALIDATION_ERROR"},
		{"scripted without a path", c.root, c.base, valid(map[string]any{"driver": "scripted"}), 422, "VALIDATION_ERROR"},
		{"api_key too long", c.owner, c.base, valid(map[string]any{"api_key": keyMarker + strings.Repeat("k", 4097)}), 422, "VALIDATION_ERROR"},
		{"api_key not a string", c.owner, c.base, valid(map[string]any{"api_key": []string{keyMarker}}), 422, "VALIDATION_ERROR"},
		{"unknown field", c.owner, c.base, valid(map[string]any{"secret": keyMarker}), 422, "VALIDATION_ERROR"},
		{"api_key_set is read-only", c.owner, c.base, valid(map[string]any{"api_key_set": true}), 422, "VALIDATION_ERROR"},
		{"not JSON", c.owner, c.base, `{"api_key":"` + keyMarker, 400, "BAD_REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cl.Post(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if got := configNames(c.list(t, c.owner, "")); got != all {
		t.Fatalf("refused creations changed the configs: %s", got)
	}

	// A new default takes the flag from the previous one of its scope.
	c.create(t, c.owner, map[string]any{"name": "Newer", "driver": "openai", "model": "gpt", "is_default": true})
	if got := configNames(c.list(t, c.owner, "")); got != "GPT,Local,Newer*,Script,Shared*^" {
		t.Fatalf("after a new default = %s", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestListLlmConfigs(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	c.create(t, c.owner, map[string]any{"name": "zeta", "driver": "openai", "model": "m", "api_key": "sk-" + keyMarker + "-1"})
	c.create(t, c.owner, map[string]any{"name": "Alpha", "driver": "anthropic", "model": "m", "is_default": true})
	c.create(t, c.root, map[string]any{"name": "beta", "driver": "openai", "model": "m", "is_global": true})
	// Another group with a private and a global configuration.
	var other gen.GroupResponse
	c.stranger.Post("/groups", map[string]any{"name": "Other"}).Expect(t, 201).Decode(t, &other)
	otherBase := fmt.Sprintf("/groups/%d/llm-configs", other.Data.Group.Id)
	c.stranger.Post(otherBase, map[string]any{"name": "private", "driver": "openai", "model": "m", "api_key": "sk-" + keyMarker + "-2"}).Expect(t, 201)
	c.root.Post(otherBase, map[string]any{"name": "everyone", "driver": "openai", "model": "m", "is_global": true, "is_default": true}).Expect(t, 201)

	for _, tc := range []struct {
		name  string
		cl    keyClient
		query string
		want  string
	}{
		{"owner", c.owner, "", "Alpha*,beta^,zeta"},
		{"group admin", c.gadmin, "", "Alpha*,beta^,zeta"},
		{"member", c.member, "", "Alpha*,beta^,zeta"},
		{"administrator", c.root, "", "Alpha*,beta^,zeta"},
		{"explicitly without global", c.member, "?include_global=false", "Alpha*,beta^,zeta"},
		{"with the global configurations of other groups", c.member, "?include_global=true", "Alpha*,beta^,zeta,everyone*^"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := configNames(c.list(t, tc.cl, tc.query)); got != tc.want {
				t.Fatalf("list = %s, want %s", got, tc.want)
			}
		})
	}
	var l gen.LlmConfigListResponse
	c.stranger.Get(otherBase+"?include_global=true").Expect(t, 200).Decode(t, &l)
	if got := configNames(l.Data.LlmConfigs); got != "everyone*^,private,beta^" {
		t.Fatalf("the other group's list = %s", got)
	}
	if g := l.Data.LlmConfigs[2]; g.GroupId != c.group.Id || g.PrincipalId != c.group.PrincipalId {
		t.Fatalf("a global config names its owning group: %+v", g)
	}
	c.stranger.Get(c.base).Expect(t, 404, "NOT_FOUND")
	c.member.Get(otherBase).Expect(t, 404, "NOT_FOUND")
	c.owner.Get("/groups/999999/llm-configs").Expect(t, 404, "NOT_FOUND")
	c.owner.Get(c.base+"?include_global=maybe").Expect(t, 422, "VALIDATION_ERROR")
}

func TestUpdateLlmConfig(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	key1, key2 := "sk-"+keyMarker+"-first", "sk-"+keyMarker+"-second"
	gpt := c.create(t, c.owner, map[string]any{"name": "GPT", "driver": "openai", "model": "gpt-4.1", "api_key": key1,
		"base_url": "https://llm.example.com/v1", "temperature": 0.5, "max_tokens_output": 100, "context_window": 1000, "timeout": 30, "is_default": true})
	other := c.create(t, c.owner, map[string]any{"name": "Other", "driver": "openai", "model": "m"})
	global := c.create(t, c.root, map[string]any{"name": "Global", "driver": "openai", "model": "m", "is_global": true})
	script := c.create(t, c.root, map[string]any{"name": "Script", "driver": "scripted", "model": "m", "base_url": "s.yaml"})
	var foreign gen.GroupResponse
	c.stranger.Post("/groups", map[string]any{"name": "Foreign"}).Expect(t, 201).Decode(t, &foreign)
	var fc gen.LlmConfigResponse
	c.stranger.Post(fmt.Sprintf("/groups/%d/llm-configs", foreign.Data.Group.Id), map[string]any{"name": "f", "driver": "openai", "model": "m"}).
		Expect(t, 201).Decode(t, &fc)
	sealed1 := c.sealedKey(t, gpt.Id)
	before := c.list(t, c.owner, "")

	gp := c.cpath(gpt.Id)
	for _, tc := range []struct {
		name   string
		cl     keyClient
		path   string
		body   any
		status int
		code   string
	}{
		{"plain member", c.member, gp, map[string]any{"model": "x"}, 403, "FORBIDDEN"},
		{"stranger", c.stranger, gp, map[string]any{"model": "x"}, 404, "NOT_FOUND"},
		{"unknown configuration", c.owner, c.cpath(999999), map[string]any{"model": "x"}, 404, "NOT_FOUND"},
		{"another group's configuration", c.owner, c.cpath(fc.Data.LlmConfig.Id), map[string]any{"model": "x"}, 404, "NOT_FOUND"},
		{"unknown group", c.owner, fmt.Sprintf("/groups/999999/llm-configs/%d", gpt.Id), map[string]any{"model": "x"}, 404, "NOT_FOUND"},
		{"owner edits a global configuration", c.owner, c.cpath(global.Id), map[string]any{"model": "x"}, 403, "FORBIDDEN"},
		{"owner makes it global", c.owner, gp, map[string]any{"is_global": true}, 403, "FORBIDDEN"},
		{"owner switches to scripted", c.owner, gp, map[string]any{"driver": "scripted", "base_url": "s.yaml"}, 403, "FORBIDDEN"},
		{"group admin edits a scripted configuration", c.gadmin, c.cpath(script.Id), map[string]any{"base_url": "other.yaml"}, 403, "FORBIDDEN"},
		{"name taken", c.owner, gp, map[string]any{"name": "Other"}, 409, "CONFLICT"},
		{"empty body", c.owner, gp, map[string]any{}, 422, "VALIDATION_ERROR"},
		{"set and cleared", c.owner, gp, map[string]any{"timeout": 10, "clear": []string{"timeout"}}, 422, "VALIDATION_ERROR"},
		{"key set and cleared", c.owner, gp, map[string]any{"api_key": key2, "clear": []string{"api_key"}}, 422, "VALIDATION_ERROR"},
		{"unknown clear field", c.owner, gp, map[string]any{"clear": []string{"name"}}, 422, "VALIDATION_ERROR"},
		{"duplicate clear field", c.owner, gp, map[string]any{"clear": []string{"timeout", "timeout"}}, 422, "VALIDATION_ERROR"},
		{"empty api_key", c.owner, gp, map[string]any{"api_key": ""}, 422, "VALIDATION_ERROR"},
		{"empty base_url", c.owner, gp, map[string]any{"base_url": ""}, 422, "VALIDATION_ERROR"},
		{"bad base_url", c.owner, gp, map[string]any{"base_url": "mailto:x@example.com"}, 422, "VALIDATION_ERROR"},
		{"blank name", c.owner, gp, map[string]any{"name": " "}, 422, "VALIDATION_ERROR"},
		{"temperature out of range", c.owner, gp, map[string]any{"temperature": -1}, 422, "VALIDATION_ERROR"},
		{"scripted without a path", c.root, c.cpath(other.Id), map[string]any{"driver": "scripted"}, 422, "VALIDATION_ERROR"},
		{"api_key too long", c.owner, gp, map[string]any{"api_key": keyMarker + strings.Repeat("k", 4096)}, 422, "VALIDATION_ERROR"},
		{"null field", c.owner, gp, map[string]any{"base_url": nil}, 422, "VALIDATION_ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cl.Patch(tc.path, tc.body).Expect(t, tc.status, tc.code)
		})
	}
	if after := c.list(t, c.owner, ""); !cmp.Equal(before, after) {
		t.Fatalf("refused updates changed the configs:\n%s", cmp.Diff(before, after))
	}
	if c.sealedKey(t, gpt.Id) != sealed1 {
		t.Fatal("a refused update replaced the key")
	}

	// Omitted fields keep their value.
	c.env.Clock.Advance(60e9)
	var r gen.LlmConfigResponse
	c.gadmin.Patch(gp, map[string]any{"model": "gpt-4.1-mini", "temperature": 0.1}).Expect(t, 200).Decode(t, &r)
	want := gpt
	want.Model, want.Temperature, want.UpdatedAt = "gpt-4.1-mini", f32(0.1), r.Data.LlmConfig.UpdatedAt
	if diff := cmp.Diff(want, r.Data.LlmConfig); diff != "" || !want.UpdatedAt.After(gpt.UpdatedAt) {
		t.Fatalf("partial update (-want +got):\n%s", diff)
	}
	// A new key replaces the stored one (sealed afresh); clear removes fields and the key.
	c.owner.Patch(gp, map[string]any{"api_key": key2}).Expect(t, 200).Decode(t, &r)
	sealed2 := c.sealedKey(t, gpt.Id)
	if !r.Data.LlmConfig.ApiKeySet || sealed2 == sealed1 || strings.Contains(sealed2, keyMarker) {
		t.Fatalf("replaced key: set=%v, stored %q", r.Data.LlmConfig.ApiKeySet, sealed2)
	}
	box, _ := secret.NewBox(c.env.App.MasterKey)
	if plain, err := box.Open(sealed2); err != nil || string(plain) != key2 {
		t.Fatalf("replaced key opens to %q, %v", plain, err)
	}
	c.owner.Patch(gp, map[string]any{"clear": []string{"api_key", "base_url", "temperature", "max_tokens_output", "context_window", "timeout"}}).
		Expect(t, 200).Decode(t, &r)
	got := r.Data.LlmConfig
	if got.ApiKeySet || got.BaseUrl != nil || got.Temperature != nil || got.MaxTokensOutput != nil || got.ContextWindow != nil || got.Timeout != nil || !got.IsDefault {
		t.Fatalf("after clear = %+v", got)
	}
	if c.sealedKey(t, gpt.Id) != "" {
		t.Fatal("the cleared key is still stored")
	}

	// Renames, default flag, and the administrator-only changes.
	c.owner.Patch(gp, map[string]any{"name": "GPT renamed", "is_default": false}).Expect(t, 200).Decode(t, &r)
	if r.Data.LlmConfig.Name != "GPT renamed" || r.Data.LlmConfig.IsDefault {
		t.Fatalf("renamed = %+v", r.Data.LlmConfig)
	}
	c.owner.Patch(c.cpath(other.Id), map[string]any{"is_default": true, "is_global": false}).Expect(t, 200) // is_global unchanged: allowed
	c.root.Patch(c.cpath(other.Id), map[string]any{"is_global": true}).Expect(t, 200).Decode(t, &r)
	if !r.Data.LlmConfig.IsGlobal || r.Data.LlmConfig.IsDefault {
		t.Fatalf("made global (drops the group default) = %+v", r.Data.LlmConfig)
	}
	c.root.Patch(c.cpath(global.Id), map[string]any{"is_global": false, "is_default": true}).Expect(t, 200).Decode(t, &r)
	if r.Data.LlmConfig.IsGlobal || !r.Data.LlmConfig.IsDefault {
		t.Fatalf("made a group default = %+v", r.Data.LlmConfig)
	}
	c.owner.Patch(c.cpath(global.Id), map[string]any{"model": "now mine"}).Expect(t, 200) // no longer global
	c.root.Patch(c.cpath(script.Id), map[string]any{"driver": "openai", "clear": []string{"base_url"}}).Expect(t, 200)
	c.gadmin.Patch(c.cpath(script.Id), map[string]any{"model": "m2"}).Expect(t, 200) // no longer scripted
	if got := configNames(c.list(t, c.owner, "")); got != "Global*,GPT renamed,Other^,Script" {
		t.Fatalf("configs at the end = %s", got)
	}
}

func TestSetDefaultAndDeleteLlmConfig(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	a := c.create(t, c.owner, map[string]any{"name": "a", "driver": "openai", "model": "m", "is_default": true, "api_key": "sk-" + keyMarker})
	b := c.create(t, c.owner, map[string]any{"name": "b", "driver": "openai", "model": "m"})
	g1 := c.create(t, c.root, map[string]any{"name": "g1", "driver": "openai", "model": "m", "is_global": true, "is_default": true})
	var other gen.GroupResponse
	c.stranger.Post("/groups", map[string]any{"name": "Other"}).Expect(t, 201).Decode(t, &other)
	otherBase := fmt.Sprintf("/groups/%d/llm-configs", other.Data.Group.Id)
	var og gen.LlmConfigResponse
	c.root.Post(otherBase, map[string]any{"name": "g2", "driver": "openai", "model": "m", "is_global": true}).Expect(t, 201).Decode(t, &og)
	var od gen.LlmConfigResponse
	c.stranger.Post(otherBase, map[string]any{"name": "theirs", "driver": "openai", "model": "m", "is_default": true}).Expect(t, 201).Decode(t, &od)
	state := func() string {
		t.Helper()
		return configNames(c.list(t, c.owner, "?include_global=true"))
	}
	const start = "a*,b,g1*^,g2^"
	if got := state(); got != start {
		t.Fatalf("start = %s", got)
	}

	sd := func(id int64) string { return c.cpath(id) + "/set-default" }
	for _, tc := range []struct {
		name   string
		cl     keyClient
		path   string
		status int
		code   string
	}{
		{"plain member", c.member, sd(b.Id), 403, "FORBIDDEN"},
		{"stranger", c.stranger, sd(b.Id), 404, "NOT_FOUND"},
		{"owner: a global configuration", c.owner, sd(g1.Id), 403, "FORBIDDEN"},
		{"unknown configuration", c.owner, sd(999999), 404, "NOT_FOUND"},
		{"another group's global configuration", c.root, sd(og.Data.LlmConfig.Id), 404, "NOT_FOUND"},
		{"unknown group", c.owner, fmt.Sprintf("/groups/999999/llm-configs/%d/set-default", b.Id), 404, "NOT_FOUND"},
		{"id not a number", c.owner, c.base + "/x/set-default", 422, "VALIDATION_ERROR"},
	} {
		t.Run("set-default: "+tc.name, func(t *testing.T) {
			tc.cl.Post(tc.path, nil).Expect(t, tc.status, tc.code)
		})
	}
	if got := state(); got != start {
		t.Fatalf("refused set-defaults changed the flags: %s", got)
	}

	var r gen.LlmConfigResponse
	c.gadmin.Post(sd(b.Id), nil).Expect(t, 200).Decode(t, &r)
	if !r.Data.LlmConfig.IsDefault || r.Data.LlmConfig.Id != b.Id {
		t.Fatalf("set-default = %+v", r.Data.LlmConfig)
	}
	c.owner.Post(sd(b.Id), nil).Expect(t, 200) // idempotent
	if got := state(); got != "a,b*,g1*^,g2^" {
		t.Fatalf("after set-default = %s", got)
	}
	// The global scope spans groups; group defaults stay.
	c.root.Post(otherBase+fmt.Sprintf("/%d/set-default", og.Data.LlmConfig.Id), nil).Expect(t, 200)
	if got := state(); got != "a,b*,g1^,g2*^" {
		t.Fatalf("after a global set-default = %s", got)
	}
	c.root.Post(sd(g1.Id), nil).Expect(t, 200)
	if got := state(); got != "a,b*,g1*^,g2^" {
		t.Fatalf("after the global default came back = %s", got)
	}
	var theirs gen.LlmConfigListResponse
	c.stranger.Get(otherBase).Expect(t, 200).Decode(t, &theirs)
	if got := configNames(theirs.Data.LlmConfigs); got != "g2^,theirs*" {
		t.Fatalf("the other group's own default must stay: %s", got)
	}

	for _, tc := range []struct {
		name   string
		cl     keyClient
		path   string
		status int
		code   string
	}{
		{"plain member", c.member, c.cpath(a.Id), 403, "FORBIDDEN"},
		{"stranger", c.stranger, c.cpath(a.Id), 404, "NOT_FOUND"},
		{"owner: a global configuration", c.owner, c.cpath(g1.Id), 403, "FORBIDDEN"},
		{"group admin: a global configuration", c.gadmin, c.cpath(g1.Id), 403, "FORBIDDEN"},
		{"another group's configuration", c.owner, c.cpath(od.Data.LlmConfig.Id), 404, "NOT_FOUND"},
		{"unknown configuration", c.owner, c.cpath(999999), 404, "NOT_FOUND"},
	} {
		t.Run("delete: "+tc.name, func(t *testing.T) {
			tc.cl.Delete(tc.path).Expect(t, tc.status, tc.code)
		})
	}
	if got := state(); got != "a,b*,g1*^,g2^" {
		t.Fatalf("refused deletions changed the configs: %s", got)
	}
	c.gadmin.Delete(c.cpath(a.Id)).Expect(t, 200)
	c.owner.Delete(c.cpath(b.Id)).Expect(t, 200) // the default: the group is left without one
	c.root.Delete(c.cpath(g1.Id)).Expect(t, 200)
	c.owner.Delete(c.cpath(b.Id)).Expect(t, 404, "NOT_FOUND")
	if got := state(); got != "g2^" {
		t.Fatalf("after deletions = %s", got)
	}
	c.owner.Patch(c.cpath(a.Id), map[string]any{"model": "x"}).Expect(t, 404, "NOT_FOUND")
}

// TestLlmConfigBaseURLScreen: a group configuration's base_url must reach a public address or a
// host of llm_allowed_hosts (metadata endpoints, loopback and private networks answer 422 and
// nothing is written); global configurations, the administrators' own, are not screened.
func TestLlmConfigBaseURLScreen(t *testing.T) {
	t.Parallel()
	c := newLLMCast(t)
	cfg := func(name, url string) map[string]any {
		return map[string]any{"name": name, "driver": "openai", "model": "m", "base_url": url}
	}
	ok := c.create(t, c.owner, cfg("Public", "https://llm.example.com/v1"))
	before := c.list(t, c.owner, "")
	var msgs []string
	for _, tc := range []struct {
		who  keyClient
		name string
		url  string
	}{
		{c.owner, "metadata", "http://169.254.169.254/latest/meta-data/"},
		{c.gadmin, "loopback", "http://127.0.0.1:11434/v1"},
		{c.owner, "localhost", "http://localhost:11434/v1"},
		{c.owner, "private name", "https://internal.example.test/v1"},
		{c.owner, "unresolvable", "https://nowhere.example.test/v1"},
		{c.root, "administrator, group configuration", "http://127.0.0.1:11434/v1"},
	} {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		tc.who.Post(c.base, cfg(tc.name, tc.url)).Expect(t, 422, "VALIDATION_ERROR").Decode(t, &e)
		if !strings.Contains(e.Error.Message, "base_url") || !strings.Contains(e.Error.Message, "llm_allowed_hosts") {
			t.Errorf("%s: message %q", tc.name, e.Error.Message)
		}
		msgs = append(msgs, e.Error.Message)
		c.owner.Patch(c.cpath(ok.Id), map[string]any{"base_url": tc.url}).Expect(t, 422, "VALIDATION_ERROR")
	}
	if strings.Replace(msgs[3], "internal.example.test", "H", 1) != strings.Replace(msgs[4], "nowhere.example.test", "H", 1) {
		t.Errorf("private and unresolvable hosts answer differently: %q, %q", msgs[3], msgs[4])
	}
	if diff := cmp.Diff(before, c.list(t, c.owner, "")); diff != "" {
		t.Fatalf("refused writes changed the configurations (-before +after):\n%s", diff)
	}
	// llm_allowed_hosts: a listed name (whatever it resolves to) and a listed network.
	c.create(t, c.owner, cfg("Ollama", "http://ollama.lan:11434/v1"))
	c.owner.Patch(c.cpath(ok.Id), map[string]any{"base_url": "http://10.20.1.2:8000/v1"}).Expect(t, 200)
	// Global configurations are trusted; made a group configuration again, they are screened.
	global := c.create(t, c.root, map[string]any{"name": "Global", "driver": "openai", "model": "m",
		"base_url": "http://127.0.0.1:11434/v1", "is_global": true})
	c.root.Patch(c.cpath(global.Id), map[string]any{"base_url": "http://169.254.169.254/"}).Expect(t, 200)
	c.root.Patch(c.cpath(global.Id), map[string]any{"is_global": false}).Expect(t, 422, "VALIDATION_ERROR")
}
