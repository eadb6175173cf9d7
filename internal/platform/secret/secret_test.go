package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentsvc/svc/internal/platform/config"
)

func cfg(secretKey, keyPath string) *config.Config {
	c := config.Defaults()
	c.SecretKey = secretKey
	c.KeyPath = keyPath
	return c
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()

	t.Run("secret_key wins over the file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "secret.key")
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key(2))), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			got, err := LoadOrCreateKey(cfg(enc.EncodeToString(key(0xfb)), path))
			if err != nil || !bytes.Equal(got, key(0xfb)) {
				t.Errorf("got %x, %v", got, err)
			}
		}
	})

	t.Run("generated once with mode 0600 and reused", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "storage", "nested", "secret.key")
		first, err := LoadOrCreateKey(cfg("", path))
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 32 || bytes.Equal(first, make([]byte, 32)) {
			t.Fatalf("key %x", first)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("mode %o, want 600", mode)
		}
		data, _ := os.ReadFile(path)
		if strings.TrimSpace(string(data)) != base64.StdEncoding.EncodeToString(first) {
			t.Errorf("file content %q", data)
		}
		second, err := LoadOrCreateKey(cfg("", path))
		if err != nil || !bytes.Equal(first, second) {
			t.Errorf("second call: %x, %v", second, err)
		}
		// No temporary files are left behind.
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("directory holds %d entries", len(entries))
		}
	})

	t.Run("concurrent creators agree", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "secret.key")
		keys := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := LoadOrCreateKey(cfg("", path))
				if err != nil {
					t.Error(err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			if !bytes.Equal(k, keys[0]) {
				t.Fatalf("keys differ: %x vs %x", k, keys[0])
			}
		}
	})

	t.Run("existing file with whitespace", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "secret.key")
		if err := os.WriteFile(path, []byte("  "+base64.StdEncoding.EncodeToString(key(7))+"\r\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreateKey(cfg("", path))
		if err != nil || !bytes.Equal(got, key(7)) {
			t.Errorf("got %x, %v", got, err)
		}
	})

	for _, tt := range []struct {
		name, content, want string
	}{
		{"malformed file", "not base64!", "is malformed: its content is not valid base64"},
		{"short file", base64.StdEncoding.EncodeToString([]byte("short")), "is malformed: its content must be the base64 encoding of exactly 32 bytes, got 5 bytes"},
		{"empty file", "", "must be the base64 encoding of exactly 32 bytes, got 0 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "secret.key")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadOrCreateKey(cfg("", path))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want %q naming the file", err, tt.want)
			}
			// The malformed file is never replaced.
			if data, _ := os.ReadFile(path); string(data) != tt.content {
				t.Errorf("file rewritten: %q", data)
			}
		})
	}

	t.Run("invalid secret_key", func(t *testing.T) {
		t.Parallel()
		_, err := LoadOrCreateKey(cfg("AQID", filepath.Join(t.TempDir(), "k")))
		if err == nil || !strings.Contains(err.Error(), "secret_key must be the base64 encoding of exactly 32 bytes") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("no key at all", func(t *testing.T) {
		t.Parallel()
		if _, err := LoadOrCreateKey(cfg("", "")); err == nil {
			t.Error("no error")
		}
	})

	t.Run("key path is a directory", func(t *testing.T) {
		t.Parallel()
		if _, err := LoadOrCreateKey(cfg("", t.TempDir())); err == nil {
			t.Error("no error")
		}
	})
}

func TestBoxRoundTrip(t *testing.T) {
	t.Parallel()
	box, err := NewBox(key(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range [][]byte{
		{},
		[]byte("sk-ant-api03-abcdef"),
		bytes.Repeat([]byte{0, 1, 2, 0xff}, 4096),
	} {
		sealed, err := box.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1:") {
			t.Errorf("sealed %q lacks v1:", sealed)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
		if err != nil || len(raw) != 12+len(plain)+16 {
			t.Errorf("payload %d bytes, %v", len(raw), err)
		}
		if len(plain) > 4 && strings.Contains(sealed, string(plain)) {
			t.Error("plaintext visible")
		}
		got, err := box.Open(sealed)
		if err != nil || !bytes.Equal(got, plain) || got == nil {
			t.Errorf("Open = %q, %v", got, err)
		}
	}

	a, _ := box.Seal([]byte("same"))
	b, _ := box.Seal([]byte("same"))
	if a == b {
		t.Error("two seals of one plaintext are equal: nonce reused")
	}
}

func TestBoxRejects(t *testing.T) {
	t.Parallel()
	box, _ := NewBox(key(1))
	other, _ := NewBox(key(2))
	sealed, err := box.Seal([]byte("password"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))

	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		return "v1:" + base64.StdEncoding.EncodeToString(b)
	}
	tests := map[string]string{
		"empty":             "",
		"no prefix":         strings.TrimPrefix(sealed, "v1:"),
		"other version":     "v2:" + strings.TrimPrefix(sealed, "v1:"),
		"not base64":        "v1:!!!",
		"too short":         "v1:" + base64.StdEncoding.EncodeToString(raw[:20]),
		"truncated tag":     "v1:" + base64.StdEncoding.EncodeToString(raw[:len(raw)-1]),
		"extra byte":        "v1:" + base64.StdEncoding.EncodeToString(append(bytes.Clone(raw), 0)),
		"flipped nonce":     flip(0),
		"flipped body":      flip(12),
		"flipped tag":       flip(len(raw) - 1),
		"url alphabet":      "v1:" + base64.URLEncoding.EncodeToString(raw) + "-",
		"whitespace inside": "v1: " + strings.TrimPrefix(sealed, "v1:"),
	}
	for name, s := range tests {
		if got, err := box.Open(s); !errors.Is(err, ErrInvalidCiphertext) || got != nil {
			t.Errorf("%s: Open = %q, %v", name, got, err)
		}
	}
	if got, err := other.Open(sealed); !errors.Is(err, ErrInvalidCiphertext) || got != nil {
		t.Errorf("wrong key: Open = %q, %v", got, err)
	}
}

func TestNewBoxKeySize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := NewBox(make([]byte, n)); err == nil {
			t.Errorf("NewBox accepted a %d-byte key", n)
		}
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		if got := Digest(in); got != want {
			t.Errorf("Digest(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestBoxConcurrent(t *testing.T) {
	t.Parallel()
	box, _ := NewBox(key(3))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				s, err := box.Seal([]byte("x"))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := box.Open(s); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
