package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// OIDCProvider is a single sign-on provider an administrator configured. ClientSecretSealed is
// the client secret sealed with the instance key (secret.Box), never returned by the API.
// Scopes are space-separated; GroupMappings is the JSON array of the mappings (package sso
// reads and writes it).
type OIDCProvider struct {
	ID                 int64
	Slug               string
	DisplayName        string
	IssuerURL          string
	ClientID           string
	ClientSecretSealed string
	Scopes             string
	AllowRegistration  bool
	GroupsClaim        string
	GroupMappings      string
	LogoutURL          string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func (OIDCProvider) TableName() string { return "oidc_providers" }

// OIDCIdentity links a provider's subject to a user.
type OIDCIdentity struct {
	ID         int64
	ProviderID int64
	Subject    string
	UserID     int64
	Email      string
	CreatedAt  time.Time
}

func (OIDCIdentity) TableName() string { return "oidc_identities" }

// OIDC state kinds.
const (
	OIDCStateLogin = "login" // a sign-in in progress: PKCE verifier and nonce
	OIDCStateLink  = "link"  // a link ticket: the verified identity waiting for a password proof
)

// OIDCState is a one-time row: a sign-in in progress (keyed by the digest of the state sent to
// the provider) or a link ticket (keyed by the digest of the ticket). ClaimGroups is the JSON
// array of the groups claim a link ticket carries to apply once linked.
type OIDCState struct {
	ID           int64
	StateDigest  string
	Kind         string
	ProviderID   int64
	Nonce        string
	PkceVerifier string
	Subject      string
	Email        string
	ClaimGroups  string
	UserID       *int64
	ExpiresAt    time.Time
	CreatedAt    time.Time
}

func (OIDCState) TableName() string { return "oidc_states" }

func errProviderNotFound() error {
	return svcerr.New(svcerr.ErrNotFound, "single sign-on provider not found")
}

// OIDCProviders lists every provider by slug. Errors: the database's own.
func (s *Principals) OIDCProviders(ctx context.Context) ([]OIDCProvider, error) {
	var rows []OIDCProvider
	if err := s.conn(ctx).Order("slug").Find(&rows).Error; err != nil {
		return nil, TranslateError(fmt.Errorf("list oidc providers: %w", err))
	}
	for i := range rows {
		rows[i].CreatedAt, rows[i].UpdatedAt = rows[i].CreatedAt.UTC(), rows[i].UpdatedAt.UTC()
	}
	return rows, nil
}

// OIDCProviderBySlug returns one provider. Errors: ErrNotFound.
func (s *Principals) OIDCProviderBySlug(ctx context.Context, slug string) (*OIDCProvider, error) {
	var p OIDCProvider
	err := s.conn(ctx).Where("slug = ?", slug).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errProviderNotFound()
	}
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load oidc provider: %w", err))
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return &p, nil
}

// CreateOIDCProvider stores p (the caller checked it); the timestamps are the store clock.
// Errors: ErrConflict (the slug is taken).
func (s *Principals) CreateOIDCProvider(ctx context.Context, p OIDCProvider) (*OIDCProvider, error) {
	p.ID = 0
	p.CreatedAt, p.UpdatedAt = s.now(), s.now()
	if err := s.conn(ctx).Create(&p).Error; err != nil {
		if errors.Is(TranslateError(err), svcerr.ErrConflict) {
			return nil, svcerr.New(svcerr.ErrConflict, "a provider with this slug exists")
		}
		return nil, TranslateError(fmt.Errorf("create oidc provider: %w", err))
	}
	return &p, nil
}

// SaveOIDCProvider writes every column of p (read earlier by slug); updated_at is the store
// clock. Errors: ErrNotFound (removed meanwhile).
func (s *Principals) SaveOIDCProvider(ctx context.Context, p OIDCProvider) (*OIDCProvider, error) {
	p.UpdatedAt = s.now()
	res := s.conn(ctx).Model(&OIDCProvider{}).Where("id = ?", p.ID).Select("*").Omit("id", "created_at").Updates(&p)
	if res.Error != nil {
		return nil, TranslateError(fmt.Errorf("update oidc provider %d: %w", p.ID, res.Error))
	}
	if res.RowsAffected == 0 {
		return nil, errProviderNotFound()
	}
	return &p, nil
}

// DeleteOIDCProvider removes the provider with its identities and states (the accounts and
// memberships stay). Errors: ErrNotFound.
func (s *Principals) DeleteOIDCProvider(ctx context.Context, slug string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		var p OIDCProvider
		if err := tx.Where("slug = ?", slug).Take(&p).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return errProviderNotFound()
			}
			return err
		}
		// Explicit deletes: the cascade is not relied upon (SQLite needs foreign_keys on).
		if err := tx.Where("provider_id = ?", p.ID).Delete(&OIDCState{}).Error; err != nil {
			return err
		}
		if err := tx.Where("provider_id = ?", p.ID).Delete(&OIDCIdentity{}).Error; err != nil {
			return err
		}
		return tx.Delete(&OIDCProvider{}, p.ID).Error
	})
}

// CreateOIDCState stores a one-time state; CreatedAt is the store clock.
func (s *Principals) CreateOIDCState(ctx context.Context, st OIDCState) error {
	st.ID = 0
	st.CreatedAt = s.now()
	if st.ClaimGroups == "" {
		st.ClaimGroups = "[]"
	}
	if err := s.conn(ctx).Create(&st).Error; err != nil {
		return TranslateError(fmt.Errorf("create oidc state: %w", err))
	}
	return nil
}

// TakeOIDCState consumes the state with digest and kind of provider providerID: the row is
// deleted in the same transaction, so a state works once whatever happens next (a replay finds
// nothing). Expired rows are refused (and removed with the rest, see PruneOIDCStates).
// Errors: ErrNotFound (unknown, used, expired, another provider's or another kind).
func (s *Principals) TakeOIDCState(ctx context.Context, digest, kind string, providerID int64) (*OIDCState, error) {
	refused := svcerr.New(svcerr.ErrNotFound, "unknown, used or expired state")
	// The refusal is decided after the commit: returning it from the transaction would roll
	// the delete back and leave a refused state usable.
	st, err := inTx(ctx, s.Store, func(tx *gorm.DB) (*OIDCState, error) {
		var st OIDCState
		err := tx.Where("state_digest = ?", digest).Take(&st).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		res := tx.Where("id = ?", st.ID).Delete(&OIDCState{})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			return nil, nil // taken concurrently
		}
		return &st, nil
	})
	if err != nil {
		return nil, err
	}
	if st == nil || st.Kind != kind || st.ProviderID != providerID || !s.now().Before(st.ExpiresAt.UTC()) {
		return nil, refused
	}
	return st, nil
}

// PruneOIDCStates removes the expired states. Errors: the database's own.
func (s *Principals) PruneOIDCStates(ctx context.Context) error {
	return TranslateError(s.conn(ctx).Where("expires_at < ?", s.now()).Delete(&OIDCState{}).Error)
}

// OIDCIdentityBySubject returns the identity of subject at provider providerID.
// Errors: ErrNotFound.
func (s *Principals) OIDCIdentityBySubject(ctx context.Context, providerID int64, subject string) (*OIDCIdentity, error) {
	var id OIDCIdentity
	err := s.conn(ctx).Where("provider_id = ? AND subject = ?", providerID, subject).Take(&id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, svcerr.New(svcerr.ErrNotFound, "identity not found")
	}
	if err != nil {
		return nil, TranslateError(err)
	}
	return &id, nil
}

// CreateOIDCIdentity links subject at provider providerID to user userID.
// Errors: ErrConflict (the subject is linked already).
func (s *Principals) CreateOIDCIdentity(ctx context.Context, id OIDCIdentity) (*OIDCIdentity, error) {
	id.ID = 0
	id.CreatedAt = s.now()
	if err := s.conn(ctx).Create(&id).Error; err != nil {
		err = TranslateError(err)
		if errors.Is(err, svcerr.ErrConflict) {
			return nil, svcerr.New(svcerr.ErrConflict, "this identity is linked already")
		}
		return nil, fmt.Errorf("create oidc identity: %w", err)
	}
	return &id, nil
}

// OIDCIdentitiesOf lists the identities of user userID. Errors: the database's own.
func (s *Principals) OIDCIdentitiesOf(ctx context.Context, userID int64) ([]OIDCIdentity, error) {
	var out []OIDCIdentity
	err := s.conn(ctx).Where("user_id = ?", userID).Order("id").Find(&out).Error
	return out, TranslateError(err)
}

// MappedMembership is one membership a provider's group mapping grants.
type MappedMembership struct {
	GroupID int64
	Role    string // GroupRoleMember or GroupRoleAdmin
}

// SyncSourcedMemberships makes user userID's memberships of source (oidc:<slug>) exactly want:
// missing ones are added with that source, those of that source whose role changed are
// updated, and those of that source no longer wanted are removed. A membership of another
// source (manual, another provider) is never touched, so a mapping cannot demote or remove an
// owner. Groups that do not exist are skipped. Errors: the database's own.
func (s *Principals) SyncSourcedMemberships(ctx context.Context, userID int64, source string, want []MappedMembership) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		var have []groupMemberRow
		if err := tx.Where("user_id = ?", userID).Find(&have).Error; err != nil {
			return err
		}
		current := make(map[int64]groupMemberRow, len(have))
		for _, m := range have {
			current[m.GroupID] = m
		}
		wanted := make(map[int64]bool, len(want))
		for _, w := range want {
			wanted[w.GroupID] = true
			m, ok := current[w.GroupID]
			switch {
			case !ok:
				var n int64
				if err := tx.Model(&groupRow{}).Where("id = ?", w.GroupID).Count(&n).Error; err != nil {
					return err
				}
				if n == 0 {
					continue
				}
				row := groupMemberRow{GroupID: w.GroupID, UserID: userID, Role: w.Role, Source: source, CreatedAt: s.now()}
				if err := tx.Create(&row).Error; err != nil {
					return fmt.Errorf("add mapped membership of user %d in group %d: %w", userID, w.GroupID, err)
				}
				current[w.GroupID] = row
			case m.Source == source && m.Role != w.Role:
				if err := tx.Model(&groupMemberRow{}).Where("group_id = ? AND user_id = ?", w.GroupID, userID).Update("role", w.Role).Error; err != nil {
					return err
				}
			}
		}
		for gid, m := range current {
			if m.Source == source && !wanted[gid] {
				if err := tx.Where("group_id = ? AND user_id = ? AND source = ?", gid, userID, source).Delete(&groupMemberRow{}).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// PeekOIDCLink reads the unexpired link ticket with digest without consuming it (a wrong
// password keeps it). Errors: ErrNotFound.
func (s *Principals) PeekOIDCLink(ctx context.Context, digest string) (*OIDCState, error) {
	var st OIDCState
	err := s.conn(ctx).Where("state_digest = ? AND kind = ? AND expires_at > ?", digest, OIDCStateLink, s.now()).Take(&st).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && st.UserID == nil) {
		return nil, svcerr.New(svcerr.ErrNotFound, "unknown, used or expired link ticket")
	}
	if err != nil {
		return nil, TranslateError(err)
	}
	return &st, nil
}

// OIDCProviderByID returns one provider. Errors: ErrNotFound.
func (s *Principals) OIDCProviderByID(ctx context.Context, id int64) (*OIDCProvider, error) {
	var p OIDCProvider
	err := s.conn(ctx).Where("id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errProviderNotFound()
	}
	if err != nil {
		return nil, TranslateError(err)
	}
	return &p, nil
}
