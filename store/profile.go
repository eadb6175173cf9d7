package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Profile is the optional personal information of a user.
type Profile struct {
	UserID    int64
	FirstName string
	LastName  string
	Locale    string // BCP 47 tag, e.g. "en-GB"
	Timezone  string // IANA name, e.g. "Europe/Berlin"
	Bio       string
	UpdatedAt time.Time // zero when never stored
}

type profileRow struct {
	UserID    int64 `gorm:"primaryKey;autoIncrement:false"`
	FirstName string
	LastName  string
	Locale    string
	Timezone  string
	Bio       string
	UpdatedAt time.Time
}

func (profileRow) TableName() string { return "user_profiles" }

func (r *profileRow) toProfile() *Profile {
	return &Profile{
		UserID: r.UserID, FirstName: r.FirstName, LastName: r.LastName, Locale: r.Locale,
		Timezone: r.Timezone, Bio: r.Bio, UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// Location is a place a user saved (home, office …); coordinates are optional.
type Location struct {
	ID        int64
	UserID    int64
	Name      string
	Address   string
	Latitude  *float64
	Longitude *float64
	IsDefault bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

type locationRow struct {
	ID        int64
	UserID    int64
	Name      string
	Address   string
	Latitude  *float64
	Longitude *float64
	IsDefault bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (locationRow) TableName() string { return "user_locations" }

func (r *locationRow) toLocation() *Location {
	return &Location{
		ID: r.ID, UserID: r.UserID, Name: r.Name, Address: r.Address, Latitude: r.Latitude,
		Longitude: r.Longitude, IsDefault: r.IsDefault, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// Profile returns the user's profile, or an empty one (zero UpdatedAt) when none was stored.
// Errors: ErrNotFound (no such user).
func (s *Principals) Profile(ctx context.Context, userID int64) (*Profile, error) {
	db := s.conn(ctx)
	if err := userExists(db, userID); err != nil {
		return nil, TranslateError(err)
	}
	var row profileRow
	err := db.Where("user_id = ?", userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return &Profile{UserID: userID}, nil
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load profile of user %d: %w", userID, err))
	}
	return row.toProfile(), nil
}

// PutProfile stores (creates or replaces) the user's profile and returns it; p.UserID and
// p.UpdatedAt are ignored. The fields are checked by the caller (account.CheckProfile, before
// this call). Errors: ErrNotFound (no such user).
func (s *Principals) PutProfile(ctx context.Context, userID int64, p Profile) (*Profile, error) {
	row := profileRow{
		UserID: userID, FirstName: p.FirstName, LastName: p.LastName, Locale: p.Locale,
		Timezone: p.Timezone, Bio: p.Bio,
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := userExists(tx, userID); err != nil {
			return err
		}
		row.UpdatedAt = s.now()
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "user_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"first_name", "last_name", "locale", "timezone", "bio", "updated_at"}),
		}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("store profile of user %d: %w", userID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.toProfile(), nil
}

// ListLocations returns the user's locations ordered by id. Errors: ErrNotFound (no such user).
func (s *Principals) ListLocations(ctx context.Context, userID int64) ([]Location, error) {
	db := s.conn(ctx)
	if err := userExists(db, userID); err != nil {
		return nil, TranslateError(err)
	}
	var rows []locationRow
	if err := db.Where("user_id = ?", userID).Order("id").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list locations of user %d: %w", userID, err))
	}
	out := make([]Location, len(rows))
	for i := range rows {
		out[i] = *rows[i].toLocation()
	}
	return out, nil
}

// CreateLocation saves a location for the user and returns it; when it is the default, the
// user's other locations lose the flag in the same transaction. Errors: ErrNotFound (no such
// user). The location's fields are checked by the caller (user.CheckLocation, before this call).
func (s *Principals) CreateLocation(ctx context.Context, userID int64, l Location) (*Location, error) {
	row := locationRow{
		UserID: userID, Name: l.Name, Address: l.Address, Latitude: cloneFloat(l.Latitude),
		Longitude: cloneFloat(l.Longitude), IsDefault: l.IsDefault,
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := userExists(tx, userID); err != nil {
			return err
		}
		now := s.now()
		row.CreatedAt, row.UpdatedAt = now, now
		if row.IsDefault {
			if err := clearDefaultLocation(tx, userID, 0, now); err != nil {
				return err
			}
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create location for user %d: %w", userID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.toLocation(), nil
}

// UpdateLocation replaces the name, address, coordinates and default flag of one of the user's
// locations and returns it. Errors: ErrNotFound (no such location for this user — another
// user's location included). The fields are checked by the caller, as for CreateLocation.
func (s *Principals) UpdateLocation(ctx context.Context, userID, id int64, l Location) (*Location, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*Location, error) {
		var row locationRow
		if err := tx.Where("id = ? AND user_id = ?", id, userID).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, fmt.Errorf("location %d of user %d: %w", id, userID, svcerr.ErrNotFound)
			}
			return nil, fmt.Errorf("load location %d: %w", id, err)
		}
		now := s.now()
		if l.IsDefault {
			if err := clearDefaultLocation(tx, userID, id, now); err != nil {
				return nil, err
			}
		}
		row.Name, row.Address = l.Name, l.Address
		row.Latitude, row.Longitude = cloneFloat(l.Latitude), cloneFloat(l.Longitude)
		row.IsDefault, row.UpdatedAt = l.IsDefault, now
		err := tx.Model(&locationRow{}).Where("id = ?", id).Updates(map[string]any{
			"name": row.Name, "address": row.Address, "latitude": row.Latitude,
			"longitude": row.Longitude, "is_default": row.IsDefault, "updated_at": now,
		}).Error
		if err != nil {
			return nil, fmt.Errorf("update location %d: %w", id, err)
		}
		return row.toLocation(), nil
	})
}

// DeleteLocation removes one of the user's locations. Errors: ErrNotFound (no such location for
// this user).
func (s *Principals) DeleteLocation(ctx context.Context, userID, id int64) error {
	res := s.conn(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&locationRow{})
	if res.Error != nil {
		return TranslateError(fmt.Errorf("delete location %d: %w", id, res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("location %d of user %d: %w", id, userID, svcerr.ErrNotFound)
	}
	return nil
}

// clearDefaultLocation removes the default flag from the user's locations other than keepID.
func clearDefaultLocation(tx *gorm.DB, userID, keepID int64, now time.Time) error {
	err := tx.Model(&locationRow{}).Where("user_id = ? AND id <> ? AND is_default = ?", userID, keepID, true).
		Updates(map[string]any{"is_default": false, "updated_at": now}).Error
	if err != nil {
		return fmt.Errorf("clear default location of user %d: %w", userID, err)
	}
	return nil
}

func cloneFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}
