// Package archive unpacks plugin package archives (.tar.gz and .zip) into a folder without ever
// writing outside it.
//
// A plugin package comes from a catalog an administrator configured, but its bytes are still
// untrusted: a crafted archive may try to write outside the plugins directory (absolute names,
// `..` components, links followed by later entries), exhaust the disk (decompression bombs, a
// flood of small files) or smuggle names that mean different things to different tools
// (backslashes, NUL, invalid UTF-8). Unpack refuses all of these:
//
//   - the format is detected from the content (gzip magic for .tar.gz, a zip signature for
//     .zip), never from a file name; anything else is refused;
//   - entry names must be valid UTF-8 without NUL or backslash, relative (no leading `/`), and
//     without any `..` component (checked on the raw name, so `a/../b` is refused too);
//     `./` prefixes and repeated slashes are cleaned away;
//   - only regular files and directories are accepted: symbolic links, hard links, devices,
//     FIFOs and every other entry type are refused (a pax global header, written by
//     `git archive`, carries no file and is skipped);
//   - two entries with the same cleaned name, or a file where a directory is needed (and the
//     reverse), are refused;
//   - at most Limits.MaxFiles entries and Limits.MaxBytes bytes in total, counted as they are
//     written (a header that lies about its size gains nothing).
//
// Every write goes through an os.Root opened on dst, so even a bug in the checks above could not
// create a file outside dst. On any error Unpack empties dst (the caller passes a fresh temporary
// folder and removes it) and returns an error matching svcerr.ErrInvalid whose message names the
// entry and the rule it broke; I/O failures of the local disk are returned unwrapped.
//
// Archives made from a source tree often wrap everything in one top folder (GitHub's
// `vendor-name-1.2.0/`). When every entry lies under the same top folder and there is no
// plugin.json at the root, Unpack strips that folder so dst itself holds the plugin.
package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Default limits, used for a zero field of Limits.
const (
	DefaultMaxFiles = 10000
	DefaultMaxBytes = 256 << 20
)

// Limits bound what one archive may create.
type Limits struct {
	// MaxFiles is the most entries (regular files and directories together) an archive may
	// hold; 0 means DefaultMaxFiles.
	MaxFiles int
	// MaxBytes is the most bytes all regular files together may hold once decompressed; 0
	// means DefaultMaxBytes.
	MaxBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// ManifestName is the file whose presence at the root stops the top-folder stripping.
const ManifestName = "plugin.json"

// Format is an archive format recognised by Detect.
type Format int

// The recognised formats.
const (
	Unknown Format = iota
	TarGz
	Zip
)

func (f Format) String() string {
	switch f {
	case TarGz:
		return "tar.gz"
	case Zip:
		return "zip"
	}
	return "unknown"
}

// Detect reports the format of an archive from its first bytes.
func Detect(head []byte) Format {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return TarGz
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return Zip
	}
	return Unknown
}

// invalid returns a refusal matching svcerr.ErrInvalid with a caller-safe message.
func invalid(format string, args ...any) error {
	return svcerr.New(svcerr.ErrInvalid, "plugin archive: "+format, args...)
}

// UnpackFile unpacks the archive stored at file into dst (see Unpack).
func UnpackFile(file, dst string, lim Limits) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return Unpack(f, st.Size(), dst, lim)
}

// Unpack unpacks the archive held by r (size bytes long) into dst, which must be an existing,
// empty folder. It returns nil with only regular files and directories written inside dst, or
// an error with dst emptied: refusals of the archive match svcerr.ErrInvalid; a dst that is
// missing or not empty, and local I/O failures, return other errors.
func Unpack(r io.ReaderAt, size int64, dst string, lim Limits) (err error) {
	lim = lim.withDefaults()
	entries, err := os.ReadDir(dst)
	if err != nil {
		return fmt.Errorf("plugin archive destination: %w", err)
	}
	if len(entries) != 0 {
		return fmt.Errorf("plugin archive destination %s is not empty", dst)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("plugin archive destination: %w", err)
	}
	defer root.Close()
	defer func() {
		if err != nil {
			if cerr := empty(root); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()

	head := make([]byte, 4)
	n, _ := r.ReadAt(head, 0)
	u := &unpacker{root: root, lim: lim, seen: map[string]bool{}, dirs: map[string]bool{}}
	switch Detect(head[:n]) {
	case TarGz:
		err = u.tarGz(io.NewSectionReader(r, 0, size))
	case Zip:
		err = u.zip(r, size)
	default:
		return invalid("not a .tar.gz or .zip archive")
	}
	if err != nil {
		return err
	}
	return u.stripTop()
}

// unpacker holds the state of one Unpack.
type unpacker struct {
	root  *os.Root
	lim   Limits
	files int
	bytes int64
	seen  map[string]bool // cleaned names of entries written
	dirs  map[string]bool // every directory created, explicit or implied
	tops  map[string]bool // first components of all entries
	// rootFiles records whether a non-directory entry sits at the root.
	rootFiles bool
}

// cleanName validates a raw entry name and returns it cleaned ("" for the root itself).
func cleanName(raw string) (string, error) {
	switch {
	case raw == "":
		return "", invalid("an entry has an empty name")
	case !utf8.ValidString(raw):
		return "", invalid("entry %q: name is not valid UTF-8", raw)
	case strings.ContainsRune(raw, 0):
		return "", invalid("entry %q: name contains a NUL byte", raw)
	case strings.Contains(raw, `\`):
		return "", invalid("entry %q: name contains a backslash", raw)
	case strings.HasPrefix(raw, "/"):
		return "", invalid("entry %q: absolute path", raw)
	}
	for _, part := range strings.Split(raw, "/") {
		if part == ".." {
			return "", invalid("entry %q: `..` path component", raw)
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	if !fs.ValidPath(name) || !filepath.IsLocal(name) {
		return "", invalid("entry %q: path escapes the destination", raw)
	}
	return name, nil
}

// begin validates one entry and accounts for it; it returns the cleaned name ("" for a root
// entry, which is skipped).
func (u *unpacker) begin(raw string, dir bool) (string, error) {
	name, err := cleanName(raw)
	if err != nil || name == "" {
		return name, err
	}
	if u.seen[name] {
		return "", invalid("entry %q: duplicate entry", raw)
	}
	if !dir && u.dirs[name] {
		return "", invalid("entry %q: a file where the archive has a directory", raw)
	}
	u.files++
	if u.files > u.lim.MaxFiles {
		return "", invalid("entry %q: more than %d entries", raw, u.lim.MaxFiles)
	}
	u.seen[name] = true
	if u.tops == nil {
		u.tops = map[string]bool{}
	}
	top, _, nested := strings.Cut(name, "/")
	u.tops[top] = true
	if !nested && !dir {
		u.rootFiles = true
	}
	return name, nil
}

// mkdirs creates name and its parents inside the root, refusing a parent that is a file.
func (u *unpacker) mkdirs(raw, name string) error {
	var parts []string
	for p := name; p != "." && !u.dirs[p]; p = path.Dir(p) {
		parts = append(parts, p)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if u.seen[p] && !u.dirs[p] && p != name {
			return invalid("entry %q: its parent %q is a file", raw, p)
		}
		if err := u.root.Mkdir(p, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return invalid("entry %q: %q already exists as a file", raw, p)
			}
			return err
		}
		u.dirs[p] = true
	}
	return nil
}

func (u *unpacker) dir(raw string) error {
	name, err := u.begin(raw, true)
	if err != nil || name == "" {
		return err
	}
	return u.mkdirs(raw, name)
}

func (u *unpacker) file(raw string, mode fs.FileMode, body io.Reader) error {
	name, err := u.begin(raw, false)
	if err != nil {
		return err
	}
	if name == "" {
		return invalid("entry %q: a file cannot replace the destination folder", raw)
	}
	if dir := path.Dir(name); dir != "." {
		if err := u.mkdirs(raw, dir); err != nil {
			return err
		}
	}
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return invalid("entry %q: duplicate entry", raw)
		}
		return err
	}
	left := u.lim.MaxBytes - u.bytes
	n, err := io.Copy(f, io.LimitReader(body, left+1))
	u.bytes += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return invalid("entry %q: cannot be read: %v", raw, readErr(err))
	}
	if n > left {
		return invalid("entry %q: the archive unpacks to more than %d bytes", raw, u.lim.MaxBytes)
	}
	return nil
}

// readErr shortens decoder errors for messages.
func readErr(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated archive"
	}
	return err.Error()
}

func (u *unpacker) tarGz(r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return invalid("broken gzip stream: %v", readErr(err))
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return invalid("broken tar stream: %v", readErr(err))
		}
		if h == nil {
			return invalid("broken tar stream")
		}
		switch h.Typeflag {
		case tar.TypeXGlobalHeader:
			continue // metadata only (git archive writes the commit id there)
		case tar.TypeDir:
			err = u.dir(h.Name)
		case tar.TypeReg:
			err = u.file(h.Name, h.FileInfo().Mode(), tr)
		case tar.TypeSymlink, tar.TypeLink:
			if _, cerr := cleanName(h.Name); cerr != nil {
				return cerr
			}
			err = invalid("entry %q: links are not allowed", h.Name)
		default:
			if _, cerr := cleanName(h.Name); cerr != nil {
				return cerr
			}
			err = invalid("entry %q: only regular files and directories are allowed", h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) zip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return invalid("broken zip archive: %v", readErr(err))
	}
	if zr == nil {
		return invalid("broken zip archive")
	}
	if len(zr.File) > u.lim.MaxFiles {
		// Refuse before writing anything; the central directory lists every entry.
		return invalid("entry %q: more than %d entries", zr.File[u.lim.MaxFiles].Name, u.lim.MaxFiles)
	}
	for _, f := range zr.File {
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = u.dir(f.Name)
		case mode.IsRegular():
			err = u.zipFile(f)
		case mode&fs.ModeSymlink != 0:
			if _, cerr := cleanName(f.Name); cerr != nil {
				return cerr
			}
			err = invalid("entry %q: links are not allowed", f.Name)
		default:
			if _, cerr := cleanName(f.Name); cerr != nil {
				return cerr
			}
			err = invalid("entry %q: only regular files and directories are allowed", f.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (u *unpacker) zipFile(f *zip.File) error {
	if strings.HasSuffix(f.Name, "/") {
		// A name ending in a slash is a directory to every other tool: refuse the ambiguity.
		return invalid("entry %q: a file whose name ends with a slash", f.Name)
	}
	rc, err := f.Open()
	if err != nil {
		if _, cerr := cleanName(f.Name); cerr != nil {
			return cerr
		}
		return invalid("entry %q: cannot be read: %v", f.Name, readErr(err))
	}
	defer rc.Close()
	return u.file(f.Name, f.Mode(), rc)
}

// stripTop moves the content of a single top folder up into the root when every entry lies
// under it and no plugin.json sits at the root.
func (u *unpacker) stripTop() error {
	if len(u.tops) != 1 || u.rootFiles {
		return nil
	}
	var top string
	for t := range u.tops {
		top = t
	}
	if _, err := u.root.Lstat(ManifestName); err == nil {
		return nil
	}
	children, err := fs.ReadDir(u.root.FS(), top)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, c := range children {
		names[c.Name()] = true
	}
	// Move the top folder aside under a name none of its children has, then lift its children.
	tmp := ".unpack-top"
	for i := 0; names[tmp] || tmp == top; i++ {
		tmp = fmt.Sprintf(".unpack-top%d", i)
	}
	if err := u.root.Rename(top, tmp); err != nil {
		return err
	}
	for _, c := range children {
		if err := u.root.Rename(tmp+"/"+c.Name(), c.Name()); err != nil {
			return err
		}
	}
	return u.root.Remove(tmp)
}

// empty removes everything inside the root.
func empty(root *os.Root) error {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, root.RemoveAll(e.Name()))
	}
	return errors.Join(errs...)
}
