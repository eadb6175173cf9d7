package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
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
func (s *Principals) CreateSession(ctx context.Context, sess Session) (*Session, error) {
	// Not user input: the digest, CSRF token and expiry are account.Service's own values, guarded
	// here for their columns; the expiry is compared with the store's clock in the transaction.
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

// SessionByDigest returns a live session and its user, from the session cache while nothing
// that could end the session or change its user was written since it was cached
// (sessioncache.go). Errors: ErrNotFound when no session has this digest or it has expired.
func (s *Principals) SessionByDigest(ctx context.Context, digest string) (*Session, *User, error) {
	_, version, err := s.versions(ctx) // before the read: a change meanwhile shows as a new version
	if err != nil {
		return nil, nil, err
	}
	if sess, u, ok := s.sessions.get(digest, version); ok {
		return sess, u, nil
	}
	sess, u, err := s.readSession(ctx, digest)
	if err != nil {
		return nil, nil, err
	}
	s.sessions.put(digest, sess, u, version)
	return sess, u, nil
}

// readSession reads the live session of digest, its user and the user's roles, in one read.
func (s *Store) readSession(ctx context.Context, digest string) (*Session, *User, error) {
	var rows []sessionUserRow
	cols := sessionUserColumns
	if s.dialect == DialectPostgres {
		cols = sessionUserColumnsPostgres
	}
	err := s.conn(ctx).Table("sessions").Select(cols).
		Joins("JOIN users ON users.id = sessions.user_id").
		Where("sessions.token_digest = ? AND sessions.expires_at > ?", digest, s.now()).Limit(1).Scan(&rows).Error
	if err != nil {
		return nil, nil, TranslateError(fmt.Errorf("load session: %w", err))
	}
	if len(rows) == 0 { // no such session, expired, or its user deleted meanwhile
		return nil, nil, sessionNotFound()
	}
	r := rows[0]
	var roles []string
	if r.Roles != nil && *r.Roles != "" {
		roles = strings.Split(*r.Roles, ",")
		slices.Sort(roles) // byte order on every dialect and collation, as rolesOf
	}
	return r.Session.toSession(), r.User.toUser(roles), nil
}

// sessionUserRow is a session joined with its user and the user's roles (comma-separated; role
// names have no commas).
type sessionUserRow struct {
	User    userRow    `gorm:"embedded"`
	Session sessionRow `gorm:"embedded;embeddedPrefix:s_"`
	Roles   *string
}

const sessionUserColumns = "users.*, sessions.id AS s_id, sessions.user_id AS s_user_id, " +
	"sessions.token_digest AS s_token_digest, sessions.csrf_token AS s_csrf_token, sessions.ip AS s_ip, " +
	"sessions.user_agent AS s_user_agent, sessions.created_at AS s_created_at, " +
	"sessions.last_seen_at AS s_last_seen_at, sessions.expires_at AS s_expires_at, " +
	"(SELECT GROUP_CONCAT(role) FROM user_roles WHERE user_roles.user_id = users.id) AS roles"

// sessionUserColumnsPostgres is sessionUserColumns in PostgreSQL's words (string_agg).
var sessionUserColumnsPostgres = strings.Replace(sessionUserColumns, "GROUP_CONCAT(role)", "string_agg(role, ',')", 1)

// TouchSession records activity on a session and moves its expiry (sliding sessions).
// Errors: ErrNotFound.
func (s *Principals) TouchSession(ctx context.Context, id int64, expiresAt time.Time) error {
	now, exp := s.now(), normTime(expiresAt)
	res := s.conn(ctx).Model(&sessionRow{}).Where("id = ?", id).
		Updates(map[string]any{"last_seen_at": now, "expires_at": exp})
	if res.Error != nil {
		return TranslateError(fmt.Errorf("touch session %d: %w", id, res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("session %d: %w", id, svcerr.ErrNotFound)
	}
	s.sessions.touch(id, normTime(now), exp)
	return nil
}

// DeleteSession ends the session with this digest (logout). Ending a session that does not
// exist is not an error.
func (s *Principals) DeleteSession(ctx context.Context, digest string) error {
	if err := s.conn(ctx).Where("token_digest = ?", digest).Delete(&sessionRow{}).Error; err != nil {
		return TranslateError(fmt.Errorf("delete session: %w", err))
	}
	return nil
}

// DeleteUserSessions ends every session of a user except exceptID (0 keeps none), e.g. after a
// password change. A user without sessions is not an error.
func (s *Principals) DeleteUserSessions(ctx context.Context, userID, exceptID int64) error {
	if err := s.conn(ctx).Where("user_id = ? AND id <> ?", userID, exceptID).Delete(&sessionRow{}).Error; err != nil {
		return TranslateError(fmt.Errorf("delete sessions of user %d: %w", userID, err))
	}
	return nil
}

// PurgeExpiredSessions deletes sessions whose expiry has passed and returns how many.
func (s *Principals) PurgeExpiredSessions(ctx context.Context) (int64, error) {
	res := s.conn(ctx).Where("expires_at <= ?", s.now()).Delete(&sessionRow{})
	if res.Error != nil {
		return 0, TranslateError(fmt.Errorf("purge sessions: %w", res.Error))
	}
	return res.RowsAffected, nil
}

// LiveSessionByID returns the live session id, through the session cache like SessionByDigest
// (its digest is remembered from the session's last authentication, else read): an open push
// subscription asks it every second. Errors: ErrNotFound when it ended (logged out, expired, its
// user deleted).
func (s *Principals) LiveSessionByID(ctx context.Context, id int64) (*Session, error) {
	s.sessions.mu.Lock()
	digest, ok := s.sessions.byID[id]
	s.sessions.mu.Unlock()
	if !ok {
		var digests []string
		if err := s.conn(ctx).Table("sessions").Where("id = ?", id).Limit(1).Pluck("token_digest", &digests).Error; err != nil {
			return nil, TranslateError(fmt.Errorf("load session %d: %w", id, err))
		}
		if len(digests) == 0 {
			return nil, sessionNotFound()
		}
		digest = digests[0]
	}
	sess, _, err := s.SessionByDigest(ctx, digest)
	if err != nil {
		return nil, err
	}
	if sess.ID != id {
		return nil, sessionNotFound()
	}
	return sess, nil
}
