// Package account holds the account flows of the session API: registration, login and
// database-backed sessions, password and email changes, verification and reset links, and user
// administration. It owns the rules; store persists and api converts.
package account

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"strings"
	"time"

	mailer "github.com/agentsvc/svc/internal/domain/mail"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/platform/secret"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Lifetimes of sessions and mailed links.
const (
	SessionTTL       = 14 * 24 * time.Hour
	sessionTouchStep = time.Hour
	verifyTTL        = 48 * time.Hour
	resetTTL         = time.Hour
	emailChangeTTL   = 24 * time.Hour
)

// Token kinds of mailed links.
const (
	kindVerify      = "verify"
	kindReset       = "reset"
	kindEmailChange = "email_change"
)

// Options wire a Service.
type Options struct {
	Store Store
	// MailQueued is told after a mail was queued in the outbox (the mail dispatcher's Notify),
	// so it goes out now rather than at the next poll; nil: the poll finds it.
	MailQueued func()
	Config     func() *config.Config
	Clock      func() time.Time
	Logger     *slog.Logger
	Hash       HashParams // zero means DefaultHashParams
}

// Service implements the account flows.
type Service struct {
	store  Store
	queued func()
	cfg    func() *config.Config
	now    func() time.Time
	log    *slog.Logger
	hash   HashParams
	dummy  string // hash compared against when an address is unknown, so timing does not tell

	passwordGate func(ctx context.Context, u *store.User) error // see SetPasswordGate
}

// CheckPassword reports whether password is the password of user userID (a link of a single
// sign-on identity asks for it once). Errors: ErrUnauthenticated (wrong password, unknown
// user); hashing failures.
func (s *Service) CheckPassword(ctx context.Context, userID int64, password string) (*store.User, error) {
	bad := svcerr.New(svcerr.ErrUnauthenticated, "wrong password")
	u, err := s.store.UserByID(ctx, userID)
	return s.verified(u, err, password, bad)
}

// verified checks a password against the user a lookup found: an unknown user still costs a
// hash (of the dummy), so the answer's timing does not tell whether the account exists; a
// wrong password answers bad. Errors: bad, the lookup's, hashing failures.
func (s *Service) verified(u *store.User, err error, password string, bad error) (*store.User, error) {
	if errors.Is(err, svcerr.ErrNotFound) {
		_, _ = checkPassword(s.dummy, password)
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	ok, err := checkPassword(u.PasswordHash, password)
	if err != nil {
		return nil, fmt.Errorf("user %d: %w", u.ID, err)
	}
	if !ok {
		return nil, bad
	}
	return u, nil
}

// CreateExternalUser opens an account for an identity a single sign-on provider verified: the
// email counts as verified and the password is a random one nobody knows (a reset link sets
// one). Errors: ErrInvalid (email, display name), ErrConflict (the email is taken).
func (s *Service) CreateExternalUser(ctx context.Context, email, displayName string) (*store.User, error) {
	return s.createUser(ctx, store.NewUser{Email: email, DisplayName: displayName, Verified: true}, randomToken(32)+"aA1!")
}

// New returns a Service.
func New(o Options) (*Service, error) {
	s := &Service{store: o.Store, queued: o.MailQueued, cfg: o.Config, now: o.Clock, log: o.Logger, hash: o.Hash}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.queued == nil {
		s.queued = func() {}
	}
	if s.hash == (HashParams{}) {
		s.hash = DefaultHashParams
	}
	d, err := hashPassword("not a password anyone has", s.hash)
	if err != nil {
		return nil, err
	}
	s.dummy = d
	return s, nil
}

// Identity is the authenticated caller of a session-API request.
type Identity struct {
	User    *store.User
	Session *store.Session
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the caller stored by WithIdentity, or nil.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// RegisterInput is a self-registration.
type RegisterInput struct {
	Email, Password, DisplayName string
}

// Register creates an account while registration is open (ErrForbidden otherwise); the first
// account ever becomes an administrator. A verification link is mailed to linkBase.
// Errors: ErrForbidden, ErrInvalid, ErrConflict.
func (s *Service) Register(ctx context.Context, in RegisterInput, linkBase string) (*store.User, error) {
	if !s.cfg().AllowRegistration {
		return nil, svcerr.New(svcerr.ErrForbidden, "registration is closed")
	}
	u, err := s.createUser(ctx, store.NewUser{Email: in.Email, DisplayName: in.DisplayName, AdminIfFirst: true}, in.Password)
	if err != nil {
		return nil, err
	}
	s.sendVerification(ctx, u, linkBase)
	return u, nil
}

// CreateUser is the administrator's (and the command line's) way to add an account.
// Errors: ErrInvalid, ErrConflict.
func (s *Service) CreateUser(ctx context.Context, email, password, displayName string, admin, verified bool) (*store.User, error) {
	return s.createUser(ctx, store.NewUser{Email: email, DisplayName: displayName, Admin: admin, Verified: verified}, password)
}

func (s *Service) createUser(ctx context.Context, nu store.NewUser, password string) (*store.User, error) {
	email, err := normaliseEmail(nu.Email)
	if err != nil {
		return nil, err
	}
	if err := checkNewPassword(password); err != nil {
		return nil, err
	}
	nu.Email = email
	nu.DisplayName = strings.TrimSpace(nu.DisplayName)
	if nu.DisplayName == "" {
		nu.DisplayName = email[:strings.IndexByte(email, '@')]
	}
	if err := checkDisplayName(nu.DisplayName); err != nil {
		return nil, err
	}
	if nu.PasswordHash, err = hashPassword(password, s.hash); err != nil {
		return nil, err
	}
	return s.store.CreateUser(ctx, nu)
}

// LoginResult is an opened session. Token is the cookie value; only its digest is stored.
type LoginResult struct {
	User      *store.User
	Token     string
	CSRFToken string
	ExpiresAt time.Time
}

// Login checks credentials and opens a session. Errors: ErrUnauthenticated.
func (s *Service) Login(ctx context.Context, email, password, ip, userAgent string) (*LoginResult, error) {
	bad := svcerr.New(svcerr.ErrUnauthenticated, "invalid email or password")
	u, err := s.store.UserByEmail(ctx, strings.TrimSpace(email))
	if u, err = s.verified(u, err, password, bad); err != nil {
		return nil, err
	}
	if s.passwordGate != nil {
		if err := s.passwordGate(ctx, u); err != nil {
			return nil, err
		}
	}
	return s.OpenSession(ctx, u, ip, userAgent)
}

// SetPasswordGate installs the check a correct password sign-in must pass before its session
// opens (package sso: password_login_enabled and the administrators' break-glass path). It is
// set once while the services are wired, before any request.
func (s *Service) SetPasswordGate(gate func(ctx context.Context, u *store.User) error) {
	s.passwordGate = gate
}

// OpenSession opens a session for u, whose identity the caller established (a password, or a
// verified ID token of a single sign-on provider). Errors: the store's.
func (s *Service) OpenSession(ctx context.Context, u *store.User, ip, userAgent string) (*LoginResult, error) {
	token, csrf := randomToken(32), randomToken(24)
	exp := s.now().UTC().Add(SessionTTL)
	if _, err := s.store.CreateSession(ctx, store.Session{
		UserID: u.ID, TokenDigest: secret.Digest(token), CSRFToken: csrf,
		IP: ip, UserAgent: truncate(userAgent, 255), ExpiresAt: exp,
	}); err != nil {
		return nil, err
	}
	return &LoginResult{User: u, Token: token, CSRFToken: csrf, ExpiresAt: exp}, nil
}

// Authenticate resolves a session cookie value, sliding its expiry forward at most once an
// hour. Errors: ErrUnauthenticated.
func (s *Service) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, svcerr.ErrUnauthenticated
	}
	sess, u, err := s.store.SessionByDigest(ctx, secret.Digest(token))
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, svcerr.ErrUnauthenticated
	}
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	if now.Sub(sess.LastSeenAt) > sessionTouchStep {
		sess.ExpiresAt = now.Add(SessionTTL)
		if err := s.store.TouchSession(ctx, sess.ID, sess.ExpiresAt); err != nil {
			return nil, err
		}
	}
	return &Identity{User: u, Session: sess}, nil
}

// StillSignedIn reports whether the session of id still stands (not logged out, not ended by a
// password change, not expired, its user still there), for what outlives the request that
// authenticated: an open event stream asks it every second. It reads the session cache, which
// the auth version keeps current across processes. Errors: ErrUnauthenticated when it ended;
// database errors.
func (s *Service) StillSignedIn(ctx context.Context, id *Identity) error {
	if id == nil || id.Session == nil {
		return svcerr.ErrUnauthenticated
	}
	if _, _, err := s.store.SessionByDigest(ctx, id.Session.TokenDigest); errors.Is(err, svcerr.ErrNotFound) {
		return svcerr.ErrUnauthenticated
	} else if err != nil {
		return err
	}
	return nil
}

// SessionStands reports whether the session sessionID still stands, like StillSignedIn but by
// the session's id (what a push subscriber token carries): through the session cache the auth
// version keeps current. Errors: ErrUnauthenticated when it ended; database errors.
func (s *Service) SessionStands(ctx context.Context, sessionID int64) error {
	if sessionID <= 0 {
		return svcerr.ErrUnauthenticated
	}
	if _, err := s.store.LiveSessionByID(ctx, sessionID); errors.Is(err, svcerr.ErrNotFound) {
		return svcerr.ErrUnauthenticated
	} else if err != nil {
		return err
	}
	return nil
}

// Logout ends the session behind token.
func (s *Service) Logout(ctx context.Context, token string) error {
	err := s.store.DeleteSession(ctx, secret.Digest(token))
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil
	}
	return err
}

// UpdateAccount changes the caller's display name. Errors: ErrInvalid, ErrNotFound.
func (s *Service) UpdateAccount(ctx context.Context, userID int64, displayName string) (*store.User, error) {
	name := strings.TrimSpace(displayName)
	if name == "" {
		return nil, svcerr.New(svcerr.ErrInvalid, "display_name must not be blank")
	}
	if err := checkDisplayName(name); err != nil {
		return nil, err
	}
	return s.store.UpdateUser(ctx, userID, store.UserUpdate{DisplayName: &name})
}

// ChangePassword replaces the caller's password after checking the current one and ends every
// other session. Errors: ErrInvalid.
func (s *Service) ChangePassword(ctx context.Context, id *Identity, current, next string) (*store.User, error) {
	if err := s.verifyPassword(id.User, current); err != nil {
		return nil, err
	}
	if err := checkNewPassword(next); err != nil {
		return nil, err
	}
	h, err := hashPassword(next, s.hash)
	if err != nil {
		return nil, err
	}
	u, err := s.store.UpdateUser(ctx, id.User.ID, store.UserUpdate{PasswordHash: &h})
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteUserSessions(ctx, id.User.ID, id.Session.ID); err != nil {
		return nil, err
	}
	return u, nil
}

// ForgotPassword mails a reset link when email belongs to an account; it answers the same
// either way so addresses cannot be probed.
func (s *Service) ForgotPassword(ctx context.Context, email, linkBase string) error {
	u, err := s.store.UserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.issueToken(ctx, kindReset, u.ID, "", resetTTL, func(sel, ver string) mailer.Message {
		link := linkBase + "/reset-password?" + url.Values{"selector": {sel}, "token": {ver}}.Encode()
		return mailer.PasswordResetMessage(u.Email, u.DisplayName, link)
	})
}

// ResetPassword completes a reset from a mailed link and ends every session of the user.
// Errors: ErrInvalid.
func (s *Service) ResetPassword(ctx context.Context, selector, verifier, next string) error {
	if err := checkNewPassword(next); err != nil {
		return err
	}
	tok, err := s.consumeLink(ctx, kindReset, selector, verifier)
	if err != nil {
		return err
	}
	h, err := hashPassword(next, s.hash)
	if err != nil {
		return err
	}
	if _, err := s.store.UpdateUser(ctx, tok.UserID, store.UserUpdate{PasswordHash: &h}); err != nil {
		return err
	}
	return s.store.DeleteUserSessions(ctx, tok.UserID, 0)
}

// RequestEmailChange records newEmail as pending and mails a confirmation link to it.
// Errors: ErrInvalid (bad address or password), ErrConflict (address taken).
func (s *Service) RequestEmailChange(ctx context.Context, id *Identity, newEmail, password, linkBase string) (*store.User, error) {
	if err := s.verifyPassword(id.User, password); err != nil {
		return nil, err
	}
	email, err := normaliseEmail(newEmail)
	if err != nil {
		return nil, err
	}
	if email == id.User.Email {
		return nil, svcerr.New(svcerr.ErrInvalid, "new_email is the current address")
	}
	if _, err := s.store.UserByEmail(ctx, email); err == nil {
		return nil, svcerr.New(svcerr.ErrConflict, "email already registered")
	} else if !errors.Is(err, svcerr.ErrNotFound) {
		return nil, err
	}
	err = s.issueToken(ctx, kindEmailChange, id.User.ID, email, emailChangeTTL, func(sel, ver string) mailer.Message {
		link := linkBase + "/confirm-email?" + url.Values{"selector": {sel}, "token": {ver}}.Encode()
		return mailer.EmailChangeMessage(email, id.User.DisplayName, link)
	})
	if err != nil {
		return nil, err
	}
	pending := &email
	return s.store.UpdateUser(ctx, id.User.ID, store.UserUpdate{PendingEmail: &pending})
}

// ConfirmEmailChange applies a pending email change from its mailed link.
// Errors: ErrInvalid, ErrConflict (the address was taken meanwhile).
func (s *Service) ConfirmEmailChange(ctx context.Context, selector, verifier string) (*store.User, error) {
	tok, err := s.consumeLink(ctx, kindEmailChange, selector, verifier)
	if err != nil {
		return nil, err
	}
	email, verified := tok.Payload, true
	var none *string
	return s.store.UpdateUser(ctx, tok.UserID, store.UserUpdate{Email: &email, EmailVerified: &verified, PendingEmail: &none})
}

// ResendVerification mails a new verification link. Errors: ErrConflict when already verified.
func (s *Service) ResendVerification(ctx context.Context, u *store.User, linkBase string) error {
	if u.EmailVerifiedAt != nil {
		return svcerr.New(svcerr.ErrConflict, "the address is already verified")
	}
	return s.sendVerification(ctx, u, linkBase)
}

// VerifyEmail marks an account verified from its mailed link. Errors: ErrInvalid.
func (s *Service) VerifyEmail(ctx context.Context, selector, verifier string) (*store.User, error) {
	tok, err := s.consumeLink(ctx, kindVerify, selector, verifier)
	if err != nil {
		return nil, err
	}
	verified := true
	return s.store.UpdateUser(ctx, tok.UserID, store.UserUpdate{EmailVerified: &verified})
}

func (s *Service) sendVerification(ctx context.Context, u *store.User, linkBase string) error {
	err := s.issueToken(ctx, kindVerify, u.ID, "", verifyTTL, func(sel, ver string) mailer.Message {
		link := linkBase + "/api/v1/auth/verify/" + sel + "?" + url.Values{"token": {ver}}.Encode()
		return mailer.VerificationMessage(u.Email, u.DisplayName, link)
	})
	if err != nil {
		s.log.ErrorContext(ctx, "issue verification token", "user_id", u.ID, "err", err)
	}
	return err
}

// issueToken stores a new link token of kind for userID and queues the message that carries
// it (msg builds it from the selector and verifier) in the same transaction, then wakes the
// mail dispatcher: a link is mailed exactly when it exists, and a mail server that is slow or
// down delays the mail, never the request (the outbox retries). Errors: the store's.
func (s *Service) issueToken(ctx context.Context, kind string, userID int64, payload string, ttl time.Duration,
	msg func(selector, verifier string) mailer.Message) error {
	selector, verifier := randomToken(12), randomToken(32)
	m := msg(selector, verifier)
	err := s.store.CreateToken(ctx, store.Token{
		Kind: kind, UserID: userID, Selector: selector, VerifierDigest: secret.Digest(verifier),
		Payload: payload, ExpiresAt: s.now().UTC().Add(ttl),
	}, store.NewMail{To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, Kind: store.MailKindAccount})
	if err != nil {
		return err
	}
	s.queued()
	return nil
}

// consumeLink redeems the link (selector, verifier) of kind: a selector of the wrong shape gets
// the store's answer for an unusable link without a query. Errors: ErrInvalid "the link is
// invalid or has expired".
func (s *Service) consumeLink(ctx context.Context, kind, selector, verifier string) (*store.Token, error) {
	if err := checkSelector(selector); err != nil {
		return nil, err
	}
	return s.store.ConsumeToken(ctx, kind, selector, secret.Digest(verifier))
}

func (s *Service) verifyPassword(u *store.User, pw string) error {
	ok, err := checkPassword(u.PasswordHash, pw)
	if err != nil {
		return fmt.Errorf("user %d: %w", u.ID, err)
	}
	if !ok {
		return svcerr.New(svcerr.ErrInvalid, "the current password is wrong")
	}
	return nil
}

func normaliseEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || len(s) > limits.EmailLen {
		return "", svcerr.New(svcerr.ErrInvalid, "email %q is not a valid address", s)
	}
	return s, nil
}

func checkNewPassword(pw string) error {
	if n := len([]rune(pw)); n < limits.MinPasswordLen || len(pw) > limits.MaxPasswordLen {
		return svcerr.New(svcerr.ErrInvalid, "password must be %d to %d characters long", limits.MinPasswordLen, limits.MaxPasswordLen)
	}
	return nil
}

// randomToken returns n random bytes, base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform's randomness is gone
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// UserChanges are an administrator's edits of an account; nil fields stay.
type UserChanges struct {
	Email, DisplayName, Password *string
	IsAdmin, EmailVerified       *bool
}

// UpdateUser applies an administrator's edits. Every input is checked before anything is
// written. Errors: ErrNotFound, ErrInvalid, ErrConflict (address taken, last administrator).
func (s *Service) UpdateUser(ctx context.Context, id int64, ch UserChanges) (*store.User, error) {
	u, err := s.store.UserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var upd store.UserUpdate
	if ch.Email != nil {
		email, err := normaliseEmail(*ch.Email)
		if err != nil {
			return nil, err
		}
		if other, err := s.store.UserByEmail(ctx, email); err == nil && other.ID != id {
			return nil, svcerr.New(svcerr.ErrConflict, "email already registered")
		} else if err != nil && !errors.Is(err, svcerr.ErrNotFound) {
			return nil, err
		}
		upd.Email = &email
	}
	if ch.DisplayName != nil {
		name := strings.TrimSpace(*ch.DisplayName)
		if name == "" {
			return nil, svcerr.New(svcerr.ErrInvalid, "display_name must not be blank")
		}
		if err := checkDisplayName(name); err != nil {
			return nil, err
		}
		upd.DisplayName = &name
	}
	if ch.Password != nil {
		if err := checkNewPassword(*ch.Password); err != nil {
			return nil, err
		}
		h, err := hashPassword(*ch.Password, s.hash)
		if err != nil {
			return nil, err
		}
		upd.PasswordHash = &h
	}
	upd.EmailVerified = ch.EmailVerified
	// The role change goes first: revoking is the one step the store may refuse (last
	// administrator), and it refuses before anything else was written.
	if ch.IsAdmin != nil && *ch.IsAdmin != u.IsAdmin() {
		if *ch.IsAdmin {
			err = s.store.GrantRole(ctx, id, store.RoleAdmin)
		} else {
			err = s.store.RevokeRole(ctx, id, store.RoleAdmin)
		}
		if err != nil {
			return nil, err
		}
	}
	u, err = s.store.UpdateUser(ctx, id, upd)
	if err != nil {
		return nil, err
	}
	if ch.Password != nil {
		if err := s.store.DeleteUserSessions(ctx, id, 0); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// PutProfile replaces the user's profile after checking the time zone against the zone
// database and the fields (CheckProfile), before the store. Errors: ErrInvalid, ErrNotFound.
func (s *Service) PutProfile(ctx context.Context, userID int64, p store.Profile) (*store.Profile, error) {
	if p.Timezone != "" {
		if _, err := time.LoadLocation(p.Timezone); err != nil || p.Timezone == "Local" {
			return nil, svcerr.New(svcerr.ErrInvalid, "timezone %q is not an IANA time zone", p.Timezone)
		}
	}
	if err := CheckProfile(p); err != nil {
		return nil, err
	}
	return s.store.PutProfile(ctx, userID, p)
}

// UserByID returns the account with id. Errors: ErrNotFound.
func (s *Service) UserByID(ctx context.Context, id int64) (*store.User, error) {
	return s.store.UserByID(ctx, id)
}

// UserByEmail returns the account with email (compared as stored). Errors: ErrNotFound.
func (s *Service) UserByEmail(ctx context.Context, email string) (*store.User, error) {
	return s.store.UserByEmail(ctx, strings.TrimSpace(email))
}
