package netguard

import "net/netip"

// blocked4 are the IPv4 ranges that are not publicly routable (IANA special-purpose registry):
// this network, private, carrier-grade NAT, loopback, link-local, IETF protocol assignments,
// documentation, 6to4 relay anycast, benchmarking, multicast, reserved and broadcast.
var blocked4 = prefixes(
	"0.0.0.0/8",
	"10.0.0.0/8",
	"100.64.0.0/10",
	"127.0.0.0/8",
	"169.254.0.0/16",
	"172.16.0.0/12",
	"192.0.0.0/24",
	"192.0.2.0/24",
	"192.88.99.0/24",
	"192.168.0.0/16",
	"198.18.0.0/15",
	"198.51.100.0/24",
	"203.0.113.0/24",
	"224.0.0.0/4",
	"240.0.0.0/4", // includes 255.255.255.255
)

// blocked6 are the IPv6 ranges refused outright. The forms that embed an IPv4 address
// (mapped, NAT64, 6to4, Teredo, SIIT) are screened by their embedded address instead; see allowed.
var blocked6 = prefixes(
	"::/96", // unspecified, loopback and the deprecated IPv4-compatible addresses
	"100::/64",
	"64:ff9b:1::/48", // local-use NAT64
	"2001:db8::/32",
	"2001:10::/28",
	"2001:20::/28",
	"3fff::/20",
	"5f00::/16",
	"fc00::/7",
	"fe80::/10",
	"fec0::/10",
	"ff00::/8",
)

var (
	loopback4 = netip.MustParsePrefix("127.0.0.0/8")
	mapped    = netip.MustParsePrefix("::ffff:0:0/96")
	siit      = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Public reports whether a is a publicly routable unicast address: outside every range this
// package refuses, and, for IPv6 forms that embed an IPv4 address, with a public embedded
// address. Invalid and zoned addresses are not public.
func Public(a netip.Addr) bool { return allowed(a, false) }

func allowed(a netip.Addr, allowLoopback bool) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if allowLoopback && a.IsLoopback() {
		return true
	}
	if a.Is4() {
		return allowed4(a)
	}
	b := a.As16()
	switch {
	case mapped.Contains(a) || siit.Contains(a) || nat64.Contains(a):
		return allowed4v(b[12:16], allowLoopback)
	case sixToFour.Contains(a):
		return allowed4v(b[2:6], allowLoopback)
	case teredo.Contains(a):
		// server address in bits 32..63, client address (inverted) in the last 32 bits
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return allowed4v(b[4:8], false) && allowed4v(client[:], false)
	}
	for _, p := range blocked6 {
		if p.Contains(a) {
			return false
		}
	}
	return a.IsGlobalUnicast()
}

func allowed4v(b []byte, allowLoopback bool) bool {
	v4 := netip.AddrFrom4([4]byte{b[0], b[1], b[2], b[3]})
	if allowLoopback && loopback4.Contains(v4) {
		return true
	}
	return allowed4(v4)
}

func allowed4(a netip.Addr) bool {
	for _, p := range blocked4 {
		if p.Contains(a) {
			return false
		}
	}
	return a.IsGlobalUnicast()
}
