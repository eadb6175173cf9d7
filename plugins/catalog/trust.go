package catalog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// SignatureSuffix is appended to the path of the index URL to find its detached signature.
const SignatureSuffix = ".sig"

// maxSignatureBytes bounds the signature document: base64 of 64 bytes is 88 characters, the
// rest is room for a trailing newline.
const maxSignatureBytes = 1024

// checkTransport refuses a URL that is not https, except plain http to a loopback host
// (netguard.LoopbackHost), the development exception. The index, its signature, the archives
// and every redirect between them pass here before any connection is made: over plain http a
// network attacker could swap the index, and with it the SHA-256 of every archive. Errors:
// svcerr.ErrInvalid naming the rule.
func checkTransport(u *url.URL) error {
	if u.Scheme == "https" || (u.Scheme == "http" && netguard.LoopbackHost(u.Hostname())) {
		return nil
	}
	return svcerr.New(svcerr.ErrInvalid, "%s must use https (plain http only on a loopback host: localhost, 127.0.0.0/8, ::1)", redactedURL(u))
}

// redactedURL is u for messages: no user information, no query (a catalog served with a token
// in its query must not print it).
func redactedURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment = nil, "", false, ""
	return c.String()
}

// transportChecked returns a copy of hc whose redirects also pass checkTransport (before the
// redirect rule hc already had).
func transportChecked(hc *http.Client) *http.Client {
	c := *hc
	inner := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkTransport(req.URL); err != nil {
			return err
		}
		if inner != nil {
			return inner(req, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// signatureURL is the address of the detached signature of the index at index: ".sig" appended
// to the path, the query kept.
func signatureURL(index string) (string, error) {
	u, err := url.Parse(index)
	if err != nil {
		return "", svcerr.New(svcerr.ErrInvalid, "bad catalog URL")
	}
	u.Path += SignatureSuffix
	u.RawPath = ""
	return u.String(), nil
}

// fetchSignature downloads the detached signature of the index. Errors: ErrInvalid (the
// catalog publishes none or it cannot be read: without it the catalog is refused when a key
// is set; a document too large), local read errors.
func (c *Client) fetchSignature(ctx context.Context) ([]byte, error) {
	sigURL, err := signatureURL(c.opts.URL)
	if err != nil {
		return nil, err
	}
	body, err := c.get(ctx, sigURL)
	if err != nil {
		reason := "it cannot be reached"
		if msg, _, ok := svcerr.Public(err); ok {
			reason = msg
		}
		return nil, fmt.Errorf("%w: %v", svcerr.New(svcerr.ErrInvalid,
			"plugin_catalog_public_key requires a signed catalog, and its signature (the index URL + %q) cannot be read: %s", SignatureSuffix, reason), err)
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxSignatureBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the catalog signature: %w", err)
	}
	if len(data) > maxSignatureBytes {
		return nil, svcerr.New(svcerr.ErrInvalid, "the catalog signature exceeds %d bytes", maxSignatureBytes)
	}
	return data, nil
}

// verifySignature checks sig (the base64 text of the .sig document) against the exact bytes of
// the index with key. Errors: svcerr.ErrInvalid when sig is not base64 of 64 bytes or does not
// verify.
func verifySignature(key ed25519.PublicKey, index, sig []byte) error {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sig)))
	if err != nil || len(raw) != ed25519.SignatureSize {
		return svcerr.New(svcerr.ErrInvalid, "the catalog signature is not the base64 text of a %d-byte ed25519 signature", ed25519.SignatureSize)
	}
	if !ed25519.Verify(key, index, raw) {
		return svcerr.New(svcerr.ErrInvalid, "the catalog signature does not verify with plugin_catalog_public_key: the index was altered or signed with another key")
	}
	return nil
}
