package plugins

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"

	"github.com/agentsvc/svc/store"
)

// loadMigrations reads the migrations of plugin slug for dialect from fsys/<dialect>/ (a folder
// that does not exist holds none). Every file must be named `<slug>_NNNN_name.sql` (document 2:
// file names carry the slug prefix) with versions 1..n without gaps or repeats; the store only
// applies them (store.MigratePlugin). Errors name the file and the rule (the plugin does not
// load).
func loadMigrations(fsys fs.FS, dialect, slug string) ([]store.PluginMigration, error) {
	entries, err := fs.ReadDir(fsys, dialect)
	if err != nil {
		if _, statErr := fs.Stat(fsys, dialect); statErr != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("read plugin migrations: %w", err)
	}
	name := regexp.MustCompile(`^` + regexp.QuoteMeta(slug) + `_(\d{4})_[a-z0-9_]+\.sql$`)
	var out []store.PluginMigration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %s/%s: the name must be %s_NNNN_name.sql (the plugin's slug first)", dialect, e.Name(), slug)
		}
		body, err := fs.ReadFile(fsys, dialect+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read plugin migration %s: %w", e.Name(), err)
		}
		v, _ := strconv.Atoi(m[1])
		out = append(out, store.PluginMigration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b store.PluginMigration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s/%s: versions must run 1, 2, 3 … without gaps or repeats", dialect, m.Name)
		}
	}
	return out, nil
}
