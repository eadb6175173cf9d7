package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// PictureSubject names the table whose rows carry a picture (picture_media_id).
type PictureSubject string

// Picture subjects.
const (
	PictureOfUser  PictureSubject = "users"
	PictureOfAgent PictureSubject = "agents"
	PictureOfGroup PictureSubject = "principal_groups"
)

// what names the subject in error messages.
func (p PictureSubject) what() string {
	switch p {
	case PictureOfUser:
		return "user"
	case PictureOfAgent:
		return "agent"
	case PictureOfGroup:
		return "group"
	}
	return "picture subject"
}

// PictureCheck decides inside a picture write whether it may proceed. principalID is the
// subject's principal read under the row lock (the user's personal principal, the agent's owner,
// the group's principal). A non-nil error aborts the write and is returned as it is.
type PictureCheck func(principalID int64) error

// SetPicture points the picture of row id of subject at mediaID (nil clears it), stamps
// updated_at, and deletes the asset the picture pointed at before (unless it is mediaID). It
// returns the storage key of the deleted asset ("" when none) for the caller to remove the
// file once the write is committed. check (may be nil) runs on the locked row first.
// Errors: ErrNotFound "<subject> not found", ErrInvalid (mediaID names no asset), those of
// check.
func (s *Agents) SetPicture(ctx context.Context, subject PictureSubject, id int64, mediaID *string, check PictureCheck) (string, error) {
	switch subject {
	case PictureOfUser, PictureOfAgent, PictureOfGroup:
	default:
		return "", fmt.Errorf("set picture: unknown subject %q", subject)
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) (string, error) {
		var rows []struct {
			PrincipalID    int64
			PictureMediaID *string
		}
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Table(string(subject)).
			Select("principal_id, picture_media_id").Where("id = ?", id).Limit(1).Scan(&rows).Error
		if err != nil {
			return "", fmt.Errorf("load %s picture: %w", subject.what(), err)
		}
		if len(rows) == 0 {
			return "", svcerr.New(svcerr.ErrNotFound, "%s not found", subject.what())
		}
		row := rows[0]
		if check != nil {
			if err := check(row.PrincipalID); err != nil {
				return "", err
			}
		}
		res := tx.Table(string(subject)).Where("id = ?", id).
			Updates(map[string]any{"picture_media_id": mediaID, "updated_at": s.now()})
		if res.Error != nil {
			if err := TranslateError(res.Error); errors.Is(err, svcerr.ErrInvalid) {
				// the foreign key's answer: the asset is gone, known only to this write
				return "", invalidf("picture: no such media asset")
			}
			return "", fmt.Errorf("set %s picture: %w", subject.what(), res.Error)
		}
		old := row.PictureMediaID
		if old == nil || (mediaID != nil && *old == *mediaID) {
			return "", nil
		}
		return deleteMediaRow(tx, *old)
	})
}

// DiscardMediaAsset deletes an asset row whatever its state (a picture whose write failed) and
// returns its storage key for the caller to remove the file ("" when there was no such row).
func (s *Agents) DiscardMediaAsset(ctx context.Context, id string) (string, error) {
	return inTx(ctx, s.Store, func(tx *gorm.DB) (string, error) {
		return deleteMediaRow(tx, id)
	})
}

// deleteMediaRow deletes asset id and returns its storage key ("" when absent).
func deleteMediaRow(tx *gorm.DB, id string) (string, error) {
	var keys []string
	if err := tx.Model(&mediaAssetRow{}).Where("id = ?", id).Pluck("storage_key", &keys).Error; err != nil {
		return "", fmt.Errorf("load media asset: %w", err)
	}
	if len(keys) == 0 {
		return "", nil
	}
	if err := tx.Where("id = ?", id).Delete(&mediaAssetRow{}).Error; err != nil {
		return "", fmt.Errorf("delete media asset: %w", err)
	}
	return keys[0], nil
}
