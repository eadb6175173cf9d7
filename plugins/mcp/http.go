package mcp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsvc/svc/internal/platform/netguard"
)

// httpTransport builds the SDK transport of an HTTP server: requests carry the static headers
// and the secrets, go through the SSRF screen unless the host is allowed, and never follow
// redirects (a redirect would carry the secrets to another host, unscreened when the first host
// was allowed). A URL the screen refuses fails here, before any request, with an error matching
// netguard.ErrBlocked and svcerr.ErrInvalid.
func (m *Manager) httpTransport(ctx context.Context, cfg ServerConfig, secrets map[string]string) (sdk.Transport, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", cfg.id(), err)
	}
	var base http.RoundTripper
	if m.hostAllowed(u.Hostname()) {
		base = &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          8,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 0, // the standalone SSE stream stays open
		}
	} else {
		if _, err := netguard.CheckURL(ctx, cfg.URL, m.opts.Net); err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", cfg.id(), err)
		}
		base = netguard.GuardedTransport(m.opts.Net)
	}
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	for _, s := range cfg.Secrets {
		v, ok := secrets[s.Key]
		if !ok {
			continue
		}
		if s.Header == "" {
			headers.Set("Authorization", "Bearer "+v)
		} else {
			headers.Set(s.Header, v)
		}
	}
	client := &http.Client{
		Transport: &headerTransport{base: base, headers: headers},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, MaxRetries: 2}, nil
}

// hostAllowed reports whether the caller exempted host from the screen.
func (m *Manager) hostAllowed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return slices.ContainsFunc(m.opts.AllowedHosts, func(h string) bool {
		return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".") == host
	})
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}
