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

// Media asset kinds (media_assets.kind).
const (
	MediaKindImage    = "image"
	MediaKindAudio    = "audio"
	MediaKindVideo    = "video"
	MediaKindDocument = "document"
	MediaKindOther    = "other"
)

// Media asset limits.
const (
	MaxMediaIDLen      = 64
	MaxMediaMimeLen    = 255
	MaxMediaStorageLen = 255
	// maxMediaTaskDepth bounds the walk up parent_task_id in MediaReadableByAgent.
	maxMediaTaskDepth = 64
)

// MediaAsset is an uploaded, produced or derived file. The bytes live on disk below the media
// directory at StorageKey. An unkept asset is live until ExpiresAt, or for as long as a chat
// attaches it (task_media); after that it is invisible and swept.
type MediaAsset struct {
	ID          string
	PrincipalID int64
	Filename    string
	MimeType    string
	Kind        string
	Size        int64
	Width       *int
	Height      *int
	SHA256      string // lowercase hex
	StorageKey  string
	Keep        bool
	ExpiresAt   *time.Time
	ParentID    *string
	UploadedBy  *int64
	AgentID     *int64
	TaskID      *int64
	CreatedAt   time.Time
}

type mediaAssetRow struct {
	ID          string `gorm:"primaryKey"`
	PrincipalID int64
	Filename    string
	MimeType    string
	Kind        string
	Size        int64
	Width       *int
	Height      *int
	SHA256      string `gorm:"column:sha256"`
	StorageKey  string
	Keep        bool
	ExpiresAt   *time.Time
	ParentID    *string
	UploadedBy  *int64
	AgentID     *int64
	TaskID      *int64
	CreatedAt   time.Time
}

func (mediaAssetRow) TableName() string { return "media_assets" }

func (r *mediaAssetRow) toMediaAsset() *MediaAsset {
	return &MediaAsset{
		ID: r.ID, PrincipalID: r.PrincipalID, Filename: r.Filename, MimeType: r.MimeType, Kind: r.Kind, Size: r.Size,
		Width: cloneInt(r.Width), Height: cloneInt(r.Height), SHA256: r.SHA256, StorageKey: r.StorageKey, Keep: r.Keep,
		ExpiresAt: utcPtr(r.ExpiresAt), ParentID: cloneString(r.ParentID), UploadedBy: cloneInt64(r.UploadedBy),
		AgentID: cloneInt64(r.AgentID), TaskID: cloneInt64(r.TaskID), CreatedAt: r.CreatedAt.UTC(),
	}
}

type taskMediaRow struct {
	TaskID          int64  `gorm:"primaryKey;autoIncrement:false"`
	MediaID         string `gorm:"primaryKey"`
	MessageSequence int    `gorm:"primaryKey;autoIncrement:false"`
	CreatedAt       time.Time
}

func (taskMediaRow) TableName() string { return "task_media" }

func cloneInt64(i *int64) *int64 {
	if i == nil {
		return nil
	}
	v := *i
	return &v
}

func errMediaNotFound() error { return svcerr.New(svcerr.ErrNotFound, "media asset not found") }

// mediaLive is the condition of a live asset (alias media_assets): kept, not yet expired, or
// attached to a chat. Its argument is the current time.
const mediaLive = "(media_assets.keep = TRUE OR media_assets.expires_at IS NULL OR media_assets.expires_at > ? OR " +
	"EXISTS (SELECT 1 FROM task_media WHERE task_media.media_id = media_assets.id))"

// mediaExpired is the negation of mediaLive (argument: the current time).
const mediaExpired = "media_assets.keep = FALSE AND media_assets.expires_at IS NOT NULL AND media_assets.expires_at <= ? AND " +
	"NOT EXISTS (SELECT 1 FROM task_media WHERE task_media.media_id = media_assets.id)"

// CreateMediaAsset stores a new asset as given (the caller has written the file, chosen the id
// and expiry and checked the row's shape: package media); a zero CreatedAt means now. Errors:
// ErrInvalid (unknown principal, parent, user, agent or task: the foreign keys' answer),
// ErrConflict (id taken: the primary key's answer).
func (s *Media) CreateMediaAsset(ctx context.Context, a MediaAsset) (*MediaAsset, error) {
	row := mediaAssetRow{
		ID: a.ID, PrincipalID: a.PrincipalID, Filename: a.Filename, MimeType: a.MimeType, Kind: a.Kind, Size: a.Size,
		Width: cloneInt(a.Width), Height: cloneInt(a.Height), SHA256: a.SHA256, StorageKey: a.StorageKey, Keep: a.Keep,
		ParentID: cloneString(a.ParentID), UploadedBy: cloneInt64(a.UploadedBy), AgentID: cloneInt64(a.AgentID),
		TaskID: cloneInt64(a.TaskID), CreatedAt: normTime(a.CreatedAt),
	}
	if a.CreatedAt.IsZero() {
		row.CreatedAt = s.now()
	}
	if a.ExpiresAt != nil && !a.Keep {
		t := normTime(*a.ExpiresAt)
		row.ExpiresAt = &t
	}
	err := s.conn(ctx).Create(&row).Error
	if err != nil {
		err = TranslateError(err)
		if errors.Is(err, svcerr.ErrInvalid) { // the foreign keys' answer, known only to this write
			return nil, invalidf("media asset refers to an unknown principal, parent, user, agent or task")
		}
		if errors.Is(err, svcerr.ErrConflict) {
			return nil, svcerr.New(svcerr.ErrConflict, "media id %s is taken", a.ID)
		}
		return nil, fmt.Errorf("create media asset: %w", err)
	}
	return row.toMediaAsset(), nil
}

// MediaAsset returns an asset live now (the store clock); see MediaAssetAt.
func (s *Media) MediaAsset(ctx context.Context, id string) (*MediaAsset, error) {
	return s.MediaAssetAt(ctx, id, s.now())
}

// MediaAssetAt returns an asset live at now. Errors: ErrNotFound "media asset not found"
// (missing or expired).
func (s *Media) MediaAssetAt(ctx context.Context, id string, now time.Time) (*MediaAsset, error) {
	return readMediaAsset(s.conn(ctx), id, normTime(now), false)
}

func readMediaAsset(db *gorm.DB, id string, now time.Time, lock bool) (*MediaAsset, error) {
	if id == "" || len(id) > MaxMediaIDLen {
		return nil, errMediaNotFound()
	}
	if lock {
		db = db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	var row mediaAssetRow
	err := db.Where("media_assets.id = ?", id).Where(mediaLive, now).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errMediaNotFound()
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load media asset: %w", err))
	}
	return row.toMediaAsset(), nil
}

// MediaAssets is MediaAssetsAt now (the store clock).
func (s *Media) MediaAssets(ctx context.Context, ids []string) (map[string]*MediaAsset, error) {
	return s.MediaAssetsAt(ctx, ids, s.now())
}

// MediaAssetsAt returns the assets among ids live at now, keyed by id (missing and expired ids
// are absent). Errors: none beyond the database's own.
func (s *Media) MediaAssetsAt(ctx context.Context, ids []string, now time.Time) (map[string]*MediaAsset, error) {
	out := map[string]*MediaAsset{}
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && len(id) <= MaxMediaIDLen {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []mediaAssetRow
	if err := s.conn(ctx).Where("media_assets.id IN ?", valid).Where(mediaLive, normTime(now)).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("load media assets: %w", err))
	}
	for i := range rows {
		out[rows[i].ID] = rows[i].toMediaAsset()
	}
	return out, nil
}

// MediaQuery selects a page of assets for ListMedia.
type MediaQuery struct {
	PrincipalIDs []int64 // owners; empty selects nothing
	Kind         string  // "" for every kind
	// Page starts at 1 (lower values mean 1); PerPage is at most 100, and below 1 means 25.
	Page, PerPage int
	Now           time.Time // liveness is judged at Now; zero means the store clock
}

// ListMedia returns one page of the live assets owned by q.PrincipalIDs, newest first
// (created_at, then id, descending). Errors: none beyond the database's own.
func (s *Media) ListMedia(ctx context.Context, q MediaQuery) ([]MediaAsset, error) {
	out := []MediaAsset{}
	limit, offset, ok := pageWindow(q.Page, q.PerPage)
	if !ok || len(q.PrincipalIDs) == 0 {
		return out, nil
	}
	now := s.now()
	if !q.Now.IsZero() {
		now = normTime(q.Now)
	}
	db := s.conn(ctx).Where("media_assets.principal_id IN ?", q.PrincipalIDs).Where(mediaLive, now)
	if q.Kind != "" {
		db = db.Where("media_assets.kind = ?", q.Kind)
	}
	var rows []mediaAssetRow
	if err := db.Order("created_at DESC").Order("id DESC").Limit(limit).Offset(offset).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list media: %w", err))
	}
	for i := range rows {
		out = append(out, *rows[i].toMediaAsset())
	}
	return out, nil
}

// MediaCheck decides inside a write whether it may proceed on the stored asset; a non-nil
// error aborts the write and is returned as it is.
type MediaCheck func(a *MediaAsset) error

// SetMediaKeep sets the keep flag of an asset live at now: keep clears expires_at, !keep sets
// it to now plus retention. Setting the value the asset already has changes nothing. check
// (may be nil) runs on the locked row first. Errors: ErrNotFound "media asset not found",
// those of check.
func (s *Media) SetMediaKeep(ctx context.Context, id string, keep bool, now time.Time, retention time.Duration, check MediaCheck) (*MediaAsset, error) {
	now = normTime(now)
	expiresAt := now.Add(retention)
	return inTx(ctx, s.Store, func(tx *gorm.DB) (*MediaAsset, error) {
		a, err := readMediaAsset(tx, id, now, true)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(a); err != nil {
				return nil, err
			}
		}
		if a.Keep == keep {
			return a, nil
		}
		var exp *time.Time
		if !keep {
			t := normTime(expiresAt)
			exp = &t
		}
		res := tx.Model(&mediaAssetRow{}).Where("id = ?", id).
			Updates(map[string]any{"keep": keep, "expires_at": exp})
		if res.Error != nil {
			return nil, fmt.Errorf("set media keep: %w", res.Error)
		}
		a.Keep, a.ExpiresAt = keep, utcPtr(exp)
		return a, nil
	})
}

// AttachTaskMedia records that message seq of task taskID attaches the assets ids (task_media)
// and makes them permanent, as a message written with media_ids does (attachMedia). Links
// already present are kept. Errors: ErrInvalid (unknown task or asset).
func (s *Media) AttachTaskMedia(ctx context.Context, taskID int64, seq int, ids []string) error {
	return s.tx(ctx, func(tx *gorm.DB) error { return attachMedia(tx, taskID, seq, s.now(), ids) })
}

// MediaReadableByAgent is MediaReadableByAgentAt now (the store clock).
func (s *Media) MediaReadableByAgent(ctx context.Context, agentID int64, mediaID string) (*MediaAsset, error) {
	return s.MediaReadableByAgentAt(ctx, agentID, mediaID, s.now())
}

// MediaReadableByAgentAt reports whether a key of agentID may read asset mediaID: the asset is
// live at now and the agent produced or uploaded it (agent_id), or it belongs to a task of the agent's
// tree (task_id is a task of the agent, or a sub-agent task below one), or a task of that tree
// attaches it (task_media). Errors: ErrNotFound "media asset not found" in every other case.
func (s *Media) MediaReadableByAgentAt(ctx context.Context, agentID int64, mediaID string, now time.Time) (*MediaAsset, error) {
	db := s.conn(ctx)
	a, err := readMediaAsset(db, mediaID, normTime(now), false)
	if err != nil {
		return nil, err
	}
	if a.AgentID != nil && *a.AgentID == agentID {
		return a, nil
	}
	var start []int64
	if a.TaskID != nil {
		start = append(start, *a.TaskID)
	}
	var linked []int64
	if err := db.Model(&taskMediaRow{}).Where("media_id = ?", a.ID).Distinct().Pluck("task_id", &linked).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("media task links: %w", err))
	}
	start = append(start, linked...)
	// Walk up parent_task_id from every starting task: the asset is in the agent's tree when
	// one of these tasks or an ancestor is the agent's.
	seen := map[int64]bool{}
	for depth := 0; len(start) > 0 && depth <= maxMediaTaskDepth; depth++ {
		var level []int64
		for _, id := range start {
			if !seen[id] {
				seen[id] = true
				level = append(level, id)
			}
		}
		if len(level) == 0 {
			break
		}
		var rows []struct {
			ID           int64
			AgentID      int64
			ParentTaskID *int64
		}
		if err := db.Model(&taskRow{}).Select("id, agent_id, parent_task_id").Where("id IN ?", level).Scan(&rows).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("media task tree: %w", err))
		}
		start = start[:0]
		for _, r := range rows {
			if r.AgentID == agentID {
				return a, nil
			}
			if r.ParentTaskID != nil {
				start = append(start, *r.ParentTaskID)
			}
		}
	}
	return nil, errMediaNotFound()
}

// SweepExpiredMedia deletes up to limit assets expired at now (unkept, expires_at at or before
// now, no chat attaching them) and returns their storage keys, for the caller to delete the
// files. Errors: none beyond the database's own.
func (s *Media) SweepExpiredMedia(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit < 1 {
		limit = 100
	}
	return inTx(ctx, s.Store, func(tx *gorm.DB) ([]string, error) {
		var keys []string
		now := normTime(now)
		var rows []mediaAssetRow
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Select("id, storage_key").Where(mediaExpired, now).Order("expires_at").Limit(limit).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("find expired media: %w", err)
		}
		if len(rows) == 0 {
			return nil, nil
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			keys = append(keys, r.StorageKey)
		}
		if err := tx.Where("id IN ?", ids).Delete(&mediaAssetRow{}).Error; err != nil {
			return nil, fmt.Errorf("delete expired media: %w", err)
		}
		return keys, nil
	})
}

// principalMediaKeys locks principal and returns the storage keys of every asset it owns, for
// a transaction about to delete the principal (the cascade deletes the rows; the caller removes
// the files after commit). Both reads lock, so they see the latest committed rows (not an older
// snapshot) and no asset of the principal can be added before the delete.
func principalMediaKeys(tx *gorm.DB, principal int64) ([]string, error) {
	var ids []int64
	err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Model(&principalRow{}).Where("id = ?", principal).Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("lock principal %d: %w", principal, err)
	}
	keys := []string{}
	err = tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
		Model(&mediaAssetRow{}).Where("principal_id = ?", principal).Order("id").Pluck("storage_key", &keys).Error
	if err != nil {
		return nil, fmt.Errorf("media of principal %d: %w", principal, err)
	}
	return keys, nil
}

// expireAgentPictures makes the picture assets of the agents selected by where (a condition on
// agents, with args) unkept and expired at now, for a transaction about to delete those agents:
// the next sweep deletes the rows and their files (unless a chat still attaches one).
func expireAgentPictures(tx *gorm.DB, now time.Time, where string, args ...any) error {
	sub := tx.Session(&gorm.Session{NewDB: true}).Model(&agentRow{}).Select("picture_media_id").
		Where("picture_media_id IS NOT NULL").Where(where, args...)
	err := tx.Model(&mediaAssetRow{}).Where("id IN (?)", sub).
		Updates(map[string]any{"keep": false, "expires_at": normTime(now)}).Error
	if err != nil {
		return fmt.Errorf("expire agent pictures: %w", err)
	}
	return nil
}

// MediaStorageKeys returns the storage key of every id among ids that has an asset row, live
// or expired (missing ids are absent); the media sweep uses it to tell orphan files from files
// of assets. Errors: none beyond the database's own.
func (s *Media) MediaStorageKeys(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && len(id) <= MaxMediaIDLen {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []mediaAssetRow
	if err := s.conn(ctx).Select("id, storage_key").Where("id IN ?", valid).Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("load media storage keys: %w", err))
	}
	for _, r := range rows {
		out[r.ID] = r.StorageKey
	}
	return out, nil
}
