package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// AgentAPIKey is a per-agent API key: svk_<KeyID>_<secret>. SecretDigest is the lowercase hex
// SHA-256 of the secret (the only form of the secret kept; it also keys callback signatures).
// CreatedBy is the user who minted it: chats started with the key are owned by that user.
type AgentAPIKey struct {
	ID           int64
	KeyID        string
	AgentID      int64
	Name         string
	SecretDigest string
	CreatedBy    int64
	CreatedAt    time.Time
	LastUsedAt   *time.Time
	RevokedAt    *time.Time
}

// Limits of API key columns.
const (
	MaxAPIKeyIDLen = 64 // bytes (key_id column)
	// APIKeyTouchInterval is the granularity of last_used_at: TouchAPIKey writes only when the
	// stored value is at least this old, so busy keys do not cost a write per request.
	APIKeyTouchInterval = time.Minute
)

type apiKeyRow struct {
	ID           int64
	KeyID        string
	AgentID      int64
	Name         string
	SecretDigest string
	CreatedBy    int64
	CreatedAt    time.Time
	LastUsedAt   *time.Time
	RevokedAt    *time.Time
}

func (apiKeyRow) TableName() string { return "agent_api_keys" }

func (r *apiKeyRow) toKey() *AgentAPIKey {
	return &AgentAPIKey{
		ID: r.ID, KeyID: r.KeyID, AgentID: r.AgentID, Name: r.Name, SecretDigest: r.SecretDigest,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), LastUsedAt: utcPtr(r.LastUsedAt), RevokedAt: utcPtr(r.RevokedAt),
	}
}

func errAPIKeyNotFound() error { return svcerr.New(svcerr.ErrNotFound, "API key not found") }

// validAPIKeyID reports whether v can be a public key id: 1 to MaxAPIKeyIDLen ASCII letters
// and digits (the key format splits on '_'). The readers use it to answer "no such key" without
// a query; the ids written are package apikey's (apikey.Mint).
func validAPIKeyID(v string) bool {
	if v == "" || len(v) > MaxAPIKeyIDLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// CreateAPIKey stores a new key of agent k.AgentID minted by k.CreatedBy, in a transaction on
// the locked agent after check allowed it (nil: no check); CreatedAt is the store clock,
// LastUsedAt and RevokedAt start empty. The caller has minted the key id and digest and checked
// the name (package apikey). Errors: ErrNotFound "agent not found", ErrNotFound for an unknown
// minting user, ErrConflict (key id already in use: the unique key's answer), and whatever
// check returns.
func (s *Agents) CreateAPIKey(ctx context.Context, k AgentAPIKey, check AgentCheck) (*AgentAPIKey, error) {
	var out *AgentAPIKey
	err := s.withAgent(ctx, k.AgentID, k.CreatedBy, check, func(tx *gorm.DB, _ *Agent) error {
		if err := userExists(tx, k.CreatedBy); err != nil {
			return err
		}
		row := apiKeyRow{KeyID: k.KeyID, AgentID: k.AgentID, Name: k.Name, SecretDigest: k.SecretDigest,
			CreatedBy: k.CreatedBy, CreatedAt: s.now()}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create API key of agent %d: %w", k.AgentID, err)
		}
		out = row.toKey()
		return nil
	})
	if err != nil {
		return nil, TranslateError(err)
	}
	return out, nil
}

// APIKeys lists the active (not revoked) keys of agent agentID, newest first. An unknown agent
// has none. Errors: none beyond the database's own.
func (s *Agents) APIKeys(ctx context.Context, agentID int64) ([]AgentAPIKey, error) {
	var rows []apiKeyRow
	err := s.conn(ctx).Where("agent_id = ? AND revoked_at IS NULL", agentID).
		Order("created_at DESC").Order("id DESC").Find(&rows).Error
	if err != nil {
		return nil, TranslateError(fmt.Errorf("list API keys of agent %d: %w", agentID, err))
	}
	out := make([]AgentAPIKey, 0, len(rows))
	for i := range rows {
		out = append(out, *rows[i].toKey())
	}
	return out, nil
}

// APIKeyByKeyID returns the key with public id keyID, revoked or not (the caller refuses
// revoked keys). Errors: ErrNotFound "API key not found" (also for a malformed id).
func (s *Agents) APIKeyByKeyID(ctx context.Context, keyID string) (*AgentAPIKey, error) {
	if !validAPIKeyID(keyID) {
		return nil, errAPIKeyNotFound()
	}
	// Hand-written (rawsql.go): every request of the per-agent API reads its key.
	rows, err := queryRows(s.conn(ctx), (*apiKeyRow).dest, "SELECT "+apiKeyColumns+" FROM agent_api_keys WHERE key_id = ?", keyID)
	if err != nil {
		return nil, TranslateError(fmt.Errorf("load API key: %w", err))
	}
	if len(rows) == 0 {
		return nil, errAPIKeyNotFound()
	}
	return rows[0].toKey(), nil
}

// RevokeAPIKey marks the key keyID of agent agentID revoked (revoked_at = store clock), in a
// transaction on the locked agent after check allowed it (nil: no check). It is idempotent: an
// unknown key id, a key of another agent and an already revoked key (whose revoked_at stays)
// change nothing and are no error. Errors: ErrNotFound "agent not found", and whatever check
// returns.
func (s *Agents) RevokeAPIKey(ctx context.Context, agentID int64, keyID string, check AgentCheck) error {
	return TranslateError(s.withAgent(ctx, agentID, 0, check, func(tx *gorm.DB, _ *Agent) error {
		if !validAPIKeyID(keyID) {
			return nil // names no key
		}
		err := tx.Model(&apiKeyRow{}).
			Where("agent_id = ? AND key_id = ? AND revoked_at IS NULL", agentID, keyID).
			Update("revoked_at", s.now()).Error
		if err != nil {
			return fmt.Errorf("revoke API key of agent %d: %w", agentID, err)
		}
		return nil
	}))
}

// TouchAPIKey records that key id authenticated at now: last_used_at becomes now unless it is
// already within APIKeyTouchInterval of it (so a busy key is written about once a minute, also
// under concurrent requests). A missing key is no error. Errors: none beyond the database's own.
func (s *Agents) TouchAPIKey(ctx context.Context, id int64, now time.Time) error {
	now = normTime(now)
	err := s.conn(ctx).Model(&apiKeyRow{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", id, now.Add(-APIKeyTouchInterval)).
		Update("last_used_at", now).Error
	if err != nil {
		return TranslateError(fmt.Errorf("touch API key %d: %w", id, err))
	}
	return nil
}
