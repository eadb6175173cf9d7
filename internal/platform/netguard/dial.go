package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// MaxRedirects is how many redirects a Client follows.
const MaxRedirects = 5

type pinKey struct{}

// namedKey marks a dial to a host name of Options.Exempt: every address it resolves to passes.
type namedKey struct{}

// WithTarget returns a context under which a Dialer connecting to t's host and port uses t's
// screened addresses instead of resolving the host again. Client does this for every request;
// call it when using NewTransport or Dialer directly after CheckURL.
func WithTarget(ctx context.Context, t *Target) context.Context {
	return context.WithValue(ctx, pinKey{}, t)
}

// Dialer connects to screened addresses only: the ones pinned by WithTarget for the host it
// dials, else the addresses it resolves and screens itself. Every address is checked again
// (with Public's rules) before the socket connects. The zero value is not usable; use NewDialer.
type Dialer struct {
	opts Options
	net  net.Dialer
}

// NewDialer returns a Dialer screening with opts (RequireHTTPS and MaxLength do not apply to
// dialing; AllowHost, Resolver and AllowLoopback do).
func NewDialer(opts Options) *Dialer {
	d := &Dialer{opts: opts}
	d.net = net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(ctx context.Context, network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !permitted(ap.Addr(), opts, ctx.Value(namedKey{}) != nil) {
				return blocked("connection to a private, loopback, link-local or reserved address refused")
			}
			return nil
		},
	}
	return d
}

// DialContext connects to addr ("host:port") over TCP. It fails with an error matching
// ErrBlocked (and svcerr.ErrInvalid) when the host is refused, with svcerr.ErrInvalid when it
// does not resolve, or with the network's error.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, blocked("network %s refused", network)
	}
	hostname, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, invalid("malformed address %q", addr)
	}
	var addrs []netip.Addr
	h, _, _, herr := normalizeHost(hostname)
	if t, ok := ctx.Value(pinKey{}).(*Target); ok && t != nil && t.Port == port && herr == nil && h == t.Host {
		addrs = t.Addrs
	}
	named := herr == nil && d.opts.Exempt.hasName(h)
	if named {
		ctx = context.WithValue(ctx, namedKey{}, true)
	}
	if addrs == nil {
		if _, addrs, err = screenHost(ctx, hostname, d.opts); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, a := range addrs {
		if !permitted(a, d.opts, named) {
			errs = append(errs, blocked("connection to a private, loopback, link-local or reserved address refused"))
			continue
		}
		c, err := d.net.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, invalid("no address to connect to")
	}
	return nil, errors.Join(errs...)
}

// NewTransport returns an http.Transport that dials through NewDialer(opts) and never uses a
// proxy (an environment proxy would connect on our behalf, unscreened); opts.RootCAs, when set,
// replaces the system roots. Requests sent through it directly are not screened for scheme,
// length or user information: prefer Client or GuardedTransport.
func NewTransport(opts Options) *http.Transport {
	var tlsConfig *tls.Config
	if opts.RootCAs != nil {
		tlsConfig = &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12}
	}
	idle := opts.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = DefaultMaxIdleConnsPerHost
	}
	return &http.Transport{
		TLSClientConfig:        tlsConfig,
		Proxy:                  nil,
		DialContext:            NewDialer(opts).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           max(32, 2*idle),
		MaxIdleConnsPerHost:    idle,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// guarded screens each request (CheckURL) before the transport sends it, and pins the screened
// addresses for the dial.
type guarded struct {
	opts  Options
	inner http.RoundTripper
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	t, err := CheckURL(req.Context(), req.URL.String(), g.opts)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(WithTarget(req.Context(), t))
	r.URL = t.URL
	if r.Host == "" || strings.EqualFold(r.Host, req.URL.Host) {
		r.Host = ""
	}
	return g.inner.RoundTrip(r)
}

// GuardedTransport returns the round tripper of Client: every request is screened by CheckURL
// with opts and connects only to its screened addresses. Build an http.Client around it when
// redirects must be handled differently (callbacks never follow them).
func GuardedTransport(opts Options) http.RoundTripper {
	return &guarded{opts: opts, inner: NewTransport(opts)}
}

// Client returns an HTTP client for tools and webhooks: every request and every redirect target
// is screened by CheckURL with opts and connects only to its screened addresses; at most
// MaxRedirects redirects are followed; timeout bounds the whole exchange (0 means none, which
// tools should not use). Refusals surface from Do wrapped in *url.Error and still match
// ErrBlocked and svcerr.ErrInvalid.
func Client(timeout time.Duration, opts Options) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: GuardedTransport(opts),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", MaxRedirects)
			}
			return nil
		},
	}
}
