package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Migration files live in migrations/<dialect>/NNNN_name.sql. Both dialects must carry the same
// versions with the same names. Statements end with ';' at the end of a line.
//
//go:embed migrations/sqlite/*.sql migrations/mysql/*.sql
var migrationFS embed.FS

// MigrationState describes one migration known to the binary or recorded in the database.
type MigrationState struct {
	Version   int
	Name      string
	Applied   bool
	AppliedAt *time.Time // nil when pending
	// Unknown is true for a version recorded in the database that this binary does not
	// carry (the database was migrated by a newer release).
	Unknown bool
}

type migration struct {
	version    int
	name       string
	statements []string
}

type migrationRow struct {
	Version   int `gorm:"primaryKey;autoIncrement:false"`
	Name      string
	AppliedAt time.Time
}

func (migrationRow) TableName() string { return "schema_migrations" }

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads the embedded migrations of one dialect, ordered by version.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations %s: %w", dir, err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s/%s: name must be NNNN_name.sql", dir, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		stmts := splitStatements(string(body))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s/%s is empty", dir, e.Name())
		}
		out = append(out, migration{version: v, name: m[2], statements: stmts})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// splitStatements splits a migration file into statements: comment lines ("--") are dropped and
// a statement ends at a line whose last character is ';'.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(body) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}

func (s *Store) createMigrationsTable(db *gorm.DB) error {
	ddl := `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER  NOT NULL PRIMARY KEY,
    name       TEXT     NOT NULL,
    applied_at DATETIME NOT NULL
)`
	if s.dialect == DialectMySQL {
		ddl = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INT          NOT NULL,
    name       VARCHAR(255) NOT NULL,
    applied_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`
	}
	if err := db.Exec(ddl).Error; err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	return nil
}

// Migrate applies every embedded migration not yet recorded in schema_migrations, in version
// order. It is idempotent and safe to run from several processes at once: on SQLite each
// migration runs in its own immediate transaction (schema change and record commit together);
// on MySQL/MariaDB, where DDL commits implicitly, runs are serialised with a named lock
// (GET_LOCK) per database and a migration is recorded after its last statement succeeds.
// Errors are uncategorised: a failing migration is an operator problem.
func (s *Store) Migrate(ctx context.Context) error {
	ctx = context.WithValue(ctx, migratingKey{}, true)
	migs, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	if s.dialect == DialectMySQL {
		return s.migrateMySQL(ctx, migs)
	}
	return s.stmts.duringMigration(s.MaxOpenConns(), func() error {
		db := s.conn(ctx)
		if err := s.createMigrationsTable(db); err != nil {
			return err
		}
		for _, m := range migs {
			err := db.Transaction(func(tx *gorm.DB) error {
				applied, err := migrationApplied(tx, m.version)
				if err != nil || applied {
					return err
				}
				return s.applyMigration(tx, m)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) migrateMySQL(ctx context.Context, migs []migration) error {
	return s.withMigrationLock(ctx, func(db *gorm.DB) error {
		if err := s.createMigrationsTable(db); err != nil {
			return err
		}
		for _, m := range migs {
			applied, err := migrationApplied(db, m.version)
			if err != nil {
				return err
			}
			if applied {
				continue
			}
			if err := s.applyMigration(db, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// withMigrationLock runs fn while this process holds the database's migration lock, on the
// connection that holds it: on MySQL/MariaDB a named lock (GET_LOCK, waited for up to two
// minutes), since DDL commits implicitly and a transaction cannot keep two processes from
// applying one migration twice; on SQLite fn runs on the store's pool (its migrations run in
// immediate transactions, which exclude each other). Errors: ErrUnavailable when another
// process kept the lock, fn's.
func (s *Store) withMigrationLock(ctx context.Context, fn func(db *gorm.DB) error) error {
	return s.stmts.duringMigration(s.MaxOpenConns(), func() error { return s.lockedMigration(ctx, fn) })
}

// lockedMigration is withMigrationLock without the statement pool's part.
func (s *Store) lockedMigration(ctx context.Context, fn func(db *gorm.DB) error) error {
	if s.dialect != DialectMySQL {
		return fn(s.conn(ctx))
	}
	// A named lock belongs to one connection: pin one for the whole run.
	return s.conn(ctx).Connection(func(conn *gorm.DB) error {
		db := conn.Session(&gorm.Session{}) // reusable: every statement starts fresh
		const lockName = "CONCAT('svc_migrate_', MD5(DATABASE()))"
		var got sql.NullInt64
		if err := db.Raw("SELECT GET_LOCK(" + lockName + ", 120)").Row().Scan(&got); err != nil {
			return fmt.Errorf("migrate: take lock: %w", err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("migrate: another process holds the migration lock: %w", svcerr.ErrUnavailable)
		}
		// Release on a fresh context so a cancelled ctx still frees the lock.
		defer db.WithContext(context.WithoutCancel(ctx)).Exec("DO RELEASE_LOCK(" + lockName + ")")
		return fn(db)
	})
}

func migrationApplied(db *gorm.DB, version int) (bool, error) {
	var n int64
	if err := db.Model(&migrationRow{}).Where("version = ?", version).Count(&n).Error; err != nil {
		return false, fmt.Errorf("migration %04d: read schema_migrations: %w", version, err)
	}
	return n > 0, nil
}

func (s *Store) applyMigration(db *gorm.DB, m migration) error {
	for i, stmt := range m.statements {
		if err := db.Exec(stmt).Error; err != nil {
			return fmt.Errorf("migration %04d_%s statement %d: %w", m.version, m.name, i+1, err)
		}
	}
	row := migrationRow{Version: m.version, Name: m.name, AppliedAt: s.now()}
	if err := db.Create(&row).Error; err != nil {
		return fmt.Errorf("migration %04d_%s: record: %w", m.version, m.name, err)
	}
	s.log.InfoContext(db.Statement.Context, "applied migration", "version", m.version, "name", m.name, "dialect", s.dialect)
	return nil
}

// MigrationStatus lists the embedded migrations with their applied state, followed by any
// version recorded in the database that this binary does not know. Errors are uncategorised.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	migs, err := loadMigrations(s.dialect)
	if err != nil {
		return nil, err
	}
	db := s.conn(ctx)
	var rows []migrationRow
	if db.Migrator().HasTable("schema_migrations") {
		if err := db.Order("version").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
	}
	recorded := make(map[int]migrationRow, len(rows))
	for _, r := range rows {
		recorded[r.Version] = r
	}
	out := make([]MigrationState, 0, len(migs))
	known := map[int]bool{}
	for _, m := range migs {
		known[m.version] = true
		st := MigrationState{Version: m.version, Name: m.name}
		if r, ok := recorded[m.version]; ok {
			at := r.AppliedAt.UTC()
			st.Applied, st.AppliedAt = true, &at
		}
		out = append(out, st)
	}
	for _, r := range rows {
		if !known[r.Version] {
			at := r.AppliedAt.UTC()
			out = append(out, MigrationState{Version: r.Version, Name: r.Name, Applied: true, AppliedAt: &at, Unknown: true})
		}
	}
	return out, nil
}
