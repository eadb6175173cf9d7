package catalog

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
)

// recorder is a transport that records the host of every request it is asked to send and
// forwards only those to loopback: a request to any other host fails the test, so a refusal
// "before any connection" is checked, and no traffic leaves the machine.
type recorder struct {
	t     *testing.T
	mu    sync.Mutex
	hosts []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Hostname())
	r.mu.Unlock()
	if h := req.URL.Hostname(); h != "127.0.0.1" && h != "localhost" {
		r.t.Errorf("a request to %s was sent", req.URL)
		return nil, http.ErrUseLastResponse
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) sent(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hosts {
		if h == host {
			return true
		}
	}
	return false
}

// TestPlainHTTPRefused: a catalog, an archive or a redirect over plain http to a host that is
// not loopback is refused before any request is sent; http to 127.0.0.1 or localhost works
// (the development exception).
func TestPlainHTTPRefused(t *testing.T) {
	rec := &recorder{t: t}
	hc := &http.Client{Transport: rec, Timeout: 10 * time.Second}
	for _, u := range []string{"http://catalog.example/index.json", "http://10.0.0.1/index.json", "http://127.1/index.json",
		"http://[::ffff:127.0.0.1]/index.json", "http://localhost.example/index.json"} {
		_, err := New(Options{URL: u, HTTPClient: hc, CacheDir: t.TempDir()})
		if !isKind(err, errInvalid) || !strings.Contains(publicMsg(err), "must use https (plain http only on a loopback host") {
			t.Errorf("New(%s) = %v", u, err)
		}
	}
	if _, err := New(Options{URL: "https://catalog.example/index.json", HTTPClient: hc, CacheDir: t.TempDir()}); err != nil {
		t.Fatalf("https catalog: %v", err)
	}

	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
	clk := testkit.NewClock(time.Now())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		c := newClient(t, s, clk, func(o *Options) {
			o.HTTPClient = hc
			o.URL = strings.Replace(o.URL, "127.0.0.1", host, 1)
		})
		snap, err := c.Index(ctx)
		if err != nil || len(snap.Packages) != 1 {
			t.Fatalf("loopback http catalog via %s: %+v, %v", host, snap, err)
		}
	}

	// An archive over plain http: the index naming one is refused as a whole, and Fetch
	// refuses such a URL before sending anything.
	s.mu.Lock()
	s.index = []byte(`{"packages":[{"package":"acme/w","versions":[{"version":"1.0.0","url":"http://catalog.example/w.tar.gz","sha256":"` + strings.Repeat("ab", 32) + `"}]}]}`)
	s.mu.Unlock()
	c := newClient(t, s, clk, func(o *Options) { o.HTTPClient = hc })
	if _, err := c.Index(ctx); !isKind(err, errUnavailable) || !strings.Contains(publicMsg(err), "the archive's url must use https") {
		t.Fatalf("index with an http archive: %v", err)
	}
	p := Package{Package: "acme/w", Versions: []Version{{Version: "1.0.0", URL: "http://catalog.example/w.tar.gz", SHA256: strings.Repeat("ab", 32)}}}
	if _, err := c.Fetch(ctx, p, ""); !isKind(err, errInvalid) || !strings.Contains(publicMsg(err), "http://catalog.example/w.tar.gz must use https") {
		t.Fatalf("Fetch over http: %v", err)
	}

	// A redirect from the loopback catalog to plain http elsewhere is refused before it is
	// followed.
	redirect := newServer(t)
	redirect.Config.Handler = http.RedirectHandler("http://catalog.example/index.json?token=secret", http.StatusFound)
	c = newClient(t, redirect, clk, func(o *Options) { o.HTTPClient = hc })
	_, err := c.Index(ctx)
	if msg := publicMsg(err); !isKind(err, errUnavailable) || !strings.Contains(msg, "http://catalog.example/index.json must use https") || strings.Contains(msg, "secret") {
		t.Fatalf("redirect to http: %v", err)
	}
	if rec.sent("catalog.example") || rec.sent("10.0.0.1") {
		t.Fatalf("requests were sent to %v", rec.hosts)
	}
}

// signed publishes s's index with a detached signature by priv, as a publisher would.
func signed(s *server, priv ed25519.PrivateKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sig = []byte(base64.StdEncoding.EncodeToString(ed25519.Sign(priv, s.index)) + "\n")
}

// TestSignedCatalog: with a public key set, a catalog whose signature verifies is served and
// its archives install; an index altered after signing, one signed by another key, one without
// a signature and a garbled signature are refused (and with them every install), and a copy
// cached before the key was set is not served.
func TestSignedCatalog(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := ed25519.GenerateKey(nil)
	s := newServer(t)
	s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
	clk := testkit.NewClock(time.Now())

	// An unsigned catalog is accepted while no key is set, and cached.
	cacheDir := t.TempDir()
	unsigned := newClient(t, s, clk, func(o *Options) { o.CacheDir = cacheDir })
	if _, err := unsigned.Index(ctx); err != nil {
		t.Fatalf("unsigned catalog without a key: %v", err)
	}
	withKey := func(o *Options) { o.PublicKey = pub; o.CacheDir = cacheDir }

	// The key is set: the unsigned catalog (no .sig) is refused, the cached unsigned copy not
	// served.
	c := newClient(t, s, clk, withKey)
	if snap, err := c.Index(ctx); !isKind(err, errUnavailable) || !strings.Contains(publicMsg(err), "requires a signed catalog") {
		t.Fatalf("unsigned catalog with a key: %+v, %v", snap, err)
	}
	in, err := NewInstaller(t.TempDir(), c, InstallerOptions{Check: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Install(ctx, "acme/weather", ""); !isKind(err, errUnavailable) {
		t.Fatalf("install from an unsigned catalog: %v", err)
	}

	// Signed: accepted, and its archive's digest is the one the install checks.
	signed(s, priv)
	snap, err := c.Index(ctx)
	if err != nil || len(snap.Packages) != 1 || snap.Stale {
		t.Fatalf("signed catalog: %+v, %v", snap, err)
	}
	if res, err := in.Install(ctx, "acme/weather", ""); err != nil || res.Version != "1.0.0" {
		t.Fatalf("install from the signed catalog: %+v, %v", res, err)
	}
	// The cached signed copy is served by a new client with the key (within the TTL).
	hits := s.hits.Load()
	if snap, err := newClient(t, s, clk, withKey).Index(ctx); err != nil || len(snap.Packages) != 1 || s.hits.Load() != hits {
		t.Fatalf("cached signed copy: %+v, %v (hits %d → %d)", snap, err, hits, s.hits.Load())
	}

	refusals := map[string]struct {
		change func()
		want   string
	}{
		"tampered index": {func() {
			signed(s, priv)
			s.mu.Lock()
			s.index = []byte(strings.Replace(string(s.index), `"acme/weather"`, `"acme/weathex"`, 1))
			s.mu.Unlock()
		}, "does not verify"},
		"other key": {func() {
			s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
			signed(s, other)
		}, "does not verify"},
		"garbled":  {func() { s.mu.Lock(); s.sig = []byte("not base64!"); s.mu.Unlock() }, "not the base64 text"},
		"too long": {func() { s.mu.Lock(); s.sig = []byte(strings.Repeat("A", 2000)); s.mu.Unlock() }, "exceeds 1024 bytes"},
		"missing":  {func() { s.mu.Lock(); s.sig = nil; s.mu.Unlock() }, "answered HTTP 404"},
	}
	for name, r := range refusals {
		t.Run(name, func(t *testing.T) {
			s.publish(t, pkgVersion{pkg: "acme/weather", version: "1.0.0", archive: weather})
			r.change()
			fresh := newClient(t, s, clk, func(o *Options) { o.PublicKey = pub })
			if snap, err := fresh.Index(ctx); !isKind(err, errUnavailable) || !strings.Contains(publicMsg(err), r.want) {
				t.Fatalf("Index = %+v, %v; want ErrUnavailable saying %q", snap, err, r.want)
			}
		})
	}
}

func TestSignatureURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://c.example/index.json":         "https://c.example/index.json.sig",
		"https://c.example/v1/catalog?ch=beta": "https://c.example/v1/catalog.sig?ch=beta",
		"https://c.example":                    "https://c.example/.sig",
	} {
		got, err := signatureURL(in)
		if err != nil || got != want {
			t.Errorf("signatureURL(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
