package apikey_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/apikey"
)

var keyPattern = regexp.MustCompile(`^svk_[a-z2-7]{16}_[A-Za-z0-9]{43}$`)

func TestMint(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		m := apikey.Mint()
		if !keyPattern.MatchString(m.Key) {
			t.Fatalf("key %q does not match %s", m.Key, keyPattern)
		}
		id, secret, err := apikey.Parse(m.Key)
		if err != nil || id != m.ID || !apikey.ValidID(id) {
			t.Fatalf("Parse(%q) = %q, %v; minted id %q", m.Key, id, err, m.ID)
		}
		if m.Digest != apikey.Digest(secret) || len(m.Digest) != 64 || strings.ToLower(m.Digest) != m.Digest {
			t.Fatalf("digest %q is not the lowercase hex SHA-256 of the secret", m.Digest)
		}
		if strings.Contains(m.Digest, secret) {
			t.Fatal("digest contains the secret")
		}
		if seen[m.ID] || seen[secret] {
			t.Fatalf("repeated id or secret after %d keys", len(seen)/2)
		}
		seen[m.ID], seen[secret] = true, true
	}
}

// TestMintSecretAlphabet checks that the secret's characters are spread over all of base62
// (a biased or truncated alphabet would lose entropy).
func TestMintSecretAlphabet(t *testing.T) {
	t.Parallel()
	counts := map[rune]int{}
	for range 300 {
		_, secret, err := apikey.Parse(apikey.Mint().Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range secret {
			counts[r]++
		}
	}
	if len(counts) != 62 {
		t.Fatalf("secrets used %d distinct characters, want all 62", len(counts))
	}
	for r, n := range counts { // 12900 draws: about 208 each
		if n < 100 || n > 350 {
			t.Errorf("character %q drawn %d times", r, n)
		}
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	// SHA-256("abc")
	if got := apikey.Digest("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Digest(abc) = %s", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	id := "abcdefghijklmn23"
	secret := strings.Repeat("Ab9", 14) + "z" // 43
	good := "svk_" + id + "_" + secret
	gotID, gotSecret, err := apikey.Parse(good)
	if err != nil || gotID != id || gotSecret != secret {
		t.Fatalf("Parse(good) = %q, %q, %v", gotID, gotSecret, err)
	}
	bad := []struct{ name, key string }{
		{"empty", ""},
		{"prefix only", "svk_"},
		{"wrong prefix", "svx_" + id + "_" + secret},
		{"upper prefix", "SVK_" + id + "_" + secret},
		{"no separator", "svk_" + id + "x" + secret},
		{"id too short", "svk_" + id[1:] + "_" + secret + "A"},
		{"id too long", "svk_" + id + "a_" + secret[1:]},
		{"upper case id", "svk_" + strings.ToUpper(id) + "_" + secret},
		{"id with 1 (not base32)", "svk_abcdefghijklmn21_" + secret},
		{"secret too short", "svk_" + id + "_" + secret[1:]},
		{"secret too long", good + "A"},
		{"underscore in secret", "svk_" + id + "_" + secret[:42] + "_"},
		{"dash in secret", "svk_" + id + "_" + secret[:42] + "-"},
		{"space", " " + good[1:]},
		{"trailing newline", good[:len(good)-1] + "\n"},
		{"non-ASCII", "svk_" + id + "_" + secret[:41] + "é"},
		{"NUL", "svk_" + id + "_" + secret[:42] + "\x00"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if id, s, err := apikey.Parse(tc.key); !errors.Is(err, apikey.ErrMalformed) || id != "" || s != "" {
				t.Fatalf("Parse(%q) = %q, %q, %v; want ErrMalformed", tc.key, id, s, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(apikey.Mint().Key)
	f.Add("svk_abcdefghijklmn23_" + strings.Repeat("A", 43))
	f.Add("svk__")
	f.Add("svk_" + strings.Repeat("_", 60))
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		id, secret, err := apikey.Parse(key)
		if match := keyPattern.MatchString(key); match != (err == nil) {
			t.Fatalf("Parse(%q) error = %v, but the key matches the format: %v", key, err, match)
		}
		if err != nil {
			if !errors.Is(err, apikey.ErrMalformed) || id != "" || secret != "" {
				t.Fatalf("Parse(%q) = %q, %q, %v", key, id, secret, err)
			}
			return
		}
		if "svk_"+id+"_"+secret != key || !apikey.ValidID(id) {
			t.Fatalf("Parse(%q) = %q, %q: does not rebuild the key", key, id, secret)
		}
	})
}
