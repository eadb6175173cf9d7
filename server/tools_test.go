package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// weatherTool is a plugin-style tool with a password setting (no shipped tool has one).
type weatherTool struct{}

const weatherClass = "weather.ForecastTool"

func (weatherTool) Spec() tools.Spec {
	return tools.Spec{
		Class: weatherClass, Name: "forecast", PluginSlug: "weather", Description: "Weather forecasts.",
		Operations: []tools.Operation{
			{Name: "today", Description: "Today's weather.", EnabledByDefault: true, Repeatable: true},
			{Name: "alert", Description: "Send an alert.", RequiresApprovalByDefault: true},
		},
		Settings: []tools.Setting{
			{Key: "units", Label: "Units", Type: tools.SettingSelect, Options: []string{"metric", "imperial"}, Default: "metric"},
			{Key: "api_key", Label: "API key", Type: tools.SettingPassword, Required: true},
			{Key: "city", Label: "City", Type: tools.SettingString},
			{Key: "days", Label: "Days", Type: tools.SettingInteger, Default: 3},
		},
	}
}

// toolsEnv starts a service with weatherTool registered.
func toolsEnv(t *testing.T) *apitest.Env {
	t.Helper()
	env := apitest.New(t)
	if err := env.App.Tools.Register(weatherTool{}); err != nil {
		t.Fatal(err)
	}
	return env
}

// noSecret fails when a response carries the plaintext secret anywhere in its raw bytes.
func noSecret(t *testing.T, r *apitest.Response, secret string) *apitest.Response {
	t.Helper()
	if bytes.Contains(r.Body, []byte(secret)) {
		t.Fatalf("response carries the secret: %s", r.Body)
	}
	return r
}

// storedLayer returns the stored JSON of one settings layer of a tool, as the column holds it.
func storedLayer(t *testing.T, env *apitest.Env, scope store.ToolScope, class string) string {
	t.Helper()
	ts, err := env.App.Store.ToolSettings(context.Background(), scope, class)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ts.Values)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func layerOf(t *testing.T, r *apitest.Response) gen.ToolSettingsLayer {
	t.Helper()
	var out gen.ToolSettingsLayerResponse
	r.Decode(t, &out)
	return out.Data.Settings
}

func TestListTools(t *testing.T) {
	t.Parallel()
	env := toolsEnv(t)
	c, _ := env.UserClient("root@example.com")
	u, _ := env.UserClient("user@example.com")
	env.Client().Get("/tools").Expect(t, 401, "UNAUTHENTICATED")

	var r gen.RegisteredToolListResponse
	u.Get("/tools").Expect(t, 200).Decode(t, &r)
	c.Get("/tools").Expect(t, 200)
	var classes []string
	byClass := map[string]gen.RegisteredTool{}
	for _, tl := range r.Data.Tools {
		classes = append(classes, tl.ToolClass)
		byClass[tl.ToolClass] = tl
	}
	if len(classes) != len(env.App.Tools.Specs()) || !sortedStrings(classes) {
		t.Fatalf("classes = %v", classes)
	}
	w := byClass[weatherClass]
	if w.Name != "weather:forecast" || w.DisplayName != "ForecastTool" || w.Category != "general" || w.Icon != "puzzle" ||
		w.PluginSlug == nil || *w.PluginSlug != "weather" || len(w.RecommendsSkills) != 0 || len(w.Operations) != 2 ||
		w.Operations[1].Name != "alert" || !w.Operations[1].RequiresApprovalByDefault || w.Operations[1].EnabledByDefault ||
		!w.Operations[0].Repeatable || w.Operations[1].Repeatable {
		t.Fatalf("weather tool = %+v", w)
	}
	if len(w.Settings) != 4 || w.Settings[0].Key != "units" || w.Settings[0].Options == nil || w.Settings[0].Default != "metric" ||
		w.Settings[1].Type != "password" || w.Settings[1].Default != nil || w.Settings[1].Options != nil || !w.Settings[1].Required {
		t.Fatalf("weather settings = %+v", w.Settings)
	}
	rd := byClass["core.ReadURLTool"]
	if rd.Name != "read_url" || rd.PluginSlug != nil || !reflect.DeepEqual(rd.RecommendsSkills, []string{"web-research"}) ||
		!rd.Operations[0].Repeatable {
		t.Fatalf("read_url = %+v", rd)
	}
	// A default-less setting has no default key at all.
	if bytes.Contains(mustJSON(t, w.Settings[2]), []byte(`"default"`)) {
		t.Fatalf("city shows a default: %+v", w.Settings[2])
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGlobalToolSettings(t *testing.T) {
	t.Parallel()
	env := toolsEnv(t)
	root, _ := env.UserClient("root@example.com")
	user, _ := env.UserClient("user@example.com")
	path := "/tools/" + weatherClass + "/settings"
	const secret = "sk-global-very-secret"

	// Empty layer.
	l := layerOf(t, root.Get(path).Expect(t, 200))
	if l.ToolClass != weatherClass || l.Scope != "global" || len(l.Settings) != 0 || l.UpdatedAt != nil {
		t.Fatalf("empty layer = %+v", l)
	}

	// Administrators only, reading included.
	user.Get(path).Expect(t, 403, "FORBIDDEN")
	user.Put(path, map[string]any{"settings": map[string]any{"city": "Oslo"}}).Expect(t, 403, "FORBIDDEN")
	user.Delete(path).Expect(t, 403, "FORBIDDEN")
	env.Client().Get(path).Expect(t, 401, "UNAUTHENTICATED")
	root.Do(apitest.Request{Method: "PUT", Path: path, Body: map[string]any{"settings": map[string]any{}}, NoCSRF: true}).Expect(t, 403, "CSRF_TOKEN_INVALID")

	// Write: the secret is sealed at rest and masked in every answer.
	r := noSecret(t, root.Put(path, map[string]any{"settings": map[string]any{"api_key": secret, "units": "imperial", "days": 5}}).Expect(t, 200), secret)
	l = layerOf(t, r)
	if !reflect.DeepEqual(l.Settings, map[string]any{"api_key": tools.Mask, "units": "imperial", "days": float64(5)}) || l.UpdatedAt == nil {
		t.Fatalf("written layer = %+v", l)
	}
	raw := storedLayer(t, env, store.GlobalToolScope(), weatherClass)
	if strings.Contains(raw, secret) || !strings.Contains(raw, `"api_key":"v1:`) {
		t.Fatalf("stored layer = %s", raw)
	}
	noSecret(t, root.Get(path).Expect(t, 200), secret)

	// The mask keeps the secret; keys not sent stay; null and "" delete.
	l = layerOf(t, noSecret(t, root.Put(path, map[string]any{"settings": map[string]any{"api_key": tools.Mask, "days": nil, "city": "Oslo"}}).Expect(t, 200), secret))
	if !reflect.DeepEqual(l.Settings, map[string]any{"api_key": tools.Mask, "units": "imperial", "city": "Oslo"}) {
		t.Fatalf("after mask = %+v", l.Settings)
	}
	if storedLayer(t, env, store.GlobalToolScope(), weatherClass) == raw {
		t.Fatal("the layer did not change")
	}
	if !strings.Contains(storedLayer(t, env, store.GlobalToolScope(), weatherClass), rawSealed(t, raw)) {
		t.Fatal("the mask replaced the stored secret")
	}
	l = layerOf(t, root.Put(path, map[string]any{"settings": map[string]any{"city": ""}}).Expect(t, 200))
	if _, ok := l.Settings["city"]; ok {
		t.Fatalf("empty string did not delete: %+v", l.Settings)
	}

	// Whole-call refusals: nothing written.
	before := storedLayer(t, env, store.GlobalToolScope(), weatherClass)
	for name, body := range map[string]any{
		"unknown key":       map[string]any{"settings": map[string]any{"city": "Rome", "colour": "red"}},
		"wrong type":        map[string]any{"settings": map[string]any{"city": "Rome", "days": "five"}},
		"not an option":     map[string]any{"settings": map[string]any{"units": "kelvin"}},
		"password number":   map[string]any{"settings": map[string]any{"api_key": 12}},
		"fraction":          map[string]any{"settings": map[string]any{"days": 1.5}},
		"settings missing":  map[string]any{},
		"settings a string": map[string]any{"settings": "x"},
		"extra field":       map[string]any{"settings": map[string]any{}, "scope": "user"},
	} {
		t.Run(name, func(t *testing.T) {
			root.Put(path, body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	root.Put(path, "{").Expect(t, 400, "BAD_REQUEST")
	if after := storedLayer(t, env, store.GlobalToolScope(), weatherClass); after != before {
		t.Fatalf("refused writes changed the layer: %s → %s", before, after)
	}

	// Unknown classes.
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		var body any
		if m == "PUT" {
			body = map[string]any{"settings": map[string]any{}}
		}
		root.Do(apitest.Request{Method: m, Path: "/tools/core.NoSuchTool/settings", Body: body}).Expect(t, 404, "NOT_FOUND")
	}
	root.Get("/tools/"+strings.Repeat("x", 256)+"/settings").Expect(t, 422, "VALIDATION_ERROR")

	// Delete: idempotent; the layer is empty afterwards.
	root.Delete(path).Expect(t, 200)
	root.Delete(path).Expect(t, 200)
	l = layerOf(t, root.Get(path).Expect(t, 200))
	if len(l.Settings) != 0 || l.UpdatedAt != nil {
		t.Fatalf("after delete = %+v", l)
	}
}

// rawSealed extracts the sealed api_key text from a stored layer's JSON.
func rawSealed(t *testing.T, raw string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m["api_key"].(string)
	if s == "" {
		t.Fatalf("no sealed api_key in %s", raw)
	}
	return s
}

func TestUserToolSettings(t *testing.T) {
	t.Parallel()
	env := toolsEnv(t)
	root, _ := env.UserClient("root@example.com")
	alice, aliceU := env.UserClient("alice@example.com")
	bob, bobU := env.UserClient("bob@example.com")
	path := "/tools/" + weatherClass + "/user-settings"
	const secret = "sk-alice-secret-1234"

	l := layerOf(t, noSecret(t, alice.Put(path, map[string]any{"settings": map[string]any{"api_key": secret, "city": "Lyon"}}).Expect(t, 200), secret))
	if l.Scope != "user" || !reflect.DeepEqual(l.Settings, map[string]any{"api_key": tools.Mask, "city": "Lyon"}) {
		t.Fatalf("alice's layer = %+v", l)
	}
	raw := storedLayer(t, env, store.UserToolScope(aliceU.Id), weatherClass)
	if strings.Contains(raw, secret) {
		t.Fatalf("stored in the clear: %s", raw)
	}
	noSecret(t, alice.Get(path).Expect(t, 200), secret)

	// Layers are the caller's own: bob and the administrator see their own (empty) layer.
	for _, c := range []*apitest.Client{bob, root} {
		if l := layerOf(t, c.Get(path).Expect(t, 200)); len(l.Settings) != 0 {
			t.Fatalf("another user sees %+v", l.Settings)
		}
	}
	bob.Put(path, map[string]any{"settings": map[string]any{"city": "Nice"}}).Expect(t, 200)
	bob.Delete(path).Expect(t, 200)
	if l := layerOf(t, alice.Get(path).Expect(t, 200)); l.Settings["city"] != "Lyon" {
		t.Fatalf("bob's delete touched alice: %+v", l.Settings)
	}
	if s := storedLayer(t, env, store.UserToolScope(bobU.Id), weatherClass); s != "{}" {
		t.Fatalf("bob's layer after delete = %s", s)
	}

	// The mask keeps alice's secret; refusals write nothing.
	alice.Put(path, map[string]any{"settings": map[string]any{"api_key": tools.Mask}}).Expect(t, 200)
	alice.Put(path, map[string]any{"settings": map[string]any{"api_key": secret + "-new", "colour": 1}}).Expect(t, 422, "VALIDATION_ERROR")
	alice.Put(path, map[string]any{"settings": map[string]any{"city": []string{"x"}}}).Expect(t, 422, "VALIDATION_ERROR")
	if after := storedLayer(t, env, store.UserToolScope(aliceU.Id), weatherClass); after != raw {
		t.Fatalf("layer changed: %s → %s", raw, after)
	}
	alice.Get("/tools/core.NoSuchTool/user-settings").Expect(t, 404, "NOT_FOUND")
	alice.Put("/tools/core.NoSuchTool/user-settings", map[string]any{"settings": map[string]any{}}).Expect(t, 404, "NOT_FOUND")
	alice.Delete("/tools/core.NoSuchTool/user-settings").Expect(t, 404, "NOT_FOUND")
	env.Client().Get(path).Expect(t, 401, "UNAUTHENTICATED")

	alice.Delete(path).Expect(t, 200)
	alice.Delete(path).Expect(t, 200)
	if l := layerOf(t, alice.Get(path).Expect(t, 200)); len(l.Settings) != 0 || l.UpdatedAt != nil {
		t.Fatalf("after delete = %+v", l)
	}
}

// toolGroup creates a group owned by owner with the given members (user id → role).
func toolGroup(t *testing.T, owner *apitest.Client, name string, members map[int64]string) gen.Group {
	t.Helper()
	var r gen.GroupResponse
	owner.Post("/groups", map[string]any{"name": name}).Expect(t, 201).Decode(t, &r)
	for uid, role := range members {
		owner.Post(fmt.Sprintf("/groups/%d/members", r.Data.Group.Id), map[string]any{"user_id": fmt.Sprint(uid), "role": role}).Expect(t, 201)
	}
	return r.Data.Group
}

func groupToolsOf(t *testing.T, c *apitest.Client, groupID int64) []gen.GroupTool {
	t.Helper()
	var r gen.GroupToolListResponse
	c.Get(fmt.Sprintf("/groups/%d/tools", groupID)).Expect(t, 200).Decode(t, &r)
	return r.Data.Tools
}

func TestGroupTools(t *testing.T) {
	t.Parallel()
	env := toolsEnv(t)
	root, _ := env.UserClient("root@example.com")
	owner, _ := env.UserClient("owner@example.com")
	gadmin, gadminU := env.UserClient("gadmin@example.com")
	member, memberU := env.UserClient("member@example.com")
	stranger, _ := env.UserClient("stranger@example.com")
	g := toolGroup(t, owner, "Team", map[int64]string{gadminU.Id: "admin", memberU.Id: "member"})
	base := fmt.Sprintf("/groups/%d/tools", g.Id)
	wpath := base + "/" + weatherClass
	const secret = "sk-group-secret-5678"

	if l := groupToolsOf(t, member, g.Id); len(l) != 0 {
		t.Fatalf("fresh list = %+v", l)
	}

	// {} creates an enabled entry without settings.
	var r gen.GroupToolResponse
	owner.Post(base+"/core.TimeTool", map[string]any{}).Expect(t, 200).Decode(t, &r)
	if r.Data.Tool.ToolClass != "core.TimeTool" || !r.Data.Tool.Enabled || len(r.Data.Tool.Settings) != 0 {
		t.Fatalf("new entry = %+v", r.Data.Tool)
	}
	// Settings with a secret, by a group admin.
	r = gen.GroupToolResponse{}
	noSecret(t, gadmin.Post(wpath, map[string]any{"enabled": false, "settings": map[string]any{"api_key": secret, "units": "imperial"}}).Expect(t, 200), secret).Decode(t, &r)
	if r.Data.Tool.Enabled || !reflect.DeepEqual(r.Data.Tool.Settings, map[string]any{"api_key": tools.Mask, "units": "imperial"}) {
		t.Fatalf("weather entry = %+v", r.Data.Tool)
	}
	raw := storedLayer(t, env, store.GroupToolScope(g.Id), weatherClass)
	if strings.Contains(raw, secret) || !strings.Contains(raw, "v1:") {
		t.Fatalf("stored group layer = %s", raw)
	}
	// enabled omitted keeps false; the mask keeps the secret; a key replaces; null deletes.
	r = gen.GroupToolResponse{}
	root.Post(wpath, map[string]any{"settings": map[string]any{"api_key": tools.Mask, "units": nil, "city": "Riga"}}).Expect(t, 200).Decode(t, &r)
	if r.Data.Tool.Enabled || !reflect.DeepEqual(r.Data.Tool.Settings, map[string]any{"api_key": tools.Mask, "city": "Riga"}) {
		t.Fatalf("after update = %+v", r.Data.Tool)
	}
	if !strings.Contains(storedLayer(t, env, store.GroupToolScope(g.Id), weatherClass), rawSealed(t, raw)) {
		t.Fatal("the mask replaced the stored secret")
	}

	// Members and administrators read; the list is ordered by class; no secret anywhere.
	for _, c := range []*apitest.Client{member, gadmin, owner, root} {
		l := groupToolsOf(t, c, g.Id)
		if len(l) != 2 || l[0].ToolClass != "core.TimeTool" || l[1].ToolClass != weatherClass || l[1].Settings["api_key"] != tools.Mask {
			t.Fatalf("list = %+v", l)
		}
		noSecret(t, c.Get(base).Expect(t, 200), secret)
	}
	stranger.Get(base).Expect(t, 404, "NOT_FOUND")
	owner.Get("/groups/999999/tools").Expect(t, 404, "NOT_FOUND")

	// Writes: plain members 403, strangers 404; unknown classes 404; bad settings 422; none write.
	before := storedLayer(t, env, store.GroupToolScope(g.Id), weatherClass)
	member.Post(wpath, map[string]any{"settings": map[string]any{"city": "X"}}).Expect(t, 403, "FORBIDDEN")
	member.Delete(wpath).Expect(t, 403, "FORBIDDEN")
	stranger.Post(wpath, map[string]any{"settings": map[string]any{"city": "X"}}).Expect(t, 404, "NOT_FOUND")
	stranger.Delete(wpath).Expect(t, 404, "NOT_FOUND")
	owner.Post(base+"/core.NoSuchTool", map[string]any{}).Expect(t, 404, "NOT_FOUND")
	owner.Post("/groups/999999/tools/core.TimeTool", map[string]any{}).Expect(t, 404, "NOT_FOUND")
	for name, body := range map[string]any{
		"unknown key":   map[string]any{"enabled": true, "settings": map[string]any{"city": "X", "colour": "red"}},
		"wrong type":    map[string]any{"enabled": true, "settings": map[string]any{"days": "many"}},
		"enabled text":  map[string]any{"enabled": "yes"},
		"extra field":   map[string]any{"enabled": true, "name": "x"},
		"settings null": map[string]any{"settings": nil},
	} {
		t.Run(name, func(t *testing.T) {
			owner.Post(wpath, body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	if after := storedLayer(t, env, store.GroupToolScope(g.Id), weatherClass); after != before {
		t.Fatalf("refused writes changed the layer: %s → %s", before, after)
	}
	if l := groupToolsOf(t, owner, g.Id); len(l) != 2 || l[1].Enabled {
		t.Fatalf("refused writes changed the entries: %+v", l)
	}

	// Removal drops the entry and its settings; a second removal is 404.
	gadmin.Delete(wpath).Expect(t, 200)
	gadmin.Delete(wpath).Expect(t, 404, "NOT_FOUND")
	owner.Delete(base+"/core.NoSuchTool").Expect(t, 404, "NOT_FOUND")
	if s := storedLayer(t, env, store.GroupToolScope(g.Id), weatherClass); s != "{}" {
		t.Fatalf("settings left after removal: %s", s)
	}
	if l := groupToolsOf(t, member, g.Id); len(l) != 1 || l[0].ToolClass != "core.TimeTool" {
		t.Fatalf("after removal = %+v", l)
	}
	// A new entry starts from scratch.
	r = gen.GroupToolResponse{}
	owner.Post(wpath, map[string]any{}).Expect(t, 200).Decode(t, &r)
	if !r.Data.Tool.Enabled || len(r.Data.Tool.Settings) != 0 {
		t.Fatalf("recreated entry = %+v", r.Data.Tool)
	}
}

// briefingTool recommends a skill no source provides.
type briefingTool struct{}

func (briefingTool) Spec() tools.Spec {
	return tools.Spec{
		Class: "weather.BriefingTool", Name: "briefing", PluginSlug: "weather", RecommendsSkills: []string{"weather-briefing"},
		Operations: []tools.Operation{{Name: "brief", EnabledByDefault: true}},
	}
}

func TestListToolsMissingRecommendedSkill(t *testing.T) {
	t.Parallel()
	env := toolsEnv(t)
	c, _ := env.UserClient("user@example.com")
	c.Get("/tools").Expect(t, 200)
	if err := env.App.Tools.Register(briefingTool{}); err != nil {
		t.Fatal(err)
	}
	r := c.Get("/tools").Expect(t, 500, "TOOLS_RECOMMENDS_SKILLS_MISSING")
	if !bytes.Contains(r.Body, []byte("weather.BriefingTool")) || !bytes.Contains(r.Body, []byte("weather-briefing")) {
		t.Fatalf("message does not name the tool and the skill: %s", r.Body)
	}
}
