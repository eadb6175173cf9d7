package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Model drivers.
const (
	LLMDriverOpenAI    = "openai"    // any OpenAI-compatible /chat/completions endpoint
	LLMDriverAnthropic = "anthropic" // the Messages API
	LLMDriverScripted  = "scripted"  // replies read from a script file (tests, demos); BaseURL is its path
)

// Optional fields of a model configuration that LLMConfigUpdate.Clear resets.
const (
	LLMFieldAPIKey          = "api_key"
	LLMFieldBaseURL         = "base_url"
	LLMFieldTemperature     = "temperature"
	LLMFieldMaxTokensOutput = "max_tokens_output"
	LLMFieldContextWindow   = "context_window"
	LLMFieldTimeout         = "timeout"
	LLMFieldPrices          = "prices"
)

// Model configuration limits.
const (
	MaxLLMSealedKeyLen = 32768 // bytes of the sealed form (a 4096-character key fits)
)

// LLMConfig is a language-model configuration owned by a group. APIKeySealed is the provider key
// sealed with the master key (secret.Box); the store never sees the plaintext, and the API never
// returns either form.
type LLMConfig struct {
	ID              int64
	GroupID         int64
	PrincipalID     int64 // the owning group's principal
	Name            string
	Driver          string
	Model           string
	BaseURL         *string // nil: the driver default; the script path for LLMDriverScripted
	APIKeySealed    string  // "" when no key is stored
	Temperature     *float64
	MaxTokensOutput *int
	ContextWindow   *int
	Timeout         *int // seconds
	IsDefault       bool // default of its scope: the group (non-global) or the installation (global)
	IsGlobal        bool // usable by every principal
	Prices          LLMPrices
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// LLMPrices are a model configuration's prices in integer micro-units of the instance's
// currency per million tokens (3_000_000 is 3.00 per million); nil: not priced (counts as 0).
// Money is never a float: costs are computed in integers (UsageCost).
type LLMPrices struct {
	Input       *int64
	Output      *int64
	CachedInput *int64
}

func (p LLMPrices) clone() LLMPrices {
	return LLMPrices{Input: cloneInt64(p.Input), Output: cloneInt64(p.Output), CachedInput: cloneInt64(p.CachedInput)}
}

// APIKeySet reports whether a key is stored.
func (c *LLMConfig) APIKeySet() bool { return c.APIKeySealed != "" }

// LogValue keeps the sealed key out of logs.
func (c LLMConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("id", c.ID), slog.Int64("group_id", c.GroupID), slog.String("name", c.Name),
		slog.String("driver", c.Driver), slog.String("model", c.Model), slog.Bool("api_key_set", c.APIKeySet()),
		slog.Bool("is_default", c.IsDefault), slog.Bool("is_global", c.IsGlobal))
}

// LLMConfigUpdate lists the fields UpdateLLMConfig changes; nil fields stay as they are. Clear
// names optional fields (LLMField*) to reset; a field both set and cleared is refused.
// Changing IsGlobal drops the default flag (it is scoped) unless IsDefault is true in the same
// update, which makes the configuration the default of its new scope.
type LLMConfigUpdate struct {
	Name            *string
	Driver          *string
	Model           *string
	BaseURL         *string
	APIKeySealed    *string
	Temperature     *float64
	MaxTokensOutput *int
	ContextWindow   *int
	Timeout         *int
	IsDefault       *bool
	IsGlobal        *bool
	Prices          *LLMPrices // replaces the three prices at once
	Clear           []string
}

// LLMConfigCheck decides inside a write whether it may proceed: cur is the stored
// configuration, next what it would become (nil for a deletion). A non-nil error aborts the
// write and is returned as it is; check may normalise next, which is what is written. Package
// group's checks apply the permission and the field rules (group.CheckLLMConfig, which trims
// the name and model) to next here.
type LLMConfigCheck func(cur, next *LLMConfig) error

type llmConfigRow struct {
	ID               int64
	GroupID          int64
	PrincipalID      int64 `gorm:"->;-:migration"` // read through the join with principal_groups
	Name             string
	Driver           string
	Model            string
	BaseURL          *string
	APIKeySealed     *string
	Temperature      *float64
	MaxTokensOutput  *int
	ContextWindow    *int
	Timeout          *int `gorm:"column:timeout_seconds"`
	IsDefault        bool
	IsGlobal         bool
	PriceInput       *int64
	PriceOutput      *int64
	PriceCachedInput *int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

func (llmConfigRow) TableName() string { return "llm_configs" }

func (r *llmConfigRow) toLLMConfig() *LLMConfig {
	c := &LLMConfig{
		ID: r.ID, GroupID: r.GroupID, PrincipalID: r.PrincipalID, Name: r.Name, Driver: r.Driver, Model: r.Model,
		BaseURL: cloneString(r.BaseURL), Temperature: cloneFloat(r.Temperature), MaxTokensOutput: cloneInt(r.MaxTokensOutput),
		ContextWindow: cloneInt(r.ContextWindow), Timeout: cloneInt(r.Timeout), IsDefault: r.IsDefault, IsGlobal: r.IsGlobal,
		Prices:    LLMPrices{Input: r.PriceInput, Output: r.PriceOutput, CachedInput: r.PriceCachedInput}.clone(),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.APIKeySealed != nil {
		c.APIKeySealed = *r.APIKeySealed
	}
	return c
}

func fromLLMConfig(c *LLMConfig) llmConfigRow {
	r := llmConfigRow{
		ID: c.ID, GroupID: c.GroupID, Name: c.Name, Driver: c.Driver, Model: c.Model, BaseURL: cloneString(c.BaseURL),
		Temperature: cloneFloat(c.Temperature), MaxTokensOutput: cloneInt(c.MaxTokensOutput), ContextWindow: cloneInt(c.ContextWindow),
		Timeout: cloneInt(c.Timeout), IsDefault: c.IsDefault, IsGlobal: c.IsGlobal, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		PriceInput: cloneInt64(c.Prices.Input), PriceOutput: cloneInt64(c.Prices.Output), PriceCachedInput: cloneInt64(c.Prices.CachedInput),
	}
	if c.APIKeySealed != "" {
		k := c.APIKeySealed
		r.APIKeySealed = &k
	}
	return r
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

func cloneInt(i *int) *int {
	if i == nil {
		return nil
	}
	v := *i
	return &v
}

// llmConfigColumns is the select list of reads: the row plus the owning group's principal.
const llmConfigColumns = "llm_configs.id, llm_configs.group_id, principal_groups.principal_id, llm_configs.name, " +
	"llm_configs.driver, llm_configs.model, llm_configs.base_url, llm_configs.api_key_sealed, llm_configs.temperature, " +
	"llm_configs.max_tokens_output, llm_configs.context_window, llm_configs.timeout_seconds, llm_configs.is_default, " +
	"llm_configs.is_global, llm_configs.price_input, llm_configs.price_output, llm_configs.price_cached_input, " +
	"llm_configs.created_at, llm_configs.updated_at"

func llmConfigQuery(db *gorm.DB) *gorm.DB {
	return db.Model(&llmConfigRow{}).Select(llmConfigColumns).
		Joins("JOIN principal_groups ON principal_groups.id = llm_configs.group_id")
}

func llmConfigNotFound(groupID, id int64) error {
	return svcerr.New(svcerr.ErrNotFound, "model configuration %d not found in group %d", id, groupID)
}

func errLLMNameTaken(name string) error {
	return svcerr.New(svcerr.ErrConflict, "a model configuration named %q already exists in this group", name)
}

// loadLLMConfig reads a configuration of the group. Errors: ErrNotFound.
func loadLLMConfig(db *gorm.DB, groupID, id int64) (*LLMConfig, error) {
	var rows []llmConfigRow
	if err := llmConfigQuery(db).Where("llm_configs.id = ? AND llm_configs.group_id = ?", id, groupID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load model configuration %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, llmConfigNotFound(groupID, id)
	}
	return rows[0].toLLMConfig(), nil
}

// visibleLLMConfig reads configuration id when principal may use it: its group's own, or a
// global one. Errors: ErrNotFound.
func visibleLLMConfig(db *gorm.DB, principal, id int64) (*LLMConfig, error) {
	var rows []llmConfigRow
	err := llmConfigQuery(db).Where("llm_configs.id = ? AND (principal_groups.principal_id = ? OR llm_configs.is_global = ?)", id, principal, true).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load model configuration %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, svcerr.New(svcerr.ErrNotFound, "no model configuration %d visible to principal %d", id, principal)
	}
	return rows[0].toLLMConfig(), nil
}

// VisibleLLMConfig returns configuration id when principal may use it (its group's own, or a
// global one): an agent's summary model. Errors: ErrNotFound.
func (s *Agents) VisibleLLMConfig(ctx context.Context, principal, id int64) (*LLMConfig, error) {
	c, err := visibleLLMConfig(s.conn(ctx), principal, id)
	return c, TranslateError(err)
}

// LLMConfig returns one configuration of the group. Errors: ErrNotFound (no such configuration
// in this group).
func (s *Agents) LLMConfig(ctx context.Context, groupID, id int64) (*LLMConfig, error) {
	c, err := loadLLMConfig(s.conn(ctx), groupID, id)
	return c, TranslateError(err)
}

// ListLLMConfigs returns the group's configurations ordered by name ignoring case, followed,
// when includeGlobal is set, by the global configurations of other groups in the same order.
// Errors: ErrNotFound (no such group).
func (s *Agents) ListLLMConfigs(ctx context.Context, groupID int64, includeGlobal bool) ([]LLMConfig, error) {
	if _, err := s.Store.GroupByID(ctx, groupID); err != nil {
		return nil, err
	}
	db := s.conn(ctx)
	var own, global []llmConfigRow
	err := llmConfigQuery(db).Where("llm_configs.group_id = ?", groupID).
		Order("LOWER(llm_configs.name), llm_configs.name, llm_configs.id").Scan(&own).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("list model configurations of group %d: %w", groupID, err))
	}
	if includeGlobal {
		err := llmConfigQuery(db).Where("llm_configs.is_global = ? AND llm_configs.group_id <> ?", true, groupID).
			Order("LOWER(llm_configs.name), llm_configs.name, llm_configs.id").Scan(&global).Error
		if err != nil {
			return nil, TranslateError(fmt.Errorf("list global model configurations: %w", err))
		}
	}
	out := make([]LLMConfig, 0, len(own)+len(global))
	for _, rows := range [][]llmConfigRow{own, global} {
		for i := range rows {
			out = append(out, *rows[i].toLLMConfig())
		}
	}
	return out, nil
}

// CreateLLMConfig adds a configuration to the group (c.ID, GroupID, PrincipalID and the
// timestamps are ignored). The caller has applied the field rules (group.CheckLLMConfig). With
// IsDefault, the previous default of its scope loses the flag in the same transaction. Errors:
// ErrNotFound (no such group), ErrConflict (name already used in the group: read under the
// group's lock, and the unique key's answer).
func (s *Agents) CreateLLMConfig(ctx context.Context, groupID int64, c LLMConfig) (*LLMConfig, error) {
	c.ID, c.GroupID = 0, groupID
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*LLMConfig, error) {
		if _, err := lockGroup(tx, groupID); err != nil {
			return nil, err
		}
		if err := checkLLMName(tx, groupID, 0, c.Name); err != nil {
			return nil, err
		}
		now := s.now()
		c.CreatedAt, c.UpdatedAt = now, now
		if c.IsDefault {
			if err := clearLLMDefault(tx, &c, now); err != nil {
				return nil, err
			}
		}
		row := fromLLMConfig(&c)
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, errLLMNameTaken(c.Name)
			}
			return nil, fmt.Errorf("create model configuration in group %d: %w", groupID, err)
		}
		return loadLLMConfig(tx, groupID, row.ID)
	})
}

// UpdateLLMConfig applies upd to a configuration of the group and returns the result. check
// (may be nil) sees the stored and the resulting configuration before anything is written: the
// result is known only here, so package group applies the field rules to it in check. Errors:
// ErrNotFound (no such configuration in this group), ErrConflict (name already used in the
// group), and whatever check returns.
func (s *Agents) UpdateLLMConfig(ctx context.Context, groupID, id int64, upd LLMConfigUpdate, check LLMConfigCheck) (*LLMConfig, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*LLMConfig, error) {
		if _, err := lockGroup(tx, groupID); err != nil {
			return nil, err
		}
		cur, err := loadLLMConfig(tx, groupID, id)
		if err != nil {
			return nil, err
		}
		next := applyLLMUpdate(cur, upd)
		if check != nil {
			if err := check(cur, next); err != nil {
				return nil, err
			}
		}
		if next.Name != cur.Name {
			if err := checkLLMName(tx, groupID, id, next.Name); err != nil {
				return nil, err
			}
		}
		now := s.now()
		next.UpdatedAt = now
		if next.IsDefault {
			if err := clearLLMDefault(tx, next, now); err != nil {
				return nil, err
			}
		}
		row := fromLLMConfig(next)
		err = tx.Model(&llmConfigRow{}).Where("id = ?", id).Updates(map[string]any{
			"name": row.Name, "driver": row.Driver, "model": row.Model, "base_url": row.BaseURL,
			"api_key_sealed": row.APIKeySealed, "temperature": row.Temperature,
			"max_tokens_output": row.MaxTokensOutput, "context_window": row.ContextWindow,
			"timeout_seconds": row.Timeout, "is_default": row.IsDefault, "is_global": row.IsGlobal,
			"price_input": row.PriceInput, "price_output": row.PriceOutput, "price_cached_input": row.PriceCachedInput,
			"updated_at": now,
		}).Error
		if err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return nil, errLLMNameTaken(next.Name)
			}
			return nil, fmt.Errorf("update model configuration %d: %w", id, err)
		}
		return loadLLMConfig(tx, groupID, id)
	})
}

func applyLLMUpdate(cur *LLMConfig, upd LLMConfigUpdate) *LLMConfig {
	next := *cur
	next.BaseURL, next.Temperature = cloneString(cur.BaseURL), cloneFloat(cur.Temperature)
	next.MaxTokensOutput, next.ContextWindow, next.Timeout = cloneInt(cur.MaxTokensOutput), cloneInt(cur.ContextWindow), cloneInt(cur.Timeout)
	if upd.Name != nil {
		next.Name = *upd.Name
	}
	if upd.Driver != nil {
		next.Driver = *upd.Driver
	}
	if upd.Model != nil {
		next.Model = *upd.Model
	}
	if upd.BaseURL != nil {
		next.BaseURL = cloneString(upd.BaseURL)
	}
	if upd.APIKeySealed != nil {
		next.APIKeySealed = *upd.APIKeySealed
	}
	if upd.Temperature != nil {
		next.Temperature = cloneFloat(upd.Temperature)
	}
	if upd.MaxTokensOutput != nil {
		next.MaxTokensOutput = cloneInt(upd.MaxTokensOutput)
	}
	if upd.ContextWindow != nil {
		next.ContextWindow = cloneInt(upd.ContextWindow)
	}
	if upd.Timeout != nil {
		next.Timeout = cloneInt(upd.Timeout)
	}
	next.Prices = cur.Prices.clone()
	if upd.Prices != nil {
		next.Prices = upd.Prices.clone()
	}
	for _, f := range upd.Clear {
		switch f {
		case LLMFieldAPIKey:
			next.APIKeySealed = ""
		case LLMFieldBaseURL:
			next.BaseURL = nil
		case LLMFieldTemperature:
			next.Temperature = nil
		case LLMFieldMaxTokensOutput:
			next.MaxTokensOutput = nil
		case LLMFieldContextWindow:
			next.ContextWindow = nil
		case LLMFieldTimeout:
			next.Timeout = nil
		case LLMFieldPrices:
			next.Prices = LLMPrices{}
		}
	}
	if upd.IsGlobal != nil && *upd.IsGlobal != cur.IsGlobal {
		next.IsGlobal, next.IsDefault = *upd.IsGlobal, false
	}
	if upd.IsDefault != nil {
		next.IsDefault = *upd.IsDefault
	}
	return &next
}

// checkLLMName refuses a name another configuration (other than id) of the group uses.
func checkLLMName(tx *gorm.DB, groupID, id int64, name string) error {
	var n int64
	if err := tx.Model(&llmConfigRow{}).Where("group_id = ? AND name = ? AND id <> ?", groupID, name, id).Count(&n).Error; err != nil {
		return fmt.Errorf("check model configuration name in group %d: %w", groupID, err)
	}
	if n > 0 {
		return errLLMNameTaken(name)
	}
	return nil
}

// clearLLMDefault removes the default flag from every other configuration in c's scope: the
// global configurations when c is global, else the group's non-global ones.
func clearLLMDefault(tx *gorm.DB, c *LLMConfig, now time.Time) error {
	q := tx.Model(&llmConfigRow{}).Where("is_default = ? AND id <> ?", true, c.ID)
	if c.IsGlobal {
		q = q.Where("is_global = ?", true)
	} else {
		q = q.Where("is_global = ? AND group_id = ?", false, c.GroupID)
	}
	if err := q.Updates(map[string]any{"is_default": false, "updated_at": now}).Error; err != nil {
		return fmt.Errorf("clear the default model configuration: %w", err)
	}
	return nil
}

// SetDefaultLLMConfig makes a configuration of the group the default of its scope (the group's
// non-global configurations, or every global one); the others of that scope lose the flag in
// the same transaction. Idempotent. check (may be nil) sees the stored configuration and the
// result. Errors: ErrNotFound (no such configuration in this group), and whatever check returns.
func (s *Agents) SetDefaultLLMConfig(ctx context.Context, groupID, id int64, check LLMConfigCheck) (*LLMConfig, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*LLMConfig, error) {
		if _, err := lockGroup(tx, groupID); err != nil {
			return nil, err
		}
		cur, err := loadLLMConfig(tx, groupID, id)
		if err != nil {
			return nil, err
		}
		next := *cur
		next.IsDefault = true
		if check != nil {
			if err := check(cur, &next); err != nil {
				return nil, err
			}
		}
		if cur.IsDefault {
			return cur, nil
		}
		now := s.now()
		if err := clearLLMDefault(tx, &next, now); err != nil {
			return nil, err
		}
		err = tx.Model(&llmConfigRow{}).Where("id = ?", id).Updates(map[string]any{"is_default": true, "updated_at": now}).Error
		if err != nil {
			return nil, fmt.Errorf("set default model configuration %d: %w", id, err)
		}
		return loadLLMConfig(tx, groupID, id)
	})
}

// DeleteLLMConfig removes a configuration of the group; deleting a default leaves its scope
// without one. check (may be nil) sees the stored configuration (next is nil). Errors:
// ErrNotFound (no such configuration in this group), and whatever check returns.
func (s *Agents) DeleteLLMConfig(ctx context.Context, groupID, id int64, check LLMConfigCheck) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if _, err := lockGroup(tx, groupID); err != nil {
			return err
		}
		cur, err := loadLLMConfig(tx, groupID, id)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(cur, nil); err != nil {
				return err
			}
		}
		if err := tx.Delete(&llmConfigRow{}, id).Error; err != nil {
			return fmt.Errorf("delete model configuration %d: %w", id, err)
		}
		return nil
	})
}

// ResolveLLMConfig picks the configuration a task runs with: the default of the group whose
// principal is groupPrincipalID (nil, or a principal that is not a group, skips this step),
// else the global default. Errors: ErrNotFound (neither exists: the task fails with
// NO_LLM_CONFIGURATION).
func (s *Agents) ResolveLLMConfig(ctx context.Context, groupPrincipalID *int64) (*LLMConfig, error) {
	db := s.conn(ctx)
	var rows []llmConfigRow
	if groupPrincipalID != nil {
		err := llmConfigQuery(db).
			Where("principal_groups.principal_id = ? AND llm_configs.is_default = ? AND llm_configs.is_global = ?", *groupPrincipalID, true, false).
			Order("llm_configs.id").Limit(1).Scan(&rows).Error
		if err != nil {
			return nil, TranslateError(fmt.Errorf("default model configuration of principal %d: %w", *groupPrincipalID, err))
		}
		if len(rows) > 0 {
			return rows[0].toLLMConfig(), nil
		}
	}
	err := llmConfigQuery(db).Where("llm_configs.is_default = ? AND llm_configs.is_global = ?", true, true).
		Order("llm_configs.id").Limit(1).Scan(&rows).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("global default model configuration: %w", err))
	}
	if len(rows) == 0 {
		return nil, svcerr.New(svcerr.ErrNotFound, "no model configuration: neither the group nor the installation has a default")
	}
	return rows[0].toLLMConfig(), nil
}
