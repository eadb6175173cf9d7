package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// InternalSettingPrefix starts the keys of settings rows the service keeps for itself; Settings
// (the configuration overrides) skips them.
const InternalSettingPrefix = "internal:"

// llmSeedKey is the settings row remembering which group and configuration the start-up seed
// owns, so a renamed group or configuration is still found and updated, never duplicated.
const llmSeedKey = InternalSettingPrefix + "llm_seed"

// LLMSeed is the global default model configuration the environment asks for (SVC_LLM_*).
type LLMSeed struct {
	GroupName    string  // name of the owning group when it has to be created
	Name         string  // name of the configuration when it has to be created
	Driver       string  // LLMDriver*
	Model        string  // model name
	BaseURL      *string // nil: the driver default
	APIKeySealed string  // the key sealed with the master key; "" for none
	// SameKey reports whether a stored sealed key holds the seed's key (sealing is randomised,
	// so sealed forms differ); nil compares the sealed forms.
	SameKey func(sealed string) bool
}

// LLMSeedResult says what SeedGlobalLLMConfig did.
type LLMSeedResult struct {
	Config  *LLMConfig
	Created bool // a new configuration (and perhaps its group) was created
	Updated bool // the existing configuration was changed
}

type llmSeedState struct {
	GroupID  int64 `json:"group_id,omitempty"`
	ConfigID int64 `json:"config_id,omitempty"`
}

// SeedGlobalLLMConfig creates, or updates, the one global model configuration seeded from the
// environment. The settings row internal:llm_seed remembers its group and id: when the
// configuration still exists its driver, model, base URL and key are set to the seed's and it is
// made global again; when it was deleted it is recreated (in its group when that still exists,
// otherwise in a new member-less group named GroupName). It takes the installation-wide default
// flag only when no other global configuration holds it, so a default an administrator chose is
// kept. Concurrent callers are serialised by a lock on the settings row (SQLite: the immediate
// transaction). The caller has checked the seed (group.CheckLLMSeed: the field rules of a
// configuration and of a group name); the configuration it updates keeps its stored, checked
// name and settings. Errors: the database's.
func (s *Agents) SeedGlobalLLMConfig(ctx context.Context, seed LLMSeed) (*LLMSeedResult, error) {
	want := LLMConfig{Name: seed.Name, Driver: seed.Driver, Model: seed.Model, BaseURL: cloneString(seed.BaseURL),
		APIKeySealed: seed.APIKeySealed, IsGlobal: true}
	groupName := seed.GroupName
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*LLMSeedResult, error) {
		state, err := lockLLMSeed(tx, s.Store)
		if err != nil {
			return nil, err
		}
		cur, err := loadSeededLLMConfig(tx, state.ConfigID)
		if err != nil {
			return nil, err
		}
		if cur != nil {
			return s.updateSeededLLMConfig(tx, cur, want, seed.SameKey)
		}
		return s.createSeededLLMConfig(tx, state.GroupID, groupName, want)
	})
}

// lockLLMSeed makes sure the seed's settings row exists and locks it to the end of tx. The
// insert is the transaction's first statement: a concurrent seeder waits on it until this
// transaction ends, and then reads what this one wrote.
func lockLLMSeed(tx *gorm.DB, s *Store) (llmSeedState, error) {
	var state llmSeedState
	keyCol := clause.Column{Name: "key"}
	row := settingRow{Key: llmSeedKey, Value: "{}", UpdatedAt: s.now()}
	if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{keyCol}, DoNothing: true}).Create(&row).Error; err != nil {
		return state, fmt.Errorf("claim the model configuration seed: %w", err)
	}
	err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Where(clause.Eq{Column: keyCol, Value: llmSeedKey}).Take(&row).Error
	if err != nil {
		return state, fmt.Errorf("lock the model configuration seed: %w", err)
	}
	if err := json.Unmarshal([]byte(row.Value), &state); err != nil {
		state = llmSeedState{} // unreadable: start over (the configuration is recreated)
	}
	return state, nil
}

func saveLLMSeed(tx *gorm.DB, s *Store, state llmSeedState) error {
	b, err := json.Marshal(state)
	if err != nil {
		return err
	}
	err = tx.Model(&settingRow{}).Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: llmSeedKey}).
		Updates(map[string]any{"value": string(b), "updated_at": s.now()}).Error
	if err != nil {
		return fmt.Errorf("remember the seeded model configuration: %w", err)
	}
	return nil
}

// loadSeededLLMConfig reads configuration id in whatever group holds it; nil when id is 0 or
// the configuration is gone.
func loadSeededLLMConfig(tx *gorm.DB, id int64) (*LLMConfig, error) {
	if id == 0 {
		return nil, nil
	}
	var rows []llmConfigRow
	if err := llmConfigQuery(tx).Where("llm_configs.id = ?", id).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("load the seeded model configuration %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].toLLMConfig(), nil
}

// globalDefaultExists reports whether a global configuration other than id is the default.
func globalDefaultExists(tx *gorm.DB, id int64) (bool, error) {
	var n int64
	err := tx.Model(&llmConfigRow{}).Where("is_global = ? AND is_default = ? AND id <> ?", true, true, id).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("look for the global default model configuration: %w", err)
	}
	return n > 0, nil
}

func (s *Store) updateSeededLLMConfig(tx *gorm.DB, cur *LLMConfig, want LLMConfig, sameKey func(string) bool) (*LLMSeedResult, error) {
	if _, err := lockGroup(tx, cur.GroupID); err != nil {
		return nil, err
	}
	next := *cur
	next.Driver, next.Model, next.BaseURL, next.IsGlobal = want.Driver, want.Model, cloneString(want.BaseURL), true
	switch {
	case want.APIKeySealed == "":
		next.APIKeySealed = ""
	case cur.APIKeySealed != "" && sameKey != nil && sameKey(cur.APIKeySealed):
	default:
		next.APIKeySealed = want.APIKeySealed
	}
	taken, err := globalDefaultExists(tx, cur.ID)
	if err != nil {
		return nil, err
	}
	next.IsDefault = (cur.IsGlobal && cur.IsDefault) || !taken
	if next.Driver == cur.Driver && next.Model == cur.Model && equalStrings(next.BaseURL, cur.BaseURL) &&
		next.APIKeySealed == cur.APIKeySealed && next.IsGlobal == cur.IsGlobal && next.IsDefault == cur.IsDefault {
		return &LLMSeedResult{Config: cur}, nil
	}
	now := s.now()
	row := fromLLMConfig(&next)
	err = tx.Model(&llmConfigRow{}).Where("id = ?", cur.ID).Updates(map[string]any{
		"driver": row.Driver, "model": row.Model, "base_url": row.BaseURL, "api_key_sealed": row.APIKeySealed,
		"is_global": row.IsGlobal, "is_default": row.IsDefault, "updated_at": now,
	}).Error
	if err != nil {
		return nil, fmt.Errorf("update the seeded model configuration %d: %w", cur.ID, err)
	}
	c, err := loadLLMConfig(tx, cur.GroupID, cur.ID)
	if err != nil {
		return nil, err
	}
	return &LLMSeedResult{Config: c, Updated: true}, nil
}

func (s *Store) createSeededLLMConfig(tx *gorm.DB, groupID int64, groupName string, want LLMConfig) (*LLMSeedResult, error) {
	now := s.now()
	if groupID != 0 {
		if _, err := lockGroup(tx, groupID); err != nil {
			if !errors.Is(err, svcerr.ErrNotFound) {
				return nil, err
			}
			groupID = 0 // the group was deleted: create a new one
		}
	}
	if groupID == 0 {
		p := principalRow{Kind: PrincipalGroup, Name: groupName, CreatedAt: now}
		if err := tx.Create(&p).Error; err != nil {
			return nil, fmt.Errorf("create the principal of the seed group: %w", err)
		}
		g := groupRow{PrincipalID: p.ID, Name: groupName,
			Description: "Holds the model configuration seeded from SVC_LLM_* at start-up.", CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&g).Error; err != nil {
			return nil, fmt.Errorf("create the seed group: %w", err)
		}
		groupID = g.ID
	}
	name, err := freeLLMName(tx, groupID, want.Name)
	if err != nil {
		return nil, err
	}
	taken, err := globalDefaultExists(tx, 0)
	if err != nil {
		return nil, err
	}
	c := want
	c.GroupID, c.Name, c.IsDefault, c.CreatedAt, c.UpdatedAt = groupID, name, !taken, now, now
	row := fromLLMConfig(&c)
	if err := tx.Create(&row).Error; err != nil {
		return nil, fmt.Errorf("create the seeded model configuration: %w", err)
	}
	if err := saveLLMSeed(tx, s, llmSeedState{GroupID: groupID, ConfigID: row.ID}); err != nil {
		return nil, err
	}
	out, err := loadLLMConfig(tx, groupID, row.ID)
	if err != nil {
		return nil, err
	}
	return &LLMSeedResult{Config: out, Created: true}, nil
}

// freeLLMName is name, or name with the first free " (n)" suffix when the group already uses it.
func freeLLMName(tx *gorm.DB, groupID int64, name string) (string, error) {
	var used []string
	if err := tx.Model(&llmConfigRow{}).Where("group_id = ?", groupID).Pluck("name", &used).Error; err != nil {
		return "", fmt.Errorf("names of the model configurations of group %d: %w", groupID, err)
	}
	taken := make(map[string]bool, len(used))
	for _, u := range used {
		taken[u] = true
	}
	candidate := name
	for n := 2; taken[candidate]; n++ {
		suffix := fmt.Sprintf(" (%d)", n)
		candidate = strings.TrimSpace(truncateRunes(name, limits.LLMConfigNameLen-len(suffix))) + suffix
	}
	return candidate, nil
}

func equalStrings(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
