package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	at "github.com/agentsvc/svc/plugins/archive/archivetest"
)

func plugin(version string, extra ...at.Entry) []byte {
	return at.TarGz(append([]at.Entry{
		{Name: "weather-" + version + "/"},
		{Name: "weather-" + version + "/plugin.json", Body: `{"version":"` + version + `"}`},
	}, extra...)...)
}

func newInstaller(t *testing.T, s *server, opts InstallerOptions) (*Installer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	in, err := NewInstaller(dir, newClient(t, s, testkit.NewClock(time.Now()), func(o *Options) { o.TTL = 0 }), opts)
	if err != nil {
		t.Fatal(err)
	}
	return in, dir
}

// snapshot lists every path under dir with file contents, skipping the (empty) staging folder.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == StagingName {
			if entries, _ := os.ReadDir(p); len(entries) != 0 {
				t.Errorf("staging area not cleaned: %v", entries)
			}
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel += "=" + string(b)
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func readManifest(t *testing.T, in *Installer, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(in.Dir(pkg), "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstallUpdateUninstall(t *testing.T) {
	s := newServer(t)
	s.publish(t,
		pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0", at.Entry{Name: "weather-1.0.0/old.txt", Body: "old"})},
		pkgVersion{pkg: "acme/weather", version: "1.1.0", archive: plugin("1.1.0")},
	)
	var checked []string
	in, dir := newInstaller(t, s, InstallerOptions{Check: func(d string) error {
		checked = append(checked, d)
		_, err := os.Stat(filepath.Join(d, "plugin.json"))
		return err
	}})

	res, err := in.Install(ctx, "acme/weather", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "1.0.0" || res.Dir != filepath.Join(dir, "acme", "weather") {
		t.Fatalf("Install = %+v", res)
	}
	if len(checked) != 1 || !strings.HasPrefix(checked[0], filepath.Join(dir, StagingName)) {
		t.Fatalf("Check ran on %v, want one staging folder", checked)
	}
	if got := readManifest(t, in, "acme/weather"); got != `{"version":"1.0.0"}` {
		t.Fatalf("manifest = %s", got)
	}
	if rec, err := in.Installed("acme/weather"); err != nil || rec.Version != "1.0.0" || rec.SHA256 == "" {
		t.Fatalf("Installed = %+v, %v", rec, err)
	}
	if _, err := in.Install(ctx, "acme/weather", "1.1.0"); !isKind(err, errConflict) {
		t.Fatalf("second Install: %v, want ErrConflict", err)
	}

	res, err = in.Update(ctx, "acme/weather", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "1.1.0" || res.Previous != "1.0.0" || res.Unchanged {
		t.Fatalf("Update = %+v", res)
	}
	if got := readManifest(t, in, "acme/weather"); got != `{"version":"1.1.0"}` {
		t.Fatalf("manifest after update = %s", got)
	}
	if _, err := os.Stat(filepath.Join(in.Dir("acme/weather"), "old.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file of the previous version survived the update: %v", err)
	}
	res, err = in.Update(ctx, "acme/weather", "1.1")
	if err != nil || !res.Unchanged {
		t.Fatalf("Update to the installed version = %+v, %v", res, err)
	}
	if want := "acme\nacme/weather\nacme/weather/.svc-package.json="; !strings.HasPrefix(snapshot(t, dir), want) {
		t.Fatalf("plugins dir:\n%s", snapshot(t, dir))
	}

	if err := in.Uninstall(ctx, "acme/weather"); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, dir); got != "acme" {
		t.Fatalf("after uninstall:\n%s", got)
	}
	if err := in.Uninstall(ctx, "acme/weather"); !isKind(err, errNotFound) {
		t.Fatalf("second Uninstall: %v", err)
	}
	if _, err := in.Update(ctx, "acme/weather", ""); !isKind(err, errNotFound) {
		t.Fatalf("Update of a missing package: %v", err)
	}
}

// TestFailedInstallChangesNothing proves that refused archives and failing checks leave the
// plugins directory exactly as it was, for a first install and for an update.
func TestFailedInstallChangesNothing(t *testing.T) {
	s := newServer(t)
	s.publish(t,
		pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0")},
		pkgVersion{pkg: "acme/weather", version: "2.0.0", archive: plugin("2.0.0"), sha: strings.Repeat("0", 64)},
		pkgVersion{pkg: "acme/weather", version: "3.0.0", archive: at.TarGz(
			at.Entry{Name: "plugin.json", Body: "{}"}, at.Entry{Name: "../escaped.txt", Body: "x"})},
		pkgVersion{pkg: "acme/weather", version: "4.0.0", archive: plugin("4.0.0", at.Entry{Name: "weather-4.0.0/REFUSE"})},
		pkgVersion{pkg: "acme/weather", version: "5.0.0", archive: at.Zip(at.Entry{Name: "README", Body: "no manifest"})},
		pkgVersion{pkg: "acme/weather", version: "6.0.0", archive: plugin("6.0.0"), requires: []string{"acme/geo", "acme/maps"}},
	)
	check := func(d string) error {
		if _, err := os.Stat(filepath.Join(d, "REFUSE")); err == nil {
			return errors.New("manifest rule broken")
		}
		return requireManifest(d)
	}
	cases := []struct {
		version string
		kind    error
		want    string
	}{
		{"2.0.0", errInvalid, "checksum mismatch"},
		{"3.0.0", errInvalid, `"../escaped.txt": ` + "`..`"},
		{"4.0.0", errInvalid, "acme/weather 4.0.0 is refused: manifest rule broken"},
		{"6.0.0", errConflict, "acme/weather 6.0.0 requires acme/geo, acme/maps, which must be installed first"},
	}
	for _, installed := range []bool{false, true} {
		in, dir := newInstaller(t, s, InstallerOptions{Check: check})
		if installed {
			if _, err := in.Install(ctx, "acme/weather", "1.0.0"); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, dir)
		op := in.Install
		if installed {
			op = in.Update
		}
		for _, c := range append(cases, struct {
			version string
			kind    error
			want    string
		}{"5.0.0", errInvalid, "no plugin.json"}) {
			if c.version == "5.0.0" {
				in.opts.Check = requireManifest
			}
			_, err := op(ctx, "acme/weather", c.version)
			if !isKind(err, c.kind) || !strings.Contains(publicMsg(err), c.want) {
				t.Errorf("installed=%v version %s: err = %v (%q), want %v containing %q", installed, c.version, err, publicMsg(err), c.kind, c.want)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("installed=%v version %s changed the plugins dir:\n%s\nwas:\n%s", installed, c.version, after, before)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped.txt")); err == nil {
				t.Fatalf("an archive wrote outside the plugins dir")
			}
		}
		var missing *MissingError
		if _, err := op(ctx, "acme/weather", "6.0.0"); !errors.As(err, &missing) || len(missing.Missing) != 2 {
			t.Errorf("missing requirements not reported: %v", err)
		}
		in.opts.Check = check
	}
}

func TestInstallUnknown(t *testing.T) {
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0")})
	in, dir := newInstaller(t, s, InstallerOptions{})
	for _, c := range []struct{ pkg, version string }{{"acme/nothing", ""}, {"acme/weather", "7.0.0"}} {
		if _, err := in.Install(ctx, c.pkg, c.version); !isKind(err, errNotFound) {
			t.Errorf("Install(%s %s): %v, want ErrNotFound", c.pkg, c.version, err)
		}
	}
	for _, bad := range []string{"../x", "acme", "acme/../../x", "Acme/x"} {
		if _, err := in.Install(ctx, bad, ""); !isKind(err, errInvalid) {
			t.Errorf("Install(%q): %v, want ErrInvalid", bad, err)
		}
		if err := in.Uninstall(ctx, bad); !isKind(err, errInvalid) {
			t.Errorf("Uninstall(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if got := snapshot(t, dir); got != "" {
		t.Fatalf("plugins dir:\n%s", got)
	}
	s.down.Store(true)
	if _, err := in.Install(ctx, "acme/weather", ""); !isKind(err, errUnavailable) {
		t.Fatalf("catalog down: %v", err)
	}
}

func TestRequirements(t *testing.T) {
	s := newServer(t)
	s.publish(t,
		pkgVersion{pkg: "acme/geo", version: "1.0.0", archive: plugin("1.0.0")},
		pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0"), requires: []string{"acme/geo"}},
	)
	in, _ := newInstaller(t, s, InstallerOptions{})
	if _, err := in.Install(ctx, "acme/weather", ""); !isKind(err, errConflict) {
		t.Fatalf("without acme/geo: %v", err)
	}
	if _, err := os.Stat(in.Dir("acme/geo")); err == nil {
		t.Fatal("a requirement was installed on its own")
	}
	if _, err := in.Install(ctx, "acme/geo", ""); err != nil {
		t.Fatal(err)
	}
	res, err := in.Install(ctx, "acme/weather", "")
	if err != nil || len(res.Requires) != 1 {
		t.Fatalf("with acme/geo: %+v, %v", res, err)
	}
	if err := in.Uninstall(ctx, "acme/geo"); !isKind(err, errConflict) || !strings.Contains(publicMsg(err), "required by acme/weather") {
		t.Fatalf("Uninstall of a requirement: %v", err)
	}
	if err := in.Uninstall(ctx, "acme/weather"); err != nil {
		t.Fatal(err)
	}
	if err := in.Uninstall(ctx, "acme/geo"); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateRollsBack(t *testing.T) {
	s := newServer(t)
	s.publish(t,
		pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0")},
		pkgVersion{pkg: "acme/weather", version: "1.1.0", archive: plugin("1.1.0")},
	)
	in, dir := newInstaller(t, s, InstallerOptions{})
	if _, err := in.Install(ctx, "acme/weather", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	calls := 0
	in.rename = func(oldpath, newpath string) error {
		calls++
		if calls == 2 { // the new version into place
			return errors.New("injected rename failure")
		}
		return os.Rename(oldpath, newpath)
	}
	if _, err := in.Update(ctx, "acme/weather", ""); err == nil || !strings.Contains(err.Error(), "previous version restored") {
		t.Fatalf("Update = %v", err)
	}
	if calls != 3 {
		t.Fatalf("%d renames, want aside, into place, back", calls)
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("after a failed swap:\n%s\nwant:\n%s", after, before)
	}
}

func TestSamePackageSerialised(t *testing.T) {
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: plugin("1.0.0")},
		pkgVersion{pkg: "acme/other", version: "1.0.0", archive: plugin("1.0.0")})
	var running, most atomic.Int32
	in, _ := newInstaller(t, s, InstallerOptions{Check: func(d string) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		return requireManifest(d)
	}})
	var wg sync.WaitGroup
	var ok, conflict atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := in.Install(ctx, "acme/weather", "")
			switch {
			case err == nil:
				ok.Add(1)
			case isKind(err, errConflict):
				conflict.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 3 || most.Load() != 1 {
		t.Fatalf("%d installed, %d conflicts, at most %d checks at once", ok.Load(), conflict.Load(), most.Load())
	}
	// Different packages do not wait for each other.
	most.Store(0)
	_ = in.Uninstall(ctx, "acme/weather")
	for _, pkg := range []string{"acme/weather", "acme/other"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := in.Install(ctx, pkg, ""); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most.Load() != 2 {
		t.Logf("different packages ran %d checks at once (timing dependent, informational)", most.Load())
	}
}

func TestCleanStaging(t *testing.T) {
	s := newServer(t)
	in, dir := newInstaller(t, s, InstallerOptions{})
	left := filepath.Join(dir, StagingName, "acme+x-123", "new")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := in.CleanStaging(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StagingName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging left: %v", err)
	}
}
