package catalog

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/testkit"
	at "github.com/agentsvc/svc/plugins/archive/archivetest"
)

var ctx = context.Background()

var weather = at.TarGz(at.Entry{Name: "plugin.json", Body: `{"slug":"weather"}`})

func TestIndexCacheAndTTL(t *testing.T) {
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
	clk := testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newClient(t, s, clk, nil)

	snap, err := c.Index(ctx)
	if err != nil || snap.Stale || !snap.FetchedAt.Equal(clk.Now()) || len(snap.Packages) != 1 {
		t.Fatalf("first Index = %+v, %v", snap, err)
	}
	if s.hits.Load() != 1 {
		t.Fatalf("hits = %d", s.hits.Load())
	}
	// Fresh: served from the cache, even if the catalog changed meanwhile.
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather},
		pkgVersion{pkg: "acme/geo", version: "0.1.0", archive: weather})
	clk.Advance(59 * time.Minute)
	snap, err = c.Index(ctx)
	if err != nil || len(snap.Packages) != 1 || s.hits.Load() != 1 {
		t.Fatalf("within the TTL: %d packages, %d hits, %v", len(snap.Packages), s.hits.Load(), err)
	}
	// A new Client on the same cache directory reads the disk cache.
	c2 := newClient(t, s, clk, func(o *Options) { o.CacheDir = c.opts.CacheDir })
	if snap, err := c2.Index(ctx); err != nil || len(snap.Packages) != 1 || s.hits.Load() != 1 {
		t.Fatalf("second client: %v, hits %d", err, s.hits.Load())
	}
	// Expired: fetched again.
	clk.Advance(2 * time.Minute)
	snap, err = c.Index(ctx)
	if err != nil || len(snap.Packages) != 2 || snap.Stale || s.hits.Load() != 2 {
		t.Fatalf("after the TTL: %+v, %v, hits %d", snap, err, s.hits.Load())
	}
	// Nothing but the cache file in the cache directory (the temporary file was renamed).
	entries, _ := os.ReadDir(c.opts.CacheDir)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "catalog-") {
		t.Fatalf("cache dir holds %v", entries)
	}
}

func TestIndexServesStaleCache(t *testing.T) {
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testkit.NewClock(t0)
	c := newClient(t, s, clk, nil)
	if _, err := c.Index(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	s.down.Store(true)
	snap, err := c.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Stale || snap.FetchErr == nil || !snap.FetchedAt.Equal(t0) || len(snap.Packages) != 1 {
		t.Fatalf("stale snapshot = %+v", snap)
	}
	if !strings.Contains(snap.FetchErr.Error(), "503") {
		t.Fatalf("FetchErr = %v", snap.FetchErr)
	}
	// An invalid document is an outage too: the cached copy stays.
	s.down.Store(false)
	s.mu.Lock()
	s.index = []byte(`{"packages":[{"package":"BAD"}]}`)
	s.mu.Unlock()
	if snap, err := c.Index(ctx); err != nil || !snap.Stale || !isKind(snap.FetchErr, errInvalid) {
		t.Fatalf("invalid document: %+v, %v", snap, err)
	}
	// Back up: fresh again.
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.1.0", archive: weather})
	if snap, err := c.Index(ctx); err != nil || snap.Stale || snap.Packages[0].Versions[0].Version != "1.1.0" {
		t.Fatalf("recovered: %+v, %v", snap, err)
	}
}

func TestIndexWithoutCache(t *testing.T) {
	s := newServer(t)
	clk := testkit.NewClock(time.Now())
	cases := map[string]struct {
		setup func()
		mod   func(*Options)
		want  string
	}{
		"down":        {func() { s.down.Store(true) }, nil, "answered HTTP 503"},
		"invalid":     {func() { s.index = []byte(`{"packages":[{"package":"x/y","versions":[]}]}`) }, nil, `"x/y": no versions`},
		"too big":     {func() { s.publish(t, pkgVersion{pkg: "acme/w", version: "1.0.0", archive: weather}) }, func(o *Options) { o.MaxIndexBytes = 10 }, "exceeds 10 bytes"},
		"refused":     {func() {}, func(o *Options) { o.HTTPClient = netguard.Client(5*time.Second, netguard.Options{}) }, "does not resolve to a public address"},
		"unreachable": {func() {}, func(o *Options) { o.URL = "http://127.0.0.1:1/index.json" }, "cannot be reached"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s.down.Store(false)
			s.mu.Lock()
			s.index = nil
			s.mu.Unlock()
			c.setup()
			cl := newClient(t, s, clk, c.mod)
			snap, err := cl.Index(ctx)
			if !isKind(err, errUnavailable) || snap != nil {
				t.Fatalf("Index = %v, %v; want ErrUnavailable", snap, err)
			}
			if msg := publicMsg(err); !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "the plugin catalog is unavailable") {
				t.Fatalf("message %q does not contain %q", msg, c.want)
			}
		})
	}
}

func TestIndexThroughNetguard(t *testing.T) {
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
	c := newClient(t, s, testkit.NewClock(time.Now()), func(o *Options) {
		o.HTTPClient = netguard.Client(5*time.Second, netguard.Options{AllowLoopback: true})
	})
	snap, err := c.Index(ctx)
	if err != nil || len(snap.Packages) != 1 {
		t.Fatalf("Index = %+v, %v", snap, err)
	}
	path, err := c.Fetch(ctx, snap.Packages[0], "")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path)
}

func TestNewRefuses(t *testing.T) {
	for name, o := range map[string]Options{
		"no url":    {HTTPClient: http.DefaultClient, CacheDir: "x"},
		"file url":  {URL: "file:///srv/index.json", HTTPClient: http.DefaultClient, CacheDir: "x"},
		"no client": {URL: "https://e.com/i.json", CacheDir: "x"},
		"no cache":  {URL: "https://e.com/i.json", HTTPClient: http.DefaultClient},
	} {
		if _, err := New(o); !isKind(err, errInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestFetch(t *testing.T) {
	s := newServer(t)
	tampered := append(bytes.Clone(weather), 0)
	s.publish(t,
		pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather},
		pkgVersion{pkg: "acme/weather", version: "1.1.0", archive: weather},
		pkgVersion{pkg: "acme/bad", version: "1.0.0", archive: tampered, sha: strings.Repeat("ab", 32)},
	)
	c := newClient(t, s, testkit.NewClock(time.Now()), nil)
	snap, err := c.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := snap.Lookup("acme/weather")
	bad, _ := snap.Lookup("acme/bad")

	path, err := c.Fetch(ctx, good, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, weather) {
		t.Fatalf("fetched %d bytes, %v", len(got), err)
	}
	if filepath.Dir(path) != c.opts.TempDir {
		t.Fatalf("archive written to %s", path)
	}
	_ = os.Remove(path)

	if _, err := c.Fetch(ctx, bad, "1.0.0"); !isKind(err, errInvalid) || !strings.Contains(publicMsg(err), "checksum mismatch for acme/bad 1.0.0") {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := c.Fetch(ctx, good, "9.9.9"); !isKind(err, errNotFound) {
		t.Fatalf("missing version: %v", err)
	}
	gone := good
	gone.Versions = []Version{{Version: "2.0.0", URL: s.URL + "/a/nothing", SHA256: good.Versions[0].SHA256}}
	if _, err := c.Fetch(ctx, gone, ""); !isKind(err, errUnavailable) || !strings.Contains(publicMsg(err), "404") {
		t.Fatalf("404: %v", err)
	}
	small := newClient(t, s, testkit.NewClock(time.Now()), func(o *Options) { o.MaxArchiveBytes = 16 })
	if _, err := small.Fetch(ctx, good, ""); !isKind(err, errInvalid) || !strings.Contains(publicMsg(err), "exceeds 16 bytes") {
		t.Fatalf("too large: %v", err)
	}
	for _, dir := range []string{c.opts.TempDir, small.opts.TempDir} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("refused downloads left %v in %s", entries, dir)
		}
	}
}
