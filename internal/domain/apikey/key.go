// Package apikey holds the per-agent API keys: minting (svk_<id>_<secret>), parsing,
// authenticating a bearer header, and the key management rules (the manage role on the agent).
//
// The id is 16 characters of lowercase base32 (80 random bits): it names the key in logs,
// listings and callback headers. The secret is 43 characters of base62 (256 random bits); only
// the lowercase hex SHA-256 digest of the secret is stored. Neither alphabet contains '_', so
// the key splits unambiguously on it.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"
)

// Format of a key.
const (
	Prefix    = "svk_"
	IDLen     = 16 // base32 characters: 80 bits
	SecretLen = 43 // base62 characters: 43·log2(62) ≈ 256 bits
	// KeyLen is the length of a whole key.
	KeyLen = len(Prefix) + IDLen + 1 + SecretLen
)

const (
	idAlphabet     = "abcdefghijklmnopqrstuvwxyz234567"
	secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// ErrMalformed is returned by Parse for anything that is not a well-formed key.
var ErrMalformed = errors.New("apikey: malformed key")

// Minted is a new key: its public id, the full key to hand out once, and the digest to store.
type Minted struct {
	ID     string
	Key    string // svk_<ID>_<secret>
	Digest string // lowercase hex SHA-256 of the secret
}

// Mint draws a new key from crypto/rand.
func Mint() Minted {
	var idBytes [IDLen * 5 / 8]byte
	_, _ = rand.Read(idBytes[:]) // crypto/rand.Read never fails (it crashes the program instead)
	id := idEncoding.EncodeToString(idBytes[:])
	secret := randomBase62(SecretLen)
	return Minted{ID: id, Key: Prefix + id + "_" + secret, Digest: Digest(secret)}
}

// randomBase62 returns n uniformly random characters of secretAlphabet (rejection sampling:
// bytes at or above 248 = 4·62 are discarded, so every character is equally likely).
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		_, _ = rand.Read(buf)
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, secretAlphabet[b%62])
			}
		}
	}
	return string(out)
}

// Digest is the stored form of a secret: its lowercase hex SHA-256.
func Digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Parse splits a key into its id and secret. It is strict: exactly the prefix, IDLen
// characters of the id alphabet, '_' and SecretLen characters of the secret alphabet.
// Errors: ErrMalformed.
func Parse(key string) (id, secret string, err error) {
	if len(key) != KeyLen || !strings.HasPrefix(key, Prefix) {
		return "", "", ErrMalformed
	}
	rest := key[len(Prefix):]
	id, secret = rest[:IDLen], rest[IDLen+1:]
	if rest[IDLen] != '_' || !only(id, idAlphabet) || !only(secret, secretAlphabet) {
		return "", "", ErrMalformed
	}
	return id, secret, nil
}

// ValidID reports whether s has the form of a key id.
func ValidID(s string) bool { return len(s) == IDLen && only(s, idAlphabet) }

func only(s, alphabet string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}
