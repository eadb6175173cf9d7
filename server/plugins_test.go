package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

// pluginDir writes plugin folders (path → content) into a fresh plugins directory.
func pluginDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// searchManifest is the manifest the repository ships for the first-party search plugin.
func searchManifest(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../plugins/searchcore/plugin/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPluginInventory: GET /plugins lists each plugin with its manifest fields, contributions,
// registration and errors (administrators only); a plugin's template joins the catalog, its
// skill the skill list, its frontend bundle is served read-only.
func TestPluginInventory(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, map[string]string{
		"search/plugin.json": searchManifest(t),
		"acme/weather/plugin.json": `{"slug":"weather","class":"Acme\\Weather\\Plugin","name":"acme/weather","version":"1.2.0",
			"displayName":"Weather","description":"Forecasts.","icon":"<svg/>","templates":["templates"]}`,
		"acme/maps/plugin.json": `{"slug":"maps","class":"Acme\\Maps","name":"acme/maps","version":"0.3.0","icon":"M0 0h24v24",
			"accent":"chartreuse","templates":["t"],"skills":["skills"],"frontendEntry":"dist/app.js"}`,
		"acme/maps/t/route.json":            `{"id":"maps/router","name":"Router","version":"1.0.0","agent":{"system_prompt":"Route.","max_steps":3},"tools":[]}`,
		"acme/maps/skills/routing/SKILL.md": "---\nname: routing\ndescription: Plan a route.\n---\nUse the map.\n",
		"acme/maps/dist/app.js":             "console.log('maps')",
		"acme/maps/dist/style.css":          "body{}",
	})
	env := apitest.New(t, "SVC_PLUGINS_DIR="+dir)
	adm, _ := env.UserClient("root@example.com")
	member, _ := env.UserClient("member@example.com")
	member.Get("/plugins").Expect(t, http.StatusForbidden, "FORBIDDEN")

	var inv gen.PluginListResponse
	adm.Get("/plugins").Expect(t, http.StatusOK).Decode(t, &inv)
	got := map[string]gen.Plugin{}
	var order []string
	for _, p := range inv.Data.Plugins {
		got[p.Slug] = p
		order = append(order, p.Slug)
	}
	if strings.Join(order, ",") != "maps,search,weather" {
		t.Fatalf("inventory order %v", order)
	}
	s := got["search"]
	if !s.Enabled || !s.ClassRegistered || s.Package != "agentsvc/search" || s.Contributes.SearchProviders != 3 || s.Error != nil {
		t.Fatalf("search = %+v", s)
	}
	m := got["maps"]
	if !m.Enabled || m.ClassRegistered || m.Version != "0.3.0" || m.Icon != "M0 0h24v24" || m.Accent != gen.PluginAccentPrimary ||
		m.Contributes.AgentTemplates != 1 || m.Contributes.Skills != 1 || m.Contributes.Apps != 1 || m.Source != gen.PluginSourceInstalled {
		t.Fatalf("maps = %+v", m)
	}
	w := got["weather"]
	if w.Enabled || w.Error == nil || !strings.Contains(*w.Error, "plugin weather: icon") {
		t.Fatalf("weather (SVG markup icon) = %+v", w)
	}

	var cat gen.AgentTemplateCatalogResponse
	adm.Get("/agent-templates").Expect(t, http.StatusOK).Decode(t, &cat)
	found := false
	for _, tpl := range cat.Data.Templates {
		if tpl.Id == "maps/router" {
			found = tpl.Source == "plugin" && tpl.PluginSlug != nil && *tpl.PluginSlug == "maps"
		}
	}
	if !found {
		t.Fatalf("the plugin template is not in the catalog: %+v", cat.Data.Templates)
	}

	res := env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/plugins/maps/"}).Expect(t, http.StatusOK)
	if string(res.Body) != "console.log('maps')" {
		t.Fatalf("frontend entry = %q", res.Body)
	}
	// Issue 22, item 9: the bundle runs (its own scripts allowed, framed by the console) in a
	// sandbox (an opaque origin: not the administrator's session); it was served under the
	// API's default-src 'none', so no script of it could run.
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "sandbox allow-scripts", "frame-ancestors 'self'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("plugin page CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "allow-same-origin") || strings.Contains(csp, "unsafe-") {
		t.Errorf("plugin page CSP %q gives the page the console's origin or inline code", csp)
	}
	if res.Header.Get("X-Frame-Options") != "SAMEORIGIN" || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("plugin page headers %v", res.Header)
	}
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/plugins/maps/style.css"}).Expect(t, http.StatusOK)
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/plugins/maps/../plugin.json"}).Expect(t, http.StatusNotFound)
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/plugins/weather/"}).Expect(t, http.StatusNotFound)
	env.Client().Do(apitest.Request{Method: http.MethodGet, Path: apitest.Prefix + "/schemas/plugin.schema.json"}).Expect(t, http.StatusOK)
}

// TestPaletteSearch: without a provider every query answers no hits; with the first-party
// plugin installed, hits come from the caller's agents, their own tasks and the templates, and
// never from what the caller cannot see; q is truncated, never refused.
func TestPaletteSearch(t *testing.T) {
	t.Parallel()
	bare := apitest.New(t)
	c, _ := bare.UserClient("ada@example.com")
	c.Post("/agents", map[string]any{"name": "Weather bot"}).Expect(t, http.StatusCreated)
	var r gen.SearchResponse
	c.Get("/search?q=weather").Expect(t, http.StatusOK).Decode(t, &r)
	if len(r.Data.Hits) != 0 {
		t.Fatalf("hits without providers: %+v", r.Data.Hits)
	}

	env := apitest.New(t, "SVC_PLUGINS_DIR="+pluginDir(t, map[string]string{"search/plugin.json": searchManifest(t)}))
	env.UserClient("root@example.com") // the first account is the administrator, who sees every agent
	ada, _ := env.UserClient("ada@example.com")
	bob, _ := env.UserClient("bob@example.com")
	var a gen.AgentResponse
	ada.Post("/agents", map[string]any{"name": "Weather bot", "description": "Forecasts"}).Expect(t, http.StatusCreated).Decode(t, &a)
	bob.Post("/agents", map[string]any{"name": "Bob's weather agent"}).Expect(t, http.StatusCreated)
	ada.Post("/tasks", map[string]any{"agent_id": a.Data.Agent.Id, "prompt": "What is the weather in Oslo?"}).Expect(t, http.StatusCreated)

	ada.Get("/search?q=weather").Expect(t, http.StatusOK).Decode(t, &r)
	types := map[string]int{}
	for _, h := range r.Data.Hits {
		types[h.Type]++
		if strings.Contains(h.Title, "Bob") {
			t.Fatalf("ada sees bob's agent: %+v", h)
		}
	}
	if types["agent"] != 1 || types["task"] != 1 || len(r.Data.Hits) < 2 || r.Data.Hits[0].Title != "Weather bot" {
		t.Fatalf("hits = %+v", r.Data.Hits)
	}
	ada.Get("/search?q=analyst").Expect(t, http.StatusOK).Decode(t, &r)
	if len(r.Data.Hits) == 0 || r.Data.Hits[0].Type != "template" || r.Data.Hits[0].Id != "core/analyst" {
		t.Fatalf("template hits = %+v", r.Data.Hits)
	}
	for _, q := range []string{"", "%20%20", "weather&limit=1", strings.Repeat("w", 300)} {
		ada.Get("/search?q="+q).Expect(t, http.StatusOK).Decode(t, &r)
		if (q == "weather&limit=1" && len(r.Data.Hits) != 1) || (q != "weather&limit=1" && len(r.Data.Hits) != 0) {
			t.Errorf("q=%.20s: %d hits", q, len(r.Data.Hits))
		}
	}
	env.Client().Get("/search?q=weather").Expect(t, http.StatusUnauthorized)
	ada.Get("/search?q=weather&limit=51").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	ada.Get("/search?q=weather&limit=0").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	ada.Get("/plugins/catalog").Expect(t, http.StatusForbidden, "FORBIDDEN")
}
