package plugins

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsvc/svc/plugins/sqlscope"
	"github.com/agentsvc/svc/store"
)

// loadMigrations reads the migrations of plugin slug for dialect from fsys/<dialect>/ (a folder
// that does not exist holds none). Every file must be named `<slug>_NNNN_name.sql` (document 2:
// file names carry the slug prefix) with versions 1..n without gaps or repeats, and every
// statement must touch only the plugin's `<slug>_` tables (plugins/sqlscope; the service's own
// names are reserved, store.ReservedSchemaName). All pending files (versions above applied)
// are checked before any runs; the store only applies the checked statements
// (store.MigratePlugin). Files already applied are not read: they never run again, and a
// plugin installed before the check keeps loading; they carry no statements, so even a record
// lost since runs nothing unchecked. Errors name the file and the rule (the plugin does not
// load, an install is undone).
func loadMigrations(fsys fs.FS, dialect, slug string, applied int) ([]store.PluginMigration, error) {
	entries, err := fs.ReadDir(fsys, dialect)
	if err != nil {
		if _, statErr := fs.Stat(fsys, dialect); statErr != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("read plugin migrations: %w", err)
	}
	name := regexp.MustCompile(`^` + regexp.QuoteMeta(slug) + `_(\d{4})_[a-z0-9_]+\.sql$`)
	scope := sqlscope.Scope{Slug: slug, Reserved: store.ReservedSchemaName}
	var out []store.PluginMigration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %s/%s: the name must be %s_NNNN_name.sql (the plugin's slug first)", dialect, e.Name(), slug)
		}
		v, _ := strconv.Atoi(m[1])
		if v <= applied {
			out = append(out, store.PluginMigration{Version: v, Name: e.Name()})
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > sqlscope.MaxBytes {
			return nil, fmt.Errorf("migration %s/%s: larger than %d bytes", dialect, e.Name(), sqlscope.MaxBytes)
		}
		body, err := fs.ReadFile(fsys, dialect+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read plugin migration %s: %w", e.Name(), err)
		}
		stmts, err := scope.Check(string(body))
		if err != nil {
			return nil, fmt.Errorf("migration %s/%s: %w", dialect, e.Name(), err)
		}
		out = append(out, store.PluginMigration{Version: v, Name: e.Name(), Statements: stmts})
	}
	slices.SortFunc(out, func(a, b store.PluginMigration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s/%s: versions must run 1, 2, 3 … without gaps or repeats", dialect, m.Name)
		}
	}
	return out, nil
}

// sharedPrefix names another plugin with applied migrations whose table prefix overlaps slug's
// ("a_" and "a_b_": every a_b_ table also starts with a_), or "" when none does: such a plugin
// could reach the other's tables, so its migrations do not run.
func sharedPrefix(slug string, migrated []string) string {
	for _, other := range migrated {
		if other != slug && (strings.HasPrefix(slug+"_", other+"_") || strings.HasPrefix(other+"_", slug+"_")) {
			return other
		}
	}
	return ""
}
