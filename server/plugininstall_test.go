package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/plugins/archive/archivetest"
)

// notesPackage is the archive of acme/notes at version: a template, a skill, and a stdio MCP
// server (the MCP package's Python test server, shipped inside the package and run from its
// folder) whose search tool feeds the palette.
func notesPackage(t *testing.T, version string) []byte {
	t.Helper()
	server, err := os.ReadFile("../plugins/mcp/testdata/server.py")
	if err != nil {
		t.Fatal(err)
	}
	return archivetest.TarGz(
		archivetest.Entry{Name: "notes-" + version + "/plugin.json", Body: fmt.Sprintf(`{"slug":"notes","class":"Acme\\Notes",
			"name":"acme/notes","version":%q,"description":"Notes.","templates":["templates"],"skills":["skills"],
			"mcpServers":[{"name":"py","command":"python3","args":["server.py","--with-search"]}],
			"searchProviders":[{"server":"py","tool":"search"}]}`, version)},
		archivetest.Entry{Name: "notes-" + version + "/server.py", Body: string(server)},
		archivetest.Entry{Name: "notes-" + version + "/templates/writer.json", Body: `{"id":"notes/writer","name":"Note writer",
			"version":"1.0.0","agent":{"system_prompt":"Write notes.","max_steps":4},"tools":[]}`},
		archivetest.Entry{Name: "notes-" + version + "/skills/note-taking/SKILL.md", Body: "---\nname: note-taking\ndescription: Take notes.\n---\nShort lines.\n"},
	)
}

// catalogServer serves a catalog index and the archives it names on 127.0.0.1.
type catalogServer struct {
	srv      *httptest.Server
	archives map[string][]byte // path → body
	index    []map[string]any
}

func newCatalogServer(t *testing.T) *catalogServer {
	cs := &catalogServer{archives: map[string][]byte{}}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/catalog.json" {
			_ = json.NewEncoder(w).Encode(map[string]any{"packages": cs.index})
			return
		}
		body, ok := cs.archives[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

// offer lists pkg with its versions (version → archive), each with its true SHA-256 unless
// tamper names it.
func (cs *catalogServer) offer(pkg string, versions map[string][]byte, tamper string) {
	var vs []map[string]any
	keys := make([]string, 0, len(versions))
	for v := range versions {
		keys = append(keys, v)
	}
	sort.Strings(keys)
	for _, v := range keys {
		path := "/" + strings.ReplaceAll(pkg, "/", "-") + "-" + v + ".tar.gz"
		cs.archives[path] = versions[v]
		sum := sha256.Sum256(versions[v])
		digest := hex.EncodeToString(sum[:])
		if v == tamper {
			digest = strings.Repeat("0", 64)
		}
		vs = append(vs, map[string]any{"version": v, "url": cs.srv.URL + path, "sha256": digest})
	}
	cs.index = append(cs.index, map[string]any{"package": pkg, "name": pkg, "description": "Package " + pkg, "versions": vs})
}

// listDir names the entries below dir (recursively), for "nothing was written" checks.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != dir && !strings.Contains(p, string(filepath.Separator)+".cache") {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

// TestPluginInstallFromCatalog is issue 11's operator walkthrough: browse a catalog served from
// a local server, install a package (its tool, template and skill appear at once, its MCP
// server answers the palette), refuse a tampered archive and one with `../` entries with
// nothing written, update to a new version, uninstall; every change only while
// plugin_install_enabled, and only for administrators.
func TestPluginInstallFromCatalog(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the package's MCP server is a Python script")
	}
	cs := newCatalogServer(t)
	cs.offer("acme/notes", map[string][]byte{"1.0.0": notesPackage(t, "1.0.0"), "1.1.0": notesPackage(t, "1.1.0")}, "")
	cs.offer("acme/tampered", map[string][]byte{"1.0.0": notesPackage(t, "1.0.0")}, "1.0.0")
	cs.offer("acme/evil", map[string][]byte{"1.0.0": archivetest.TarGz(
		archivetest.Entry{Name: "plugin.json", Body: `{"slug":"evil","class":"X","name":"acme/evil"}`},
		archivetest.Entry{Name: "../escaped.txt", Body: "outside"},
	)}, "")
	cs.offer("acme/liar", map[string][]byte{"1.0.0": archivetest.TarGz(
		archivetest.Entry{Name: "plugin.json", Body: `{"slug":"liar","class":"X","name":"acme/other"}`},
	)}, "")
	dir := t.TempDir()
	env := apitest.NewWith(t, apitest.Options{Net: netguard.Options{AllowLoopback: true}},
		"SVC_PLUGINS_DIR="+dir, "SVC_PLUGIN_CATALOG_URL="+cs.srv.URL+"/catalog.json", "SVC_PLUGIN_INSTALL_ENABLED=true")
	adm, _ := env.UserClient("root@example.com")
	member, _ := env.UserClient("member@example.com")
	member.Post("/plugins", map[string]any{"package": "acme/notes"}).Expect(t, http.StatusForbidden, "FORBIDDEN")

	var cat gen.PluginCatalogResponse
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if len(cat.Data.Entries) != 4 || cat.Data.Entries[2].Package != "acme/notes" || cat.Data.Entries[2].LatestVersion != "1.1.0" ||
		cat.Data.Entries[2].InstalledVersion != nil || cat.Data.Stale || !cat.Data.Configured || cat.Data.FetchedAt == nil {
		t.Fatalf("catalog = %+v", cat.Data)
	}

	var pr gen.PluginResponse
	adm.Post("/plugins", map[string]any{"package": "acme/notes", "version": "1.0.0"}).Expect(t, http.StatusCreated).Decode(t, &pr)
	p := pr.Data.Plugin
	if !p.Enabled || p.Version != "1.0.0" || p.Contributes.AgentTemplates != 1 || p.Contributes.Skills != 1 || p.Contributes.Tools < 1 {
		t.Fatalf("installed plugin = %+v", p)
	}
	if _, ok := env.App.Tools.LookupModelName("notes:py_echo"); !ok || !env.App.Skills.Exists("note-taking") {
		t.Fatal("the package's tool or skill is not available after the install")
	}
	var tpl gen.AgentTemplateShowResponse
	adm.Get("/agent-templates/notes%2Fwriter").Expect(t, http.StatusOK).Decode(t, &tpl)
	var hits gen.SearchResponse
	adm.Get("/search?q=ideas").Expect(t, http.StatusOK).Decode(t, &hits)
	if len(hits.Data.Hits) != 1 || hits.Data.Hits[0].Title != "Notes on ideas" {
		t.Fatalf("search after the install = %+v", hits.Data.Hits)
	}
	adm.Post("/plugins", map[string]any{"package": "acme/notes"}).Expect(t, http.StatusConflict, "CONFLICT")

	before := listDir(t, dir)
	adm.Post("/plugins", map[string]any{"package": "acme/tampered"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	adm.Post("/plugins", map[string]any{"package": "acme/evil"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	adm.Post("/plugins", map[string]any{"package": "acme/unknown"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	adm.Post("/plugins", map[string]any{"package": "acme/liar"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR") // its manifest names another package
	adm.Post("/plugins", map[string]any{"version": "1.0.0"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	adm.Post("/plugins", map[string]any{"package": "Not A Package"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	adm.Patch("/plugins/nope", map[string]any{}).Expect(t, http.StatusNotFound, "NOT_FOUND")
	adm.Delete("/plugins/acme%2Fnever-installed").Expect(t, http.StatusNotFound, "NOT_FOUND")
	member.Delete("/plugins/acme%2Fnotes").Expect(t, http.StatusForbidden, "FORBIDDEN")
	adm.Post("/plugins", map[string]any{"package": "acme/notes", "version": "9.9.9"}).Expect(t, http.StatusConflict) // installed already
	if after := listDir(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("refused installs wrote files:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped.txt")); err == nil {
		t.Fatal("the ../ entry escaped the plugins directory")
	}

	adm.Patch("/plugins/acme%2Fnotes", map[string]any{"version": "1.1.0"}).Expect(t, http.StatusOK).Decode(t, &pr)
	if pr.Data.Plugin.Version != "1.1.0" || !pr.Data.Plugin.Enabled {
		t.Fatalf("updated plugin = %+v", pr.Data.Plugin)
	}
	if _, ok := env.App.Tools.LookupModelName("notes:py_echo"); !ok {
		t.Fatal("the tool is gone after the update")
	}
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if v := cat.Data.Entries[2].InstalledVersion; v == nil || *v != "1.1.0" {
		t.Fatalf("catalog after the update = %+v", cat.Data.Entries[2])
	}

	adm.Delete("/plugins/acme%2Fnotes").Expect(t, http.StatusOK)
	adm.Delete("/plugins/acme%2Fnotes").Expect(t, http.StatusNotFound)
	var inv gen.PluginListResponse
	adm.Get("/plugins").Expect(t, http.StatusOK).Decode(t, &inv)
	if len(inv.Data.Plugins) != 0 {
		t.Fatalf("inventory after the uninstall = %+v", inv.Data.Plugins)
	}
	if _, ok := env.App.Tools.LookupModelName("notes:py_echo"); ok || env.App.Skills.Exists("note-taking") {
		t.Fatal("the package's tool or skill survived the uninstall")
	}
	adm.Get("/agent-templates/notes%2Fwriter").Expect(t, http.StatusNotFound)
}

// TestPluginInstallGates: with plugin_install_enabled off (the default) every change is 403
// FORBIDDEN; with plugin_catalog_enabled off the catalog is 403; without a catalog configured
// browsing answers an empty catalog (configured false, no fetched_at: a normal state, no 5xx
// logged at ERROR), and an install 503.
func TestPluginInstallGates(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_PLUGIN_CATALOG_ENABLED=false")
	adm, _ := env.UserClient("root@example.com")
	adm.Post("/plugins", map[string]any{"package": "acme/notes"}).Expect(t, http.StatusForbidden, "FORBIDDEN")
	adm.Patch("/plugins/acme%2Fnotes", map[string]any{}).Expect(t, http.StatusForbidden, "FORBIDDEN")
	adm.Delete("/plugins/acme%2Fnotes").Expect(t, http.StatusForbidden, "FORBIDDEN")
	adm.Get("/plugins/catalog").Expect(t, http.StatusForbidden, "FORBIDDEN")

	open := apitest.New(t, "SVC_PLUGIN_INSTALL_ENABLED=true")
	adm, _ = open.UserClient("root@example.com")
	var cat gen.PluginCatalogResponse
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if cat.Data.Configured || len(cat.Data.Entries) != 0 || cat.Data.FetchedAt != nil || cat.Data.Stale {
		t.Fatalf("catalog without plugin_catalog_url = %+v", cat.Data)
	}
	adm.Post("/plugins", map[string]any{"package": "acme/notes"}).Expect(t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	adm.Delete("/plugins/acme%2Fnotes").Expect(t, http.StatusNotFound)
}

// TestPluginCatalogHostExempt: the host the administrator named in plugin_catalog_url passes
// the outbound screen (a catalog on the local network), archives on any other private host do
// not; no loopback allowance is configured here.
func TestPluginCatalogHostExempt(t *testing.T) {
	t.Parallel()
	cs := newCatalogServer(t)
	plain := archivetest.TarGz(archivetest.Entry{Name: "plugin.json", Body: `{"slug":"plain","class":"X","name":"acme/plain"}`})
	cs.offer("acme/plain", map[string][]byte{"1.0.0": plain}, "")
	cs.offer("acme/elsewhere", map[string][]byte{"1.0.0": plain}, "")
	// The second package's archive is served by the same server under another loopback name.
	port := cs.srv.URL[strings.LastIndex(cs.srv.URL, ":"):]
	v := cs.index[1]["versions"].([]map[string]any)[0]
	v["url"] = "http://localhost" + port + "/acme-elsewhere-1.0.0.tar.gz"
	dir := t.TempDir()
	env := apitest.New(t, "SVC_PLUGINS_DIR="+dir, "SVC_PLUGIN_CATALOG_URL="+cs.srv.URL+"/catalog.json", "SVC_PLUGIN_INSTALL_ENABLED=true")
	adm, _ := env.UserClient("root@example.com")

	var cat gen.PluginCatalogResponse
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if len(cat.Data.Entries) != 2 || cat.Data.Stale {
		t.Fatalf("catalog = %+v", cat.Data)
	}
	before := listDir(t, dir)
	if r := adm.Post("/plugins", map[string]any{"package": "acme/elsewhere"}); r.Status < 400 {
		t.Fatalf("an archive on another private host was fetched: %d %s", r.Status, r.Body)
	}
	if after := listDir(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("the refused install wrote files: %v", after)
	}
	adm.Post("/plugins", map[string]any{"package": "acme/plain"}).Expect(t, http.StatusCreated)
}
