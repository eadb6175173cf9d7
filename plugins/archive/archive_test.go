package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins/archive"
	at "github.com/agentsvc/svc/plugins/archive/archivetest"
)

type format struct {
	name  string
	build func(...at.Entry) []byte
}

var formats = []format{{"tar.gz", at.TarGz}, {"zip", at.Zip}}

// unpack runs Unpack into a fresh dst inside a fresh parent and returns dst.
func unpack(t *testing.T, data []byte, lim archive.Limits) (string, error) {
	t.Helper()
	parent := t.TempDir()
	dst := filepath.Join(parent, "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	err := archive.Unpack(bytes.NewReader(data), int64(len(data)), dst, lim)
	checkParent(t, parent)
	return dst, err
}

// checkParent fails unless parent holds dst and nothing else.
func checkParent(t *testing.T, parent string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "dst" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("something was written beside dst: %v", names)
	}
}

// tree lists dst as "name" for files (with their content after '=') and "name/" for folders.
func tree(t *testing.T, dst string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out = append(out, rel+"/")
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"="+string(b))
		default:
			t.Errorf("%s is neither a file nor a folder (%v)", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestUnpackAccepts(t *testing.T) {
	cases := []struct {
		name    string
		entries []at.Entry
		want    []string
	}{
		{"flat", []at.Entry{
			{Name: "plugin.json", Body: "{}"}, {Name: "tools/"}, {Name: "tools/a.py", Body: "print()"},
		}, []string{"plugin.json={}", "tools/", "tools/a.py=print()"}},
		{"implied folders", []at.Entry{
			{Name: "plugin.json", Body: "{}"}, {Name: "a/b/c.txt", Body: "c"}, {Name: "a/"},
		}, []string{"a/", "a/b/", "a/b/c.txt=c", "plugin.json={}"}},
		{"dot slash prefix", []at.Entry{
			{Name: "./"}, {Name: "./plugin.json", Body: "{}"}, {Name: "./x//y", Body: "y"},
		}, []string{"plugin.json={}", "x/", "x/y=y"}},
		{"top folder stripped", []at.Entry{
			{Name: "weather-1.2.0/"}, {Name: "weather-1.2.0/plugin.json", Body: "{}"},
			{Name: "weather-1.2.0/skills/s.md", Body: "s"},
		}, []string{"plugin.json={}", "skills/", "skills/s.md=s"}},
		{"top folder holding a folder of its own name", []at.Entry{
			{Name: "p/plugin.json", Body: "{}"}, {Name: "p/p/x", Body: "x"}, {Name: "p/.unpack-top", Body: "t"},
		}, []string{".unpack-top=t", "p/", "p/x=x", "plugin.json={}"}},
		{"two top folders kept", []at.Entry{
			{Name: "a/x", Body: "1"}, {Name: "b/y", Body: "2"},
		}, []string{"a/", "a/x=1", "b/", "b/y=2"}},
		{"root file keeps the top folder", []at.Entry{
			{Name: "README", Body: "r"}, {Name: "top/plugin.json", Body: "{}"},
		}, []string{"README=r", "top/", "top/plugin.json={}"}},
		{"empty file", []at.Entry{{Name: "plugin.json"}}, []string{"plugin.json="}},
	}
	for _, f := range formats {
		for _, c := range cases {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				dst, err := unpack(t, f.build(c.entries...), archive.Limits{})
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
				got := tree(t, dst)
				if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
					t.Fatalf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
				}
			})
		}
	}
}

func TestUnpackKeepsExecutableBit(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			dst, err := unpack(t, f.build(
				at.Entry{Name: "plugin.json", Body: "{}", Mode: 0o600},
				at.Entry{Name: "server.py", Body: "#!", Mode: 0o4755},
			), archive.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]fs.FileMode{"plugin.json": 0o644, "server.py": 0o755} {
				st, err := os.Stat(filepath.Join(dst, name))
				if err != nil {
					t.Fatal(err)
				}
				// The umask may only remove bits; setuid never survives.
				if st.Mode()&^want != 0 || st.Mode().Perm()&0o100 != want&0o100 {
					t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
				}
			}
		})
	}
}

func TestUnpackRefuses(t *testing.T) {
	big := strings.Repeat("0", 4<<20)
	cases := []struct {
		name    string
		entries []at.Entry
		lim     archive.Limits
		want    string // substring of the message
		onlyTar bool
		onlyZip bool
	}{
		{name: "absolute", entries: []at.Entry{{Name: "/tmp/evil", Body: "x"}}, want: `"/tmp/evil": absolute path`},
		{name: "dot dot", entries: []at.Entry{{Name: "../evil", Body: "x"}}, want: `"../evil": ` + "`..`"},
		{name: "dot dot deep", entries: []at.Entry{{Name: "a/../../evil", Body: "x"}}, want: `"a/../../evil"`},
		{name: "dot dot inside", entries: []at.Entry{{Name: "a/../b", Body: "x"}}, want: "`..` path component"},
		{name: "dot dot folder", entries: []at.Entry{{Name: "a/b/../../../"}}, want: "`..` path component"},
		{name: "backslash", entries: []at.Entry{{Name: `..\evil`, Body: "x"}}, want: "backslash"},
		{name: "invalid utf8", entries: []at.Entry{{Name: "a\xff", Body: "x"}}, want: "not valid UTF-8"},
		{name: "nul", entries: []at.Entry{{Name: "a\x00b", Body: "x"}}, want: "NUL", onlyZip: true},
		{name: "symlink", entries: []at.Entry{
			{Name: "plugin.json", Body: "{}"}, {Name: "link", Type: tar.TypeSymlink, Link: "/etc"},
			{Name: "link/passwd", Body: "x"},
		}, want: `"link": links are not allowed`},
		{name: "symlink outside", entries: []at.Entry{{Name: "l", Type: tar.TypeSymlink, Link: "../../x"}}, want: "links"},
		{name: "hard link", entries: []at.Entry{
			{Name: "a", Body: "x"}, {Name: "b", Type: tar.TypeLink, Link: "/etc/passwd"},
		}, want: `"b": links are not allowed`, onlyTar: true},
		{name: "fifo", entries: []at.Entry{{Name: "f", Type: tar.TypeFifo}}, want: `"f": only regular files and directories`},
		{name: "char device", entries: []at.Entry{{Name: "d", Type: tar.TypeChar}}, want: "only regular files", onlyTar: true},
		{name: "duplicate file", entries: []at.Entry{
			{Name: "plugin.json", Body: "{}"}, {Name: "./plugin.json", Body: "{evil}"},
		}, want: `"./plugin.json": duplicate entry`},
		{name: "duplicate folder", entries: []at.Entry{{Name: "a/"}, {Name: "a/"}}, want: "duplicate entry"},
		{name: "file over folder", entries: []at.Entry{{Name: "a/"}, {Name: "a", Body: "x"}}, want: `"a": duplicate entry`},
		{name: "file over implied folder", entries: []at.Entry{{Name: "a/b", Body: "x"}, {Name: "a", Body: "x"}}, want: `"a": a file where`},
		{name: "folder over file", entries: []at.Entry{{Name: "a", Body: "x"}, {Name: "a/"}}, want: `"a/": duplicate entry`},
		{name: "file under file", entries: []at.Entry{{Name: "a", Body: "x"}, {Name: "a/b", Body: "y"}}, want: `"a/b": `},
		{name: "too many files", entries: []at.Entry{
			{Name: "a", Body: "1"}, {Name: "b/"}, {Name: "c", Body: "3"},
		}, lim: archive.Limits{MaxFiles: 2}, want: `"c": more than 2 entries`},
		{name: "bomb", entries: []at.Entry{{Name: "plugin.json", Body: "{}"}, {Name: "zeros", Body: big}},
			lim: archive.Limits{MaxBytes: 1 << 20}, want: `"zeros": the archive unpacks to more than 1048576 bytes`},
		{name: "many small files over the total", entries: []at.Entry{
			{Name: "a", Body: strings.Repeat("a", 600)}, {Name: "b", Body: strings.Repeat("b", 600)},
		}, lim: archive.Limits{MaxBytes: 1000}, want: `"b": the archive unpacks to more than 1000 bytes`},
	}
	for _, f := range formats {
		for _, c := range cases {
			if (c.onlyTar && f.name != "tar.gz") || (c.onlyZip && f.name != "zip") {
				continue
			}
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				dst, err := unpack(t, f.build(c.entries...), c.lim)
				if !errors.Is(err, svcerr.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				if msg, _, _ := svcerr.Public(err); !strings.Contains(msg, c.want) {
					t.Fatalf("message %q does not contain %q", msg, c.want)
				}
				if got := tree(t, dst); len(got) != 0 {
					t.Fatalf("dst not emptied: %v", got)
				}
			})
		}
	}
}

func TestUnpackRefusesBrokenInput(t *testing.T) {
	good := at.TarGz(at.Entry{Name: "plugin.json", Body: strings.Repeat("x", 5000)})
	goodZip := at.Zip(at.Entry{Name: "plugin.json", Body: strings.Repeat("x", 5000)})
	cases := map[string][]byte{
		"empty":           nil,
		"plain text":      []byte("plugin.json"),
		"plain tar":       append(make([]byte, 257), "ustar"...),
		"truncated gzip":  good[:len(good)/2],
		"truncated zip":   goodZip[:len(goodZip)-30],
		"gzip not tar":    gzipOf("hello"),
		"zip named right": []byte("PK\x03\x04garbage"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			dst, err := unpack(t, data, archive.Limits{})
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if got := tree(t, dst); len(got) != 0 {
				t.Fatalf("dst not emptied: %v", got)
			}
		})
	}
}

func gzipOf(s string) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return buf.Bytes()
}

func TestUnpackDestination(t *testing.T) {
	data := at.TarGz(at.Entry{Name: "plugin.json", Body: "{}"})
	dst := t.TempDir()
	keep := filepath.Join(dst, "keep")
	if err := os.WriteFile(keep, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := archive.Unpack(bytes.NewReader(data), int64(len(data)), dst, archive.Limits{})
	if err == nil || errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("non-empty dst: err = %v, want a non-validation error", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("existing file removed: %v", err)
	}
	err = archive.Unpack(bytes.NewReader(data), int64(len(data)), filepath.Join(dst, "missing"), archive.Limits{})
	if err == nil || errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("missing dst: err = %v, want a non-validation error", err)
	}
}

func TestUnpackFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pkg.bin") // the name says nothing about the format
	if err := os.WriteFile(file, at.Zip(at.Entry{Name: "plugin.json", Body: "{}"}), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := archive.UnpackFile(file, dst, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dst); len(got) != 1 || got[0] != "plugin.json={}" {
		t.Fatalf("tree = %v", got)
	}
}

func TestDetect(t *testing.T) {
	for head, want := range map[string]archive.Format{
		"\x1f\x8b\x08": archive.TarGz, "PK\x03\x04": archive.Zip, "PK\x05\x06": archive.Zip,
		"PK": archive.Unknown, "": archive.Unknown, "ustar": archive.Unknown,
	} {
		if got := archive.Detect([]byte(head)); got != want {
			t.Errorf("Detect(%q) = %v, want %v", head, got, want)
		}
	}
}
