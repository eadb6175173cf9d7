package spool_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/domain/spool"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func opts(dir string) spool.Options {
	return spool.Options{Dir: dir, MaxFiles: 2, Limit: 1 << 20, MaxRest: 1 << 20}
}

// read returns the decoded bytes of the file a placeholder names.
func read(t *testing.T, fs *spool.Files, placeholder string) ([]byte, *spool.File) {
	t.Helper()
	f, ok := fs.Lookup(placeholder)
	if !ok {
		t.Fatalf("%q names no spooled file", placeholder)
	}
	r, err := f.Open()
	if err != nil {
		return nil, f
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b, f
}

// TestRewrite: the data URLs of files[] are decoded to files and replaced by placeholders; every
// other byte is copied; member names match as encoding/json matches them; files beyond MaxFiles
// are dropped; Close removes the temporary files.
func TestRewrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\nrest of the picture")
	b64 := base64.StdEncoding.EncodeToString(png)
	body := `{"text": "hi \"files\"", "files": [` +
		`{"filename": "a.png", "data_url": "data:image/png;base64,` + b64 + `"},` +
		`{"FileName": "b.txt", "Data_URL": "data:text/plain,caf\u00e9%20au%20lait\/x"},` +
		`{"filename": "c.txt", "data_url": "data:,dropped"}],` +
		` "nested": {"files": [{"data_url": "data:,kept as is"}]}, "n": [1, 2.5e3, true, null]}`
	out, fs, err := spool.Rewrite(strings.NewReader(body), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Text  string
		Files []struct {
			Filename string
			DataURL  string `json:"data_url"`
		}
		Nested struct {
			Files []struct {
				DataURL string `json:"data_url"`
			}
		}
		N []any
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("rewritten body %s: %v", out, err)
	}
	if doc.Text != `hi "files"` || len(doc.Files) != 3 || doc.Files[1].Filename != "b.txt" || len(doc.N) != 4 ||
		doc.Nested.Files[0].DataURL != "data:,kept as is" {
		t.Fatalf("rewritten body %s", out)
	}
	if got, f := read(t, fs, doc.Files[0].DataURL); !bytes.Equal(got, png) || f.MediaType != "image/png" || f.Size != int64(len(png)) {
		t.Fatalf("file 0: %q %+v", got, f)
	}
	if got, f := read(t, fs, doc.Files[1].DataURL); string(got) != "café au lait/x" || f.MediaType != "text/plain" {
		t.Fatalf("file 1: %q %+v", got, f)
	}
	if _, f := read(t, fs, doc.Files[2].DataURL); !errors.Is(f.Err, svcerr.ErrTooLarge) {
		t.Fatalf("file beyond MaxFiles: %+v", f)
	}
	if _, ok := fs.Lookup("data:application/vnd.svc.spooled;n=7,"); ok {
		t.Fatal("a placeholder of no file resolved")
	}
	if left, _ := os.ReadDir(dir); len(left) != 2 {
		t.Fatalf("%d temporary files, want 2 (the dropped one is never written)", len(left))
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Close left %d files", len(left))
	}
}

// TestRewriteFileErrors: a bad or oversize data URL is kept as a file carrying the decoder's
// error (the chat service decides what it means); the document goes on.
func TestRewriteFileErrors(t *testing.T) {
	t.Parallel()
	o := opts(t.TempDir())
	o.Limit = 4
	out, fs, err := spool.Rewrite(strings.NewReader(`{"files":[{"data_url":"data:;base64,@@"},{"data_url":"data:,12345"}]}`), o)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var doc struct {
		Files []struct {
			DataURL string `json:"data_url"`
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if _, f := read(t, fs, doc.Files[0].DataURL); !errors.Is(f.Err, svcerr.ErrInvalid) {
		t.Fatalf("malformed base64: %+v", f)
	}
	if _, f := read(t, fs, doc.Files[1].DataURL); !errors.Is(f.Err, svcerr.ErrTooLarge) {
		t.Fatalf("oversize: %+v", f)
	}
}

// TestRewriteRefusals: what the rewriter itself refuses, leaving no temporary file.
func TestRewriteRefusals(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body string
		max  int64
		want error
	}{
		"bad escape in a data URL":  {`{"files":[{"data_url":"data:,a\qb"}]}`, 1 << 20, svcerr.ErrBadRequest},
		"bad \\u in a data URL":     {`{"files":[{"data_url":"data:,\u12G4"}]}`, 1 << 20, svcerr.ErrBadRequest},
		"control character":         {"{\"files\":[{\"data_url\":\"data:,a\x01\"}]}", 1 << 20, svcerr.ErrBadRequest},
		"body ends in a data URL":   {`{"files":[{"data_url":"data:,abc`, 1 << 20, svcerr.ErrBadRequest},
		"rest over MaxRest":         {`{"text":"` + strings.Repeat("x", 200) + `"}`, 100, svcerr.ErrTooLarge},
		"too deep":                  {strings.Repeat("[", 1001), 1 << 20, svcerr.ErrBadRequest},
		"files do not count to max": {`{"files":[{"data_url":"data:,` + strings.Repeat("x", 500) + `"}], "t": 1}`, 100, nil},
	} {
		dir := t.TempDir()
		o := opts(dir)
		o.MaxRest = tc.max
		_, fs, err := spool.Rewrite(strings.NewReader(tc.body), o)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			_ = fs.Close()
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", name, err, tc.want)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: %d temporary files left", name, len(left))
		}
	}
}

// TestRewriteMemory: a 16 MiB inline file (21 MiB of base64) passes through a few buffers:
// the rewrite allocates far less than the file, where decoding the JSON and the data URL in
// memory took several copies. Not parallel: it reads the process's allocation counter.
func TestRewriteMemory(t *testing.T) {
	payload := bytes.Repeat([]byte{0x5a, 0x01, 0xfe, 0x33}, media.MaxInlineBytes/4)
	body := []byte(`{"text":"t","files":[{"filename":"f.bin","data_url":"data:application/octet-stream;base64,` +
		base64.StdEncoding.EncodeToString(payload) + `"}]}`)
	o := opts(t.TempDir())
	o.Limit = media.MaxInlineBytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, fs, err := spool.Rewrite(bytes.NewReader(body), o)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	allocated := after.TotalAlloc - before.TotalAlloc
	if allocated > 1<<20 {
		t.Fatalf("rewriting a %d-byte body allocated %d bytes; want under 1 MiB", len(body), allocated)
	}
	matches, _ := filepath.Glob(filepath.Join(o.Dir, "*"))
	if len(matches) != 1 {
		t.Fatalf("%d files", len(matches))
	}
	got, err := os.ReadFile(matches[0])
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("decoded %d bytes, %v", len(got), err)
	}
}

// FuzzRewrite: a valid document is never refused (with room to spare) and stays valid; an
// invalid one is refused or stays invalid; a document without a top-level "files" member comes
// out byte for byte.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{
		`{"files":[{"filename":"a","data_url":"data:,x"}]}`, `{"FILES":[{"DATA_URL":"data:;base64,QQ=="}],"x":[1,{"a":"b"}]}`,
		`{"files":[{"data_url":"\u0064ata:,\ud83d\ude00"}]}`, `[{"files":[]}]`, `{"files":{"data_url":"x"}}`, `"str`, `{"a":"\"}`,
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		out, fs, err := spool.Rewrite(strings.NewReader(in), spool.Options{Dir: dir, MaxFiles: 3, Limit: 64, MaxRest: 1 << 20})
		defer fs.Close()
		valid := json.Valid([]byte(in))
		if err != nil {
			if valid {
				t.Fatalf("valid %q refused: %v", in, err)
			}
			return
		}
		if json.Valid(out) != valid {
			t.Fatalf("validity changed: %q -> %q", in, out)
		}
		if fs.Len() == 0 && !bytes.Equal(out, []byte(in)) {
			t.Fatalf("nothing spooled but %q -> %q", in, out)
		}
	})
}
