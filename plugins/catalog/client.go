package catalog

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Defaults for zero Options fields.
const (
	DefaultMaxIndexBytes   = 8 << 20
	DefaultMaxArchiveBytes = 64 << 20
)

// Options configure a Client.
type Options struct {
	// URL is the catalog index (plugin_catalog_url): an absolute https URL, or http to a
	// loopback host (development).
	URL string
	// PublicKey, when set (plugin_catalog_public_key), makes the catalog signed: the index is
	// accepted only with a detached signature at the index URL + ".sig" that verifies with it
	// (see the package documentation); nil accepts unsigned catalogs.
	PublicKey ed25519.PublicKey
	// HTTPClient fetches the index and the archives. Required: the server passes a client
	// built by netguard.Client so every request (redirects included) passes the outbound
	// screen; tests pass a plain client for their 127.0.0.1 server.
	HTTPClient *http.Client
	// CacheDir holds the on-disk copy of the index; it is created when missing.
	CacheDir string
	// TTL is how long a cached index is served without asking the catalog
	// (plugin_catalog_ttl); 0 asks every time and keeps the cache for outages only.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxIndexBytes bounds the index document; 0 means DefaultMaxIndexBytes.
	MaxIndexBytes int64
	// MaxArchiveBytes bounds a downloaded archive; 0 means DefaultMaxArchiveBytes.
	MaxArchiveBytes int64
	// TempDir receives downloaded archives; "" means os.TempDir().
	TempDir string
}

// Client reads a plugin catalog and downloads its archives. It is safe for concurrent use.
type Client struct {
	opts  Options
	cache string // path of the cache file
	mu    sync.Mutex
}

// New checks opts and returns a Client. It returns an error matching svcerr.ErrInvalid when
// the URL is not an absolute http(s) URL, uses plain http to a host that is not loopback,
// HTTPClient is nil, CacheDir is empty or PublicKey has the wrong size.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin_catalog_url must be an absolute http or https URL")
	}
	if err := checkTransport(u); err != nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin_catalog_url: %v", err)
	}
	if opts.HTTPClient == nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin catalog: an HTTP client is required")
	}
	if opts.PublicKey != nil && len(opts.PublicKey) != ed25519.PublicKeySize {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin catalog: the public key must be %d bytes", ed25519.PublicKeySize)
	}
	opts.HTTPClient = transportChecked(opts.HTTPClient)
	if opts.CacheDir == "" {
		return nil, svcerr.New(svcerr.ErrInvalid, "plugin catalog: a cache directory is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxIndexBytes <= 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxArchiveBytes <= 0 {
		opts.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	sum := sha256.Sum256([]byte(opts.URL))
	return &Client{
		opts: opts,
		// One file per catalog URL: changing the setting never serves the old catalog.
		cache: filepath.Join(opts.CacheDir, "catalog-"+hex.EncodeToString(sum[:8])+".json"),
	}, nil
}

// Snapshot is the catalog as Index returns it.
type Snapshot struct {
	Index
	// FetchedAt is when the catalog answered with this index.
	FetchedAt time.Time
	// Stale is true when the catalog could not be read and an older cached copy is served.
	Stale bool
	// FetchErr is why the catalog could not be read when Stale (for the log).
	FetchErr error
	// CacheErr is a failure to write the on-disk cache; the index is fresh anyway (for the log).
	CacheErr error
}

// cacheFile is the on-disk form of a cached index: the exact bytes the catalog served (base64
// in the file), so their signature can be checked again when the cache is read.
type cacheFile struct {
	URL       string    `json:"url"`
	FetchedAt time.Time `json:"fetchedAt"`
	Raw       []byte    `json:"raw"`
	Signature string    `json:"signature,omitempty"`
}

// Index returns the catalog: the cached copy while it is younger than the TTL, otherwise a
// fresh copy from the catalog URL (written to the cache). When the catalog cannot be read (the
// network, an HTTP error status, a document that is too large or invalid) and a cached copy
// exists, that copy is served with Stale set and FetchErr saying why. With no cached copy the
// error matches svcerr.ErrUnavailable and its public message says why. Concurrent calls are
// serialised so an expired cache causes one fetch.
func (c *Client) Index(ctx context.Context) (*Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	cached := c.readCache()
	if cached != nil {
		age := now.Sub(cached.FetchedAt)
		if age >= 0 && age < c.opts.TTL {
			return cached, nil
		}
	}
	raw, sig, ix, err := c.fetchIndex(ctx)
	if err != nil {
		if cached != nil {
			cached.Stale = true
			cached.FetchErr = err
			return cached, nil
		}
		return nil, unavailable(err)
	}
	snap := &Snapshot{Index: *ix, FetchedAt: now}
	snap.CacheErr = c.writeCache(cacheFile{URL: c.opts.URL, FetchedAt: now, Raw: raw, Signature: string(sig)})
	return snap, nil
}

// unavailable wraps a fetch failure into ErrUnavailable. The public message keeps the reason
// when it is itself caller-safe (an HTTP status, an invalid document, a netguard refusal);
// transport errors, which may name internal addresses, stay in the error text for the log.
func unavailable(cause error) error {
	reason := "it cannot be reached"
	if msg, _, ok := svcerr.Public(cause); ok {
		reason = msg
	}
	return fmt.Errorf("%w: %v", svcerr.New(svcerr.ErrUnavailable, "the plugin catalog is unavailable: %s", reason), cause)
}

// readCache returns the cached index for this URL, or nil when there is none usable: a copy
// whose signature does not verify with the current key (one fetched before the key was set) is
// not.
func (c *Client) readCache() *Snapshot {
	data, err := os.ReadFile(c.cache)
	if err != nil {
		return nil
	}
	var cf cacheFile
	if json.Unmarshal(data, &cf) != nil || cf.URL != c.opts.URL {
		return nil
	}
	if c.opts.PublicKey != nil && verifySignature(c.opts.PublicKey, cf.Raw, []byte(cf.Signature)) != nil {
		return nil
	}
	ix, err := ParseIndex(cf.Raw)
	if err != nil {
		return nil
	}
	return &Snapshot{Index: *ix, FetchedAt: cf.FetchedAt}
}

// writeCache replaces the cache file atomically (temporary file in the same folder, then
// rename), so a reader never sees half a document.
func (c *Client) writeCache(cf cacheFile) error {
	data, err := json.Marshal(cf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.opts.CacheDir, 0o755); err != nil {
		return err
	}
	return writeAtomic(c.cache, data)
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// fetchIndex downloads the index, verifies its signature when a key is set (before parsing:
// an unsigned document is not read further) and parses it; it returns the raw document and its
// signature for the cache.
func (c *Client) fetchIndex(ctx context.Context) (raw, sig []byte, ix *Index, err error) {
	body, err := c.get(ctx, c.opts.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, c.opts.MaxIndexBytes+1))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read the plugin catalog: %w", err)
	}
	if int64(len(data)) > c.opts.MaxIndexBytes {
		return nil, nil, nil, svcerr.New(svcerr.ErrInvalid, "the catalog index exceeds %d bytes", c.opts.MaxIndexBytes)
	}
	if c.opts.PublicKey != nil {
		if sig, err = c.fetchSignature(ctx); err != nil {
			return nil, nil, nil, err
		}
		if err := verifySignature(c.opts.PublicKey, data, sig); err != nil {
			return nil, nil, nil, err
		}
	}
	if ix, err = ParseIndex(data); err != nil {
		return nil, nil, nil, err
	}
	return data, sig, ix, nil
}

// get sends a GET and returns the body of a 200 answer. A URL that is not https (nor http to a
// loopback host) is refused before any connection, and so is such a redirect (svcerr.ErrInvalid);
// a status other than 200 is an error matching svcerr.ErrUnavailable that names it.
func (c *Client) get(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, svcerr.New(svcerr.ErrInvalid, "bad URL %q", rawURL)
	}
	if err := checkTransport(req.URL); err != nil {
		return nil, err
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, svcerr.New(svcerr.ErrUnavailable, "%s answered HTTP %d", req.URL.Host, resp.StatusCode)
	}
	return resp.Body, nil
}

// Fetch downloads the archive of version (empty means the latest) of the package p to a new
// temporary file, verifies its SHA-256 against the catalog and returns the file's path; the
// caller removes the file. Errors: svcerr.ErrNotFound when p lists no such version;
// svcerr.ErrInvalid when the archive is larger than MaxArchiveBytes or its digest differs
// ("checksum mismatch"; nothing is kept), or when the URL is refused by the outbound screen;
// svcerr.ErrUnavailable when the download fails (network, HTTP status).
func (c *Client) Fetch(ctx context.Context, p Package, version string) (string, error) {
	v, err := p.Find(version)
	if err != nil {
		return "", err
	}
	path, err := c.download(ctx, p.Package, v)
	if err != nil {
		return "", err
	}
	return path, nil
}

func (c *Client) download(ctx context.Context, pkg string, v Version) (path string, err error) {
	body, err := c.get(ctx, v.URL)
	if err != nil {
		if _, _, ok := svcerr.Public(err); ok {
			return "", err
		}
		return "", fmt.Errorf("%w: %v", svcerr.New(svcerr.ErrUnavailable, "the archive of %s %s cannot be downloaded", pkg, v.Version), err)
	}
	defer body.Close()
	f, err := os.CreateTemp(c.opts.TempDir, "svc-plugin-*.archive")
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
			path = ""
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, c.opts.MaxArchiveBytes+1))
	if err != nil {
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			return "", err // the local disk, not the download
		}
		return "", fmt.Errorf("%w: %v", svcerr.New(svcerr.ErrUnavailable, "the archive of %s %s cannot be downloaded", pkg, v.Version), err)
	}
	if n > c.opts.MaxArchiveBytes {
		return "", svcerr.New(svcerr.ErrInvalid, "the archive of %s %s exceeds %d bytes", pkg, v.Version, c.opts.MaxArchiveBytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != v.SHA256 {
		return "", svcerr.New(svcerr.ErrInvalid, "checksum mismatch for %s %s: the archive's SHA-256 is %s, the catalog lists %s", pkg, v.Version, got, v.SHA256)
	}
	return f.Name(), nil
}
