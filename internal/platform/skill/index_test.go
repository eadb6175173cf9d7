package skill_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func manifest(name, description string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n# %s\n", name, description, name))}
}

func TestIndexProviderOrderAndShadowing(t *testing.T) {
	t.Parallel()
	core := fstest.MapFS{
		"web-research/SKILL.md":         manifest("web-research", "Shipped research."),
		"web-research/references/a.md":  {Data: []byte("a")},
		"scheduling/SKILL.md":           manifest("scheduling", "Shipped scheduling."),
		"embed.go":                      {Data: []byte("package skills")},
		".hidden/SKILL.md":              manifest("hidden", "x"),
		"_drafts/SKILL.md":              manifest("drafts", "x"),
		"empty-folder/README.md":        {Data: []byte("no manifest")},
		"Bad_Name/SKILL.md":             manifest("Bad_Name", "x"),
		"mismatch/SKILL.md":             manifest("other", "x"),
		"manifest-dir/SKILL.md/file.md": {Data: []byte("a directory called SKILL.md")},
	}
	plugin := fstest.MapFS{
		"web-research/SKILL.md": manifest("web-research", "Plugin research that must not win."),
		"weather/SKILL.md":      manifest("weather", "Plugin weather."),
	}
	later := fstest.MapFS{
		"weather/SKILL.md": manifest("weather", "A second plugin's weather."),
		"alpha/SKILL.md":   manifest("alpha", "Alpha."),
	}
	idx, problems := skill.NewIndex(
		skill.Provider{Source: skill.CoreSource, FS: core},
		skill.Provider{Source: "acme", FS: plugin},
		skill.Provider{Source: "zed", FS: later},
		skill.Provider{Source: "nil"},
	)

	var names []string
	for _, s := range idx.All() {
		names = append(names, s.Name+"@"+s.Source)
	}
	if got, want := strings.Join(names, ","), "alpha@zed,scheduling@core,weather@acme,web-research@core"; got != want {
		t.Errorf("All = %s, want %s", got, want)
	}
	if s, ok := idx.Get("web-research"); !ok || s.Description != "Shipped research." || s.Source != skill.CoreSource {
		t.Errorf("web-research = %+v, %v: the plugin shadowed the shipped skill", s, ok)
	}
	if s, _ := idx.Get("weather"); s.Source != "acme" {
		t.Errorf("weather from %s, want the first plugin", s.Source)
	}

	type key struct{ source, folder string }
	got := map[key]error{}
	for _, p := range problems {
		got[key{p.Source, p.Folder}] = p.Err
		if !strings.Contains(p.Error(), p.Source) {
			t.Errorf("problem %q does not name its source", p.Error())
		}
	}
	wantConflict := []key{{"acme", "web-research"}, {"zed", "weather"}}
	for _, k := range wantConflict {
		if err := got[k]; !errors.Is(err, svcerr.ErrConflict) {
			t.Errorf("%v: got %v, want ErrConflict", k, err)
		}
	}
	wantInvalid := []key{{"core", "empty-folder"}, {"core", "Bad_Name"}, {"core", "mismatch"}, {"core", "manifest-dir"}}
	for _, k := range wantInvalid {
		if err := got[k]; !errors.Is(err, svcerr.ErrInvalid) {
			t.Errorf("%v: got %v, want ErrInvalid", k, err)
		}
	}
	if _, ok := got[key{"nil", ""}]; !ok {
		t.Errorf("a provider without a file system was not reported")
	}
	if n := len(wantConflict) + len(wantInvalid) + 1; len(problems) != n {
		t.Errorf("%d problems, want %d: %v", len(problems), n, problems)
	}
	if !reflect.DeepEqual(idx.Problems(), problems) {
		t.Errorf("Problems() differs from what NewIndex returned")
	}
	for _, hidden := range []string{"hidden", "drafts", ".hidden", "_drafts"} {
		if idx.Exists(hidden) {
			t.Errorf("hidden folder %s was indexed", hidden)
		}
	}
}

func TestIndexAccessors(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"pdf/SKILL.md":             {Data: []byte("---\nname: pdf\ndescription: d\nmetadata:\n  a: b\nallowed-tools: x y\n---\nThe body.\n")},
		"pdf/scripts/extract.py":   {Data: []byte("print(1)")},
		"pdf/reference.md":         {Data: []byte("ref")},
		"pdf/a-b/c.md":             {Data: []byte("c")},
		"pdf/.git/config":          {Data: []byte("secret")},
		"pdf/.env":                 {Data: []byte("secret")},
		"pdf/big.bin":              {Data: make([]byte, skill.MaxFileBytes+1)},
		"pdf/sub/SKILL.md":         {Data: []byte("nested manifests are ordinary files")},
		"many/SKILL.md":            manifest("many", "Many files."),
		"many/references/keep.txt": {Data: []byte("x")},
	}
	for i := range skill.MaxFiles + 5 {
		fsys[fmt.Sprintf("many/f%03d.txt", i)] = &fstest.MapFile{Data: []byte("x")}
	}
	idx, problems := skill.NewIndex(skill.Provider{Source: "t", FS: fsys})
	if len(problems) > 0 {
		t.Fatal(problems)
	}

	body, err := idx.Body("pdf")
	if err != nil || body != "The body.\n" {
		t.Errorf("Body = %q, %v", body, err)
	}
	if _, err := idx.Body("nope"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Errorf("Body of unknown: %v", err)
	}

	files, err := idx.Files("pdf")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-b/c.md", "big.bin", "reference.md", "scripts/extract.py", "sub/SKILL.md"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("Files = %v, want %v", files, want)
	}
	if _, err := idx.Files("nope"); !errors.Is(err, svcerr.ErrNotFound) {
		t.Errorf("Files of unknown: %v", err)
	}
	many, err := idx.Files("many")
	if err != nil || len(many) != skill.MaxFiles {
		t.Errorf("Files of many = %d entries, %v; want %d", len(many), err, skill.MaxFiles)
	}

	data, err := idx.ReadFile("pdf", "scripts/extract.py")
	if err != nil || string(data) != "print(1)" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	for _, tc := range []struct {
		skill, path string
		kind        error
	}{
		{"nope", "reference.md", svcerr.ErrNotFound},
		{"pdf", "../many/SKILL.md", svcerr.ErrInvalid},
		{"pdf", "scripts/../reference.md", svcerr.ErrInvalid},
		{"pdf", "/etc/passwd", svcerr.ErrInvalid},
		{"pdf", "", svcerr.ErrInvalid},
		{"pdf", ".", svcerr.ErrInvalid},
		{"pdf", `scripts\extract.py`, svcerr.ErrInvalid},
		{"pdf", "SKILL.md", svcerr.ErrNotFound},
		{"pdf", ".env", svcerr.ErrNotFound},
		{"pdf", ".git/config", svcerr.ErrNotFound},
		{"pdf", "missing.md", svcerr.ErrNotFound},
		{"pdf", "scripts", svcerr.ErrNotFound},
		{"pdf", "big.bin", svcerr.ErrTooLarge},
	} {
		if _, err := idx.ReadFile(tc.skill, tc.path); !errors.Is(err, tc.kind) {
			t.Errorf("ReadFile(%s, %q) = %v, want %v", tc.skill, tc.path, err, tc.kind)
		}
	}

	s, ok := idx.Get("pdf")
	if !ok || s.Metadata["a"] != "b" || !reflect.DeepEqual(s.AllowedTools, []string{"x", "y"}) {
		t.Fatalf("Get = %+v, %v", s, ok)
	}
	s.Metadata["a"] = "changed"
	s.AllowedTools[0] = "changed"
	if again, _ := idx.Get("pdf"); again.Metadata["a"] != "b" || again.AllowedTools[0] != "x" {
		t.Errorf("Get hands out the index's own maps and slices")
	}
	if _, ok := idx.Get("nope"); ok || idx.Exists("nope") || !idx.Exists("pdf") {
		t.Errorf("Get/Exists of unknown")
	}
}

// TestIndexSymlinks checks that symbolic links never lead outside a skill's folder.
func TestIndexSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), "secret")
	write(filepath.Join(outside, "linked", "SKILL.md"), "---\nname: linked\ndescription: d\n---\n")
	write(filepath.Join(dir, "pdf", "SKILL.md"), "---\nname: pdf\ndescription: d\n---\n")
	write(filepath.Join(dir, "pdf", "ok.md"), "ok")
	write(filepath.Join(outside, "manifest", "SKILL.md"), "---\nname: viasym\ndescription: d\n---\n")
	for _, l := range []struct{ target, link string }{
		{filepath.Join(outside, "secret.txt"), filepath.Join(dir, "pdf", "secret.txt")},
		{outside, filepath.Join(dir, "pdf", "out")},
		{filepath.Join(outside, "linked"), filepath.Join(dir, "linked")},
		{filepath.Join(outside, "manifest", "SKILL.md"), filepath.Join(dir, "viasym", "SKILL.md")},
	} {
		if err := os.MkdirAll(filepath.Dir(l.link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	idx, problems := skill.NewIndex(skill.Provider{Source: "disk", FS: os.DirFS(dir)})
	if idx.Exists("linked") {
		t.Errorf("a symlinked skill folder was indexed")
	}
	if idx.Exists("viasym") {
		t.Errorf("a symlinked SKILL.md was indexed")
	}
	if len(problems) != 1 || problems[0].Folder != "viasym" {
		t.Errorf("problems = %v, want the symlinked manifest", problems)
	}
	files, err := idx.Files("pdf")
	if err != nil || !reflect.DeepEqual(files, []string{"ok.md"}) {
		t.Errorf("Files = %v, %v; want only ok.md", files, err)
	}
	for _, p := range []string{"secret.txt", "out/secret.txt"} {
		if _, err := idx.ReadFile("pdf", p); !errors.Is(err, svcerr.ErrNotFound) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotFound", p, err)
		}
	}
}

func TestIndexUnreadableRoot(t *testing.T) {
	t.Parallel()
	idx, problems := skill.NewIndex(skill.Provider{Source: "gone", FS: os.DirFS(filepath.Join(t.TempDir(), "missing"))})
	if len(problems) != 1 || problems[0].Folder != "" || !errors.Is(problems[0], fs.ErrNotExist) {
		t.Errorf("problems = %v", problems)
	}
	if len(idx.All()) != 0 {
		t.Errorf("skills from a missing root")
	}
}

func TestIndexManifestTooLarge(t *testing.T) {
	t.Parallel()
	big := "---\nname: big\ndescription: d\n---\n" + strings.Repeat("x", skill.MaxSkillFileBytes)
	_, problems := skill.NewIndex(skill.Provider{Source: "t", FS: fstest.MapFS{"big/SKILL.md": {Data: []byte(big)}}})
	if len(problems) != 1 || !errors.Is(problems[0], svcerr.ErrTooLarge) {
		t.Errorf("problems = %v", problems)
	}
}
