// Package fieldcheck holds the shape checks of text fields that the domain services apply to
// user input before they call the store: valid UTF-8 without NUL bytes, at most a column's
// length. The limits are the store's column limits (store.Max…Len), checked here so that
// SQLite, which stores anything, and MySQL/MariaDB, which reject oversize values in strict
// mode, answer the same (ErrInvalid, before anything is written). It is a leaf package: it
// imports only internal/vocab/svcerr, so the store and every service may use it.
package fieldcheck

import (
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Invalidf returns an ErrInvalid error with a public message.
func Invalidf(format string, args ...any) error {
	return svcerr.New(svcerr.ErrInvalid, format, args...)
}

// Text rejects (ErrInvalid) invalid UTF-8, NUL bytes and values longer than max characters.
func Text(field, v string, max int) error {
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return Invalidf("%s must be valid UTF-8 text", field)
	}
	if utf8.RuneCountInString(v) > max {
		return Invalidf("%s must be at most %d characters", field, max)
	}
	return nil
}

// ASCII accepts printable ASCII without spaces, min to max bytes long; otherwise ErrInvalid.
func ASCII(field, v string, min, max int) error {
	if len(v) < min || len(v) > max {
		if min == max {
			return Invalidf("%s must be %d characters", field, min)
		}
		return Invalidf("%s must be %d to %d characters", field, min, max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return Invalidf("%s must be printable ASCII", field)
		}
	}
	return nil
}

// Digest accepts a hex-encoded SHA-256 digest (64 lowercase hex characters); otherwise
// ErrInvalid.
func Digest(field, v string) error {
	if len(v) != 64 {
		return Invalidf("%s must be a hex SHA-256 digest", field)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return Invalidf("%s must be a hex SHA-256 digest", field)
		}
	}
	return nil
}
