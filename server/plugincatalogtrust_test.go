package server_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/plugins/archive/archivetest"
)

// migrationPackage is the archive of acme/<slug> whose one migration (both dialects) is sql.
func migrationPackage(slug, sql string) []byte {
	return archivetest.TarGz(
		archivetest.Entry{Name: "plugin.json", Body: `{"slug":"` + slug + `","class":"X","name":"acme/` + slug + `","version":"1.0.0",
			"schemaVersion":1,"migrations":"migrations"}`},
		archivetest.Entry{Name: "migrations/sqlite/" + slug + "_0001_init.sql", Body: sql},
		archivetest.Entry{Name: "migrations/mysql/" + slug + "_0001_init.sql", Body: sql},
		archivetest.Entry{Name: "migrations/postgres/" + slug + "_0001_init.sql", Body: sql},
	)
}

// TestPluginCatalogTrust is issue 22's item 5 over the API: with plugin_catalog_public_key set,
// an unsigned catalog is refused (503, and so is an install from it), a signed one is served,
// and a change to the index after signing is not taken (the signed copy stays, stale); a
// package whose migration rewrites every user's name is refused (422, its plugin not kept,
// the names kept) while one whose migration touches only its <slug>_ tables installs; a plain
// http catalog address on another host is refused when stored (422).
func TestPluginCatalogTrust(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := newCatalogServer(t)
	cs.offer("acme/memo", map[string][]byte{"1.0.0": migrationPackage("memo",
		"CREATE TABLE memo_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\nINSERT INTO memo_notes (id, body) VALUES (1, 'hello');\n")}, "")
	cs.offer("acme/rename", map[string][]byte{"1.0.0": migrationPackage("rename", "UPDATE users SET display_name='x';\n")}, "")
	sign := func() {
		// The exact bytes the server writes (json.Encoder: sorted keys, a trailing newline).
		body, err := json.Marshal(map[string]any{"packages": cs.index})
		if err != nil {
			t.Fatal(err)
		}
		cs.archives["/catalog.json.sig"] = []byte(base64.StdEncoding.EncodeToString(ed25519.Sign(priv, append(body, '\n'))))
	}
	dir := t.TempDir()
	env := apitest.NewWith(t, apitest.Options{Net: netguard.Options{AllowLoopback: true}},
		"SVC_PLUGINS_DIR="+dir, "SVC_PLUGIN_CATALOG_URL="+cs.srv.URL+"/catalog.json", "SVC_PLUGIN_INSTALL_ENABLED=true",
		"SVC_PLUGIN_CATALOG_TTL=0", "SVC_PLUGIN_CATALOG_PUBLIC_KEY="+base64.StdEncoding.EncodeToString(pub))
	adm, _ := env.UserClient("root@example.com")

	unsigned := adm.Get("/plugins/catalog").Expect(t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if !strings.Contains(string(unsigned.Body), "requires a signed catalog") {
		t.Fatalf("unsigned catalog: %s", unsigned.Body)
	}
	adm.Post("/plugins", map[string]any{"package": "acme/memo"}).Expect(t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")

	sign()
	var cat gen.PluginCatalogResponse
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if len(cat.Data.Entries) != 2 || cat.Data.Stale {
		t.Fatalf("signed catalog = %+v", cat.Data)
	}

	refused := adm.Post("/plugins", map[string]any{"package": "acme/rename"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	if !strings.Contains(string(refused.Body), "table users is not one of the plugin") {
		t.Fatalf("migration on users: %s", refused.Body)
	}
	var users gen.UserListResponse
	adm.Get("/users").Expect(t, http.StatusOK).Decode(t, &users)
	for _, u := range users.Data.Users {
		if u.DisplayName == "x" {
			t.Fatalf("a refused migration renamed %s", u.Email)
		}
	}
	for _, p := range listDir(t, dir) {
		if strings.Contains(p, "rename") {
			t.Fatalf("the refused package left %s", p)
		}
	}
	var pr gen.PluginResponse
	adm.Post("/plugins", map[string]any{"package": "acme/memo"}).Expect(t, http.StatusCreated).Decode(t, &pr)
	if !pr.Data.Plugin.Enabled {
		t.Fatalf("memo = %+v", pr.Data.Plugin)
	}

	// Altered after signing: the signed copy stays in use, marked stale.
	cs.offer("acme/intruder", map[string][]byte{"1.0.0": migrationPackage("intruder", "SELECT 1;\n")}, "")
	adm.Get("/plugins/catalog").Expect(t, http.StatusOK).Decode(t, &cat)
	if len(cat.Data.Entries) != 2 || !cat.Data.Stale {
		t.Fatalf("tampered catalog = %+v", cat.Data)
	}
	adm.Post("/plugins", map[string]any{"package": "acme/intruder"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")

	bad := adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"plugin_catalog_url": "http://catalog.example/index.json"}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	if !strings.Contains(string(bad.Body), "must use https") {
		t.Fatalf("http catalog address: %s", bad.Body)
	}
	adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"plugin_catalog_public_key": "short"}}).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
}
