package store

import "time"

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
