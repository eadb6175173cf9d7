package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// ConfigTables are the tables whose rows make up the configuration a task step reads: the agent
// (Store.Agent), its tool states (AgentToolConfig: the owner's principal, user or group, the
// agent's and the group's tools, operation overrides, tool settings) and its model
// configuration (ResolveLLMConfig), and whether any budget exists (HasBudgets). Every write to one of them bumps the config version in the
// statement's transaction, so a process caching a step's configuration (agentloop) sees that it
// changed, whichever process changed it. server's TestAppStepStatementBudget checks that the
// step reads no other table.
var ConfigTables = []string{
	"agents", "agent_favorites", "agent_tools", "agent_tool_operations", "group_tools", "tool_settings",
	"llm_configs", "principal_groups", "principals", "users", "budgets",
}

// authWrites are the writes that bump the auth version: whatever could end a cached session or
// change its user (a session's touch, which only extends it, does not).
var authWrites = map[string]string{"users": "*", "user_roles": "*", "sessions": "DELETE"}

// DefaultVersionTTL is how long a process trusts the versions it read last
// (Options.VersionTTL): a change made by another process reaches this one's caches within it; a
// change made by this process reaches them at once.
const DefaultVersionTTL = time.Second

// Version names (rows of the versions table).
const (
	versionConfig = "config"
	versionAuth   = "auth"
)

// versions is this process's view of the versions table.
type versions struct {
	ttl          time.Duration
	mu           sync.Mutex // one database read at a time; the others wait for its answer
	config, auth int64
	readAt       time.Time   // monotonic; zero: never read
	stale        atomic.Bool // this process bumped a version since readAt
}

// ConfigVersion returns the version of the configuration a task step reads: it changes whenever
// an agent, its tools and settings or its model configuration change, through any process.
// Errors: database failures.
func (s *Store) ConfigVersion(ctx context.Context) (int64, error) {
	config, _, err := s.versions(ctx)
	return config, err
}

// versions returns the config and auth versions. It reads the database at most once per
// Options.VersionTTL, and again at once after this process committed a change that bumped one.
func (s *Store) versions(ctx context.Context) (config, auth int64, err error) {
	v := &s.vers
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.stale.Load() && !v.readAt.IsZero() && time.Since(v.readAt) < v.ttl {
		return v.config, v.auth, nil
	}
	v.stale.Store(false) // before the read: a change committed meanwhile marks it stale again
	rows, err := s.conn(ctx).Raw("SELECT name, version FROM versions").Rows()
	if err != nil {
		v.stale.Store(true)
		return 0, 0, TranslateError(fmt.Errorf("versions: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			v.stale.Store(true)
			return 0, 0, TranslateError(fmt.Errorf("versions: %w", err))
		}
		switch name {
		case versionConfig:
			config = n
		case versionAuth:
			auth = n
		}
	}
	if err := rows.Err(); err != nil {
		v.stale.Store(true)
		return 0, 0, TranslateError(fmt.Errorf("versions: %w", err))
	}
	v.config, v.auth, v.readAt = config, auth, time.Now()
	return config, auth, nil
}

// migratingKey marks the context of Migrate: its statements bump nothing (the versions table
// may not exist yet).
type migratingKey struct{}

// writtenTable matches the verb and the table of an INSERT, UPDATE, DELETE or REPLACE statement.
var writtenTable = regexp.MustCompile("(?is)^\\s*(insert|replace|update|delete)\\s+(?:ignore\\s+)?(?:into\\s+|from\\s+)?[`\"]?(\\w+)")

// registerVersions adds the callbacks that bump the versions after every write that changes
// what they cover (ConfigTables, authWrites), on the write's connection (its transaction when
// it has one). A failed bump fails the write's statement (and rolls its transaction back).
func (s *Store) registerVersions(db *gorm.DB) error {
	config := make(map[string]bool, len(ConfigTables))
	for _, t := range ConfigTables {
		config[t] = true
	}
	bump := func(verb string) func(db *gorm.DB) {
		return func(db *gorm.DB) {
			if db.Error != nil || db.RowsAffected == 0 || db.Statement.Context == nil || db.Statement.Context.Value(migratingKey{}) != nil {
				return
			}
			table, verb := db.Statement.Table, verb
			if m := writtenTable.FindStringSubmatch(db.Statement.SQL.String()); m != nil {
				verb, table = strings.ToUpper(m[1]), m[2]
			}
			table = strings.ToLower(table)
			var names []string
			if config[table] {
				names = append(names, versionConfig)
			}
			if ops, ok := authWrites[table]; ok && (ops == "*" || ops == verb) {
				names = append(names, versionAuth)
			}
			if len(names) == 0 {
				return
			}
			if _, err := rawExec(db,
				"UPDATE versions SET version = version + 1 WHERE name IN ("+strings.TrimSuffix(strings.Repeat("?,", len(names)), ",")+")",
				anys(names)...); err != nil {
				_ = db.AddError(fmt.Errorf("bump versions: %w", err))
				return
			}
			if c := createdFrom(db); c != nil {
				c.versionsBumped = true // marked stale after the commit (Store.tx)
			} else {
				s.vers.stale.Store(true)
			}
		}
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("svc:versions", bump("INSERT")),
		cb.Update().After("gorm:update").Register("svc:versions", bump("UPDATE")),
		cb.Delete().After("gorm:delete").Register("svc:versions", bump("DELETE")),
		cb.Raw().After("gorm:raw").Register("svc:versions", bump("")),
	} {
		if err != nil {
			return fmt.Errorf("store: register version callbacks: %w", err)
		}
	}
	return nil
}
