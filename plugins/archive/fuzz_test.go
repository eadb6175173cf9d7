package archive_test

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsvc/svc/plugins/archive"
	at "github.com/agentsvc/svc/plugins/archive/archivetest"
)

// seeds are archives that exercise every rule, accepted and refused.
var seeds = [][]at.Entry{
	{{Name: "plugin.json", Body: "{}"}, {Name: "tools/"}, {Name: "tools/a.py", Body: "print()", Mode: 0o755}},
	{{Name: "top/"}, {Name: "top/plugin.json", Body: "{}"}, {Name: "top/top/x", Body: "x"}},
	{{Name: "./"}, {Name: "./plugin.json", Body: "{}"}},
	{{Name: "../evil", Body: "x"}},
	{{Name: "/abs", Body: "x"}},
	{{Name: "a/../../evil", Body: "x"}},
	{{Name: "l", Type: tar.TypeSymlink, Link: "/tmp"}, {Name: "l/x", Body: "x"}},
	{{Name: "a", Body: "x"}, {Name: "b", Type: tar.TypeLink, Link: "a"}},
	{{Name: "a", Body: "x"}, {Name: "a", Body: "y"}},
	{{Name: "a", Body: "x"}, {Name: "a/b", Body: "y"}},
	{{Name: `a\b`, Body: "x"}},
	{{Name: "z", Body: strings.Repeat("0", 100000)}},
}

// fuzzUnpack checks the unpacker's promise on arbitrary bytes: no panic, nothing created beside
// dst, and either an error with dst empty or only regular files and folders inside dst.
func fuzzUnpack(t *testing.T, data []byte) {
	parent := t.TempDir()
	dst := filepath.Join(parent, "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	err := archive.Unpack(bytes.NewReader(data), int64(len(data)), dst, archive.Limits{MaxFiles: 64, MaxBytes: 64 << 10})
	entries, rerr := os.ReadDir(parent)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(entries) != 1 || entries[0].Name() != "dst" || !entries[0].IsDir() {
		t.Fatalf("the parent of dst holds %v", entries)
	}
	n := 0
	werr := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dst {
			return nil
		}
		n++
		if !d.IsDir() && !d.Type().IsRegular() {
			t.Errorf("%s has type %v", p, d.Type())
		}
		return nil
	})
	if werr != nil {
		t.Fatal(werr)
	}
	if err != nil && n != 0 {
		t.Fatalf("Unpack failed (%v) but left %d entries in dst", err, n)
	}
}

func FuzzUnpackTarGz(f *testing.F) {
	for _, s := range seeds {
		f.Add(at.TarGz(s...))
	}
	f.Fuzz(fuzzUnpack)
}

func FuzzUnpackZip(f *testing.F) {
	for _, s := range seeds {
		f.Add(at.Zip(s...))
	}
	f.Fuzz(fuzzUnpack)
}
