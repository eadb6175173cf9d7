package server

import (
	"net/http"
	"testing"
)

// TestClientAddr: the right-most hop that is not a trusted proxy; disagreeing or made-up
// forwarding headers count as the trusted hop that passed them on.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	ps, err := parseProxies([]string{"192.0.2.0/24", "10.0.0.1", "2001:db8:ffff::/48"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseProxies([]string{"proxy.local"}); err == nil {
		t.Fatal("a host name was accepted as a proxy")
	}
	for _, tt := range []struct {
		name   string
		remote string
		xff    []string
		real   string
		want   string
	}{
		{"untrusted peer", "198.51.100.1:5000", []string{"203.0.113.9"}, "203.0.113.9", "198.51.100.1"},
		{"trusted peer, no headers", "192.0.2.10:5000", nil, "", "192.0.2.10"},
		{"mapped peer", "[::ffff:192.0.2.10]:5000", []string{"203.0.113.9"}, "", "203.0.113.9"},
		{"appended", "192.0.2.10:5000", []string{"1.2.3.4, 203.0.113.9"}, "", "203.0.113.9"},
		{"two header lines", "192.0.2.10:5000", []string{"1.2.3.4", "203.0.113.9"}, "", "203.0.113.9"},
		{"trusted hops skipped", "192.0.2.10:5000", []string{"1.2.3.4, 203.0.113.9, 10.0.0.1"}, "", "203.0.113.9"},
		{"every hop trusted", "192.0.2.10:5000", []string{"10.0.0.1"}, "", "10.0.0.1"},
		{"with ports", "192.0.2.10:5000", []string{"1.2.3.4, 203.0.113.9:4711"}, "[2001:db8::7]:4711", "192.0.2.10"},
		{"port forms agree", "192.0.2.10:5000", []string{"[2001:db8::7]:4711"}, "2001:db8::7", "2001:db8::7"},
		{"ipv6 proxy", "[2001:db8:ffff::1]:443", nil, "2001:db8::7", "2001:db8::7"},
		{"agree", "192.0.2.10:5000", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9", "203.0.113.9"},
		{"real ip only", "192.0.2.10:5000", nil, "203.0.113.9", "203.0.113.9"},
		{"trusted real ip", "192.0.2.10:5000", []string{"203.0.113.9"}, "10.0.0.1", "203.0.113.9"},
		{"disagree", "192.0.2.10:5000", []string{"1.2.3.4"}, "203.0.113.9", "192.0.2.10"},
		{"made-up entry", "192.0.2.10:5000", []string{"unknown, 203.0.113.9"}, "", "203.0.113.9"},
		{"made-up right-most", "192.0.2.10:5000", []string{"203.0.113.9, 10.0.0.1, nope"}, "", "192.0.2.10"},
		{"made-up behind a trusted hop", "192.0.2.10:5000", []string{"nope, 10.0.0.1"}, "", "10.0.0.1"},
		{"made-up real ip", "192.0.2.10:5000", nil, "nope", "192.0.2.10"},
	} {
		r := &http.Request{RemoteAddr: tt.remote, Header: http.Header{}}
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if tt.real != "" {
			r.Header.Set("X-Real-IP", tt.real)
		}
		if got := ps.clientAddr(r); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if got := (proxies(nil)).clientAddr(&http.Request{RemoteAddr: "192.0.2.10:1", Header: http.Header{"X-Real-Ip": {"203.0.113.9"}}}); got != "192.0.2.10" {
		t.Errorf("no trusted proxies: %s", got)
	}
}
