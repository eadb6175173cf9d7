package media_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestParseDataURL(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
	b64 := base64.StdEncoding.EncodeToString(png)
	for _, tc := range []struct {
		name string
		in   string
		mt   string
		data []byte
		err  error
	}{
		{"base64", "data:image/png;base64," + b64, "image/png", png, nil},
		{"upper scheme and params", "DATA:Image/PNG;name=x.png;BASE64," + b64, "image/png", png, nil},
		{"unpadded", "data:image/png;base64," + strings.TrimRight(b64, "="), "image/png", png, nil},
		{"url alphabet", "data:;base64," + base64.URLEncoding.EncodeToString(png), "text/plain", png, nil},
		{"whitespace", "data:image/png;base64," + b64[:4] + "\n " + b64[4:], "image/png", png, nil},
		{"percent in base64", "data:image/png;base64," + strings.ReplaceAll(b64, "+", "%2B"), "image/png", png, nil},
		{"percent-encoded", "data:text/plain;charset=utf-8,hello%20world%21+", "text/plain", []byte("hello world!+"), nil},
		{"empty payload", "data:,", "text/plain", []byte{}, nil},
		{"not data", "http://x/y", "", nil, svcerr.ErrInvalid},
		{"short", "dat", "", nil, svcerr.ErrInvalid},
		{"no comma", "data:image/png;base64", "", nil, svcerr.ErrInvalid},
		{"bad base64", "data:image/png;base64,@@@@", "", nil, svcerr.ErrInvalid},
		{"bad escape", "data:text/plain,%zz", "", nil, svcerr.ErrInvalid},
		{"truncated escape", "data:text/plain,abc%4", "", nil, svcerr.ErrInvalid},
		{"bad media type", "data:image;base64," + b64, "", nil, svcerr.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mt, data, err := media.ParseDataURL(tc.in)
			if tc.err != nil {
				if category(err) != tc.err {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || mt != tc.mt || !bytes.Equal(data, tc.data) {
				t.Fatalf("ParseDataURL = %q, %q, %v", mt, data, err)
			}
		})
	}
}

func TestParseDataURLLimits(t *testing.T) {
	t.Parallel()
	exact := bytes.Repeat([]byte{0xab}, 30)
	enc := base64.StdEncoding.EncodeToString(exact)
	if _, d, err := media.ParseDataURLLimit("data:application/octet-stream;base64,"+enc, 30); err != nil || len(d) != 30 {
		t.Fatalf("at the limit: %d, %v", len(d), err)
	}
	for name, in := range map[string]string{
		"base64 one over":  "data:;base64," + base64.StdEncoding.EncodeToString(append(exact, 1)),
		"percent one over": "data:," + strings.Repeat("%41", 31),
		"plain one over":   "data:," + strings.Repeat("a", 31),
		"huge base64":      "data:;base64," + strings.Repeat("A", 1000),
	} {
		if _, _, err := media.ParseDataURLLimit(in, 30); category(err) != svcerr.ErrTooLarge {
			t.Errorf("%s: error = %v, want too large", name, err)
		}
	}
	// 16 MiB + 3 bytes of base64 is refused from its length.
	big := "data:image/png;base64," + strings.Repeat("A", (media.MaxInlineBytes/3+1)*4)
	if _, _, err := media.ParseDataURL(big); category(err) != svcerr.ErrTooLarge {
		t.Fatalf("oversize inline file: %v", err)
	}
}

func FuzzParseDataURL(f *testing.F) {
	for _, s := range []string{
		"data:image/png;base64,iVBORw0KGgo=", "data:,hello%20x", "data:text/plain;charset=utf-8;base64,aGk",
		"data:;base64,%2B%2F==", "data:a/b;base64,", "data:,%", "DATA:x/y,%41%4", "data:image/png;base64,a b\nc=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mt, data, err := media.ParseDataURLLimit(s, 64)
		if err != nil {
			if category(err) != svcerr.ErrInvalid && category(err) != svcerr.ErrTooLarge {
				t.Fatalf("uncategorised error %v", err)
			}
			return
		}
		if len(data) > 64 || mt == "" || mt != strings.ToLower(mt) {
			t.Fatalf("ParseDataURLLimit(%q) = %q, %d bytes", s, mt, len(data))
		}
		// The streaming decoder fed in pieces of any size decodes the same.
		for _, size := range []int{1, 3, 7} {
			var buf bytes.Buffer
			d := media.NewDataURLDecoder(&buf, 64)
			for rest := s; rest != ""; {
				n := min(size, len(rest))
				_, _ = d.Write([]byte(rest[:n]))
				rest = rest[n:]
			}
			if err := d.Close(); err != nil || d.MediaType() != mt || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("in pieces of %d: %q, %q, %v; whole: %q, %q", size, d.MediaType(), buf.Bytes(), err, mt, data)
			}
		}
	})
}

// TestDataURLDecoderPieces: the outcome does not depend on where the writes split the data URL
// (inside the header, an escape, a quantum or the padding), the padding and alphabet rules hold,
// and the destination never receives more than the limit.
func TestDataURLDecoderPieces(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("svc streams inline files. "), 2000) // 52,000 bytes
	b64 := base64.StdEncoding.EncodeToString(payload)
	wrapped := ""
	for i := 0; i < len(b64); i += 76 {
		wrapped += b64[i:min(i+76, len(b64))] + "\r\n"
	}
	for name, in := range map[string]string{
		"base64":  "data:text/plain;base64," + b64,
		"wrapped": "data:text/plain;base64," + wrapped,
		"escaped": "data:text/plain;base64," + strings.ReplaceAll(strings.ReplaceAll(b64, "+", "%2B"), "/", "%2f"),
		"url":     "data:text/plain;base64," + base64.RawURLEncoding.EncodeToString(payload),
	} {
		for _, size := range []int{1, 2, 3, 5, 4096, 1 << 20} {
			var buf bytes.Buffer
			d := media.NewDataURLDecoder(&buf, int64(len(payload)))
			for rest := in; rest != ""; {
				n := min(size, len(rest))
				_, _ = d.Write([]byte(rest[:n]))
				rest = rest[n:]
			}
			if err := d.Close(); err != nil || !bytes.Equal(buf.Bytes(), payload) || d.MediaType() != "text/plain" {
				t.Fatalf("%s in pieces of %d: %d bytes, %v", name, size, buf.Len(), err)
			}
		}
	}
	for in, want := range map[string]error{
		"data:;base64,QUJD":                       nil,
		"data:;base64,QUI=":                       nil,
		"data:;base64,QQ==":                       nil,
		"data:;base64,QQ":                         nil,
		"data:;base64,Q":                          svcerr.ErrInvalid, // one character carries no byte
		"data:;base64,QUJD=":                      svcerr.ErrInvalid, // padding after a whole quantum
		"data:;base64,QQ=":                        svcerr.ErrInvalid, // too little padding
		"data:;base64,QQ==QQ==":                   svcerr.ErrInvalid, // data after padding
		"data:;base64,-_+/":                       svcerr.ErrInvalid, // both alphabets
		"data:;base64,%25QUJD":                    svcerr.ErrInvalid, // an escaped '%' is no escape
		"data:;base64,QU%4":                       svcerr.ErrInvalid,
		"data:" + strings.Repeat("x", 5000) + ",": svcerr.ErrInvalid, // header beyond 4 KiB
	} {
		if _, _, err := media.ParseDataURLLimit(in, 64); category(err) != want {
			t.Errorf("%.40q: error %v, want %v", in, err, want)
		}
	}
	// Past the limit the destination gets exactly the limit, and Close says too large.
	var buf bytes.Buffer
	d := media.NewDataURLDecoder(&buf, 1000)
	_, _ = io.WriteString(d, "data:text/plain;base64,"+b64)
	if err := d.Close(); category(err) != svcerr.ErrTooLarge || buf.Len() != 1000 {
		t.Fatalf("over the limit: %d bytes written, %v", buf.Len(), err)
	}
}
