package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// PluginMigration is one SQL migration file of a plugin, for the store's dialect. Package
// plugins reads the files and applies the naming and numbering rules (document 2).
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
