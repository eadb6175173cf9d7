package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/store"
)

// SourceInstalled is the source of a plugin found in the plugins directory; SourceBundled of
// one compiled into the binary with its manifest.
const (
	SourceInstalled = "installed"
	SourceBundled   = "bundled"
)

// UnversionedVersion is the version shown for a plugin whose manifest names none.
const UnversionedVersion = "0.0.0"

// Loaded is one plugin as the service loaded it: its manifest, what it contributes and, when
// it failed, why (Err names the plugin and the rule; its contributions are then inactive).
type Loaded struct {
	Dir        string
	Manifest   *Manifest // nil when plugin.json did not parse
	Slug       string    // the manifest's slug, or the folder name when it did not parse
	Package    string
	Source     string
	Registered bool   // the manifest's class names a compiled-in entry point
	Plugin     Plugin // the entry point, when Registered and built
	Err        error

	Templates      []agenttemplate.Entry
	SkillProviders []skill.Provider
	Skills         int // skill folders (with a SKILL.md) in SkillProviders
	Migrations     int
	SchemaVersion  int // applied
}

// Enabled reports whether the plugin loaded and its contributions are active.
func (l *Loaded) Enabled() bool { return l.Err == nil }

// Version is the manifest's version, or UnversionedVersion.
func (l *Loaded) Version() string {
	if l.Manifest != nil && l.Manifest.Version != "" {
		return l.Manifest.Version
	}
	return UnversionedVersion
}

// Set is the plugins of a running service, loaded once at start. It is read-only after Load.
type Set struct {
	list []*Loaded
}

// Options are what Load needs.
type Options struct {
	Dir   string // plugins_dir; a folder that does not exist holds no plugins
	Store *store.Store
	Deps  Deps
	Log   *slog.Logger
}

// Load reads every plugin of o.Dir: a folder holding plugin.json directly below the plugins
// directory (placed by hand) or below a vendor folder (`<vendor>/<name>/`, as the installer
// unpacks packages); folders starting with "." are skipped (the installer's work). Of two
// folders declaring one slug, the first in path order loads. A plugin that
// breaks a rule is listed with its error and contributes nothing; the server never fails to
// start because of a plugin. Migrations of loaded plugins are applied here. The error is only
// for a plugins directory that exists but cannot be read.
func Load(ctx context.Context, o Options) (*Set, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	dirs, err := pluginDirs(o.Dir)
	if err != nil {
		return nil, err
	}
	s := &Set{}
	slugs := map[string]*Loaded{}
	for _, dir := range dirs {
		l := loadOne(ctx, o, dir)
		if l.Err == nil {
			if prev, dup := slugs[l.Slug]; dup {
				l.Err = &ManifestError{Plugin: l.Slug, Rule: fmt.Sprintf("slug already used by the plugin in %s", prev.Dir)}
			} else {
				slugs[l.Slug] = l
			}
		}
		s.list = append(s.list, l)
	}
	// A plugin whose required packages are missing (or did not load) does not load either,
	// until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, l := range s.list {
			if l.Err != nil {
				continue
			}
			for _, req := range l.Manifest.Requires {
				if !s.Installed(req) {
					l.Err = &ManifestError{Plugin: l.Slug, Rule: fmt.Sprintf("requires %s, which is not installed (plugins are never installed on their own)", req)}
					changed = true
					break
				}
			}
		}
	}
	sort.SliceStable(s.list, func(i, j int) bool { return s.list[i].Slug < s.list[j].Slug })
	for _, l := range s.list {
		if l.Err != nil {
			o.Log.Warn("plugin not loaded", "plugin", l.Slug, "dir", l.Dir, "err", l.Err)
		} else {
			o.Log.Info("plugin loaded", "plugin", l.Slug, "package", l.Package, "version", l.Version(),
				"class_registered", l.Registered, "templates", len(l.Templates), "skills", len(l.SkillProviders))
		}
	}
	return s, nil
}

// pluginDirs lists the plugin folders of root, sorted.
func pluginDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plugins directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
			out = append(out, dir)
			continue
		}
		subs, err := os.ReadDir(dir) // a vendor folder
		if err != nil {
			continue
		}
		for _, sub := range subs {
			p := filepath.Join(dir, sub.Name())
			if sub.IsDir() && !strings.HasPrefix(sub.Name(), ".") {
				if _, err := os.Stat(filepath.Join(p, ManifestFile)); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// loadOne reads one plugin folder.
func loadOne(ctx context.Context, o Options, dir string) *Loaded {
	l := &Loaded{Dir: dir, Slug: filepath.Base(dir), Package: "local/" + filepath.Base(dir), Source: SourceInstalled}
	data, err := readLimited(filepath.Join(dir, ManifestFile), MaxManifestBytes)
	if err != nil {
		l.Err = &ManifestError{Plugin: l.Slug, Rule: err.Error()}
		return l
	}
	m, err := ParseManifest(filepath.Base(dir), data)
	if err != nil {
		l.Err = err
		return l
	}
	l.Manifest, l.Slug, l.Package = m, m.Slug, m.PackageName()
	fail := func(format string, args ...any) *Loaded {
		l.Err = &ManifestError{Plugin: m.Slug, Rule: fmt.Sprintf(format, args...)}
		l.Templates, l.SkillProviders = nil, nil
		return l
	}
	if m.FrontendEntry != "" {
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m.FrontendEntry))); err != nil || !fi.Mode().IsRegular() {
			return fail("frontendEntry %s is not a file of the plugin", m.FrontendEntry)
		}
	}
	for _, p := range m.Templates {
		entries, err := loadTemplates(filepath.Join(dir, filepath.FromSlash(p)), m.Slug)
		if err != nil {
			return fail("templates %s: %v", p, err)
		}
		for _, e := range entries {
			if problem := templateProblem(e, m.Slug); problem != "" {
				o.Log.Warn("plugin template skipped", "plugin", m.Slug, "file", e.Path, "reason", problem)
				continue
			}
			l.Templates = append(l.Templates, e)
		}
	}
	for _, p := range m.Skills {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if fi, err := os.Stat(full); err != nil || !fi.IsDir() {
			return fail("skills %s is not a folder of the plugin", p)
		}
		l.SkillProviders = append(l.SkillProviders, skill.Provider{Source: m.Slug, FS: os.DirFS(full)})
		subs, _ := os.ReadDir(full)
		for _, sub := range subs {
			if _, err := os.Stat(filepath.Join(full, sub.Name(), "SKILL.md")); sub.IsDir() && err == nil {
				l.Skills++
			}
		}
	}
	if m.Migrations != "" && o.Store != nil {
		full := filepath.Join(dir, filepath.FromSlash(m.Migrations))
		applied, err := o.Store.PluginSchemaVersion(ctx, m.Slug)
		if err != nil {
			return fail("%v", err)
		}
		migs, err := loadMigrations(os.DirFS(full), o.Store.Dialect(), m.Slug, applied)
		if err != nil {
			return fail("%v", err)
		}
		if len(migs) != m.SchemaVersion {
			return fail("schemaVersion is %d but the migrations run to %d (bump schemaVersion with each new migration file)", m.SchemaVersion, len(migs))
		}
		if len(migs) > applied {
			migrated, err := o.Store.PluginMigrationSlugs(ctx)
			if err != nil {
				return fail("%v", err)
			}
			if other := sharedPrefix(m.Slug, migrated); other != "" {
				return fail("migrations: the table prefix %s_ overlaps that of plugin %s, whose tables exist; choose another slug", m.Slug, other)
			}
		}
		if _, err := o.Store.MigratePlugin(ctx, m.Slug, migs); err != nil {
			return fail("migrate: %v", err)
		}
		l.Migrations = len(migs)
		if l.SchemaVersion, err = o.Store.PluginSchemaVersion(ctx, m.Slug); err != nil {
			return fail("%v", err)
		}
	}
	if f, ok := factory(m.Class); ok {
		l.Registered = true
		p, err := f(m, dir, o.Deps)
		if err != nil {
			return fail("entry point %s: %v", m.Class, err)
		}
		l.Plugin = p
	}
	return l
}

// loadTemplates reads the template files of a folder (any depth) or one file.
func loadTemplates(path, slug string) ([]agenttemplate.Entry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("not found")
	}
	if fi.IsDir() {
		return agenttemplate.LoadDir(os.DirFS(path), slug)
	}
	dir, name := filepath.Split(path)
	entries, err := agenttemplate.LoadDir(os.DirFS(dir), slug)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Path == name {
			return []agenttemplate.Entry{e}, nil
		}
	}
	return nil, fmt.Errorf("not a template file (.json, .yaml, .yml)")
}

// templateProblem says why a plugin template is not offered: errors, or an id outside the
// plugin's namespace (`<slug>/<name>`, NAMESPACE_MISMATCH).
func templateProblem(e agenttemplate.Entry, slug string) string {
	if e.Template == nil {
		return "the template has errors"
	}
	if !strings.HasPrefix(e.Template.ID, slug+"/") {
		return fmt.Sprintf("%s: the id %q must start with %q", agenttemplate.CodeNamespaceMismatch, e.Template.ID, slug+"/")
	}
	return ""
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read", ManifestFile)
	}
	defer f.Close()
	buf := make([]byte, limit+1)
	n, _ := io.ReadFull(f, buf)
	if int64(n) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", ManifestFile, limit)
	}
	return buf[:n], nil
}

// List returns the plugins sorted by slug.
func (s *Set) List() []*Loaded {
	if s == nil {
		return nil
	}
	return s.list
}

// Get returns the plugin with slug: the one that loaded when another folder declares the same
// slug.
func (s *Set) Get(slug string) (*Loaded, bool) {
	var found *Loaded
	for _, l := range s.List() {
		if l.Slug == slug && (found == nil || l.Enabled()) {
			found = l
		}
	}
	return found, found != nil
}

// Installed reports whether package pkg is present and loaded.
func (s *Set) Installed(pkg string) bool {
	for _, l := range s.List() {
		if l.Package == pkg && l.Enabled() {
			return true
		}
	}
	return false
}

// RequiredBy lists the enabled plugins that require pkg, by package name.
func (s *Set) RequiredBy(pkg string) []string {
	out := []string{}
	for _, l := range s.List() {
		if l.Manifest != nil && slices.Contains(l.Manifest.Requires, pkg) {
			out = append(out, l.Package)
		}
	}
	return out
}

// Templates returns the templates of the enabled plugins.
func (s *Set) Templates() []agenttemplate.Entry {
	var out []agenttemplate.Entry
	for _, l := range s.List() {
		if l.Enabled() {
			out = append(out, l.Templates...)
		}
	}
	return out
}

// SkillProviders returns the skill folders of the enabled plugins (listed after the core
// provider by the caller, so a plugin cannot shadow a shipped skill).
func (s *Set) SkillProviders() []skill.Provider {
	var out []skill.Provider
	for _, l := range s.List() {
		if l.Enabled() {
			out = append(out, l.SkillProviders...)
		}
	}
	return out
}

// SearchProviders returns the search providers of the enabled compiled-in plugins.
func (s *Set) SearchProviders() []NamedProvider {
	var out []NamedProvider
	for _, l := range s.List() {
		if sr, ok := l.Plugin.(Searcher); ok && l.Enabled() {
			for _, f := range sr.SearchProviders() {
				out = append(out, NamedProvider{Plugin: l.Slug, Search: f})
			}
		}
	}
	return out
}
