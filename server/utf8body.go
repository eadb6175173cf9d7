package server

import (
	"io"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// errInvalidUTF8 is the read error of a JSON body that is not valid UTF-8 (400).
var errInvalidUTF8 = svcerr.New(svcerr.ErrBadRequest, "the request body is not valid UTF-8")

// utf8Body checks a body for valid UTF-8 as it is read and fails the read that reaches the
// first invalid byte. A rune cut by a read boundary is held (at most three bytes) and checked
// with the next read; an incomplete rune at the end is invalid.
type utf8Body struct {
	r       io.ReadCloser
	carry   [utf8.UTFMax]byte
	ncarry  int
	invalid bool
}

func newUTF8Body(r io.ReadCloser) *utf8Body { return &utf8Body{r: r} }

func (u *utf8Body) Close() error { return u.r.Close() }

func (u *utf8Body) Read(p []byte) (int, error) {
	if u.invalid {
		return 0, errInvalidUTF8
	}
	n, err := u.r.Read(p)
	if !u.check(p[:n]) || (err == io.EOF && u.ncarry > 0) {
		u.invalid = true
		return n, errInvalidUTF8
	}
	return n, err
}

// check validates b after the carried bytes of a cut rune and carries b's own cut tail.
func (u *utf8Body) check(b []byte) bool {
	for u.ncarry > 0 && len(b) > 0 { // complete the carried rune byte by byte
		u.carry[u.ncarry] = b[0]
		u.ncarry++
		b = b[1:]
		if utf8.FullRune(u.carry[:u.ncarry]) {
			if !utf8.Valid(u.carry[:u.ncarry]) {
				return false
			}
			u.ncarry = 0
		}
	}
	if len(b) == 0 {
		return true
	}
	// The tail that may be the start of a rune the next read completes.
	tail := 0
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) {
			tail = len(b) - i
		}
		break
	}
	if !utf8.Valid(b[:len(b)-tail]) {
		return false
	}
	u.ncarry = copy(u.carry[:], b[len(b)-tail:])
	return true
}
