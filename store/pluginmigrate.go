package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/svcerr"
)

// PluginMigration is one SQL migration file of a plugin, for the store's dialect.
type PluginMigration struct {
	Version int
	Name    string // the file name
	SQL     string
}

type pluginMigrationRow struct {
	Slug      string `gorm:"primaryKey"`
	Version   int    `gorm:"primaryKey;autoIncrement:false"`
	Name      string
	AppliedAt time.Time
}

func (pluginMigrationRow) TableName() string { return "plugin_migrations" }

// LoadPluginMigrations reads the migrations of plugin slug for this store's dialect from
// fsys/<dialect>/ (a folder that does not exist holds none). Every file must be named
// `<slug>_NNNN_name.sql` (document 2: file names carry the slug prefix) with versions 1..n
// without gaps or repeats. Errors: ErrInvalid naming the file and the rule.
func (s *Store) LoadPluginMigrations(fsys fs.FS, slug string) ([]PluginMigration, error) {
	entries, err := fs.ReadDir(fsys, s.dialect)
	if err != nil {
		if _, statErr := fs.Stat(fsys, s.dialect); statErr != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("read plugin migrations: %w", err)
	}
	name := regexp.MustCompile(`^` + regexp.QuoteMeta(slug) + `_(\d{4})_[a-z0-9_]+\.sql$`)
	var out []PluginMigration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, svcerr.New(svcerr.ErrInvalid, "migration %s/%s: the name must be %s_NNNN_name.sql (the plugin's slug first)",
				s.dialect, e.Name(), slug)
		}
		body, err := fs.ReadFile(fsys, s.dialect+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read plugin migration %s: %w", e.Name(), err)
		}
		v, _ := strconv.Atoi(m[1])
		out = append(out, PluginMigration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b PluginMigration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, svcerr.New(svcerr.ErrInvalid, "migration %s/%s: versions must run 1, 2, 3 … without gaps or repeats", s.dialect, m.Name)
		}
	}
	return out, nil
}

// PluginSchemaVersion is the highest migration version applied for plugin slug (0: none).
func (s *Store) PluginSchemaVersion(ctx context.Context, slug string) (int, error) {
	var v sql.NullInt64
	if err := s.conn(ctx).Model(&pluginMigrationRow{}).Where("slug = ?", slug).Select("MAX(version)").Row().Scan(&v); err != nil {
		return 0, fmt.Errorf("read plugin schema version: %w", err)
	}
	return int(v.Int64), nil
}

// MigratePlugin applies the migrations of plugin slug that are not recorded yet, in version
// order, each with its record (one transaction per migration on SQLite; on MySQL/MariaDB, where
// DDL commits implicitly, a migration is recorded after its last statement, and the whole run
// holds the migration lock, so two processes starting at once never apply one twice). Errors
// are uncategorised: a failing migration is the plugin author's or operator's problem, and the
// plugin does not load.
func (s *Store) MigratePlugin(ctx context.Context, slug string, migs []PluginMigration) (applied int, err error) {
	err = s.withMigrationLock(ctx, func(db *gorm.DB) error {
		for _, m := range migs {
			err := db.Transaction(func(tx *gorm.DB) error {
				var n int64
				if err := tx.Model(&pluginMigrationRow{}).Where("slug = ? AND version = ?", slug, m.Version).Count(&n).Error; err != nil {
					return err
				}
				if n > 0 {
					return nil
				}
				for i, stmt := range splitStatements(m.SQL) {
					if err := tx.Exec(stmt).Error; err != nil {
						return fmt.Errorf("plugin %s migration %s statement %d: %w", slug, m.Name, i+1, err)
					}
				}
				applied++
				return tx.Create(&pluginMigrationRow{Slug: slug, Version: m.Version, Name: m.Name, AppliedAt: s.now()}).Error
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return applied, err
}
