package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/svcerr"
)

// Session is a logged-in browser. Only the SHA-256 digest of the cookie token is stored.
type Session struct {
	ID          int64
	UserID      int64
	TokenDigest string // hex SHA-256 of the cookie token
	CSRFToken   string
	IP          string
	UserAgent   string
	CreatedAt   time.Time
	LastSeenAt  time.Time
	ExpiresAt   time.Time
}

type sessionRow struct {
	ID          int64
	UserID      int64
	TokenDigest string
	CSRFToken   string `gorm:"column:csrf_token"`
	IP          string `gorm:"column:ip"`
	UserAgent   string
	CreatedAt   time.Time
	LastSeenAt  time.Time
	ExpiresAt   time.Time
}

func (sessionRow) TableName() string { return "sessions" }

func (r *sessionRow) toSession() *Session {
	return &Session{
		ID: r.ID, UserID: r.UserID, TokenDigest: r.TokenDigest, CSRFToken: r.CSRFToken,
		IP: r.IP, UserAgent: r.UserAgent, CreatedAt: r.CreatedAt.UTC(),
		LastSeenAt: r.LastSeenAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}
}

func sessionNotFound() error { return fmt.Errorf("session: %w", svcerr.ErrNotFound) }

// CreateSession stores a session for sess.UserID; ID, CreatedAt and LastSeenAt are set by the
// store. IP and UserAgent are truncated to their column sizes rather than rejected.
// Errors: ErrInvalid (digest not 64 hex characters, CSRF token empty or oversize, expiry not in
// the future), ErrNotFound (no such user), ErrConflict (digest already in use).
func (s *Store) CreateSession(ctx context.Context, sess Session) (*Session, error) {
	if err := checkDigest("token_digest", sess.TokenDigest); err != nil {
		return nil, err
	}
	if err := checkASCII("csrf_token", sess.CSRFToken, 1, MaxCSRFTokenLen); err != nil {
		return nil, err
	}
	row := sessionRow{
		UserID: sess.UserID, TokenDigest: sess.TokenDigest, CSRFToken: sess.CSRFToken,
		IP: truncateRunes(sess.IP, MaxIPLen), UserAgent: truncateRunes(sess.UserAgent, MaxUserAgentLen),
		ExpiresAt: normTime(sess.ExpiresAt),
	}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		if !row.ExpiresAt.After(now) {
			return invalidf("session expiry must be in the future")
		}
		if err := userExists(tx, sess.UserID); err != nil {
			return err
		}
		row.CreatedAt, row.LastSeenAt = now, now
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create session for user %d: %w", sess.UserID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.toSession(), nil
}

// SessionByDigest returns a live session and its user. Errors: ErrNotFound when no session has
// this digest or it has expired.
func (s *Store) SessionByDigest(ctx context.Context, digest string) (*Session, *User, error) {
	db := s.conn(ctx)
	var row sessionRow
	err := db.Where("token_digest = ? AND expires_at > ?", digest, s.now()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, sessionNotFound()
	}
	if err != nil {
		return nil, nil, TranslateError(fmt.Errorf("load session: %w", err))
	}
	u, err := loadUser(db, row.UserID)
	if err != nil {
		if errors.Is(err, svcerr.ErrNotFound) { // user deleted meanwhile
			return nil, nil, sessionNotFound()
		}
		return nil, nil, TranslateError(err)
	}
	return row.toSession(), u, nil
}

// TouchSession records activity on a session and moves its expiry (sliding sessions).
// Errors: ErrNotFound.
func (s *Store) TouchSession(ctx context.Context, id int64, expiresAt time.Time) error {
	res := s.conn(ctx).Model(&sessionRow{}).Where("id = ?", id).
		Updates(map[string]any{"last_seen_at": s.now(), "expires_at": normTime(expiresAt)})
	if res.Error != nil {
		return TranslateError(fmt.Errorf("touch session %d: %w", id, res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("session %d: %w", id, svcerr.ErrNotFound)
	}
	return nil
}

// DeleteSession ends the session with this digest (logout). Ending a session that does not
// exist is not an error.
func (s *Store) DeleteSession(ctx context.Context, digest string) error {
	if err := s.conn(ctx).Where("token_digest = ?", digest).Delete(&sessionRow{}).Error; err != nil {
		return TranslateError(fmt.Errorf("delete session: %w", err))
	}
	return nil
}

// DeleteUserSessions ends every session of a user except exceptID (0 keeps none), e.g. after a
// password change. A user without sessions is not an error.
func (s *Store) DeleteUserSessions(ctx context.Context, userID, exceptID int64) error {
	if err := s.conn(ctx).Where("user_id = ? AND id <> ?", userID, exceptID).Delete(&sessionRow{}).Error; err != nil {
		return TranslateError(fmt.Errorf("delete sessions of user %d: %w", userID, err))
	}
	return nil
}

// PurgeExpiredSessions deletes sessions whose expiry has passed and returns how many.
func (s *Store) PurgeExpiredSessions(ctx context.Context) (int64, error) {
	res := s.conn(ctx).Where("expires_at <= ?", s.now()).Delete(&sessionRow{})
	if res.Error != nil {
		return 0, TranslateError(fmt.Errorf("purge sessions: %w", res.Error))
	}
	return res.RowsAffected, nil
}
