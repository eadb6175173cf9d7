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
// configuration (ResolveLLMConfig). Every write to one of them bumps config_version in the
// statement's transaction, so a process caching a step's configuration (agentloop) sees that it
// changed, whichever process changed it. TestConfigTablesCoverStepReads checks that the step's
// reads touch no other table.
var ConfigTables = []string{
	"agents", "agent_favorites", "agent_tools", "agent_tool_operations", "group_tools", "tool_settings",
	"llm_configs", "principal_groups", "principals", "users",
}

// DefaultConfigVersionTTL is how long a process trusts the configuration version it read last
// (Options.ConfigVersionTTL): a change made by another process reaches this one's running tasks
// within it; a change made by this process reaches them at once.
const DefaultConfigVersionTTL = time.Second

const bumpConfigVersion = "UPDATE config_version SET version = version + 1 WHERE id = 1"

// configVersion is this process's view of config_version.
type configVersion struct {
	ttl    time.Duration
	mu     sync.Mutex // one database read at a time; the others wait for its answer
	v      int64
	readAt time.Time   // monotonic; zero: never read
	stale  atomic.Bool // this process changed the configuration since readAt
}

// ConfigVersion returns the version of the configuration (config_version): it changes whenever
// an agent, its tools and settings or its model configuration change, through any process. It
// reads the database at most once per Options.ConfigVersionTTL, and again at once after this
// process committed such a change. Errors: database failures.
func (s *Store) ConfigVersion(ctx context.Context) (int64, error) {
	c := &s.cfgVersion
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stale.Load() && !c.readAt.IsZero() && time.Since(c.readAt) < c.ttl {
		return c.v, nil
	}
	c.stale.Store(false) // before the read: a change committed meanwhile marks it stale again
	var v int64
	if err := s.conn(ctx).Raw("SELECT version FROM config_version WHERE id = 1").Row().Scan(&v); err != nil {
		c.stale.Store(true)
		return 0, TranslateError(fmt.Errorf("config version: %w", err))
	}
	c.v, c.readAt = v, time.Now()
	return v, nil
}

// migratingKey marks the context of Migrate: its statements bump nothing (config_version may
// not exist yet).
type migratingKey struct{}

// writtenTable matches the table an INSERT, UPDATE, DELETE or REPLACE statement writes.
var writtenTable = regexp.MustCompile("(?is)^\\s*(?:insert\\s+(?:ignore\\s+)?into|replace\\s+into|update(?:\\s+ignore)?|delete\\s+from)\\s+[`\"]?(\\w+)")

// registerConfigVersion adds the callbacks that bump config_version after every write to one
// of ConfigTables, on the write's connection (its transaction when it has one). A failed bump
// fails the write's statement (and rolls its transaction back).
func (s *Store) registerConfigVersion(db *gorm.DB) error {
	tables := make(map[string]bool, len(ConfigTables))
	for _, t := range ConfigTables {
		tables[t] = true
	}
	bump := func(db *gorm.DB) {
		if db.Error != nil || db.RowsAffected == 0 || db.Statement.Context == nil || db.Statement.Context.Value(migratingKey{}) != nil {
			return
		}
		table := db.Statement.Table
		if m := writtenTable.FindStringSubmatch(db.Statement.SQL.String()); m != nil {
			table = m[1]
		}
		if !tables[strings.ToLower(table)] {
			return
		}
		if _, err := db.Statement.ConnPool.ExecContext(db.Statement.Context, bumpConfigVersion); err != nil {
			_ = db.AddError(fmt.Errorf("bump config version: %w", err))
			return
		}
		if c := createdFrom(db); c != nil {
			c.configChanged = true // marked stale after the commit (Store.tx)
		} else {
			s.cfgVersion.stale.Store(true)
		}
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("svc:config_version", bump),
		cb.Update().After("gorm:update").Register("svc:config_version", bump),
		cb.Delete().After("gorm:delete").Register("svc:config_version", bump),
		cb.Raw().After("gorm:raw").Register("svc:config_version", bump),
	} {
		if err != nil {
			return fmt.Errorf("store: register config version callbacks: %w", err)
		}
	}
	return nil
}
