package chat_test

import (
	"context"
	"errors"
	"hash/fnv"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/domain/chat"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// fakeResolver answers from a table; other names get an address picked by a hash of the name
// from a mix of public and non-public addresses, and "fail.*" names fail.
type fakeResolver map[string][]netip.Addr

var pool = []netip.Addr{
	netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1"),
	netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("100.64.0.1"), netip.MustParseAddr("2606:4700::1111"),
	netip.MustParseAddr("::ffff:192.168.1.1"), netip.MustParseAddr("fd00::1"), netip.MustParseAddr("8.8.8.8"),
}

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if as, ok := r[host]; ok {
		return as, nil
	}
	if strings.HasPrefix(host, "fail.") {
		return nil, errors.New("no such host")
	}
	h := fnv.New32a()
	h.Write([]byte(host))
	n := h.Sum32()
	return []netip.Addr{pool[n%uint32(len(pool))], pool[(n/7)%uint32(len(pool))]}, nil
}

var resolver = fakeResolver{
	"hooks.example.com": {netip.MustParseAddr("93.184.216.34")},
	"internal.example":  {netip.MustParseAddr("10.1.2.3")},
	"loop.example":      {netip.MustParseAddr("127.0.0.1")},
	"mixed.example":     {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("192.168.0.10")},
	"cgnat.example":     {netip.MustParseAddr("100.64.1.1")},
	"v6.example":        {netip.MustParseAddr("2606:4700::1111")},
	"v6local.example":   {netip.MustParseAddr("fe80::1")},
}

func TestScreenCallback(t *testing.T) {
	t.Parallel()
	long := "https://hooks.example.com/" + strings.Repeat("a", 2048-len("https://hooks.example.com/"))
	for _, tc := range []struct {
		url      string
		loopback bool
		ok       bool
	}{
		{"https://hooks.example.com/svc", false, true},
		{"https://v6.example/x", false, true},
		{"https://93.184.216.34/cb", false, true},
		{long, false, true},
		{long + "b", false, false},
		{"http://hooks.example.com/svc", false, false},
		{"ftp://hooks.example.com/", false, false},
		{"/relative", false, false},
		{"", false, false},
		{"https://10.0.0.1/cb", false, false},
		{"https://internal.example/cb", false, false},
		{"https://loop.example/cb", false, false},
		{"https://loop.example/cb", true, true},
		{"https://127.0.0.1/cb", false, false},
		{"https://mixed.example/cb", false, false},
		{"https://cgnat.example/cb", false, false},
		{"https://v6local.example/cb", false, false},
		{"https://[::ffff:10.0.0.1]/cb", false, false},
		{"https://169.254.169.254/latest", false, false},
		{"https://2130706433/", false, false},
		{"https://user:pw@hooks.example.com/", false, false},
		{"https://fail.example/", false, false},
	} {
		got, err := chat.ScreenCallback(context.Background(), tc.url, netguard.Options{Resolver: resolver, AllowLoopback: tc.loopback})
		if (err == nil) != tc.ok {
			t.Errorf("ScreenCallback(%.60q, loopback=%v) = %q, %v; want ok=%v", tc.url, tc.loopback, got, err, tc.ok)
			continue
		}
		if err != nil && (!errors.Is(err, svcerr.ErrInvalid) || !strings.HasPrefix(err.Error(), "callback_url: ")) {
			t.Errorf("ScreenCallback(%.60q) error = %v; want ErrInvalid naming callback_url", tc.url, err)
		}
	}
}

// FuzzScreenCallback: whatever is accepted is an absolute https URL of at most 2048
// characters whose host resolves only to public addresses.
func FuzzScreenCallback(f *testing.F) {
	for _, s := range []string{
		"https://hooks.example.com/svc", "http://hooks.example.com/", "https://10.0.0.1/", "https://mixed.example/",
		"https://[::1]/", "https://0x7f.1/", "https://xn--nxasmq6b.example/", "https://bücher.example/",
		"https://random-name.test:8443/a?b=c#d", "https://v6.example./", "HTTPS://HOOKS.EXAMPLE.COM/", "https://[2606:4700::1111]:443/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := chat.ScreenCallback(context.Background(), raw, netguard.Options{Resolver: resolver})
		if err != nil {
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("refusal %v is not ErrInvalid", err)
			}
			return
		}
		if len(got) > limits.URLLen || len(raw) > limits.URLLen {
			t.Fatalf("accepted a URL longer than %d: %d/%d", limits.URLLen, len(raw), len(got))
		}
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			t.Fatalf("accepted %q (from %q): not an absolute https URL", got, raw)
		}
		host := u.Hostname()
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else {
			addrs, _ = resolver.LookupNetIP(context.Background(), "ip", host)
		}
		if len(addrs) == 0 {
			t.Fatalf("accepted %q whose host %q has no address", got, host)
		}
		for _, a := range addrs {
			if !netguard.Public(a) {
				t.Fatalf("accepted %q whose host %q resolves to non-public %s", got, host, a)
			}
		}
	})
}
