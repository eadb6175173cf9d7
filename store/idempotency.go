package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// IdempotencyRetention is how long the answer of a request with an Idempotency-Key is kept.
const IdempotencyRetention = 24 * time.Hour

// Idempotent is the record of one Idempotency-Key of one caller (scope): the hash of the
// request that first used it and, once it was answered, the answer.
type Idempotent struct {
	Scope       string
	Key         string `gorm:"column:idem_key"`
	RequestHash string
	Status      *int // nil while the first request is still running
	ContentType string
	Body        []byte
	CreatedAt   time.Time
	CompletedAt *time.Time
}

func (Idempotent) TableName() string { return "idempotency_keys" }

// BeginIdempotent claims key for scope with the request's hash. started is true when this
// request is the first (it must act and then call FinishIdempotent or AbandonIdempotent);
// otherwise rec is the existing record (answered or still running). A record older than
// IdempotencyRetention counts as absent.
func (s *Store) BeginIdempotent(ctx context.Context, scope, key, hash string) (rec *Idempotent, started bool, err error) {
	now := s.now()
	row := Idempotent{Scope: scope, Key: key, RequestHash: hash, CreatedAt: now}
	err = s.conn(ctx).Create(&row).Error
	if err == nil {
		return &row, true, nil
	}
	if !errors.Is(TranslateError(err), gorm.ErrDuplicatedKey) {
		return nil, false, fmt.Errorf("idempotency key: %w", err)
	}
	var cur Idempotent
	if err := s.conn(ctx).Where("scope = ? AND idem_key = ?", scope, key).Take(&cur).Error; err != nil {
		return nil, false, fmt.Errorf("idempotency key: %w", err)
	}
	if cur.CreatedAt.Before(now.Add(-IdempotencyRetention)) {
		// Expired but not swept yet: take it over for this request.
		res := s.conn(ctx).Model(&Idempotent{}).Where("scope = ? AND idem_key = ? AND created_at = ?", scope, key, cur.CreatedAt).
			Updates(map[string]any{"request_hash": hash, "status": nil, "content_type": "", "body": nil, "created_at": now, "completed_at": nil})
		if res.Error == nil && res.RowsAffected == 1 {
			return &row, true, nil
		}
	}
	return &cur, false, nil
}

// FinishIdempotent records the answer of the request that began key for scope.
func (s *Store) FinishIdempotent(ctx context.Context, scope, key string, status int, contentType string, body []byte) error {
	now := s.now()
	return s.conn(ctx).Model(&Idempotent{}).Where("scope = ? AND idem_key = ?", scope, key).
		Updates(map[string]any{"status": status, "content_type": contentType, "body": body, "completed_at": now}).Error
}

// AbandonIdempotent forgets key for scope (the first request failed in a way a retry should act
// again on: a 5xx answer).
func (s *Store) AbandonIdempotent(ctx context.Context, scope, key string) error {
	return s.conn(ctx).Where("scope = ? AND idem_key = ? AND status IS NULL", scope, key).Delete(&Idempotent{}).Error
}

// Idempotency returns the record of key for scope (ErrNotFound when there is none).
func (s *Store) Idempotency(ctx context.Context, scope, key string) (*Idempotent, error) {
	var cur Idempotent
	err := s.conn(ctx).Where("scope = ? AND idem_key = ?", scope, key).Take(&cur).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, svcerr.New(svcerr.ErrNotFound, "idempotency key not found")
	}
	return &cur, err
}

// DeleteIdempotencyBefore removes the records created before t (housekeeping) and returns how
// many.
func (s *Store) DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.conn(ctx).Where("created_at < ?", normTime(t)).Delete(&Idempotent{})
	return res.RowsAffected, res.Error
}
