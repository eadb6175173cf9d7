package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
)

// server is an httptest catalog: an index at /index.json and archives at /a/<name>.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	index    []byte
	sig      []byte // served at /index.json.sig when set
	archives map[string][]byte
	down     atomic.Bool // answer 503 to everything
	hits     atomic.Int64
}

func newServer(t *testing.T) *server {
	s := &server{archives: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.URL.Path == "/index.json" {
			_, _ = w.Write(s.index)
			return
		}
		if r.URL.Path == "/index.json"+SignatureSuffix && s.sig != nil {
			_, _ = w.Write(s.sig)
			return
		}
		if b, ok := s.archives[strings.TrimPrefix(r.URL.Path, "/a/")]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// pkgVersion describes one version to publish.
type pkgVersion struct {
	pkg, version string
	archive      []byte
	requires     []string
	sha          string // overrides the real digest (a tampered archive)
}

// publish serves an index listing vs and their archives.
func (s *server) publish(t *testing.T, vs ...pkgVersion) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ix Index
	byName := map[string]int{}
	for _, v := range vs {
		file := strings.ReplaceAll(v.pkg, "/", "-") + "-" + v.version + ".bin"
		s.archives[file] = v.archive
		digest := sha256.Sum256(v.archive)
		sha := hex.EncodeToString(digest[:])
		if v.sha != "" {
			sha = v.sha
		}
		i, ok := byName[v.pkg]
		if !ok {
			i = len(ix.Packages)
			byName[v.pkg] = i
			ix.Packages = append(ix.Packages, Package{Package: v.pkg, Name: v.pkg, Description: "test"})
		}
		ix.Packages[i].Versions = append(ix.Packages[i].Versions,
			Version{Version: v.version, URL: s.URL + "/a/" + file, SHA256: sha, Requires: v.requires})
	}
	b, err := json.Marshal(ix)
	if err != nil {
		t.Fatal(err)
	}
	s.index = b
}

func newClient(t *testing.T, s *server, clk *testkit.Clock, mod func(*Options)) *Client {
	t.Helper()
	opts := Options{
		URL: s.URL + "/index.json", HTTPClient: &http.Client{Timeout: 10 * time.Second},
		CacheDir: t.TempDir(), TTL: time.Hour, Now: clk.Now, TempDir: t.TempDir(),
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
