package account

import (
	"context"
	"time"

	"github.com/agentsvc/svc/store"
)

// Store is what the account service reads and writes: users, their sessions, link tokens (with
// the mail that carries them), roles and profiles. The one store (*store.Store) satisfies it; a
// test may hand in anything smaller.
type Store interface {
	CreateUser(ctx context.Context, nu store.NewUser) (*store.User, error)
	UserByID(ctx context.Context, id int64) (*store.User, error)
	UserByEmail(ctx context.Context, email string) (*store.User, error)
	UpdateUser(ctx context.Context, id int64, upd store.UserUpdate) (*store.User, error)
	GrantRole(ctx context.Context, userID int64, role string) error
	RevokeRole(ctx context.Context, userID int64, role string) error

	CreateSession(ctx context.Context, sess store.Session) (*store.Session, error)
	SessionByDigest(ctx context.Context, digest string) (*store.Session, *store.User, error)
	LiveSessionByID(ctx context.Context, id int64) (*store.Session, error)
	TouchSession(ctx context.Context, id int64, expiresAt time.Time) error
	DeleteSession(ctx context.Context, digest string) error
	DeleteUserSessions(ctx context.Context, userID, keepID int64) error

	CreateToken(ctx context.Context, t store.Token, mails ...store.NewMail) error
	ConsumeToken(ctx context.Context, kind, selector, verifierDigest string) (*store.Token, error)

	PutProfile(ctx context.Context, userID int64, p store.Profile) (*store.Profile, error)
}
