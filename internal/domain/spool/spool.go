// Package spool decodes the inline files of a JSON request body (`files[i].data_url`, document
// 2's chat requests) to temporary files while the body streams, and hands on the rest of the
// document with a short placeholder in place of each data URL. A request carrying eight 16 MiB
// files then costs a few buffers of memory instead of several copies of the body (JSON
// decoding, validation and base64 each held one).
//
// Only the shape of the chat bodies is recognised: a top-level object whose "files" member is
// an array of objects with a "data_url" string (keys matched as encoding/json matches them,
// ignoring case). Everything else is copied byte for byte, so a malformed document stays
// malformed for the validator that reads the result; a malformed string inside a data URL is
// refused here.
package spool

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// placeholderPrefix starts the data URL that replaces a spooled one in the rewritten body: it
// passes the contract's `^data:` pattern and names the spooled file by its number.
const placeholderPrefix = "data:application/vnd.svc.spooled;n="

// maxDepth bounds the nesting the scanner tracks (deeper documents are refused).
const maxDepth = 1000

// maxKey is the longest member name compared (longer names match nothing).
const maxKey = 64

// Options are the limits of one body.
type Options struct {
	Dir string // where the temporary files go ("" is os.TempDir(), or MakeDir's)
	// MakeDir, when set and Dir is "", names (and creates) the folder, asked at the first file
	// only: a body without data URLs touches no file system.
	MakeDir  func() (string, error)
	MaxFiles int   // data URLs decoded per body; later ones are dropped undecoded
	Limit    int64 // decoded bytes per file: a larger one is kept as too large, without its bytes
	MaxRest  int64 // the size of the document without its data URLs (ErrTooLarge beyond)
}

// File is one decoded inline file.
type File struct {
	path      string
	MediaType string // the declared type, "text/plain" when none is ("" when dropped or unparsed)
	Declared  bool   // the data URL named its media type
	Size      int64  // decoded bytes
	SHA256    string // hex digest of the decoded bytes (what an Idempotency-Key compares)
	// Err is what the data URL's decoder found (ErrInvalid, ErrTooLarge), or ErrTooLarge for a
	// file beyond MaxFiles; nil for a good file.
	Err error
}

// Open reads the decoded bytes.
func (f *File) Open() (io.ReadCloser, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	return os.Open(f.path)
}

// Files are the inline files of one body; Close removes their temporary files.
type Files struct {
	files []*File
}

// Lookup returns the file a placeholder of the rewritten body names (ok false for any other
// string: a data URL that was not spooled).
func (fs *Files) Lookup(dataURL string) (*File, bool) {
	if fs == nil {
		return nil, false
	}
	rest, ok := strings.CutPrefix(dataURL, placeholderPrefix)
	if !ok {
		return nil, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, ","))
	if err != nil || n < 0 || n >= len(fs.files) {
		return nil, false
	}
	return fs.files[n], true
}

// Digests are the SHA-256 digests of the decoded files, in body order ("" for nil).
func (fs *Files) Digests() []string {
	if fs == nil {
		return nil
	}
	out := make([]string, len(fs.files))
	for i, f := range fs.files {
		out[i] = f.SHA256
	}
	return out
}

// Len is the number of data URLs spooled (dropped ones included).
func (fs *Files) Len() int { return len(fs.files) }

// Close removes the temporary files. Safe on nil and twice.
func (fs *Files) Close() error {
	if fs == nil {
		return nil
	}
	var errs []error
	for _, f := range fs.files {
		if f.path != "" {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			f.path = ""
		}
	}
	return errors.Join(errs...)
}

// frame is one open object or array of the document.
type frame struct {
	obj       bool
	expectKey bool // in an object: the next string is a member name
	member    int  // in an object: what the current member is (memberOther …)
	index     int  // in an array: the element's position
}

const (
	memberOther = iota
	memberFiles
	memberDataURL
)

type scanner struct {
	in    *bufio.Reader
	out   bytes.Buffer
	opt   Options
	stack []frame
	files *Files
	key   []byte
}

// Rewrite reads the JSON document r and returns it with every `files[i].data_url` string
// replaced by a placeholder that files.Lookup resolves to the decoded file. The caller closes
// files (also on error; Rewrite removes what it made when it fails). Errors: ErrBadRequest (a
// data URL that is no valid JSON string, nesting beyond 1000), ErrTooLarge (the document
// without its data URLs is larger than MaxRest), file-system failures (temporary files), and r's own
// errors unchanged (a body over its cap, invalid UTF-8).
func Rewrite(r io.Reader, o Options) (body []byte, files *Files, err error) {
	in := readers.Get().(*bufio.Reader)
	in.Reset(r)
	defer func() {
		in.Reset(nil)
		readers.Put(in)
	}()
	s := &scanner{in: in, opt: o, files: &Files{}}
	if err := s.run(); err != nil {
		_ = s.files.Close()
		return nil, nil, err
	}
	return s.out.Bytes(), s.files, nil
}

// readers are Rewrite's read buffers, reused: 64 KiB each, allocated for every body they were
// most of a chat start's allocation.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func badJSON() error { return svcerr.New(svcerr.ErrBadRequest, "request body is not valid JSON") }

func (s *scanner) run() error {
	for {
		c, err := s.in.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.emit(c); err != nil {
			return err
		}
		top := s.top()
		switch c {
		case '{', '[':
			if len(s.stack) >= maxDepth {
				return svcerr.New(svcerr.ErrBadRequest, "request body nests deeper than %d levels", maxDepth)
			}
			s.stack = append(s.stack, frame{obj: c == '{', expectKey: c == '{'})
		case '}', ']':
			if len(s.stack) > 0 {
				s.stack = s.stack[:len(s.stack)-1]
			}
		case ':':
			if top != nil && top.obj {
				top.expectKey = false
			}
		case ',':
			if top != nil && top.obj {
				top.expectKey, top.member = true, memberOther
			} else if top != nil {
				top.index++
			}
		case '"':
			if err := s.str(top); err != nil {
				return err
			}
		}
	}
}

func (s *scanner) top() *frame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

// emit appends to the rewritten document, refusing one that grows past MaxRest.
func (s *scanner) emit(b ...byte) error {
	if int64(s.out.Len()+len(b)) > s.opt.MaxRest {
		return svcerr.New(svcerr.ErrTooLarge, "the request body without its inline files is larger than %d bytes", s.opt.MaxRest)
	}
	s.out.Write(b)
	return nil
}

// str handles a string whose opening quote was read and emitted: a member name (noted when it
// is one the scanner looks for), a data URL to spool, or any other string (copied).
func (s *scanner) str(top *frame) error {
	switch {
	case top != nil && top.obj && top.expectKey:
		name, err := s.copyString(true)
		if err != nil {
			return err
		}
		top.member = memberOther
		switch {
		case len(s.stack) == 1 && strings.EqualFold(name, "files"):
			top.member = memberFiles
		case len(s.stack) == 3 && strings.EqualFold(name, "data_url"):
			top.member = memberDataURL
		}
		return nil
	case s.atDataURL():
		return s.spool()
	default:
		_, err := s.copyString(false)
		return err
	}
}

// atDataURL reports whether the string about to be read is the value of files[i].data_url.
func (s *scanner) atDataURL() bool {
	return len(s.stack) == 3 &&
		s.stack[0].obj && s.stack[0].member == memberFiles && !s.stack[0].expectKey &&
		!s.stack[1].obj &&
		s.stack[2].obj && s.stack[2].member == memberDataURL && !s.stack[2].expectKey
}

// copyString copies a string up to and including its closing quote; with name it also returns
// the unescaped text (up to maxKey bytes; longer names come back as "").
func (s *scanner) copyString(name bool) (string, error) {
	s.key = s.key[:0]
	long := false
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return "", eofIsBad(err)
		}
		if err := s.emit(c); err != nil {
			return "", err
		}
		switch c {
		case '"':
			if !name || long {
				return "", nil
			}
			return string(s.key), nil
		case '\\':
			e, err := s.in.ReadByte()
			if err != nil {
				return "", eofIsBad(err)
			}
			if err := s.emit(e); err != nil {
				return "", err
			}
			if name && !long {
				// Member names are short: decode their escapes for the comparison (a
				// \u escape reads its four digits here; a malformed one is the validator's
				// to refuse, since the copy stays verbatim).
				if e == 'u' {
					var hex [4]byte
					for i := range hex {
						if hex[i], err = s.in.ReadByte(); err != nil {
							return "", eofIsBad(err)
						}
					}
					if err := s.emit(hex[:]...); err != nil {
						return "", err
					}
					if v, err := strconv.ParseUint(string(hex[:]), 16, 16); err == nil {
						s.key = utf8.AppendRune(s.key, rune(v))
					}
				} else {
					s.key = append(s.key, unescape(e))
				}
			}
		default:
			if name && !long {
				s.key = append(s.key, c)
			}
		}
		if len(s.key) > maxKey {
			long = true
		}
	}
}

// unescape maps the character after a backslash to what it stands for (0 for an unknown one,
// which no member name the scanner looks for contains).
func unescape(e byte) byte {
	switch e {
	case '"', '\\', '/':
		return e
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

func eofIsBad(err error) error {
	if err == io.EOF {
		return badJSON()
	}
	return err
}

// stringStop marks the bytes that end a run of plain string content.
var stringStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// spool decodes the data URL string about to be read into a temporary file (or, beyond
// MaxFiles, drops it) and emits its placeholder and closing quote.
func (s *scanner) spool() error {
	n := len(s.files.files)
	f := &File{}
	s.files.files = append(s.files.files, f)
	var sink io.Writer = io.Discard
	var tmp *os.File
	var buf *bufio.Writer
	sum := sha256.New()
	if n < s.opt.MaxFiles {
		var err error
		if s.opt.Dir == "" && s.opt.MakeDir != nil {
			if s.opt.Dir, err = s.opt.MakeDir(); err != nil {
				return fmt.Errorf("inline file: %w", err)
			}
		}
		if tmp, err = os.CreateTemp(s.opt.Dir, "svc-inline-*"); err != nil {
			return fmt.Errorf("inline file: %w", err)
		}
		f.path = tmp.Name()
		buf = bufio.NewWriterSize(tmp, 32<<10)
		sink = buf
	}
	dec := media.NewDataURLDecoder(io.MultiWriter(sink, sum), s.opt.Limit)
	if err := s.decodeString(dec); err != nil {
		if tmp != nil {
			_ = tmp.Close()
		}
		return err
	}
	f.Err = dec.Close()
	f.MediaType, f.Declared, f.Size = dec.MediaType(), dec.DeclaresType(), min(dec.Written(), s.opt.Limit)
	f.SHA256 = hex.EncodeToString(sum.Sum(nil))
	if tmp != nil {
		err := buf.Flush()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("inline file: %w", err)
		}
	} else {
		f.Err = svcerr.New(svcerr.ErrTooLarge, "only the first %d inline files are considered", s.opt.MaxFiles)
	}
	return s.emit([]byte(placeholderPrefix + strconv.Itoa(n) + `,"`)...)
}

// decodeString feeds the unescaped content of the string being read to w, through its closing
// quote (which it consumes but does not emit). Errors: ErrBadRequest (a control character, a
// malformed escape, the end of the body inside the string), and the reader's.
func (s *scanner) decodeString(w io.Writer) error {
	for {
		if _, err := s.in.Peek(1); err != nil { // fills the buffer when it is empty
			return eofIsBad(err)
		}
		window, _ := s.in.Peek(s.in.Buffered())
		i := 0
		for i < len(window) && !stringStop[window[i]] {
			i++
		}
		if i > 0 { // a run of plain content, written in one call
			_, _ = w.Write(window[:i])
			_, _ = s.in.Discard(i)
			continue
		}
		c, _ := s.in.ReadByte()
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return badJSON()
		}
		// A backslash escape.
		e, err := s.in.ReadByte()
		if err != nil {
			return eofIsBad(err)
		}
		if e != 'u' {
			if !strings.ContainsRune(`"\\/bfnrt`, rune(e)) {
				return badJSON()
			}
			_, _ = w.Write([]byte{unescape(e)})
			continue
		}
		r, err := s.hexRune()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// A high surrogate pairs with a following \uXXXX low one; alone it stands for
			// U+FFFD, as encoding/json decodes it.
			if next, _ := s.in.Peek(2); len(next) == 2 && next[0] == '\\' && next[1] == 'u' {
				_, _ = s.in.Discard(2)
				r2, err := s.hexRune()
				if err != nil {
					return err
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					_, _ = w.Write(utf8.AppendRune(nil, utf8.RuneError))
					r = r2
				}
			} else {
				r = utf8.RuneError
			}
		}
		_, _ = w.Write(utf8.AppendRune(nil, r))
	}
}

// hexRune reads the four hex digits of a \u escape.
func (s *scanner) hexRune() (rune, error) {
	var hex [4]byte
	for i := range hex {
		c, err := s.in.ReadByte()
		if err != nil {
			return 0, eofIsBad(err)
		}
		hex[i] = c
	}
	v, err := strconv.ParseUint(string(hex[:]), 16, 16)
	if err != nil {
		return 0, badJSON()
	}
	return rune(v), nil
}
