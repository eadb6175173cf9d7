package agentloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// stepConfig is what a step reads of its agent's configuration: the agent, its tool states and
// its model configuration, as of one configuration version (store.ConfigVersion). It is shared
// by every step that uses it and never modified.
type stepConfig struct {
	version int64
	loaded  time.Time
	agent   *store.Agent
	states  map[string]tools.ToolState
	llm     *store.LLMConfig // nil: none (llmErr says why)
	llmErr  error
	summary *store.LLMConfig // the agent's summary model; nil: llm writes summaries
	owner   int64            // the user owning the agent (a personal principal's), 0 for a group's
	budgets bool             // some budget exists: model calls are checked against them (spend.go)
}

// configMaxAge bounds how long a cached configuration serves steps while the version stays
// the same: a change made outside the service (by hand, in SQL, without bumping the version)
// still reaches running tasks within it.
const configMaxAge = time.Minute

// maxCachedConfigs bounds the cache (one entry per agent with running tasks): past it, entries
// older than configMaxAge are dropped.
const maxCachedConfigs = 4096

// configCache holds a stepConfig per agent id (Loop.CacheConfig).
type configCache struct {
	mu sync.Mutex
	m  map[int64]*stepConfig
}

// config returns the configuration a step of a task of agentID (run for viewer) works with:
// read from the store each time, or, with CacheConfig, once per configuration version: a
// change to the agent, its tools, settings or model configuration made through any process
// reaches the next step of every running task (within store.DefaultVersionTTL when
// another process made it). Errors: the store's (ErrNotFound for a deleted agent); a missing
// model configuration is not an error here (stepConfig.llmErr).
func (l *Loop) config(ctx context.Context, agentID, viewer int64) (*stepConfig, error) {
	if !l.CacheConfig {
		return l.loadConfig(ctx, agentID, viewer, 0)
	}
	v, err := l.Store.ConfigVersion(ctx) // before the reads: a change meanwhile shows as a new version
	if err != nil {
		return nil, err
	}
	c := &l.configs
	c.mu.Lock()
	cached := c.m[agentID]
	c.mu.Unlock()
	if cached != nil && cached.version == v && time.Since(cached.loaded) < configMaxAge {
		return cached, nil
	}
	loaded, err := l.loadConfig(ctx, agentID, viewer, v)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]*stepConfig{}
	}
	if len(c.m) >= maxCachedConfigs {
		for id, e := range c.m {
			if time.Since(e.loaded) >= configMaxAge {
				delete(c.m, id)
			}
		}
	}
	if cur := c.m[agentID]; cur == nil || cur.version <= v {
		c.m[agentID] = loaded
	}
	return loaded, nil
}

// loadConfig reads the configuration of agentID's steps as of version v.
func (l *Loop) loadConfig(ctx context.Context, agentID, viewer, v int64) (*stepConfig, error) {
	agent, err := l.Store.Agent(ctx, agentID, viewer)
	if err != nil {
		return nil, fmt.Errorf("agent %d: %w", agentID, err)
	}
	states, err := l.ToolStates(ctx, agent.ID)
	if err != nil {
		return nil, fmt.Errorf("tool states of agent %d: %w", agent.ID, err)
	}
	owner, err := l.ownerUser(ctx, agent)
	if err != nil {
		return nil, err
	}
	c := &stepConfig{version: v, loaded: time.Now(), agent: agent, states: states, owner: owner}
	if c.budgets, err = l.Store.HasBudgets(ctx); err != nil {
		return nil, err
	}
	c.llm, c.llmErr = l.Store.ResolveLLMConfig(ctx, &agent.PrincipalID)
	if c.llmErr != nil && !errors.Is(c.llmErr, svcerr.ErrNotFound) {
		return nil, c.llmErr
	}
	if id := agent.Compaction.SummaryLLMConfigID; id != nil {
		// One the owner can no longer use (made private to another group) is ignored: the
		// agent's own configuration writes the summaries.
		if c.summary, err = l.Store.VisibleLLMConfig(ctx, agent.PrincipalID, *id); err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			return nil, err
		}
	}
	return c, nil
}
