package store

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Column limits of the account tables. The services check user input against them before the
// store call (account, user: display names, roles, profiles, locations); the store checks the
// values the services make themselves (password hashes, session and link tokens, settings)
// with package fieldcheck, so that SQLite (which stores anything) and MySQL/MariaDB (which
// reject oversize values in strict mode) behave the same.
const (
	MaxPasswordHashLen = 255
	MaxRoleLen         = 64
	MaxCSRFTokenLen    = 128
	MaxIPLen           = 64
	MaxUserAgentLen    = 512
	MaxTokenPayloadLen = 4096 // bytes
	MaxSettingKeyLen   = 191
	MaxSettingValueLen = 65535 // bytes of JSON
)

func invalidf(format string, args ...any) error { return fieldcheck.Invalidf(format, args...) }

// checkText rejects invalid UTF-8, NUL bytes and values longer than max characters.
func checkText(field, v string, max int) error { return fieldcheck.Text(field, v, max) }

// normEmail trims and lowercases an address and checks its basic shape; UserByEmail answers
// ErrNotFound for an address that fails it, without a query (the address rules of a write are
// account's, checked before the store).
func normEmail(field, email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	if e == "" {
		return "", invalidf("%s is required", field)
	}
	if err := checkText(field, e, limits.EmailLen); err != nil {
		return "", err
	}
	at := strings.LastIndexByte(e, '@')
	if at <= 0 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n") {
		return "", invalidf("%s is not a valid email address", field)
	}
	return e, nil
}

// checkASCII accepts printable ASCII (no spaces) of at most max bytes; min bounds the length
// from below.
func checkASCII(field, v string, min, max int) error { return fieldcheck.ASCII(field, v, min, max) }

// checkDigest accepts a hex-encoded SHA-256 digest (64 lowercase hex characters).
func checkDigest(field, v string) error { return fieldcheck.Digest(field, v) }

// checkSelector accepts URL-safe token selectors (base64url or hex alphabet).
func checkSelector(v string) error {
	if v == "" || len(v) > limits.SelectorLen {
		return invalidf("selector must be 1 to %d characters", limits.SelectorLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return invalidf("selector must use only letters, digits, '-' and '_'")
		}
	}
	return nil
}

// truncateRunes shortens s to at most max characters, dropping invalid UTF-8 first; used for
// informational fields (IP, user agent) that must never make a login fail.
func truncateRunes(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max])
}

func userNotFound(id int64) error {
	return fmt.Errorf("user %d: %w", id, svcerr.ErrNotFound)
}
