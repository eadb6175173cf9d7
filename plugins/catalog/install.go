package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/plugins/archive"
)

// RecordName is the file the Installer writes inside every plugin folder it installs: which
// package and version the folder holds and what that version requires. It is written before
// the folder is renamed into place, so it is always consistent with the folder's content.
const RecordName = ".svc-package.json"

// StagingName is the folder inside the plugins directory where installs, updates and
// uninstalls prepare their work. Plugin loaders skip it (it starts with a dot).
const StagingName = ".staging"

// Record is the content of RecordName.
type Record struct {
	Package  string   `json:"package"`
	Version  string   `json:"version"`
	SHA256   string   `json:"sha256"`
	URL      string   `json:"url"`
	Requires []string `json:"requires,omitempty"`
}

// InstallerOptions configure an Installer.
type InstallerOptions struct {
	// Check validates an unpacked package before it is put in place (the server passes its
	// manifest loader). A non-nil error refuses the install or update; an error that belongs
	// to no svcerr category is reported as svcerr.ErrInvalid. Nil requires a regular
	// plugin.json at the root of the package.
	Check func(dir string) error
	// Limits bound what an archive may unpack to.
	Limits archive.Limits
	// IsInstalled reports whether a required package is present. Nil means "has a folder
	// <plugins dir>/<vendor>/<name>"; the server may also count plugins it loaded from
	// elsewhere.
	IsInstalled func(pkg string) bool
}

// Installer installs, updates and uninstalls catalog packages under a plugins directory; the
// package vendor/name lives in <dir>/vendor/name. Every change is prepared in <dir>/.staging
// (same file system) and made visible with one rename, so a plugin folder is always either the
// old or the new version, never a mix. Operations on the same package are serialised;
// operations on different packages run concurrently. It is safe for concurrent use.
//
// Requirements: an Installer never installs a package's requirements on its own. Install and
// Update refuse a version whose requirements are not installed with a *MissingError (matching
// svcerr.ErrConflict) that lists them, so the caller can say which packages to install first;
// Uninstall refuses a package another installed package requires.
type Installer struct {
	dir     string
	catalog *Client
	opts    InstallerOptions
	rename  func(oldpath, newpath string) error // os.Rename; tests inject failures

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewInstaller returns an Installer for the plugins directory dir (created when missing) that
// takes packages from catalog.
//
// catalog may be nil when no catalog is configured: Installed and Uninstall still work, Install
// and Update fail with svcerr.ErrUnavailable.
func NewInstaller(dir string, catalog *Client, opts InstallerOptions) (*Installer, error) {
	if dir == "" {
		return nil, errors.New("plugin installer: a plugins directory is required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if opts.Check == nil {
		opts.Check = requireManifest
	}
	in := &Installer{dir: dir, catalog: catalog, opts: opts, rename: os.Rename, locks: map[string]*sync.Mutex{}}
	if in.opts.IsInstalled == nil {
		in.opts.IsInstalled = func(pkg string) bool {
			st, err := os.Stat(in.Dir(pkg))
			return err == nil && st.IsDir()
		}
	}
	return in, nil
}

func requireManifest(dir string) error {
	st, err := os.Lstat(filepath.Join(dir, archive.ManifestName))
	if err != nil || !st.Mode().IsRegular() {
		return svcerr.New(svcerr.ErrInvalid, "the package has no %s at its root", archive.ManifestName)
	}
	return nil
}

// Dir returns the folder of package pkg (which must be a valid package name).
func (in *Installer) Dir(pkg string) string {
	vendor, name, _ := strings.Cut(pkg, "/")
	return filepath.Join(in.dir, vendor, name)
}

// MissingError refuses a version whose requirements are not installed.
type MissingError struct {
	Package, Version string
	Missing          []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s %s requires %s, which must be installed first", e.Package, e.Version, strings.Join(e.Missing, ", "))
}

// Unwrap makes the error match svcerr.ErrConflict with its own text as the public message.
func (e *MissingError) Unwrap() error { return &svcerr.Error{Kind: svcerr.ErrConflict, Msg: e.Error()} }

// Result describes a completed install or update.
type Result struct {
	Package string
	Version string
	Dir     string
	// Requires lists the packages this version requires (all installed).
	Requires []string
	// Previous is the version an update replaced ("" for an install, or when the previous
	// folder carried no record).
	Previous string
	// Unchanged is true when an update found the requested version already installed.
	Unchanged bool
}

func (in *Installer) lock(pkg string) func() {
	in.mu.Lock()
	l := in.locks[pkg]
	if l == nil {
		l = &sync.Mutex{}
		in.locks[pkg] = l
	}
	in.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func checkName(pkg string) error {
	if !ValidPackage(pkg) {
		return svcerr.New(svcerr.ErrInvalid, "%q is not a package name (vendor/name)", pkg)
	}
	return nil
}

// Installed returns the record of an installed package. Errors: svcerr.ErrInvalid for a bad
// name, svcerr.ErrNotFound when the package has no folder; a folder without a readable record
// (installed by hand) returns a Record with only Package set.
func (in *Installer) Installed(pkg string) (Record, error) {
	if err := checkName(pkg); err != nil {
		return Record{}, err
	}
	dir := in.Dir(pkg)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Record{}, svcerr.New(svcerr.ErrNotFound, "plugin package %s is not installed", pkg)
	}
	return readRecord(dir, pkg), nil
}

func readRecord(dir, pkg string) Record {
	var r Record
	data, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil || json.Unmarshal(data, &r) != nil || r.Package != pkg {
		return Record{Package: pkg}
	}
	return r
}

// Install installs version (empty means the latest) of pkg from the catalog. Errors:
// svcerr.ErrInvalid for a bad name, a refused archive (checksum mismatch, unsafe entry, size)
// or a failing Check; svcerr.ErrConflict when pkg is already installed or a requirement is
// missing (*MissingError); svcerr.ErrNotFound when the catalog has no such package or version;
// svcerr.ErrUnavailable when the catalog or the archive cannot be downloaded. On any error the
// plugins directory is as it was.
func (in *Installer) Install(ctx context.Context, pkg, version string) (*Result, error) {
	if err := checkName(pkg); err != nil {
		return nil, err
	}
	defer in.lock(pkg)()
	target := in.Dir(pkg)
	if _, err := os.Lstat(target); err == nil {
		return nil, svcerr.New(svcerr.ErrConflict, "plugin package %s is already installed; update it instead", pkg)
	}
	p, v, err := in.resolve(ctx, pkg, version)
	if err != nil {
		return nil, err
	}
	res, staged, cleanup, err := in.prepare(ctx, p, v)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return nil, err
	}
	if err := in.rename(staged, target); err != nil {
		return nil, fmt.Errorf("put %s in place: %w", pkg, err)
	}
	return res, nil
}

// Update replaces the installed pkg by version (empty means the latest). The new version is
// unpacked and checked beside the old one; the old folder is renamed to a backup, the new one
// renamed into place, and the backup removed only then (a failed second rename puts the backup
// back). Requesting the installed version returns Unchanged without downloading. Errors are
// those of Install, with svcerr.ErrNotFound when pkg is not installed instead of ErrConflict
// when it is; on any error the installed version stays in place.
func (in *Installer) Update(ctx context.Context, pkg, version string) (*Result, error) {
	if err := checkName(pkg); err != nil {
		return nil, err
	}
	defer in.lock(pkg)()
	target := in.Dir(pkg)
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return nil, svcerr.New(svcerr.ErrNotFound, "plugin package %s is not installed", pkg)
	}
	prev := readRecord(target, pkg).Version
	p, v, err := in.resolve(ctx, pkg, version)
	if err != nil {
		return nil, err
	}
	if prev != "" && CompareVersions(v.Version, prev) == 0 {
		return &Result{Package: pkg, Version: prev, Dir: target, Requires: v.Requires, Previous: prev, Unchanged: true}, nil
	}
	res, staged, cleanup, err := in.prepare(ctx, p, v)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	res.Previous = prev
	backup := filepath.Join(filepath.Dir(staged), "old")
	if err := in.rename(target, backup); err != nil {
		return nil, fmt.Errorf("move %s aside: %w", pkg, err)
	}
	if err := in.rename(staged, target); err != nil {
		if rerr := in.rename(backup, target); rerr != nil {
			return nil, fmt.Errorf("put %s in place: %w; restoring the previous version failed too (it is in %s): %v", pkg, err, backup, rerr)
		}
		return nil, fmt.Errorf("put %s in place (previous version restored): %w", pkg, err)
	}
	return res, nil
}

// Uninstall removes pkg: its folder is renamed into the staging area (so it disappears at
// once) and then deleted. Errors: svcerr.ErrInvalid for a bad name; svcerr.ErrNotFound when pkg
// is not installed; svcerr.ErrConflict when another installed package's record requires it.
func (in *Installer) Uninstall(ctx context.Context, pkg string) error {
	if err := checkName(pkg); err != nil {
		return err
	}
	defer in.lock(pkg)()
	target := in.Dir(pkg)
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return svcerr.New(svcerr.ErrNotFound, "plugin package %s is not installed", pkg)
	}
	if deps := in.dependents(pkg); len(deps) > 0 {
		return svcerr.New(svcerr.ErrConflict, "plugin package %s is required by %s; uninstall those first", pkg, strings.Join(deps, ", "))
	}
	work, err := in.workDir(pkg)
	if err != nil {
		return err
	}
	if err := in.rename(target, filepath.Join(work, "removed")); err != nil {
		_ = os.RemoveAll(work)
		return fmt.Errorf("move %s aside: %w", pkg, err)
	}
	// The package is gone once renamed; a leftover in the staging area is removed by
	// CleanStaging and does not make the uninstall fail.
	_ = os.RemoveAll(work)
	return nil
}

// dependents lists installed packages whose record requires pkg.
func (in *Installer) dependents(pkg string) []string {
	records, _ := filepath.Glob(filepath.Join(in.dir, "*", "*", RecordName))
	var deps []string
	for _, file := range records {
		dir := filepath.Dir(file)
		other := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		if other == pkg || !ValidPackage(other) {
			continue
		}
		for _, r := range readRecord(dir, other).Requires {
			if r == pkg {
				deps = append(deps, other)
			}
		}
	}
	sort.Strings(deps)
	return deps
}

// CleanStaging removes what interrupted operations left in the staging area. Call it at
// startup, before any operation runs.
func (in *Installer) CleanStaging() error {
	return os.RemoveAll(filepath.Join(in.dir, StagingName))
}

func (in *Installer) workDir(pkg string) (string, error) {
	staging := filepath.Join(in.dir, StagingName)
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(staging, strings.ReplaceAll(pkg, "/", "+")+"-*")
}

// resolve finds pkg and version in the catalog.
func (in *Installer) resolve(ctx context.Context, pkg, version string) (Package, Version, error) {
	if in.catalog == nil {
		return Package{}, Version{}, svcerr.New(svcerr.ErrUnavailable, "no plugin catalog is configured")
	}
	snap, err := in.catalog.Index(ctx)
	if err != nil {
		return Package{}, Version{}, err
	}
	p, err := snap.Lookup(pkg)
	if err != nil {
		return Package{}, Version{}, err
	}
	v, err := p.Find(version)
	return p, v, err
}

// prepare checks requirements, downloads, verifies, unpacks and checks a version in
// a fresh staging folder, and writes its record. It returns the staged folder and a cleanup
// that removes the staging folder (and whatever is left in it) and the downloaded archive.
func (in *Installer) prepare(ctx context.Context, p Package, v Version) (res *Result, staged string, cleanup func(), err error) {
	cleanup = func() {}
	pkg := p.Package
	var missing []string
	for _, r := range v.Requires {
		if !in.opts.IsInstalled(r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return nil, "", cleanup, &MissingError{Package: pkg, Version: v.Version, Missing: missing}
	}
	file, err := in.catalog.Fetch(ctx, p, v.Version)
	if err != nil {
		return nil, "", cleanup, err
	}
	work, err := in.workDir(pkg)
	if err != nil {
		_ = os.Remove(file)
		return nil, "", cleanup, err
	}
	cleanup = func() {
		_ = os.Remove(file)
		_ = os.RemoveAll(work)
	}
	staged = filepath.Join(work, "new")
	if err := os.Mkdir(staged, 0o755); err != nil {
		return nil, "", cleanup, err
	}
	if err := archive.UnpackFile(file, staged, in.opts.Limits); err != nil {
		return nil, "", cleanup, fmt.Errorf("%s %s: %w", pkg, v.Version, err)
	}
	if err := in.opts.Check(staged); err != nil {
		if _, _, ok := svcerr.Public(err); ok {
			return nil, "", cleanup, fmt.Errorf("%s %s: %w", pkg, v.Version, err)
		}
		return nil, "", cleanup, svcerr.New(svcerr.ErrInvalid, "plugin package %s %s is refused: %v", pkg, v.Version, err)
	}
	data, err := json.MarshalIndent(Record{Package: pkg, Version: v.Version, SHA256: v.SHA256, URL: v.URL, Requires: v.Requires}, "", "  ")
	if err == nil {
		err = writeAtomic(filepath.Join(staged, RecordName), data)
	}
	if err != nil {
		return nil, "", cleanup, err
	}
	return &Result{Package: pkg, Version: v.Version, Dir: in.Dir(pkg), Requires: v.Requires}, staged, cleanup, nil
}
