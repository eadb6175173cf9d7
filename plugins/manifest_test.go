package plugins_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	svc "github.com/agentsvc/svc"
	"github.com/agentsvc/svc/plugins"
)

func TestParseManifestRules(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", plugins.MaxDescription+1)
	for name, tc := range map[string]struct {
		json string
		rule string // a substring of the error; "" for a manifest that loads
	}{
		"minimal":               {`{"slug":"weather","class":"Acme\\Weather"}`, ""},
		"slug required":         {`{"class":"X"}`, "slug is required"},
		"slug pattern":          {`{"slug":"Weather","class":"X"}`, "slug \"Weather\" must match"},
		"slug dash start":       {`{"slug":"-w","class":"X"}`, "must match"},
		"class required":        {`{"slug":"w"}`, "class is required"},
		"description 500":       {`{"slug":"w","class":"X","description":"` + strings.Repeat("é", 500) + `"}`, ""},
		"description 501":       {`{"slug":"w","class":"X","description":"` + long + `"}`, "description is longer than 500"},
		"svg markup":            {`{"slug":"w","class":"X","icon":"<svg><path d='M0 0'/></svg>"}`, "not SVG markup"},
		"unknown key":           {`{"slug":"w","class":"X","mcpServer":[]}`, "unknown field"},
		"package name":          {`{"slug":"w","class":"X","name":"Acme/Weather"}`, "package name"},
		"autoload shape":        {`{"slug":"w","class":"X","autoload":{"psr-4":{"Acme\\":"src/"},"files":["a.php"]}}`, ""},
		"autoload escapes":      {`{"slug":"w","class":"X","autoload":{"files":["../a.php"]}}`, "inside the plugin folder"},
		"frontend absolute":     {`{"slug":"w","class":"X","frontendEntry":"/etc/passwd"}`, "inside the plugin folder"},
		"schema without folder": {`{"slug":"w","class":"X","schemaVersion":1}`, "needs a migrations folder"},
		"server both":           {`{"slug":"w","class":"X","mcpServers":[{"name":"s","command":"x","url":"http://h"}]}`, "exactly one of"},
		"server neither":        {`{"slug":"w","class":"X","mcpServers":[{"name":"s"}]}`, "exactly one of"},
		"server twice":          {`{"slug":"w","class":"X","mcpServers":[{"name":"s","command":"a"},{"name":"s","command":"b"}]}`, "declared twice"},
		"http secret header":    {`{"slug":"w","class":"X","mcpServers":[{"name":"s","url":"https://h","secrets":[{"key":"token"}]}]}`, "needs a header name"},
		"stdio secret env":      {`{"slug":"w","class":"X","mcpServers":[{"name":"s","command":"x","secrets":[{"key":"token","env":"TOKEN"}]}]}`, ""},
		"provider server":       {`{"slug":"w","class":"X","searchProviders":[{"server":"nope","tool":"search"}]}`, "names no server"},
		"two values":            {`{"slug":"w","class":"X"} {}`, "more than one JSON value"},
		"requires pattern":      {`{"slug":"w","class":"X","requires":["nope"]}`, "requires[0]"},
	} {
		m, err := plugins.ParseManifest("folder", []byte(tc.json))
		if tc.rule == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		var me *plugins.ManifestError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.rule) || m != nil {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.rule)
			continue
		}
		if !strings.HasPrefix(err.Error(), "plugin ") {
			t.Errorf("%s: %q does not name the plugin", name, err)
		}
	}
}

// TestManifestFallbacks: an unrecognised icon becomes puzzle and an unknown accent primary,
// silently; a bundled name and a path starting with a moveto are kept.
func TestManifestFallbacks(t *testing.T) {
	t.Parallel()
	for icon, want := range map[string]string{
		"":                 "puzzle",
		"cloud":            "cloud",
		"M12 2L2 7":        "M12 2L2 7",
		"M 1 1h2":          "M 1 1h2",
		"m-1.5 2l3 3":      "m-1.5 2l3 3",
		"m -2 4":           "m -2 4",
		"M-1 2":            "puzzle", // capital M takes no sign (document 2)
		"L1 1":             "puzzle",
		"Cloud Icon":       "puzzle",
		"data:image/png,x": "puzzle",
	} {
		raw, _ := json.Marshal(map[string]string{"slug": "w", "class": "X", "icon": icon, "accent": "teal"})
		m, err := plugins.ParseManifest("w", raw)
		if err != nil || m.Icon != want || m.Accent != "primary" {
			t.Errorf("icon %q: %+v, %v; want %q and accent primary", icon, m, err, want)
		}
	}
	m, err := plugins.ParseManifest("w", []byte(`{"slug":"w","class":"X","accent":"rose"}`))
	if err != nil || m.Accent != "rose" || m.PackageName() != "local/w" || m.Title() != "w" {
		t.Fatalf("%+v, %v", m, err)
	}
}

// TestPluginSchemaAgrees: the published JSON Schema accepts the manifests ParseManifest accepts
// and refuses the ones it refuses for their shape (the schema cannot express every rule, so
// only shape rules are compared).
func TestPluginSchemaAgrees(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(svc.PluginSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("plugin.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("plugin.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	valid := func(s string) bool {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(v) == nil
	}
	for _, s := range []string{
		`{"slug":"weather","class":"X","name":"acme/weather","version":"1.0.0","templates":["t"],"skills":["s"],
		  "schemaVersion":1,"migrations":"m","mcpServers":[{"name":"fc","command":"python3","args":["s.py"],
		  "secrets":[{"key":"token","env":"TOKEN"}]}],"searchProviders":[{"server":"fc","tool":"search"}],"requires":["acme/base"]}`,
		`{"slug":"w","class":"X","mcpServers":[{"name":"h","url":"https://mcp.example.com/mcp","headers":{"X-A":"b"}}]}`,
	} {
		if _, err := plugins.ParseManifest("f", []byte(s)); err != nil || !valid(s) {
			t.Errorf("accepted by ParseManifest (%v) and the schema (%v): %s", err, valid(s), s)
		}
	}
	for _, s := range []string{
		`{"class":"X"}`, `{"slug":"W","class":"X"}`, `{"slug":"w","class":"X","extra":1}`,
		`{"slug":"w","class":"X","mcpServers":[{"name":"s"}]}`, `{"slug":"w","class":"X","requires":["x"]}`,
	} {
		if _, err := plugins.ParseManifest("f", []byte(s)); err == nil || valid(s) {
			t.Errorf("refused by ParseManifest (%v) and the schema (valid=%v): %s", err, valid(s), s)
		}
	}
}

// FuzzParseManifest: any input is either refused with a ManifestError naming a plugin or gives
// a manifest whose fallbacks are applied and whose paths stay inside the folder.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"slug":"w","class":"X","icon":"M1 1","accent":"sky","templates":["t"],"mcpServers":[{"name":"s","command":"c"}]}`))
	f.Add([]byte(`{"slug":"a_b-c","class":"Y","description":"d","autoload":{"psr-4":{"A\\":"src"}}}`))
	f.Add([]byte(`{"slug":"w","class":"X","frontendEntry":"dist/../../x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := plugins.ParseManifest("dir", data)
		if err != nil {
			var me *plugins.ManifestError
			if !errors.As(err, &me) || me.Plugin == "" || me.Rule == "" {
				t.Fatalf("error %v is no ManifestError", err)
			}
			return
		}
		if m.Icon == "" || m.Accent == "" || m.Slug == "" || strings.TrimSpace(m.Class) == "" {
			t.Fatalf("manifest without fallbacks: %+v", m)
		}
		for _, p := range append(append([]string{m.FrontendEntry, m.Migrations}, m.Templates...), m.Skills...) {
			clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
			if p != "" && (strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../")) {
				t.Fatalf("path %q leaves the folder", p)
			}
		}
	})
}
