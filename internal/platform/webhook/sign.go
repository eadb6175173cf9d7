// Package webhook delivers the signed chat callbacks of the per-agent API (document 2, "Events")
// from the durable outbox the store fills (store.ClaimDeliveries / FinishDelivery): a POST of
// the bare chat record to the chat's callback_url, signed with the key that started the chat.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// Headers of a delivery.
const (
	HeaderSignature = "X-Svc-Signature"
	HeaderTimestamp = "X-Svc-Timestamp"
	HeaderKeyID     = "X-Svc-Key-Id"
	// HeaderDeliveryID names one delivery: the same on every retry of it, so receivers can
	// deduplicate exactly.
	HeaderDeliveryID = "X-Svc-Delivery-Id"
)

// Freshness is how far a receiver should accept X-Svc-Timestamp from its own clock.
const Freshness = 300 * time.Second

// Sign returns the X-Svc-Signature of body sent at Unix time ts: the lowercase hex
// HMAC-SHA256 over "<ts>.<body>", keyed by secretDigestHex — the lowercase hex SHA-256 of the
// key secret, used as text (its 64 ASCII bytes), exactly as agent_api_keys.secret_digest holds
// it. A receiver computes the same key with `printf %s "$SECRET" | sha256sum`.
func Sign(secretDigestHex string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secretDigestHex))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SecretDigest is the lowercase hex SHA-256 of a key secret (the part after svk_<id>_): the
// signing key a receiver derives from the key it holds.
func SecretDigest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Errors of Verify.
var (
	ErrBadTimestamp = errors.New("webhook: timestamp missing, malformed or outside the freshness window")
	ErrBadSignature = errors.New("webhook: signature does not match")
)

// Verify checks a received delivery as a receiver should: timestamp (the X-Svc-Timestamp
// header) within Freshness of now, and signature (X-Svc-Signature) equal, in constant time, to
// Sign(secretDigestHex, timestamp, body) over the raw body bytes.
func Verify(secretDigestHex, timestamp, signature string, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || strconv.FormatInt(ts, 10) != timestamp {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Freshness || d < -Freshness {
		return ErrBadTimestamp
	}
	want := Sign(secretDigestHex, ts, body)
	if !hmac.Equal([]byte(want), []byte(signature)) {
		return ErrBadSignature
	}
	return nil
}
