package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// PluginMigration is one SQL migration file of a plugin, for the store's dialect. Package
// plugins reads the files, applies the naming and numbering rules (document 2) and checks that
// the statements touch only the plugin's tables (plugins/sqlscope); the store runs exactly
// these statements, one Exec each.
type PluginMigration struct {
	Version    int
	Name       string // the file name
	Statements []string
}

type pluginMigrationRow struct {
	Slug      string `gorm:"primaryKey"`
	Version   int    `gorm:"primaryKey;autoIncrement:false"`
	Name      string
	AppliedAt time.Time
}

func (pluginMigrationRow) TableName() string { return "plugin_migrations" }

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
				for i, stmt := range m.Statements {
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

// PluginMigrationSlugs lists the slugs that have applied migrations (their tables exist, or
// did), so a plugin whose table prefix overlaps one of theirs can be refused.
func (s *Store) PluginMigrationSlugs(ctx context.Context) ([]string, error) {
	var slugs []string
	if err := s.conn(ctx).Model(&pluginMigrationRow{}).Distinct("slug").Order("slug").Pluck("slug", &slugs).Error; err != nil {
		return nil, fmt.Errorf("read plugin migration slugs: %w", err)
	}
	return slugs, nil
}

// schemaNameRE finds the names the service's migrations give tables, indexes and constraints.
var schemaNameRE = regexp.MustCompile("(?i)\\b(?:TABLE|INDEX|KEY|CONSTRAINT)\\s+(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?`?([a-z0-9_]+)`?")

// reservedNames are the table, index and constraint names of the service's schema, every
// dialect and version, and its bookkeeping tables.
var reservedNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{"schema_migrations": true, "plugin_migrations": true}
	_ = fs.WalkDir(migrationFS, "migrations", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(migrationFS, p)
		if err != nil {
			return err
		}
		for _, m := range schemaNameRE.FindAllStringSubmatch(string(body), -1) {
			names[strings.ToLower(m[1])] = true
		}
		return nil
	})
	return names
})

// ReservedSchemaName reports whether name (lowercase) is a table, index or constraint of the
// service's own schema, which no plugin migration may touch even when it carries the plugin's
// prefix (a plugin "users" and the index users_email_key).
func ReservedSchemaName(name string) bool { return reservedNames()[name] }
