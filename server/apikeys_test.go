package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/apikey"
)

var agentKeyPattern = regexp.MustCompile(`^svk_[a-z2-7]{16}_[A-Za-z0-9]{43}$`)

func apiKeysPath(agentID int64) string { return fmt.Sprintf("/agents/%d/api-keys", agentID) }

// mintKey mints a key through the API and checks the 201.
func mintKey(t testing.TB, c *apitest.Client, agentID int64, name string) gen.AgentApiKeyWithSecret {
	t.Helper()
	var r gen.AgentApiKeyCreatedResponse
	c.Post(apiKeysPath(agentID), map[string]any{"name": name}).Expect(t, http.StatusCreated).Decode(t, &r)
	return r.Data
}

func listKeys(t *testing.T, c *apitest.Client, agentID int64) []gen.AgentApiKey {
	t.Helper()
	var r gen.AgentApiKeyListResponse
	c.Get(apiKeysPath(agentID)).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.ApiKeys
}

// agentAPI sends a per-agent API request with the Authorization header auth ("" for none)
// from c (a fresh anonymous client when nil).
func agentAPI(env *apitest.Env, c *apitest.Client, method, path, auth string) *apitest.Response {
	if c == nil {
		c = env.Client()
	}
	r := apitest.Request{Method: method, Path: path}
	if auth != "" {
		r.Header = map[string]string{"Authorization": auth}
	}
	return c.Do(r)
}

func TestMintAgentAPIKey(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	a := mkAgent(t, w.owner, map[string]any{"name": "Keyed"})
	k := mintKey(t, w.owner, a.Id, "  n8n workflow ")
	if !agentKeyPattern.MatchString(k.Key) || !strings.HasPrefix(k.Key, "svk_"+k.Id+"_") || k.Name != "n8n workflow" ||
		k.LastUsedAt != nil || k.CreatedAt.IsZero() {
		t.Fatalf("minted = %+v", k)
	}
	_, secret, err := apikey.Parse(k.Key)
	if err != nil {
		t.Fatal(err)
	}
	k2 := mintKey(t, w.owner, a.Id, "second")
	if k2.Id == k.Id || k2.Key == k.Key {
		t.Fatal("two mints gave the same key")
	}

	res := w.owner.Get(apiKeysPath(a.Id)).Expect(t, http.StatusOK)
	for _, leak := range []string{secret, apikey.Digest(secret), k.Key, `"key"`, "digest"} {
		if strings.Contains(string(res.Body), leak) {
			t.Fatalf("listing reveals %q: %s", leak, res.Body)
		}
	}
	var list gen.AgentApiKeyListResponse
	res.Decode(t, &list)
	got := list.Data.ApiKeys
	if len(got) != 2 || got[0].Id != k2.Id || got[1].Id != k.Id || got[1].Name != "n8n workflow" ||
		!got[1].CreatedAt.Equal(k.CreatedAt) || got[1].LastUsedAt != nil {
		t.Fatalf("listing = %+v, want the two keys newest first", got)
	}

	// Keys belong to one agent.
	b := mkAgent(t, w.owner, map[string]any{"name": "Other"})
	if other := listKeys(t, w.owner, b.Id); len(other) != 0 {
		t.Fatalf("other agent lists %+v", other)
	}

	// The session API rules apply: CSRF token required to mint.
	w.owner.Do(apitest.Request{Method: http.MethodPost, Path: apiKeysPath(a.Id), Body: map[string]any{"name": "x"}, NoCSRF: true}).
		Expect(t, http.StatusForbidden, "CSRF_TOKEN_INVALID")
	w.env.Client().Get(apiKeysPath(a.Id)).Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")
}

func TestAgentAPIKeyLastUsed(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_AGENT_API=true")
	owner, _ := env.UserClient("owner@example.com")
	a := mkAgent(t, owner, map[string]any{"name": "Keyed"})
	k := mintKey(t, owner, a.Id, "integration")

	first := env.Clock.Now()
	agentAPI(env, nil, http.MethodGet, "/agent-api/chats", "Bearer "+k.Key)
	if got := listKeys(t, owner, a.Id)[0].LastUsedAt; got == nil || !got.Equal(first) {
		t.Fatalf("last_used_at = %v, want %v", got, first)
	}
	env.Clock.Advance(30e9)
	agentAPI(env, nil, http.MethodGet, "/agent-api/chats", "Bearer "+k.Key)
	if got := listKeys(t, owner, a.Id)[0].LastUsedAt; !got.Equal(first) {
		t.Fatalf("last_used_at after 30 s = %v, want unchanged %v (minute granularity)", got, first)
	}
	env.Clock.Advance(40e9)
	agentAPI(env, nil, http.MethodGet, "/agent-api/chats", "Bearer "+k.Key)
	if got := listKeys(t, owner, a.Id)[0].LastUsedAt; !got.Equal(env.Clock.Now()) {
		t.Fatalf("last_used_at after 70 s = %v, want %v", got, env.Clock.Now())
	}
}

func TestAgentAPIKeyAccess(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	team := mkAgent(t, w.owner, map[string]any{"name": "Team agent", "principal_id": w.teamP})
	personal := mkAgent(t, w.owner, map[string]any{"name": "Personal"})
	existing := mintKey(t, w.owner, team.Id, "existing")

	tests := []struct {
		name   string
		c      *apitest.Client
		agent  int64
		status int
		code   string
	}{
		{"group owner", w.owner, team.Id, http.StatusOK, ""},
		{"group admin", w.gadmin, team.Id, http.StatusOK, ""},
		{"administrator", w.admin, personal.Id, http.StatusOK, ""},
		{"member without manage role", w.member, team.Id, http.StatusForbidden, "FORBIDDEN"},
		{"invisible agent", w.stranger, team.Id, http.StatusNotFound, "NOT_FOUND"},
		{"someone else's personal agent", w.member, personal.Id, http.StatusNotFound, "NOT_FOUND"},
		{"unknown agent", w.owner, 999999, http.StatusNotFound, "NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list := tc.c.Get(apiKeysPath(tc.agent))
			mint := tc.c.Post(apiKeysPath(tc.agent), map[string]any{"name": "by " + tc.name})
			revoke := tc.c.Delete(apiKeysPath(tc.agent) + "/" + existing.Id + "x")
			if tc.status == http.StatusOK {
				list.Expect(t, http.StatusOK)
				mint.Expect(t, http.StatusCreated)
				revoke.Expect(t, http.StatusOK)
				return
			}
			list.Expect(t, tc.status, tc.code)
			mint.Expect(t, tc.status, tc.code)
			revoke.Expect(t, tc.status, tc.code)
		})
	}
	// A refused revocation of a real key changes nothing.
	w.member.Delete(apiKeysPath(team.Id)+"/"+existing.Id).Expect(t, http.StatusForbidden, "FORBIDDEN")
	w.stranger.Delete(apiKeysPath(team.Id)+"/"+existing.Id).Expect(t, http.StatusNotFound, "NOT_FOUND")
	found := false
	for _, k := range listKeys(t, w.owner, team.Id) {
		found = found || k.Id == existing.Id
	}
	if !found {
		t.Fatal("a refused revocation revoked the key")
	}
	if n := len(listKeys(t, w.owner, team.Id)); n != 3 { // existing, group owner's, group admin's
		t.Fatalf("team agent has %d keys, want 3 (refused mints stored nothing)", n)
	}
}

func TestAgentAPIKeyName(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	a := mkAgent(t, w.owner, map[string]any{"name": "Keyed"})
	refused := []struct {
		name string
		body any
	}{
		{"missing", map[string]any{}},
		{"null", map[string]any{"name": nil}},
		{"empty", map[string]any{"name": ""}},
		{"blank", map[string]any{"name": "   "}},
		{"tabs and newlines", map[string]any{"name": "\t\n"}},
		{"101 characters", map[string]any{"name": strings.Repeat("a", 101)}},
		{"101 two-byte characters", map[string]any{"name": strings.Repeat("é", 101)}},
		{"not a string", map[string]any{"name": 7}},
		{"unknown field", map[string]any{"name": "x", "scope": "all"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			w.owner.Post(apiKeysPath(a.Id), tc.body).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		})
	}
	if n := len(listKeys(t, w.owner, a.Id)); n != 0 {
		t.Fatalf("refused names stored %d keys", n)
	}
	if k := mintKey(t, w.owner, a.Id, strings.Repeat("é", 100)); k.Name != strings.Repeat("é", 100) {
		t.Fatalf("100-character name = %q", k.Name)
	}
	w.owner.Do(apitest.Request{Method: http.MethodPost, Path: apiKeysPath(a.Id), Body: "{"}).Expect(t, http.StatusBadRequest, "BAD_REQUEST")
}

func TestRevokeAgentAPIKey(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_AGENT_API=true")
	owner, _ := env.UserClient("owner@example.com")
	a := mkAgent(t, owner, map[string]any{"name": "A"})
	b := mkAgent(t, owner, map[string]any{"name": "B"})
	ka := mintKey(t, owner, a.Id, "a's")
	kb := mintKey(t, owner, b.Id, "b's")
	keep := mintKey(t, owner, a.Id, "kept")
	works := func(k gen.AgentApiKeyWithSecret) bool {
		t.Helper()
		return agentAPI(env, nil, http.MethodGet, "/agent-api/chats", "Bearer "+k.Key).Status != http.StatusUnauthorized
	}
	if !works(ka) || !works(kb) || !works(keep) {
		t.Fatal("fresh keys do not authenticate")
	}

	revoke := func(agentID int64, keyID string) string {
		t.Helper()
		res := owner.Delete(apiKeysPath(agentID)+"/"+keyID).Expect(t, http.StatusOK)
		return string(res.Body)
	}
	want := fmt.Sprintf(`{"data":{"key_id":%q,"revoked":true}}`, ka.Id)
	first := revoke(a.Id, ka.Id)
	if strings.TrimSpace(first) != want {
		t.Fatalf("revoke = %s, want %s", first, want)
	}
	if again := revoke(a.Id, ka.Id); again != first {
		t.Fatalf("second revoke = %s, first = %s", again, first)
	}
	unknown := apikey.Mint().ID
	if got := revoke(a.Id, unknown); got != strings.Replace(first, ka.Id, unknown, 1) {
		t.Fatalf("revoke of an unknown key = %s", got)
	}
	// b's key through agent a's path: the same answer, but nothing happens.
	if got := revoke(a.Id, kb.Id); got != strings.Replace(first, ka.Id, kb.Id, 1) {
		t.Fatalf("revoke of another agent's key = %s", got)
	}
	if !works(kb) || len(listKeys(t, owner, b.Id)) != 1 {
		t.Fatal("revoking through another agent's path revoked the key")
	}

	if works(ka) {
		t.Fatal("revoked key still authenticates")
	}
	if !works(keep) {
		t.Fatal("revoking one key disabled another")
	}
	if got := listKeys(t, owner, a.Id); len(got) != 1 || got[0].Id != keep.Id {
		t.Fatalf("listing after revoke = %+v, want only the kept key", got)
	}
}
