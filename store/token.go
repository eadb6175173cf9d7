package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Token kinds.
const (
	TokenVerify      = "verify"       // confirm the account's email address
	TokenReset       = "reset"        // reset a forgotten password
	TokenEmailChange = "email_change" // confirm a new address; Payload holds it
)

// Token is a single-use, expiring selector + verifier pair sent in a link. The selector finds
// the row; only the SHA-256 digest of the verifier is stored and it is compared in constant
// time.
type Token struct {
	ID             int64
	Kind           string
	UserID         int64
	Selector       string
	VerifierDigest string // hex SHA-256 of the verifier
	Payload        string // kind-specific, e.g. the new email address
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

type tokenRow struct {
	ID             int64
	Kind           string
	UserID         int64
	Selector       string
	VerifierDigest string
	Payload        string
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

func (tokenRow) TableName() string { return "auth_tokens" }

func (r *tokenRow) toToken() *Token {
	return &Token{
		ID: r.ID, Kind: r.Kind, UserID: r.UserID, Selector: r.Selector,
		VerifierDigest: r.VerifierDigest, Payload: r.Payload,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}
}

func validTokenKind(kind string) bool {
	return kind == TokenVerify || kind == TokenReset || kind == TokenEmailChange
}

// errBadLink is the one answer for every unusable link, so that a caller cannot tell a wrong
// verifier from an expired or unknown selector.
func errBadLink() error { return svcerr.New(svcerr.ErrInvalid, "the link is invalid or has expired") }

// CreateToken stores a token and deletes the user's earlier tokens of the same kind, so only
// the newest link works. Errors: ErrInvalid (unknown kind, malformed selector or digest,
// oversize payload, expiry not in the future), ErrNotFound (no such user), ErrConflict
// (selector already in use). mails (the link's message) are queued in the same transaction
// (enqueueMailTx), so a link is mailed exactly when its token exists; their ErrInvalid
// fails the whole call.
func (s *Principals) CreateToken(ctx context.Context, t Token, mails ...NewMail) error {
	// Not user input: kind, selector, digest and expiry are account.Service's own values and the
	// payload an address it has checked; guarded here for their columns (the expiry against the
	// store's clock, in the transaction).
	if !validTokenKind(t.Kind) {
		return invalidf("unknown token kind %q", t.Kind)
	}
	if err := checkSelector(t.Selector); err != nil {
		return err
	}
	if err := checkDigest("verifier_digest", t.VerifierDigest); err != nil {
		return err
	}
	if len(t.Payload) > MaxTokenPayloadLen {
		return invalidf("token payload must be at most %d bytes", MaxTokenPayloadLen)
	}
	if err := checkText("payload", t.Payload, MaxTokenPayloadLen); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		exp := normTime(t.ExpiresAt)
		if !exp.After(now) {
			return invalidf("token expiry must be in the future")
		}
		if err := userExists(tx, t.UserID); err != nil {
			return err
		}
		if err := tx.Where("user_id = ? AND kind = ?", t.UserID, t.Kind).Delete(&tokenRow{}).Error; err != nil {
			return fmt.Errorf("replace %s tokens of user %d: %w", t.Kind, t.UserID, err)
		}
		row := tokenRow{
			Kind: t.Kind, UserID: t.UserID, Selector: t.Selector, VerifierDigest: t.VerifierDigest,
			Payload: t.Payload, CreatedAt: now, ExpiresAt: exp,
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create %s token for user %d: %w", t.Kind, t.UserID, err)
		}
		for _, m := range mails {
			if err := s.enqueueMailTx(tx, m); err != nil {
				return err
			}
		}
		return nil
	})
}

// ConsumeToken redeems a link: in one transaction it finds the token by selector, checks its
// kind, expiry and verifier digest (constant time), deletes it and returns it. A token can be
// consumed once, also under concurrent attempts. An expired token is deleted on the way; a
// wrong verifier leaves the token in place (the selector alone must not let a third party
// cancel a link). Errors: ErrInvalid "the link is invalid or has expired" for a missing,
// expired, wrong-kind, wrong-verifier or already-used token (the selector's shape is checked by
// the caller, account.Service, with the same answer; one that names no token gets it here).
func (s *Principals) ConsumeToken(ctx context.Context, kind, selector, verifierDigest string) (*Token, error) {
	if !validTokenKind(kind) { // the caller's constant, not user input
		return nil, errBadLink()
	}
	out, err := inTx(ctx, s.Store, func(tx *gorm.DB) (*Token, error) {
		var row tokenRow
		if err := tx.Where("selector = ?", selector).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return nil, errBadLink()
			}
			return nil, fmt.Errorf("load token: %w", err)
		}
		if !row.ExpiresAt.After(s.now()) {
			if err := tx.Delete(&tokenRow{}, row.ID).Error; err != nil {
				return nil, fmt.Errorf("delete expired token %d: %w", row.ID, err)
			}
			return nil, nil // commit the clean-up, answer below
		}
		kindOK := subtle.ConstantTimeCompare([]byte(row.Kind), []byte(kind)) == 1
		digestOK := subtle.ConstantTimeCompare([]byte(row.VerifierDigest), []byte(verifierDigest)) == 1
		if !kindOK || !digestOK {
			return nil, errBadLink()
		}
		// The delete decides who wins a concurrent redemption: only one sees a row.
		res := tx.Delete(&tokenRow{}, row.ID)
		if res.Error != nil {
			return nil, fmt.Errorf("consume token %d: %w", row.ID, res.Error)
		}
		if res.RowsAffected != 1 {
			return nil, errBadLink()
		}
		return row.toToken(), nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil { // expired: the clean-up is committed
		return nil, errBadLink()
	}
	return out, nil
}

// TokenBySelector returns an unexpired token without consuming it (for example to show which
// address an email-change link confirms). Errors: ErrNotFound when missing or expired.
func (s *Principals) TokenBySelector(ctx context.Context, selector string) (*Token, error) {
	var row tokenRow
	err := s.conn(ctx).Where("selector = ? AND expires_at > ?", selector, s.now()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("token: %w", svcerr.ErrNotFound)
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load token: %w", err))
	}
	return row.toToken(), nil
}

// DeleteUserTokens removes a user's tokens of one kind, or of every kind when kind is empty
// (for example after a password change). Errors: ErrInvalid for an unknown kind.
func (s *Principals) DeleteUserTokens(ctx context.Context, userID int64, kind string) error {
	db := s.conn(ctx).Where("user_id = ?", userID)
	if kind != "" {
		if !validTokenKind(kind) {
			return invalidf("unknown token kind %q", kind)
		}
		db = db.Where("kind = ?", kind)
	}
	if err := db.Delete(&tokenRow{}).Error; err != nil {
		return TranslateError(fmt.Errorf("delete tokens of user %d: %w", userID, err))
	}
	return nil
}

// PurgeExpiredTokens deletes expired tokens and returns how many.
func (s *Principals) PurgeExpiredTokens(ctx context.Context) (int64, error) {
	res := s.conn(ctx).Where("expires_at <= ?", s.now()).Delete(&tokenRow{})
	if res.Error != nil {
		return 0, TranslateError(fmt.Errorf("purge tokens: %w", res.Error))
	}
	return res.RowsAffected, nil
}
