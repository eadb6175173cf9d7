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

// Migration files live in migrations/<dialect>/NNNN_name.sql. Every dialect must carry the same
// versions with the same names (MigrationDialectsCheck, run by the tests). Statements end with
// ';' at the end of a line.
//
//go:embed migrations/sqlite/*.sql migrations/mysql/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// migrationDialects are the folders of migrations/, one per dialect.
var migrationDialects = []string{DialectSQLite, DialectMySQL, DialectPostgres}

// MigrationDialectsCheck reports the first difference between the dialects' migration sets: a
// version (or name) one dialect carries and another lacks, or a file that does not load. The
// versioned set is one: a migration exists in every dialect or in none.
func MigrationDialectsCheck() error {
	sets := make([]map[int]string, len(migrationDialects))
	for i, d := range migrationDialects {
		migs, err := loadMigrations(d)
		if err != nil {
			return err
		}
		sets[i] = map[int]string{}
		for _, m := range migs {
			sets[i][m.version] = m.name
		}
	}
	return compareMigrationSets(migrationDialects, sets)
}

// compareMigrationSets is MigrationDialectsCheck on sets (version → name) of the dialects.
func compareMigrationSets(migrationDialects []string, sets []map[int]string) error {
	for i, set := range sets {
		for v, name := range set {
			for j, other := range sets {
				if got, ok := other[v]; !ok || got != name {
					return fmt.Errorf("migration %04d_%s of %s has no %s counterpart (found %q)",
						v, name, migrationDialects[i], migrationDialects[j], got)
				}
			}
		}
	}
	return nil
}

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
		stmts, err := migrationStatements(string(body))
		if err != nil {
			return nil, fmt.Errorf("migration %s/%s: %w", dir, e.Name(), err)
		}
		out = append(out, migration{version: v, name: m[2], statements: stmts})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// noStatements opens the comment of a migration file that has nothing to do on its dialect
// (the version changes what the others have and this one lacks, such as a partial index): the
// file still exists, so that a version missing a dialect by oversight fails loadMigrations' test.
const noStatements = "-- Nothing to do on this dialect:"

// migrationStatements are the statements of a migration file's body. Errors: a body without
// statements that does not say why (noStatements).
func migrationStatements(body string) ([]string, error) {
	stmts := splitStatements(body)
	if len(stmts) == 0 && !strings.Contains(body, noStatements) {
		return nil, fmt.Errorf("empty (a version with nothing to do on a dialect says why after %q)", noStatements)
	}
	return stmts, nil
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
	switch s.dialect {
	case DialectPostgres:
		ddl = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER      NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    applied_at TIMESTAMP(6) NOT NULL
)`
	case DialectMySQL:
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
// (GET_LOCK) per database and a migration is recorded after its last statement succeeds; on
// PostgreSQL runs are serialised with an advisory lock (pg_advisory_lock) per database and
// schema and each migration runs in its own transaction (DDL is transactional there).
// Errors are uncategorised: a failing migration is an operator problem.
func (s *Store) Migrate(ctx context.Context) error {
	ctx = context.WithValue(ctx, migratingKey{}, true)
	migs, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	return s.withMigrationLock(ctx, func(db *gorm.DB) error {
		if err := s.createMigrationsTable(db); err != nil {
			return err
		}
		for _, m := range migs {
			if err := s.migrateOne(db, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// migrateOne applies m unless schema_migrations records it. On SQLite and PostgreSQL the
// migration and its record commit in one transaction; MySQL/MariaDB commit DDL implicitly, so
// there it runs statement by statement (the named lock keeps other processes out) and is
// recorded after its last statement succeeds.
func (s *Store) migrateOne(db *gorm.DB, m migration) error {
	apply := func(tx *gorm.DB) error {
		applied, err := migrationApplied(tx, m.version)
		if err != nil || applied {
			return err
		}
		return s.applyMigration(tx, m)
	}
	if s.dialect == DialectMySQL {
		return apply(db)
	}
	return db.Transaction(apply)
}

// withMigrationLock runs fn while this process holds the database's migration lock, on the
// connection that holds it: on MySQL/MariaDB a named lock (GET_LOCK, waited for up to two
// minutes), since DDL commits implicitly and a transaction cannot keep two processes from
// applying one migration twice; on PostgreSQL a session advisory lock keyed by the database and
// schema (tried for up to two minutes); on SQLite fn runs on the store's pool (its migrations run in
// immediate transactions, which exclude each other). Errors: ErrUnavailable when another
// process kept the lock, fn's.
func (s *Store) withMigrationLock(ctx context.Context, fn func(db *gorm.DB) error) error {
	return s.stmts.duringMigration(s.MaxOpenConns(), func() error { return s.lockedMigration(ctx, fn) })
}

// lockedMigration is withMigrationLock without the statement pool's part.
func (s *Store) lockedMigration(ctx context.Context, fn func(db *gorm.DB) error) error {
	switch s.dialect {
	case DialectPostgres:
		return s.lockedMigrationPostgres(ctx, fn)
	case DialectMySQL:
	default:
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

// migrationLockWait bounds the wait for another process's migration lock.
const migrationLockWait = 2 * time.Minute

// lockedMigrationPostgres is lockedMigration on PostgreSQL: a session advisory lock, which
// belongs to one connection, so one is pinned for the whole run. pg_try_advisory_lock is
// polled rather than pg_advisory_lock waited on, so the wait is bounded without a statement
// timeout on the connection.
func (s *Store) lockedMigrationPostgres(ctx context.Context, fn func(db *gorm.DB) error) error {
	return s.conn(ctx).Connection(func(conn *gorm.DB) error {
		db := conn.Session(&gorm.Session{})
		const key = "hashtextextended('svc_migrate_' || current_database() || '.' || current_schema(), 0)"
		deadline := time.Now().Add(migrationLockWait)
		for {
			var got bool
			if err := db.Raw("SELECT pg_try_advisory_lock(" + key + ")").Row().Scan(&got); err != nil {
				return fmt.Errorf("migrate: take lock: %w", err)
			}
			if got {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("migrate: another process holds the migration lock: %w", svcerr.ErrUnavailable)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("migrate: take lock: %w", ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		// Unlock on a fresh context so a cancelled ctx still frees the lock.
		defer db.WithContext(context.WithoutCancel(ctx)).Exec("SELECT pg_advisory_unlock(" + key + ")")
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
