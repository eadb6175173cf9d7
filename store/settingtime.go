package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// SettingUpdatedAt returns when the stored setting key was last written (PutSettings stamps
// every row it writes), or nil when no such row exists. The mail configuration reports it as
// the time an administrator saved it. Errors: uncategorised database failures only.
func (s *Store) SettingUpdatedAt(ctx context.Context, key string) (*time.Time, error) {
	var row settingRow
	err := s.conn(ctx).Where(clause.Eq{Column: clause.Column{Name: "key"}, Value: key}).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load setting %q: %w", key, err))
	}
	t := row.UpdatedAt.UTC()
	return &t, nil
}
