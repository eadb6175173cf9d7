package media

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// MaxInlineBytes is the largest decoded payload ParseDataURL accepts (document 2: inline files
// of 16 MiB each).
const MaxInlineBytes = 16 * MiB

// maxDataURLHeader bounds the part of a data URL before its comma ("data:<type>;…;base64"): a
// longer one is refused as having no comma, so a decoder never buffers more than this.
const maxDataURLHeader = 4 << 10

// ParseDataURL decodes an RFC 2397 data URL ("data:[<mediatype>][;base64],<data>") of at most
// MaxInlineBytes decoded bytes. See DataURLDecoder for the rules.
func ParseDataURL(s string) (mediaType string, data []byte, err error) {
	return ParseDataURLLimit(s, MaxInlineBytes)
}

// ParseDataURLLimit decodes a data URL held in memory whose payload decodes to at most limit
// bytes, with the rules of DataURLDecoder (which it runs). Errors: ErrInvalid (not a data URL,
// bad encoding), ErrTooLarge (over limit).
func ParseDataURLLimit(s string, limit int) (mediaType string, data []byte, err error) {
	var buf bytes.Buffer
	buf.Grow(min(len(s)/4*3+3, max(limit, 0))) // a base64 payload's decoded size (a percent-encoded one may grow it)
	d := NewDataURLDecoder(&buf, int64(limit))
	chunk := make([]byte, min(len(s), 64<<10)) // fed through one buffer: no copy of s
	for len(s) > 0 {
		n := copy(chunk, s)
		_, _ = d.Write(chunk[:n])
		s = s[n:]
	}
	if err := d.Close(); err != nil {
		return "", nil, err
	}
	return d.MediaType(), buf.Bytes(), nil
}

// DataURLDecoder decodes an RFC 2397 data URL written to it in pieces of any size, writing the
// payload to its destination as it goes, so a large inline file never sits in memory (it is
// the one implementation of the data URL rules; ParseDataURLLimit runs it over a string).
//
// Rules: the scheme "data:" in any case; the header up to the first comma at most 4 KiB; the
// media type lowercased and without parameters ("text/plain" when none is declared; callers
// detect the real type from the bytes); a last parameter "base64" (any case) makes the payload
// base64 (standard or URL alphabet but not both, padded or not, whitespace ignored,
// percent-escapes decoded first), otherwise it is percent-encoded ('+' stays '+'). A payload
// that decodes to more than limit bytes is too large whatever else is wrong with it; the
// destination then receives at most limit bytes.
type DataURLDecoder struct {
	dst   io.Writer
	limit int64

	header   []byte // the bytes before the comma, until it is seen
	inBody   bool
	isBase64 bool
	mt       string
	declared bool // the header names a media type ("data:;base64," does not)

	esc    [2]byte // a percent-escape in progress
	escLen int     // 0: none; 1: '%' seen; 2: '%' and one digit seen

	quad      []byte // base64 characters not decoded yet (std alphabet), flushed in whole quanta
	out       []byte // decode buffer
	pads      int    // '=' seen: no data character may follow
	stdSeen   bool   // '+' or '/'
	urlSeen   bool   // '-' or '_'
	dataChars int64  // base64 data characters (size check)

	written int64 // decoded bytes (including those not written past the limit)
	invalid error // the first encoding error
	dstErr  error // the destination's write error
	closed  bool
	final   error
}

// NewDataURLDecoder returns a decoder writing the payload of a data URL to dst, at most limit
// bytes (a negative limit is 0).
func NewDataURLDecoder(dst io.Writer, limit int64) *DataURLDecoder {
	return &DataURLDecoder{dst: dst, limit: max(limit, 0)}
}

// MediaType is the declared media type, once the header was read ("" before).
func (d *DataURLDecoder) MediaType() string { return d.mt }

// DeclaresType reports whether the header named a media type (MediaType is then not the
// "text/plain" default).
func (d *DataURLDecoder) DeclaresType() bool { return d.declared }

// Written is the number of decoded payload bytes so far.
func (d *DataURLDecoder) Written() int64 { return d.written }

// b64Class classifies a byte of a base64 payload.
type b64Class uint8

const (
	b64Bad b64Class = iota
	b64Data
	b64Std // '+' or '/'
	b64URL // '-' or '_'
	b64Pad
	b64Space
	b64Percent
)

var b64Classes = func() (t [256]b64Class) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = b64Data
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = b64Data
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = b64Data
	}
	t['+'], t['/'] = b64Std, b64Std
	t['-'], t['_'] = b64URL, b64URL
	t['='] = b64Pad
	t[' '], t['\t'], t['\r'], t['\n'] = b64Space, b64Space, b64Space, b64Space
	t['%'] = b64Percent
	return t
}()

// quadFlush is how many base64 characters are decoded at once.
const quadFlush = 16 << 10

// Write consumes the next piece of the data URL. It never fails: errors are reported by Close
// (so that a caller streaming a larger document can go on reading it).
func (d *DataURLDecoder) Write(p []byte) (int, error) {
	n := len(p)
	if d.closed {
		return n, nil
	}
	if !d.inBody {
		i := bytes.IndexByte(p, ',')
		if i < 0 {
			d.appendHeader(p)
			return n, nil
		}
		d.appendHeader(p[:i])
		d.startBody()
		p = p[i+1:]
	}
	if d.isBase64 {
		d.writeBase64(p)
	} else {
		d.writePercent(p)
	}
	return n, nil
}

func (d *DataURLDecoder) appendHeader(p []byte) {
	if len(d.header)+len(p) > maxDataURLHeader {
		d.fail(svcerr.New(svcerr.ErrInvalid, "data URL without a comma"))
		p = p[:max(0, maxDataURLHeader-len(d.header))]
	}
	d.header = append(d.header, p...)
}

// startBody parses the header once its comma arrived.
func (d *DataURLDecoder) startBody() {
	d.inBody = true
	h := string(d.header)
	const scheme = "data:"
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		d.fail(svcerr.New(svcerr.ErrInvalid, "not a data URL"))
		return
	}
	params := strings.Split(h[len(scheme):], ";")
	if n := len(params); n > 1 && strings.EqualFold(strings.TrimSpace(params[n-1]), "base64") {
		d.isBase64 = true
		params = params[:n-1]
	}
	mt := strings.ToLower(strings.TrimSpace(params[0]))
	d.declared = mt != ""
	if mt == "" {
		mt = "text/plain"
	} else if !validMediaType(mt) {
		d.fail(svcerr.New(svcerr.ErrInvalid, "data URL with an invalid media type"))
		return
	}
	d.mt = mt
	if d.isBase64 {
		d.quad = make([]byte, 0, quadFlush+4)
		d.out = make([]byte, quadFlush/4*3)
	}
}

// writeBase64 classifies each character: data characters collect in quad (URL-alphabet ones
// mapped to the standard alphabet) and are decoded a block at a time.
func (d *DataURLDecoder) writeBase64(p []byte) {
	p = d.decodeOptimistic(p)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if d.escLen > 0 {
			if c, ok := d.escape(c); ok {
				d.base64Char(c, true)
			}
			continue
		}
		if d.pads == 0 && d.invalid == nil {
			// The usual case: a run of standard-alphabet characters is decoded in place.
			j := i
			for ; j < len(p); j++ {
				if k := b64Classes[p[j]]; k == b64Std {
					d.stdSeen = true
				} else if k != b64Data {
					break
				}
			}
			if j > i {
				d.dataChars += int64(j - i)
				d.dataRun(p[i:j])
				i = j - 1
				continue
			}
		}
		d.base64Char(c, false)
	}
}

// decodeOptimistic decodes whole blocks of p with encoding/base64 alone while the decoder is
// between quanta (a pending partial quantum is first completed from p when p starts with plain
// data characters): a block that decodes cleanly held only standard-alphabet characters and
// line breaks (whitespace here too) in whole quanta, and no padding (blocks end before a
// trailing '=', which the careful path checks nothing follows). It returns what is left for
// the careful path: the last character at least, and everything from the first block that did
// not decode. Each byte is decoded optimistically at most once, so the cost stays linear.
func (d *DataURLDecoder) decodeOptimistic(p []byte) []byte {
	if d.escLen != 0 || d.pads != 0 || d.invalid != nil {
		return p
	}
	if need := (4 - len(d.quad)%4) % 4; need > 0 {
		if len(p) <= need {
			return p
		}
		for _, c := range p[:need] {
			if k := b64Classes[c]; k != b64Data && k != b64Std {
				return p
			}
		}
		d.dataChars += int64(need)
		d.noteStd(p[:need])
		d.quad = append(d.quad, p[:need]...)
		d.flushQuads()
		p = p[need:]
	}
	if len(d.quad) != 0 {
		d.flushQuads()
	}
	for len(d.quad) == 0 && d.invalid == nil {
		blk := min((len(p)-1)/4*4, quadFlush)
		for blk > 0 && p[blk-1] == '=' {
			blk -= 4
		}
		if blk <= 0 {
			break
		}
		n, err := base64.StdEncoding.Decode(d.out[:blk/4*3], p[:blk])
		if err != nil {
			break
		}
		d.noteStd(p[:blk])
		d.dataChars += int64(n / 3 * 4)
		d.emit(d.out[:n])
		p = p[blk:]
	}
	return p
}

// noteStd records whether b holds a standard-alphabet-only character ('+' or '/').
func (d *DataURLDecoder) noteStd(b []byte) {
	if !d.stdSeen && (bytes.IndexByte(b, '+') >= 0 || bytes.IndexByte(b, '/') >= 0) {
		d.stdSeen = true
	}
}

// dataRun takes a run of plain base64 data characters: it completes the pending quantum, then
// decodes whole quanta straight from run, keeping the last 0–3 characters for later.
func (d *DataURLDecoder) dataRun(run []byte) {
	if len(d.quad) > 0 {
		take := min((4-len(d.quad)%4)%4, len(run))
		d.quad = append(d.quad, run[:take]...)
		run = run[take:]
		if len(d.quad)%4 != 0 {
			return
		}
		d.flushQuads()
	}
	for len(run) >= 4 {
		blk := min(len(run)/4*4, quadFlush)
		d.decodeQuads(run[:blk])
		run = run[blk:]
	}
	d.quad = append(d.quad, run...)
}

// base64Char takes one character of a base64 payload (escaped: it came from a percent-escape,
// where a '%' is no escape but a bad character).
func (d *DataURLDecoder) base64Char(c byte, escaped bool) {
	switch b64Classes[c] {
	case b64Space:
		return
	case b64Percent:
		if !escaped {
			d.escLen = 1
			return
		}
	case b64Pad:
		d.pads++
		return
	case b64Data, b64Std, b64URL:
		d.dataChars++
		if d.pads > 0 {
			d.fail(errBadBase64())
			return
		}
		switch b64Classes[c] {
		case b64Std:
			d.stdSeen = true
		case b64URL:
			d.urlSeen = true
			if c == '-' {
				c = '+'
			} else {
				c = '/'
			}
		}
		if d.invalid == nil {
			d.quad = append(d.quad, c)
			if len(d.quad) >= quadFlush {
				d.flushQuads()
			}
		}
		return
	}
	d.dataChars++
	d.fail(errBadBase64())
}

// escape takes the next character of a percent-escape and returns the escaped byte once both
// digits arrived. A malformed escape is an encoding error.
func (d *DataURLDecoder) escape(c byte) (byte, bool) {
	if !isHex(c) {
		d.escLen = 0
		d.fail(svcerr.New(svcerr.ErrInvalid, "data URL with a malformed percent-escape"))
		return 0, false
	}
	if d.escLen == 1 {
		d.esc[0], d.escLen = c, 2
		return 0, false
	}
	d.escLen = 0
	return unhex(d.esc[0])<<4 | unhex(c), true
}

// flushQuads decodes the whole quanta collected so far.
func (d *DataURLDecoder) flushQuads() {
	whole := len(d.quad) / 4 * 4
	if whole == 0 || d.invalid != nil {
		return
	}
	d.decodeQuads(d.quad[:whole])
	rest := copy(d.quad, d.quad[whole:])
	d.quad = d.quad[:rest]
}

// decodeQuads decodes whole quanta of standard-alphabet characters (at most quadFlush).
func (d *DataURLDecoder) decodeQuads(q []byte) {
	if d.invalid != nil {
		return
	}
	n, err := base64.StdEncoding.Decode(d.out[:len(q)/4*3], q)
	if err != nil {
		d.fail(errBadBase64())
		return
	}
	d.emit(d.out[:n])
}

// writePercent decodes a percent-encoded payload.
func (d *DataURLDecoder) writePercent(p []byte) {
	for len(p) > 0 {
		if d.escLen > 0 {
			if c, ok := d.escape(p[0]); ok {
				d.emit([]byte{c})
			}
			p = p[1:]
			continue
		}
		i := bytes.IndexByte(p, '%')
		if i < 0 {
			d.emit(p)
			return
		}
		d.emit(p[:i])
		d.escLen = 1
		p = p[i+1:]
	}
}

// emit writes decoded bytes, up to the limit; past it the payload only counts.
func (d *DataURLDecoder) emit(b []byte) {
	if d.written < d.limit && d.dstErr == nil && d.invalid == nil {
		w := b[:min(int64(len(b)), d.limit-d.written)]
		if _, err := d.dst.Write(w); err != nil {
			d.dstErr = err
		}
	}
	d.written += int64(len(b))
}

func (d *DataURLDecoder) fail(err error) {
	if d.invalid == nil {
		d.invalid = err
	}
}

func errBadBase64() error { return svcerr.New(svcerr.ErrInvalid, "data URL with malformed base64") }

// Close ends the data URL and reports what was wrong with it: ErrTooLarge when the payload
// decodes to more than the limit (whatever else is wrong), else ErrInvalid for the first
// encoding error, else the destination's write error. Closing twice returns the same.
func (d *DataURLDecoder) Close() error {
	if d.closed {
		return d.final
	}
	d.closed = true
	d.final = d.finish()
	return d.final
}

func (d *DataURLDecoder) finish() error {
	if !d.inBody && d.invalid == nil {
		if len(d.header) < len("data:") || !strings.EqualFold(string(d.header[:5]), "data:") {
			d.fail(svcerr.New(svcerr.ErrInvalid, "not a data URL"))
		} else {
			d.fail(svcerr.New(svcerr.ErrInvalid, "data URL without a comma"))
		}
	}
	if d.escLen > 0 {
		d.fail(svcerr.New(svcerr.ErrInvalid, "data URL with a malformed percent-escape"))
	}
	if d.isBase64 {
		// Every 4 data characters carry 3 bytes: an oversize payload is refused by its length,
		// valid or not.
		if d.dataChars/4*3 > d.limit {
			return tooLargeInline(d.limit)
		}
		if d.stdSeen && d.urlSeen {
			d.fail(errBadBase64())
		}
		d.flushQuads()
		if d.invalid == nil {
			d.finishBase64()
		}
	}
	if d.written > d.limit {
		return tooLargeInline(d.limit)
	}
	if d.invalid != nil {
		return d.invalid
	}
	return d.dstErr
}

// finishBase64 decodes the last 0–3 characters: unpadded (2 or 3 characters) or padded to a
// whole quantum.
func (d *DataURLDecoder) finishBase64() {
	left := len(d.quad)
	switch {
	case d.pads == 0 && left != 1:
	case d.pads > 0 && left >= 2 && left+d.pads == 4:
	default:
		d.fail(errBadBase64())
		return
	}
	n, err := base64.RawStdEncoding.Decode(d.out, d.quad)
	if err != nil {
		d.fail(errBadBase64())
		return
	}
	d.emit(d.out[:n])
	d.quad = d.quad[:0]
}

func tooLargeInline(limit int64) error {
	return svcerr.New(svcerr.ErrTooLarge, "the inline file is larger than %d bytes", limit)
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
