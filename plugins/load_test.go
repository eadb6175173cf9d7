package plugins_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/plugins"
	"github.com/agentsvc/svc/store/storetest"
)

// writeTree writes files (path → content) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const weatherTemplate = `{"id":"weather/forecaster","name":"Forecaster","version":"1.0.0",
 "agent":{"system_prompt":"Forecast.","max_steps":5},"tools":[]}`

// TestLoad: a plugins directory with a good plugin (templates, skills, migrations, frontend),
// a vendor folder, a broken manifest, a duplicate slug and a missing requirement. The broken
// ones are listed with errors naming the plugin and the rule; nothing stops the load.
func TestLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"weather/plugin.json": `{"slug":"weather","class":"Acme\\Weather","name":"acme/weather","version":"1.2.0",
			"templates":["templates"],"skills":["skills"],"schemaVersion":2,"migrations":"migrations","frontendEntry":"dist/index.js"}`,
		"weather/templates/forecaster.json":                   weatherTemplate,
		"weather/templates/stray.json":                        strings.Replace(weatherTemplate, "weather/forecaster", "other/stray", 1),
		"weather/skills/forecasting/SKILL.md":                 "---\nname: forecasting\ndescription: How to read a forecast.\n---\nBody.\n",
		"weather/migrations/sqlite/weather_0001_cities.sql":   "CREATE TABLE weather_cities (name TEXT NOT NULL);\n",
		"weather/migrations/sqlite/weather_0002_index.sql":    "CREATE INDEX weather_cities_name ON weather_cities (name);\n",
		"weather/migrations/mysql/weather_0001_cities.sql":    "CREATE TABLE weather_cities (name VARCHAR(64) NOT NULL);\n",
		"weather/migrations/mysql/weather_0002_index.sql":     "CREATE INDEX weather_cities_name ON weather_cities (name);\n",
		"weather/migrations/postgres/weather_0001_cities.sql": "CREATE TABLE weather_cities (name VARCHAR(64) NOT NULL);\n",
		"weather/migrations/postgres/weather_0002_index.sql":  "CREATE INDEX weather_cities_name ON weather_cities (name);\n",
		"weather/dist/index.js":                               "export {}",
		"acme/maps/plugin.json":                               `{"slug":"maps","class":"Acme\\Maps","name":"acme/maps","requires":["acme/weather"]}`,
		"broken/plugin.json":                                  `{"slug":"Broken","class":"X"}`,
		"zagain/plugin.json":                                  `{"slug":"weather","class":"X"}`,
		"lonely/plugin.json":                                  `{"slug":"lonely","class":"X","requires":["acme/nowhere"]}`,
		"badmig/plugin.json":                                  `{"slug":"badmig","class":"X","schemaVersion":1,"migrations":"m"}`,
		"badmig/m/sqlite/0001_no_prefix.sql":                  "SELECT 1;\n",
		"badmig/m/mysql/0001_no_prefix.sql":                   "SELECT 1;\n",
		"badmig/m/postgres/0001_no_prefix.sql":                "SELECT 1;\n",
		".install-123/plugin.json":                            `{"slug":"hidden","class":"X"}`,
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := plugins.Load(ctx, plugins.Options{Dir: dir, Store: st, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	bySlugDir := map[string]*plugins.Loaded{}
	for _, l := range set.List() {
		bySlugDir[filepath.Base(l.Dir)] = l
	}
	if len(bySlugDir) != 6 {
		t.Fatalf("%d plugins listed, want 6 (the hidden folder is skipped)", len(bySlugDir))
	}
	w := bySlugDir["weather"]
	if w.Err != nil || w.Package != "acme/weather" || w.Version() != "1.2.0" || w.Registered || len(w.Templates) != 1 ||
		w.Skills != 1 || w.Migrations != 2 || w.SchemaVersion != 2 {
		t.Fatalf("weather = %+v", w)
	}
	if !set.Installed("acme/weather") || set.Installed("acme/nowhere") {
		t.Fatal("Installed")
	}
	if got := set.RequiredBy("acme/weather"); len(got) != 1 || got[0] != "acme/maps" {
		t.Fatalf("RequiredBy = %v", got)
	}
	if m := bySlugDir["maps"]; m.Err != nil || m.Package != "acme/maps" {
		t.Fatalf("maps (vendor folder) = %+v", m)
	}
	for folder, rule := range map[string]string{
		"broken": "plugin broken: slug \"Broken\" must match",
		"zagain": "slug already used",
		"lonely": "requires acme/nowhere, which is not installed",
		"badmig": "the name must be badmig_NNNN_name.sql",
	} {
		l := bySlugDir[folder]
		var me *plugins.ManifestError
		if l.Enabled() || !errors.As(l.Err, &me) || !strings.Contains(l.Err.Error(), rule) {
			t.Errorf("%s: err %v, want one with %q", folder, l.Err, rule)
		}
	}
	if n := len(set.Templates()); n != 1 || len(set.SkillProviders()) != 1 {
		t.Fatalf("active contributions: %d templates, %d skill providers", n, len(set.SkillProviders()))
	}
	// Loading again applies no migration twice.
	if again, err := plugins.Load(ctx, plugins.Options{Dir: dir, Store: st, Log: quiet}); err != nil {
		t.Fatal(err)
	} else if l, _ := again.Get("weather"); l.Err != nil || l.SchemaVersion != 2 {
		t.Fatalf("second load: %+v", l)
	}
	// A plugins directory that does not exist holds no plugins.
	if empty, err := plugins.Load(ctx, plugins.Options{Dir: filepath.Join(dir, "nope"), Store: st, Log: quiet}); err != nil || len(empty.List()) != 0 {
		t.Fatalf("missing directory: %v, %v", empty, err)
	}
}

// TestMigrationsTouchOnlyTheirTables is issue 22's plugin migration that rewrote every user's
// name: a plugin whose second migration updates users does not load, and nothing of it runs
// (not even its first, harmless migration: every file is checked before any runs); the users
// keep their names. A plugin whose migrations touch only its <slug>_ tables loads, and a later
// plugin whose table prefix overlaps it (notes_extra: notes_extra_… tables start with notes_)
// is refused.
func TestMigrationsTouchOnlyTheirTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	u := storetest.User(t, st)
	dir := t.TempDir()
	both := func(files map[string]string, name, sql string) {
		files[name[:strings.Index(name, "/")]+"/migrations/sqlite/"+name[strings.Index(name, "/")+1:]] = sql
		files[name[:strings.Index(name, "/")]+"/migrations/mysql/"+name[strings.Index(name, "/")+1:]] = sql
		files[name[:strings.Index(name, "/")]+"/migrations/postgres/"+name[strings.Index(name, "/")+1:]] = sql
	}
	files := map[string]string{
		"rename/plugin.json": `{"slug":"rename","class":"X","schemaVersion":2,"migrations":"migrations"}`,
		"notes/plugin.json":  `{"slug":"notes","class":"X","schemaVersion":2,"migrations":"migrations"}`,
	}
	both(files, "rename/rename_0001_table.sql", "CREATE TABLE rename_log (id INTEGER PRIMARY KEY);\n")
	both(files, "rename/rename_0002_names.sql", "UPDATE users SET display_name='x';\n")
	both(files, "notes/notes_0001_notes.sql", "CREATE TABLE notes_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\n")
	both(files, "notes/notes_0002_seed.sql", "INSERT INTO notes_notes (id, body) VALUES (1, 'hello');\nUPDATE notes_notes SET body = upper(body) WHERE id = 1;\n")
	writeTree(t, dir, files)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	set, err := plugins.Load(ctx, plugins.Options{Dir: dir, Store: st, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := set.Get("rename")
	if r == nil || r.Enabled() || r.Err == nil || !strings.Contains(r.Err.Error(), "rename_0002_names.sql: statement 1 (UPDATE users SET display_name='x'): table users is not one of the plugin's") {
		t.Fatalf("rename = %+v", r)
	}
	if v, err := st.PluginSchemaVersion(ctx, "rename"); err != nil || v != 0 {
		t.Fatalf("rename's migrations applied up to %d (%v); want none", v, err)
	}
	if got, err := st.UserByID(ctx, u.ID); err != nil || got.DisplayName != u.DisplayName {
		t.Fatalf("user after the load = %+v, %v; want the name %q kept", got, err, u.DisplayName)
	}
	n, _ := set.Get("notes")
	if n == nil || n.Err != nil || n.SchemaVersion != 2 {
		t.Fatalf("notes = %+v", n)
	}

	writeTree(t, dir, map[string]string{"extra/plugin.json": `{"slug":"notes_extra","class":"X","schemaVersion":1,"migrations":"m"}`,
		"extra/m/sqlite/notes_extra_0001_t.sql":   "CREATE TABLE notes_extra_t (id INTEGER);\n",
		"extra/m/mysql/notes_extra_0001_t.sql":    "CREATE TABLE notes_extra_t (id INTEGER);\n",
		"extra/m/postgres/notes_extra_0001_t.sql": "CREATE TABLE notes_extra_t (id INTEGER);\n"})
	set, err = plugins.Load(ctx, plugins.Options{Dir: dir, Store: st, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := set.Get("notes_extra"); x == nil || x.Enabled() || !strings.Contains(x.Err.Error(), "the table prefix notes_extra_ overlaps that of plugin notes") {
		t.Fatalf("notes_extra = %+v", x)
	}
}
