package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxies are the reverse proxies (trusted_proxies) whose forwarding headers say who the client
// is. Empty: the peer is the client.
type proxies []netip.Prefix

// parseProxies reads trusted_proxies' entries: addresses and CIDRs.
func parseProxies(entries []string) (proxies, error) {
	var out proxies
	for _, e := range entries {
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("entry %q is neither an IP address nor a CIDR", e)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (ps proxies) trusted(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the address a request comes from, the key of the rate limits. The hops are
// the peer and, to its left, what trusted proxies say: the entries of X-Forwarded-For (each
// proxy appends the address it received the request from) and X-Real-IP (the address the
// proxy in front of us received it from). The client is the right-most hop that is not a trusted
// proxy; nothing left of it counts, since the client writes those entries itself.
//
// A proxy that passes one of the two headers through as the client sent it lets the client
// choose that header's value: when X-Real-IP and the right-most untrusted X-Forwarded-For entry
// are both present and differ, or an entry is not an address, neither is believed and the
// request counts as the trusted hop that passed them on — a client rotating a made-up value
// then shares one budget with every other such request instead of getting a fresh one each
// time. docs/integrators.md says what the proxy must send.
func (ps proxies) clientAddr(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return r.RemoteAddr // not an IP socket (tests' recorders): as it is
	}
	if !ps.trusted(peer) {
		return peer.String()
	}
	last := peer // the right-most trusted hop reached so far
	var fwd netip.Addr
	hops := forwardedHops(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddr(hops[i])
		if !ok {
			return last.String() // a made-up entry: the proxy did not append
		}
		if !ps.trusted(a) {
			fwd = a
			break
		}
		last = a
	}
	var real netip.Addr
	if v := strings.TrimSpace(r.Header.Get("X-Real-IP")); v != "" {
		a, ok := hopAddr(v)
		if !ok {
			return peer.String()
		}
		if !ps.trusted(a) {
			real = a
		}
	}
	switch {
	case fwd.IsValid() && real.IsValid() && fwd != real:
		return peer.String() // one of them is the client's own: believe neither
	case fwd.IsValid():
		return fwd.String()
	case real.IsValid():
		return real.String()
	}
	return last.String() // every hop is a trusted proxy: the left-most one sent it
}

// forwardedHops lists the entries of the X-Forwarded-For header lines, left to right.
func forwardedHops(lines []string) []string {
	var hops []string
	for _, l := range lines {
		for _, h := range strings.Split(l, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// hopAddr reads one hop: an IP address, or an address with a port as some proxies write it
// (198.51.100.7:4711, [2001:db8::7]:4711).
func hopAddr(h string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(h); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// peerAddr is the IP address of a RemoteAddr "host:port" (or a bare address).
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
