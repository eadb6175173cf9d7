package server

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// chunked reads data n bytes at a time, so runes are cut at every position.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

func readsValid(data []byte, chunk int) bool {
	_, err := io.ReadAll(newUTF8Body(io.NopCloser(&chunked{data: data, n: chunk})))
	return !errors.Is(err, errInvalidUTF8)
}

func TestUTF8Body(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "café ☕ 𝄞", "\xe9", "caf\xc3", "\xf0\x9f\x98", "a\xed\xa0\x80b", "\xc0\xaf", "ok\xff", "€€€€"} {
		for chunk := 1; chunk <= 5; chunk++ {
			if got, want := readsValid([]byte(s), chunk), utf8.ValidString(s); got != want {
				t.Errorf("%q in reads of %d: valid = %v, want %v", s, chunk, got, want)
			}
		}
	}
	if err := iotest.TestReader(newUTF8Body(io.NopCloser(bytes.NewReader([]byte("héllo wörld")))), []byte("héllo wörld")); err != nil {
		t.Fatal(err)
	}
}

// FuzzUTF8Body: the streaming check agrees with utf8.Valid on the whole body, however the
// reads cut it.
func FuzzUTF8Body(f *testing.F) {
	f.Add([]byte("café ☕"), uint8(1))
	f.Add([]byte("\xf0\x9f\x98\x80x"), uint8(2))
	f.Add([]byte("a\xe2\x82"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		n := int(chunk%7) + 1
		if got, want := readsValid(data, n), utf8.Valid(data); got != want {
			t.Fatalf("%q in reads of %d: valid = %v, want %v", data, n, got, want)
		}
	})
}
