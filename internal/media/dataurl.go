package media

import (
	"encoding/base64"
	"strings"

	"github.com/agentsvc/svc/internal/svcerr"
)

// MaxInlineBytes is the largest decoded payload ParseDataURL accepts (document 2: inline files
// of 16 MiB each).
const MaxInlineBytes = 16 * MiB

// ParseDataURL decodes an RFC 2397 data URL ("data:[<mediatype>][;base64],<data>") of at most
// MaxInlineBytes decoded bytes. See ParseDataURLLimit.
func ParseDataURL(s string) (mediaType string, data []byte, err error) {
	return ParseDataURLLimit(s, MaxInlineBytes)
}

// ParseDataURLLimit decodes an RFC 2397 data URL whose payload decodes to at most limit bytes.
// The payload may be base64 (standard or URL alphabet, padded or not, whitespace ignored, and
// percent-escapes decoded first) or percent-encoded. mediaType is the declared type, lowercased
// and without parameters ("text/plain" when none is declared); callers detect the real type
// from the bytes. An oversize payload is refused from its encoded length before it is decoded.
// Errors: ErrInvalid (not a data URL, bad encoding), ErrTooLarge (over limit).
func ParseDataURLLimit(s string, limit int) (mediaType string, data []byte, err error) {
	const scheme = "data:"
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return "", nil, svcerr.New(svcerr.ErrInvalid, "not a data URL")
	}
	rest := s[len(scheme):]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return "", nil, svcerr.New(svcerr.ErrInvalid, "data URL without a comma")
	}
	meta, payload := rest[:comma], rest[comma+1:]
	isBase64 := false
	params := strings.Split(meta, ";")
	if n := len(params); n > 1 && strings.EqualFold(strings.TrimSpace(params[n-1]), "base64") {
		isBase64 = true
		params = params[:n-1]
	}
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	if mediaType == "" {
		mediaType = "text/plain"
	} else if !validMediaType(mediaType) {
		return "", nil, svcerr.New(svcerr.ErrInvalid, "data URL with an invalid media type")
	}
	if limit < 0 {
		limit = 0
	}
	if isBase64 {
		// Every 4 data characters carry 3 bytes: count them (linear, no decoding) and refuse
		// an oversize payload before decoding anything.
		if minBase64Chars(payload)/4*3 > limit {
			return "", nil, tooLargeInline(limit)
		}
		if strings.IndexByte(payload, '%') >= 0 {
			if payload, err = percentDecode(payload, len(payload)); err != nil {
				return "", nil, err
			}
		}
		data, err = decodeBase64(payload)
		if err != nil {
			return "", nil, err
		}
	} else {
		// A percent-escape is 3 characters for one byte: anything longer than 3×limit is over.
		if len(payload) > 3*limit {
			return "", nil, tooLargeInline(limit)
		}
		p, err := percentDecode(payload, limit)
		if err != nil {
			return "", nil, err
		}
		data = []byte(p)
	}
	if len(data) > limit {
		return "", nil, tooLargeInline(limit)
	}
	return mediaType, data, nil
}

func tooLargeInline(limit int) error {
	return svcerr.New(svcerr.ErrTooLarge, "the inline file is larger than %d bytes", limit)
}

// minBase64Chars counts the characters of payload that can carry base64 data: everything but
// whitespace, padding, and the two extra characters of each percent-escape.
func minBase64Chars(payload string) int {
	if !containsAnyByte(payload, " \t\r\n%") { // the usual single-line payload
		return len(strings.TrimRight(payload, "="))
	}
	n := 0
	for i := 0; i < len(payload); i++ {
		switch c := payload[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '=':
		case c == '%':
			n++
			i += 2
		default:
			n++
		}
	}
	return n
}

func validMediaType(mt string) bool {
	slash := strings.IndexByte(mt, '/')
	if slash <= 0 || slash == len(mt)-1 || strings.Count(mt, "/") != 1 {
		return false
	}
	for i := 0; i < len(mt); i++ {
		c := mt[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"[]?=", c) >= 0 {
			return false
		}
	}
	return true
}

// percentDecode decodes %XX escapes (a '+' stays a '+'), refusing more than limit output bytes.
func percentDecode(s string, limit int) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		if len(s) > limit {
			return "", tooLargeInline(limit)
		}
		return s, nil
	}
	var b strings.Builder
	b.Grow(min(len(s), limit))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", svcerr.New(svcerr.ErrInvalid, "data URL with a malformed percent-escape")
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		if b.Len() >= limit {
			return "", tooLargeInline(limit)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// decodeBase64 accepts the standard and URL alphabets, padded or not, ignoring whitespace.
func decodeBase64(s string) ([]byte, error) {
	var src []byte
	urlAlphabet := containsAnyByte(s, "-_")
	if !containsAnyByte(s, " \t\r\n") { // the usual single-line payload: no copy to strip
		src = []byte(s)
	} else {
		src = stripSpace(s)
	}
	enc := base64.StdEncoding
	if urlAlphabet {
		enc = base64.URLEncoding
	}
	raw := enc.WithPadding(base64.NoPadding)
	dst := make([]byte, raw.DecodedLen(len(src))) // never less than the padded form needs
	if len(src)%4 == 0 || (len(src) > 0 && src[len(src)-1] == '=') {
		if n, err := enc.Decode(dst, src); err == nil {
			return dst[:n], nil
		}
	}
	if n, err := raw.Decode(dst, src); err == nil {
		return dst[:n], nil
	}
	return nil, svcerr.New(svcerr.ErrInvalid, "data URL with malformed base64")
}

// containsAnyByte reports whether s holds any byte of set (one vectorised scan per byte of set,
// much faster than a byte loop over long payloads).
func containsAnyByte(s, set string) bool {
	for i := 0; i < len(set); i++ {
		if strings.IndexByte(s, set[i]) >= 0 {
			return true
		}
	}
	return false
}

// stripSpace returns s without spaces, tabs and line breaks.
func stripSpace(s string) []byte {
	src := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\r', '\n':
		default:
			src = append(src, c)
		}
	}
	return src
}
