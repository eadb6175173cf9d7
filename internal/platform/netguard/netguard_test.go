package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// fakeResolver answers from a table; names not in it resolve to a public address.
type fakeResolver struct {
	table map[string][]string
	calls atomic.Int32
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	ss, ok := r.table[host]
	if !ok {
		if strings.HasSuffix(host, ".invalid") {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		ss = []string{"93.184.216.34"}
	}
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out, nil
}

func resolver() *fakeResolver {
	return &fakeResolver{table: map[string][]string{
		"example.com":         {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"private.example":     {"10.1.2.3"},
		"mixed.example":       {"93.184.216.34", "192.168.1.1"},
		"rebind.example":      {"127.0.0.1"},
		"cgnat.example":       {"100.64.0.1"},
		"mapped.example":      {"::ffff:10.0.0.1"},
		"v6local.example":     {"fd00::1"},
		"empty.example":       {},
		"xn--bcher-kva.ch":    {"93.184.216.35"},
		"public6.example":     {"2a00:1450:4001:82b::200e"},
		"nat64public.example": {"64:ff9b::808:808"},
	}}
}

func TestCheckURLNotations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		ok      bool
		blocked bool   // refusal is ErrBlocked
		host    string // normalised host when ok
	}{
		// accepted
		{"https://example.com/path?q=1#f", true, false, "example.com"},
		{"http://EXAMPLE.com./", true, false, "example.com"},
		{"https://example.com:8443/", true, false, "example.com"},
		{"http://93.184.216.34/", true, false, "93.184.216.34"},
		{"http://[2606:2800:220:1:248:1893:25c8:1946]/", true, false, "2606:2800:220:1:248:1893:25c8:1946"},
		{"https://bücher.ch/", true, false, "xn--bcher-kva.ch"},
		{"https://public6.example/", true, false, "public6.example"},
		{"https://nat64public.example/", true, false, "nat64public.example"},
		{"http://[64:ff9b::808:808]/", true, false, "64:ff9b::808:808"},
		{"http://[2002:808:808::1]/", true, false, "2002:808:808::1"},

		// loopback in every notation
		{"http://127.0.0.1/", false, true, ""},
		{"http://127.1/", false, true, ""},
		{"http://127.0.1/", false, true, ""},
		{"http://2130706433/", false, true, ""},
		{"http://0x7f000001/", false, true, ""},
		{"http://0x7f.1/", false, true, ""},
		{"http://0177.0.0.1/", false, true, ""},
		{"http://017700000001/", false, true, ""},
		{"http://127.000.000.001/", false, true, ""},
		{"http://127.0.0.1./", false, true, ""},
		{"http://127.0.0.1../", false, false, ""},
		{"http://0/", false, true, ""},
		{"http://0.0.0.0/", false, true, ""},
		{"http://[::1]/", false, true, ""},
		{"http://[::]/", false, true, ""},
		{"http://[0:0:0:0:0:0:0:1]/", false, true, ""},
		{"http://[::ffff:127.0.0.1]/", false, true, ""},
		{"http://[::ffff:7f00:1]/", false, true, ""},
		{"http://[::127.0.0.1]/", false, true, ""},
		{"http://[64:ff9b::127.0.0.1]/", false, true, ""},
		{"http://[64:ff9b::a00:1]/", false, true, ""},
		{"http://[64:ff9b:1::808:808]/", false, true, ""},
		{"http://[2002:7f00:1::]/", false, true, ""},
		{"http://[2002:c0a8:101::1]/", false, true, ""},
		{"http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", true, false, "2001:0:4136:e378:8000:63bf:f7f7:f7f7"},
		{"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", false, true, ""}, // Teredo client 127.0.0.1
		{"http://[2001:0:a00:1:8000:63bf:f7f7:f7f7]/", false, true, ""},     // Teredo server 10.0.0.1
		{"http://[fe80::1%25eth0]/", false, true, ""},
		{"http://[fe80::1]/", false, true, ""},
		{"http://[fd12:3456::1]/", false, true, ""},
		{"http://[ff02::1]/", false, true, ""},
		{"http://localhost/", false, true, ""},
		{"http://LOCALHOST./", false, true, ""},
		{"http://api.localhost/", false, true, ""},
		{"http://１２７.０.０.１/", false, true, ""},
		{"http://①②⑦.0.0.1/", false, true, ""},

		// private ranges, literal and resolved
		{"http://10.0.0.1/", false, true, ""},
		{"http://012.0.0.1/", false, true, ""},
		{"http://167772161/", false, true, ""},
		{"http://172.16.0.1/", false, true, ""},
		{"http://172.31.255.255/", false, true, ""},
		{"http://192.168.0.1/", false, true, ""},
		{"http://100.64.0.1/", false, true, ""},
		{"http://100.127.255.254/", false, true, ""},
		{"http://169.254.169.254/latest/meta-data/", false, true, ""},
		{"http://0xa9fea9fe/", false, true, ""},
		{"http://192.0.0.170/", false, true, ""},
		{"http://198.18.0.1/", false, true, ""},
		{"http://224.0.0.1/", false, true, ""},
		{"http://255.255.255.255/", false, true, ""},
		{"http://private.example/", false, true, ""},
		{"http://mixed.example/", false, true, ""},
		{"http://rebind.example/", false, true, ""},
		{"http://cgnat.example/", false, true, ""},
		{"http://mapped.example/", false, true, ""},
		{"http://v6local.example/", false, true, ""},

		// numeric in non-canonical form, public value: refused all the same
		{"http://134744072/", false, true, ""},
		{"http://8.8.2056/", false, true, ""},
		{"http://1.2.3.4.5/", false, true, ""},
		{"http://example.0x10/", false, true, ""},

		// malformed or disallowed shapes
		{"", false, false, ""},
		{"example.com", false, false, ""},
		{"//example.com/", false, false, ""},
		{"ftp://example.com/", false, false, ""},
		{"file:///etc/passwd", false, false, ""},
		{"gopher://example.com/", false, false, ""},
		{"http:example.com", false, false, ""},
		{"http://user:pass@example.com/", false, false, ""},
		{"http://user@example.com/", false, false, ""},
		{"http://example.com@127.0.0.1/", false, false, ""},
		{"http://example.com:0/", false, false, ""},
		{"http://example.com:65536/", false, false, ""},
		{"http://example.com:/", false, false, ""},
		{"http://exa mple.com/", false, false, ""},
		{" http://example.com/", false, false, ""},
		{"http://example.com\\@127.0.0.1/", false, false, ""},
		{"http://%31%32%37.0.0.1/", false, false, ""},
		{"http://exa_mple..com/", false, false, ""},
		{"http://[::1/", false, false, ""},
		{"http://[127.0.0.1]/", false, false, ""},
		{"http://nxdomain.invalid/", false, false, ""},
		{"http://empty.example/", false, false, ""},
		{"https://" + strings.Repeat("a", 2040) + ".com/", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			got, err := netguard.CheckURL(context.Background(), tt.raw, netguard.Options{Resolver: resolver()})
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Host != tt.host {
					t.Errorf("host %q, want %q", got.Host, tt.host)
				}
				for _, a := range got.Addrs {
					if !netguard.Public(a) {
						t.Errorf("accepted non-public %s", a)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if errors.Is(err, netguard.ErrBlocked) != tt.blocked {
				t.Errorf("error %q: blocked %v, want %v", err, !tt.blocked, tt.blocked)
			}
			if msg, _, ok := svcerr.Public(err); !ok || msg != err.Error() {
				t.Errorf("public message %q, %v", msg, ok)
			}
		})
	}
}

func TestCheckURLOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := resolver()
	if _, err := netguard.CheckURL(ctx, "http://example.com/", netguard.Options{Resolver: r, RequireHTTPS: true}); err == nil {
		t.Error("http accepted with RequireHTTPS")
	}
	if _, err := netguard.CheckURL(ctx, "https://example.com/", netguard.Options{Resolver: r, RequireHTTPS: true}); err != nil {
		t.Errorf("https refused: %v", err)
	}
	long := "https://example.com/" + strings.Repeat("x", 100)
	if _, err := netguard.CheckURL(ctx, long, netguard.Options{Resolver: r, MaxLength: 50}); err == nil {
		t.Error("long URL accepted")
	}
	// 2048 is the default limit.
	exact := "https://example.com/" + strings.Repeat("x", netguard.DefaultMaxLength-len("https://example.com/"))
	if _, err := netguard.CheckURL(ctx, exact, netguard.Options{Resolver: r}); err != nil {
		t.Errorf("URL of exactly 2048 refused: %v", err)
	}
	if _, err := netguard.CheckURL(ctx, exact+"x", netguard.Options{Resolver: r}); err == nil {
		t.Error("URL of 2049 accepted")
	}
	deny := func(h string) error {
		if h == "example.com" {
			return fmt.Errorf("domain %s is blocked", h)
		}
		return nil
	}
	_, err := netguard.CheckURL(ctx, "https://EXAMPLE.com./", netguard.Options{Resolver: r, AllowHost: deny})
	if !errors.Is(err, netguard.ErrBlocked) || err.Error() != "domain example.com is blocked" {
		t.Errorf("AllowHost: %v", err)
	}
	// AllowLoopback admits loopback, nothing else private.
	lo := netguard.Options{Resolver: r, AllowLoopback: true}
	for _, raw := range []string{"http://127.0.0.1:8080/", "http://[::1]/", "http://rebind.example/", "http://[::ffff:127.0.0.1]/"} {
		if _, err := netguard.CheckURL(ctx, raw, lo); err != nil {
			t.Errorf("AllowLoopback %s: %v", raw, err)
		}
	}
	for _, raw := range []string{"http://10.0.0.1/", "http://169.254.169.254/", "http://2130706433/"} {
		if _, err := netguard.CheckURL(ctx, raw, lo); err == nil {
			t.Errorf("AllowLoopback accepted %s", raw)
		}
	}
	// The literal path never consults the resolver.
	r2 := resolver()
	_, _ = netguard.CheckURL(ctx, "http://10.0.0.1/", netguard.Options{Resolver: r2})
	if r2.calls.Load() != 0 {
		t.Error("resolver asked about a literal")
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8"} {
		if !netguard.Public(netip.MustParseAddr(s)) {
			t.Errorf("%s not public", s)
		}
	}
	for _, s := range []string{"10.0.0.1", "::1", "::", "fe80::1%eth0", "fe80::1", "::ffff:192.168.0.1", "::ffff:0:10.0.0.1", "2001:db8::1", "100::1", "ff0e::1", "fec0::1"} {
		if netguard.Public(netip.MustParseAddr(s)) {
			t.Errorf("%s public", s)
		}
	}
	if netguard.Public(netip.Addr{}) {
		t.Error("zero Addr public")
	}
}

// TestClientLoopback fetches from an httptest server (127.0.0.1): refused by default, served with
// AllowLoopback, and a redirect to a private address is refused even then.
func TestClientLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect-private":
			http.Redirect(w, r, "http://10.0.0.1/", http.StatusFound)
		case "/redirect-decimal":
			http.Redirect(w, r, "http://2130706433:"+strings.Split(r.Host, ":")[1]+"/", http.StatusFound)
		case "/redirect-self":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "hello")
		}
	}))
	t.Cleanup(srv.Close)

	get := func(c *http.Client, path string) (string, error) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	strict := netguard.Client(5*time.Second, netguard.Options{})
	if _, err := get(strict, "/ok"); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("loopback fetch without AllowLoopback: %v", err)
	}
	lax := netguard.Client(5*time.Second, netguard.Options{AllowLoopback: true})
	if body, err := get(lax, "/ok"); err != nil || body != "hello" {
		t.Errorf("AllowLoopback fetch: %q, %v", body, err)
	}
	if body, err := get(lax, "/redirect-self"); err != nil || body != "hello" {
		t.Errorf("redirect to self: %q, %v", body, err)
	}
	for _, p := range []string{"/redirect-private", "/redirect-decimal"} {
		if _, err := get(lax, p); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := get(lax, "/loop"); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("redirect loop: %v", err)
	}
}

// TestDialerPinned checks that the dialer connects to the pinned, screened addresses and does not
// resolve the name a second time (a rebinding resolver would answer differently).
func TestDialerPinned(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	r := &fakeResolver{table: map[string][]string{"pinned.example": {"127.0.0.1"}}}
	opts := netguard.Options{Resolver: r, AllowLoopback: true}
	target, err := netguard.CheckURL(context.Background(), "http://pinned.example:"+port+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	// Rebind: the name now points at a private address.
	r.table["pinned.example"] = []string{"10.0.0.1"}
	d := netguard.NewDialer(opts)
	c, err := d.DialContext(netguard.WithTarget(context.Background(), target), "tcp", "pinned.example:"+port)
	if err != nil {
		t.Fatalf("pinned dial: %v", err)
	}
	c.Close()
	if n := r.calls.Load(); n != 1 {
		t.Errorf("resolver called %d times, want 1", n)
	}
	// Without a pin the dialer resolves and screens itself: the rebound answer is refused.
	if _, err := d.DialContext(context.Background(), "tcp", "pinned.example:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("unpinned rebound dial: %v", err)
	}
	// A pin for another host is ignored.
	if _, err := d.DialContext(netguard.WithTarget(context.Background(), target), "tcp", "10.0.0.1:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("dial of another host under a pin: %v", err)
	}
	if _, err := d.DialContext(context.Background(), "udp", "127.0.0.1:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("udp dial: %v", err)
	}
	// Without AllowLoopback even a pinned loopback address is refused at dial time.
	strict := netguard.NewDialer(netguard.Options{Resolver: r})
	if _, err := strict.DialContext(netguard.WithTarget(context.Background(), target), "tcp", "pinned.example:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("strict pinned dial: %v", err)
	}
}

// independentIPv4 interprets host the lenient ways resolvers and browsers do, without the
// package's code: used by the fuzz target to recognise a literal address in any notation.
func independentIPv4(host string) (netip.Addr, bool) {
	host = strings.TrimRight(host, ".")
	parts := strings.Split(host, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, digits = 16, p[2:]
		case len(p) >= 2 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		var n uint64
		if digits != "" {
			if strings.ContainsAny(digits, "_+-") {
				return netip.Addr{}, false
			}
			var err error
			if n, err = strconv.ParseUint(digits, base, 64); err != nil {
				return netip.Addr{}, false
			}
		} else if base == 10 {
			return netip.Addr{}, false
		}
		nums = append(nums, n)
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		v |= (n & 0xff) << (8 * (3 - i))
	}
	v |= nums[len(nums)-1] & 0xffffffff
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/",
		"http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25lo]/", "https://example.com/",
		"http://10.0.0.1./", "http://[64:ff9b::a00:1]/", "http://[2002:a00:1::]/", "http://１０.0.0.1/",
		"http://user@example.com/", "https://example.com:443/a?b#c", "http://0/", "http://0x/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ctx := context.Background()
		target, err := netguard.CheckURL(ctx, raw, netguard.Options{Resolver: &fakeResolver{}})
		if err != nil {
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("error outside ErrInvalid: %v", err)
			}
			return
		}
		for _, a := range target.Addrs {
			if !netguard.Public(a) {
				t.Fatalf("%q: accepted non-public %s", raw, a)
			}
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("%q accepted but does not parse: %v", raw, perr)
		}
		if u.User != nil {
			t.Fatalf("%q accepted with user info", raw)
		}
		host := u.Hostname()
		for _, h := range []string{host, target.Host} {
			if a, err := netip.ParseAddr(h); err == nil && !netguard.Public(a) {
				t.Fatalf("%q accepted: host %s is a private literal", raw, h)
			}
			if a, ok := independentIPv4(h); ok && !netguard.Public(a) {
				t.Fatalf("%q accepted: host %s denotes %s", raw, h, a)
			}
			if ip := net.ParseIP(h); ip != nil {
				if a, _ := netip.AddrFromSlice(ip); !netguard.Public(a.Unmap()) {
					t.Fatalf("%q accepted: host %s is private for net.ParseIP", raw, h)
				}
			}
		}
	})
}

// flipResolver answers loopback the first time and a private address afterwards: a rebinding
// DNS server.
type flipResolver struct{ calls atomic.Int32 }

func (r *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if r.calls.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
}

// TestClientPinsScreenedAddress checks that Client connects to the address it screened: the
// rebinding resolver is asked once per request, so the connection cannot reach its second answer.
func TestClientPinsScreenedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "pinned")
	}))
	t.Cleanup(srv.Close)
	port := strings.Split(srv.Listener.Addr().String(), ":")[1]
	r := &flipResolver{}
	c := netguard.Client(5*time.Second, netguard.Options{Resolver: r, AllowLoopback: true})
	resp, err := c.Get("http://rebind.example:" + port + "/")
	if err != nil {
		t.Fatalf("first fetch: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pinned" || r.calls.Load() != 1 {
		t.Errorf("body %q after %d lookups", body, r.calls.Load())
	}
	// The next request screens again and meets the private answer.
	c.CloseIdleConnections()
	if _, err := c.Get("http://rebind.example:" + port + "/"); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("second fetch: %v", err)
	}
}

// TestExemptHostList: llm_allowed_hosts admits listed names (whatever they resolve to) and
// addresses inside listed networks, and nothing else; the dialer applies the same list.
func TestExemptHostList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, bad := range []string{"10.0.0.0/33", "http://ollama", "ollama:11434", "a..b"} {
		if _, err := netguard.ParseHostList(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseHostList(%q) = %v, want an error naming it", bad, err)
		}
	}
	if l, err := netguard.ParseHostList(" , "); err != nil || l != nil {
		t.Fatalf("empty list = %v, %v", l, err)
	}
	list, err := netguard.ParseHostList("Ollama.LAN., localhost 10.1.0.0/16,fd00::1")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeResolver{table: map[string][]string{"ollama.lan": {"192.168.7.7"}, "private.example": {"10.1.2.3"}, "other.example": {"10.2.0.1"}}}
	opts := netguard.Options{Resolver: r, Exempt: list}
	for _, ok := range []string{"http://ollama.lan:11434/v1", "http://localhost:11434/v1", "http://10.1.9.9/", "http://private.example/", "http://[fd00::1]/", "https://example.com/"} {
		if _, err := netguard.CheckURL(ctx, ok, opts); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, no := range []string{"http://169.254.169.254/latest", "http://127.0.0.1/", "http://other.example/", "http://10.2.0.1/", "http://[fd00::2]/"} {
		if _, err := netguard.CheckURL(ctx, no, opts); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s = %v, want blocked", no, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	r.table["ollama.lan"] = []string{"127.0.0.1"}
	if c, err := netguard.NewDialer(opts).DialContext(ctx, "tcp", "ollama.lan:"+port); err != nil {
		t.Errorf("dial of a listed name: %v", err)
	} else {
		c.Close()
	}
	r.table["other.example"] = []string{"127.0.0.1"}
	if _, err := netguard.NewDialer(opts).DialContext(ctx, "tcp", "other.example:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("dial of an unlisted name on loopback: %v", err)
	}
}

// TestOneMessageForHiddenHosts: a host that does not resolve and one that resolves to a private
// address get the same message, so answers do not map the internal network.
func TestOneMessageForHiddenHosts(t *testing.T) {
	t.Parallel()
	opts := netguard.Options{Resolver: resolver()}
	msg := func(host string) string {
		_, err := netguard.CheckURL(context.Background(), "https://"+host+"/", opts)
		if err == nil {
			t.Fatalf("%s accepted", host)
		}
		return strings.ReplaceAll(err.Error(), host, "HOST")
	}
	want := msg("private.example")
	for _, h := range []string{"nowhere.invalid", "empty.example", "rebind.example", "localhost", "10.0.0.1"} {
		if got := msg(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.9.8.7": true, "::1": true,
		"127.1": false, "2130706433": false, "::ffff:127.0.0.1": false, "a.localhost": false,
		"localhost.example": false, "10.0.0.1": false, "catalog.example": false, "": false,
		"fe80::1%lo": false, "0.0.0.0": false, "::": false,
	} {
		if got := netguard.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
