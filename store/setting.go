package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Settings hold configuration overrides an administrator stored through the API, as JSON
// values under string keys. They take precedence over the configuration file where the
// config layer says so.
type settingRow struct {
	Key       string `gorm:"primaryKey;column:key"`
	Value     string
	UpdatedAt time.Time
}

func (settingRow) TableName() string { return "settings" }

// Settings returns every stored override (keys starting with InternalSettingPrefix excluded), decoded from JSON (objects as map[string]any,
// numbers as float64). Errors: uncategorised when a stored value is not valid JSON.
func (s *Store) Settings(ctx context.Context) (map[string]any, error) {
	var rows []settingRow
	if err := s.conn(ctx).Order(clause.OrderByColumn{Column: clause.Column{Name: "key"}}).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("load settings: %w", err))
	}
	out := make(map[string]any, len(rows))
	for _, r := range rows {
		if strings.HasPrefix(r.Key, InternalSettingPrefix) {
			continue // the service's own bookkeeping (see SeedGlobalLLMConfig), not an override
		}
		var v any
		if err := json.Unmarshal([]byte(r.Value), &v); err != nil {
			return nil, fmt.Errorf("setting %q holds invalid JSON: %w", r.Key, err)
		}
		out[r.Key] = v
	}
	return out, nil
}

// PutSettings stores every key of values in one transaction; a nil value deletes the key.
// The callers (internal/settings, the mail configuration) validate keys and values with the
// configuration's rules first (config.SetStored); the column checks stay here as the last
// guard, in one place for both. Errors: ErrInvalid (empty or oversize key, a value that cannot
// be encoded as JSON or whose encoding exceeds MaxSettingValueLen bytes).
func (s *Store) PutSettings(ctx context.Context, values map[string]any) error {
	type put struct{ key, value string }
	var puts []put
	var dels []string
	for k, v := range values {
		if k == "" {
			return invalidf("setting key is required")
		}
		if err := checkText("setting key", k, MaxSettingKeyLen); err != nil {
			return err
		}
		if v == nil {
			dels = append(dels, k)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return invalidf("setting %q cannot be encoded as JSON", k)
		}
		if len(b) > MaxSettingValueLen {
			return invalidf("setting %q must encode to at most %d bytes of JSON", k, MaxSettingValueLen)
		}
		if string(b) == "null" {
			dels = append(dels, k)
			continue
		}
		puts = append(puts, put{k, string(b)})
	}
	if len(puts) == 0 && len(dels) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		if len(dels) > 0 {
			if err := tx.Where(clause.IN{Column: clause.Column{Name: "key"}, Values: anys(dels)}).Delete(&settingRow{}).Error; err != nil {
				return fmt.Errorf("delete settings: %w", err)
			}
		}
		for _, p := range puts {
			row := settingRow{Key: p.key, Value: p.value, UpdatedAt: now}
			err := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "key"}},
				DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
			}).Create(&row).Error
			if err != nil {
				return fmt.Errorf("store setting %q: %w", p.key, err)
			}
		}
		return nil
	})
}
