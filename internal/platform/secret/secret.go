// Package secret holds the master key and the encryption of secrets at rest: model API keys and
// password-typed tool settings are sealed with AES-256-GCM under the master key; API key secrets
// and session tokens are stored only as SHA-256 digests.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsvc/svc/internal/platform/config"
)

// prefix marks the format version of a sealed value.
const prefix = "v1:"

// ErrInvalidCiphertext is returned by Open for a value that is malformed, was tampered with, or
// was sealed under another key. Callers cannot tell these apart, by design.
var ErrInvalidCiphertext = errors.New("secret: invalid or tampered ciphertext, or wrong key")

// LoadOrCreateKey returns the 32-byte master key: secret_key when set; otherwise the content of
// key_path (base64). When key_path does not exist, a random key is generated and written there
// (mode 0600, directories created), so a fresh installation works without setup. Several
// processes starting at once end up with the same key: the file is created atomically and never
// overwritten.
func LoadOrCreateKey(c *config.Config) ([]byte, error) {
	if c.SecretKey != "" {
		key, err := config.DecodeSecretKey(c.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("secret_key %w", err)
		}
		return key, nil
	}
	if c.KeyPath == "" {
		return nil, errors.New("no master key: set secret_key or key_path")
	}
	key, err := readKeyFile(c.KeyPath)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return createKeyFile(c.KeyPath)
}

func readKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	key, err := config.DecodeSecretKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("key file %s is malformed: its content %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new key to a temporary file and links it into place, so no reader ever
// sees a partial file and a concurrent creator's key is never replaced.
func createKeyFile(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create key directory %s: %w", dir, err)
	}
	key := make([]byte, config.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate master key: %w", err)
	}
	content := []byte(base64.StdEncoding.EncodeToString(key) + "\n")

	tmp, err := os.CreateTemp(dir, ".secret-key-*")
	if err != nil {
		return nil, fmt.Errorf("create key file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create key file: %w", err)
	}
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write key file: %w", err)
	}

	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return key, nil
	case errors.Is(err, fs.ErrExist):
		// Another process created it first: use theirs.
		return readKeyFile(path)
	}
	// No hard links on this file system: fall back to exclusive creation.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, fmt.Errorf("write key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write key file %s: %w", path, err)
	}
	return key, nil
}

// Box seals and opens secrets with AES-256-GCM under one master key. It is safe for concurrent
// use.
type Box struct {
	aead cipher.AEAD
}

// NewBox returns a Box for a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != config.KeySize {
		return nil, fmt.Errorf("secret: key must be %d bytes, got %d", config.KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext with a fresh random nonce and returns "v1:" followed by the standard
// base64 encoding of nonce || ciphertext (the GCM tag included). Sealing the same plaintext twice
// gives different results.
func (b *Box) Seal(plaintext []byte) (string, error) {
	ns := b.aead.NonceSize()
	buf := make([]byte, ns, ns+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("secret: nonce: %w", err)
	}
	buf = b.aead.Seal(buf, buf[:ns], plaintext, nil)
	return prefix + base64.StdEncoding.EncodeToString(buf), nil
}

// Open decrypts a value made by Seal. A malformed, tampered or foreign value gives
// ErrInvalidCiphertext.
func (b *Box) Open(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return nil, ErrInvalidCiphertext
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, ErrInvalidCiphertext
	}
	ns := b.aead.NonceSize()
	if len(raw) < ns+b.aead.Overhead() {
		return nil, ErrInvalidCiphertext
	}
	plain, err := b.aead.Open(nil, raw[:ns], raw[ns:], nil)
	if err != nil {
		return nil, ErrInvalidCiphertext
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}

// Digest is the lowercase hex SHA-256 of s, the stored form of API key secrets and session
// tokens. Compare digests with crypto/subtle.ConstantTimeCompare.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
