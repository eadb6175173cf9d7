// Package netguard screens outgoing HTTP requests against server-side request forgery (SSRF):
// tool fetches (read_url) and webhook targets (callback_url) must reach public addresses only.
//
// CheckURL parses and screens a URL: an absolute http(s) URL without user information, whose host
// is a canonical IP literal or a DNS name, and every address that host resolves to lies outside
// private, loopback, link-local, carrier-grade NAT, multicast and other reserved ranges (IPv4 and
// IPv6, including IPv4 addresses embedded in mapped, compatible, NAT64, 6to4 and Teredo IPv6
// forms). Numeric hosts in the notations resolvers accept besides dotted quads (2130706433,
// 0177.1, 0x7f.1, 127.1) are refused whatever they denote.
//
// Client and NewTransport build HTTP clients that re-screen every request (redirects included)
// and connect only to the addresses screened for it, so a DNS answer that changes between the
// check and the connection (DNS rebinding) cannot reach a private address; the socket's remote
// address is checked once more just before connecting.
package netguard

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// DefaultMaxLength is the URL length limit when Options.MaxLength is 0 (the callback_url limit
// of document 2).
const DefaultMaxLength = 2048

// ErrBlocked is matched (errors.Is) by errors that refuse a URL because of the address it
// reaches, as opposed to a malformed URL. Every error of this package also matches
// svcerr.ErrInvalid and carries a message safe to show to the caller.
var ErrBlocked = errors.New("address not allowed")

// Resolver resolves host names; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure the screen.
type Options struct {
	// RequireHTTPS refuses http URLs (callback_url).
	RequireHTTPS bool
	// MaxLength is the longest URL accepted, in bytes; 0 means DefaultMaxLength.
	MaxLength int
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// AllowHost, when set, is asked about every host name (lowercase ASCII, no trailing dot, or
	// the canonical text of an IP literal) before it is resolved; a non-nil error refuses the
	// URL with that error's message. read_url enforces its allowed and blocked domains with it,
	// on redirects too.
	AllowHost func(host string) error
	// AllowLoopback admits 127.0.0.0/8 and ::1 (and their mapped forms). For tests against
	// httptest servers only: never set it in production.
	AllowLoopback bool
	// Exempt lists hosts and networks an administrator trusts (llm_allowed_hosts): a listed
	// host name passes whatever it resolves to (localhost included), and addresses inside a
	// listed network pass although private. Nil exempts nothing.
	Exempt *HostList
	// RootCAs, when set, replaces the system roots for TLS connections made by NewTransport,
	// Client and GuardedTransport (tests trust an httptest.NewTLSServer certificate with it).
	RootCAs *x509.CertPool
	// MaxIdleConnsPerHost is how many idle connections to one host NewTransport keeps for
	// reuse; 0 means DefaultMaxIdleConnsPerHost. Set it to the number of concurrent callers of
	// one host (the model calls of max_workers runs), or connections are closed and reopened
	// (a TLS handshake each) under load.
	MaxIdleConnsPerHost int
}

// DefaultMaxIdleConnsPerHost is NewTransport's idle connections per host when
// Options.MaxIdleConnsPerHost is 0: the webhook dispatcher posts up to 8 at once to one
// receiver.
const DefaultMaxIdleConnsPerHost = 8

func (o Options) resolver() Resolver {
	if o.Resolver != nil {
		return o.Resolver
	}
	return net.DefaultResolver
}

// Target is a screened URL.
type Target struct {
	// URL is the parsed URL with its host normalised (lowercase ASCII, IDNA applied, no
	// trailing dot); request this one.
	URL *url.URL
	// Host is the normalised host name, or the canonical text of an IP literal (no brackets).
	Host string
	// Port is the explicit port, or the scheme's default (80, 443).
	Port string
	// Addrs are the screened addresses Host resolved to (the literal itself for an IP host);
	// connections go to these only.
	Addrs []netip.Addr
}

// guardError is a refusal: it matches svcerr.ErrInvalid (with Msg as the public message) and,
// when blocked, ErrBlocked.
type guardError struct {
	pub     *svcerr.Error
	blocked bool
}

func (e *guardError) Error() string { return e.pub.Msg }

func (e *guardError) Unwrap() []error {
	if e.blocked {
		return []error{e.pub, ErrBlocked}
	}
	return []error{e.pub}
}

func invalid(format string, args ...any) error {
	return &guardError{pub: &svcerr.Error{Kind: svcerr.ErrInvalid, Msg: fmt.Sprintf(format, args...)}}
}

func blocked(format string, args ...any) error {
	return &guardError{pub: &svcerr.Error{Kind: svcerr.ErrInvalid, Msg: fmt.Sprintf(format, args...)}, blocked: true}
}

// CheckURL parses raw and screens it (see the package documentation): it returns the target
// with its screened addresses, or an error matching svcerr.ErrInvalid — and ErrBlocked when the
// URL is well-formed but reaches an address that is not public, or a host AllowHost refuses.
// Resolution failures (unknown host, resolver errors, ctx done) also match svcerr.ErrInvalid.
// Resolved addresses are never named in messages (they would map internal DNS).
func CheckURL(ctx context.Context, raw string, opts Options) (*Target, error) {
	maxLen := opts.MaxLength
	if maxLen <= 0 {
		maxLen = DefaultMaxLength
	}
	if raw == "" {
		return nil, invalid("URL is empty")
	}
	if len(raw) > maxLen {
		return nil, invalid("URL is longer than %d characters", maxLen)
	}
	if !utf8.ValidString(raw) || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, "\\\t\r\n") {
		return nil, invalid("URL contains whitespace, backslashes or invalid characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalid("URL does not parse")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if opts.RequireHTTPS {
			return nil, invalid("URL must use https")
		}
	default:
		if opts.RequireHTTPS {
			return nil, invalid("URL must be an absolute https URL")
		}
		return nil, invalid("URL must be an absolute http or https URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, invalid("URL must be absolute, with a host")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return nil, invalid("URL must not contain user information")
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return nil, invalid("URL has an invalid port")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, invalid("URL has an empty port")
	} else if u.Scheme == "https" {
		port = "443"
	} else {
		port = "80"
	}
	hostname := u.Hostname()
	bracketed := strings.HasPrefix(u.Host, "[")
	if strings.Contains(hostname, ":") != bracketed {
		return nil, invalid("URL host is malformed")
	}
	host, addrs, err := screenHost(ctx, hostname, opts)
	if err != nil {
		return nil, err
	}
	nu := *u
	nu.Host = host
	if bracketed {
		nu.Host = "[" + host + "]"
	}
	if u.Port() != "" {
		nu.Host = net.JoinHostPort(host, port)
	}
	return &Target{URL: &nu, Host: host, Port: port, Addrs: addrs}, nil
}

// CheckHost screens a bare host name or IP literal (no port, no brackets) as CheckURL screens a
// URL's host, and returns the addresses a connection may use; it connects to nothing. Errors
// match svcerr.ErrInvalid (and ErrBlocked when the host is refused), with one message for a host
// that is not public and one that does not resolve.
func CheckHost(ctx context.Context, host string, opts Options) ([]netip.Addr, error) {
	_, addrs, err := screenHost(ctx, host, opts)
	return addrs, err
}

// screenHost normalises a host (no brackets, no port), applies AllowHost, resolves names and
// screens every address. A private, loopback or reserved address and a host that does not
// resolve get one message, so the answer does not map what lies behind the server.
func screenHost(ctx context.Context, hostname string, opts Options) (string, []netip.Addr, error) {
	host, lit, isIP, err := normalizeHost(hostname)
	if err != nil {
		return "", nil, err
	}
	if isIP {
		if !permitted(lit, opts, false) {
			return "", nil, blocked("%s", notPublic(host))
		}
		if opts.AllowHost != nil {
			if err := opts.AllowHost(host); err != nil {
				return "", nil, blocked("%s", err.Error())
			}
		}
		return host, []netip.Addr{lit}, nil
	}
	if opts.AllowHost != nil {
		if err := opts.AllowHost(host); err != nil {
			return "", nil, blocked("%s", err.Error())
		}
	}
	named := opts.Exempt.hasName(host)
	if (host == "localhost" || strings.HasSuffix(host, ".localhost")) && !opts.AllowLoopback && !named {
		return "", nil, blocked("%s", notPublic(host))
	}
	found, err := opts.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(found) == 0 {
		return "", nil, invalid("%s", notPublic(host))
	}
	addrs := make([]netip.Addr, 0, len(found))
	for _, a := range found {
		if !permitted(a, opts, named) {
			return "", nil, blocked("%s", notPublic(host))
		}
		addrs = append(addrs, a)
	}
	return host, addrs, nil
}

// notPublic is the one message for a host that is not public or does not resolve.
func notPublic(host string) string {
	return fmt.Sprintf("host %s does not resolve to a public address", host)
}

// permitted reports whether a connection may go to a: a public address, loopback under
// AllowLoopback, an address of an exempt network, or any address of an exempt host name (named).
func permitted(a netip.Addr, opts Options, named bool) bool {
	return named || allowed(a, opts.AllowLoopback) || opts.Exempt.contains(a)
}

// normalizeHost turns a URL host (brackets and port removed) into its normalised form. isIP
// reports a canonical IP literal (returned in addr, unscreened). Numeric hosts in any other
// notation, zoned IPv6 literals and malformed names are refused.
func normalizeHost(h string) (host string, addr netip.Addr, isIP bool, err error) {
	if h == "" {
		return "", netip.Addr{}, false, invalid("URL has an empty host")
	}
	if strings.Contains(h, ":") {
		a, perr := netip.ParseAddr(h)
		if perr != nil || !a.Is6() {
			return "", netip.Addr{}, false, invalid("URL host is not a valid IPv6 address")
		}
		if a.Zone() != "" {
			return "", netip.Addr{}, false, blocked("IPv6 addresses with a zone are not allowed")
		}
		return a.String(), a, true, nil
	}
	if strings.Contains(h, "%") {
		return "", netip.Addr{}, false, invalid("URL host is malformed")
	}
	ascii := h
	for i := 0; i < len(h); i++ {
		if h[i] >= utf8.RuneSelf {
			// What net/http does before dialing: map (full-width digits become ASCII digits)
			// and convert to punycode, so the screen sees the host the connection would use.
			ascii, err = idna.Lookup.ToASCII(h)
			if err != nil {
				return "", netip.Addr{}, false, invalid("URL host is not a valid international domain name")
			}
			break
		}
	}
	name := strings.ToLower(ascii)
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return "", netip.Addr{}, false, invalid("URL host is malformed")
	}
	if a, perr := netip.ParseAddr(name); perr == nil && a.Is4() {
		return a.String(), a, true, nil
	}
	if endsInNumber(name) {
		if a, ok := parseIPv4Loose(name); ok && !allowed(a, false) {
			return "", netip.Addr{}, false, blocked("numeric host %s denotes a private, loopback, link-local or reserved address", h)
		}
		return "", netip.Addr{}, false, blocked("numeric hosts must be dotted-quad IPv4 addresses (a.b.c.d)")
	}
	if len(name) > 253 {
		return "", netip.Addr{}, false, invalid("URL host is too long")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return "", netip.Addr{}, false, invalid("URL host is malformed")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", netip.Addr{}, false, invalid("URL host is malformed")
			}
		}
	}
	return name, netip.Addr{}, false, nil
}

// endsInNumber is the WHATWG URL "ends in a number" test: the last label (after a trailing dot
// is removed) is all digits or a 0x hexadecimal number. Such hosts are parsed as IPv4 by
// browsers and by inet_aton-style resolvers, never as names.
func endsInNumber(name string) bool {
	name = strings.TrimSuffix(name, ".")
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if isDigits(last) {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		for i := 2; i < len(last); i++ {
			if !isHex(last[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// parseIPv4Loose parses the inet_aton / WHATWG notations: 1 to 4 dot-separated parts, each
// decimal, octal (leading 0) or hexadecimal (0x); the last part fills the remaining bytes.
func parseIPv4Loose(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Part(p string) (uint64, bool) {
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	case p == "":
		return 0, false
	}
	if len(p) > 12 {
		return 0, false
	}
	n, err := strconv.ParseUint(p, base, 64)
	return n, err == nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// HostList is an administrator's allow list (llm_allowed_hosts): host names, IP addresses and
// networks in CIDR notation that Options.Exempt admits although they are not public.
type HostList struct {
	names    map[string]bool
	prefixes []netip.Prefix
}

// ParseHostList reads a list separated by commas or white space; each entry is a host name
// (normalised as URL hosts are: lowercase, IDNA, no trailing dot), an IP address or a CIDR
// network. An empty list gives nil. The error names the first entry that is none of these.
func ParseHostList(s string) (*HostList, error) {
	entries := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(entries) == 0 {
		return nil, nil
	}
	l := &HostList{names: map[string]bool{}}
	for _, e := range entries {
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%q is not a network in CIDR notation (10.0.0.0/8, fd00::/8)", e)
			}
			l.prefixes = append(l.prefixes, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
			l.prefixes = append(l.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		host, _, isIP, err := normalizeHost(e)
		if err != nil || isIP {
			return nil, fmt.Errorf("%q is not a host name, IP address or CIDR network", e)
		}
		l.names[host] = true
	}
	return l, nil
}

// With returns a list holding the entries of l and of other (either may be nil).
func (l *HostList) With(other *HostList) *HostList {
	if l == nil {
		return other
	}
	if other == nil {
		return l
	}
	out := &HostList{names: make(map[string]bool, len(l.names)+len(other.names))}
	for _, src := range []*HostList{l, other} {
		for n := range src.names {
			out.names[n] = true
		}
		out.prefixes = append(out.prefixes, src.prefixes...)
	}
	return out
}

// hasName reports whether the normalised host name is listed.
func (l *HostList) hasName(host string) bool { return l != nil && l.names[host] }

// contains reports whether a lies in a listed network or is a listed address.
func (l *HostList) contains(a netip.Addr) bool {
	if l == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range l.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// LoopbackHost reports whether a URL host (u.Hostname(): no port, no brackets) names this
// machine: "localhost", an IPv4 address in 127.0.0.0/8 in dotted-quad form, or ::1. It is the
// development exception of the rules that require https (the plugin catalog): traffic to such
// a host never leaves the machine, so plain http cannot be read or altered on the way. Other
// notations (127.1, 2130706433, ::ffff:127.0.0.1, *.localhost) are not loopback here.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return false
	}
	return (a.Is4() && a.IsLoopback()) || a == netip.IPv6Loopback()
}
