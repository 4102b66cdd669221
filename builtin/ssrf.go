package builtin

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// whatMetadata describes a cloud metadata address. Those answer with credentials, so AllowPrivate does not open
// them; only AllowHosts does.
const whatMetadata = "a cloud metadata address"

// addrRange is a range of addresses fetch_url does not reach by default, with what to call them.
type addrRange struct {
	prefix   netip.Prefix
	what     string
	metadata bool
}

// metadataRanges are the cloud metadata addresses; they come before the ranges that hold them.
var metadataRanges = []addrRange{
	// AWS, GCP (metadata.google.internal), Azure, OCI, DigitalOcean...
	{netip.MustParsePrefix("169.254.169.254/32"), whatMetadata, true},
	{netip.MustParsePrefix("169.254.170.2/32"), whatMetadata, true},   // AWS ECS task credentials
	{netip.MustParsePrefix("169.254.170.23/32"), whatMetadata, true},  // AWS EKS Pod Identity credentials
	{netip.MustParsePrefix("100.100.100.200/32"), whatMetadata, true}, // Alibaba Cloud
	{netip.MustParsePrefix("192.0.0.192/32"), whatMetadata, true},     // Oracle Cloud, the legacy endpoint
	// Azure's WireServer hands out the VM's extension settings and certificates. Its address is public: no range
	// below holds it, so only being named here keeps it refused, by default and under AllowPrivate alike.
	{netip.MustParsePrefix("168.63.129.16/32"), whatMetadata, true},
	{netip.MustParsePrefix("fd00:ec2::254/128"), whatMetadata, true}, // AWS over IPv6
	{netip.MustParsePrefix("fd00:ec2::23/128"), whatMetadata, true},  // AWS EKS Pod Identity over IPv6
}

// nonPublicRanges are the IANA IPv4 and IPv6 Special-Purpose Address Registries' ranges that are not globally
// reachable, with multicast and the IPv4 reserved block. The first match wins. The ranges that carry an IPv4
// address (IPv4-mapped, NAT64, 6to4, Teredo, IPv4-compatible) are in embeddings, judged before these; IPv6 outside
// 2000::/3, where IANA allocates global unicast, is refused after them.
var nonPublicRanges = []addrRange{
	// IPv4
	{prefix: netip.MustParsePrefix("0.0.0.0/32"), what: "an unspecified address"},
	{prefix: netip.MustParsePrefix("0.0.0.0/8"), what: `a "this network" address (0.0.0.0/8)`},
	{prefix: netip.MustParsePrefix("127.0.0.0/8"), what: "a loopback address"},
	{prefix: netip.MustParsePrefix("10.0.0.0/8"), what: "a private address"},
	{prefix: netip.MustParsePrefix("172.16.0.0/12"), what: "a private address"},
	{prefix: netip.MustParsePrefix("192.168.0.0/16"), what: "a private address"},
	{prefix: netip.MustParsePrefix("100.64.0.0/10"), what: "a carrier-grade NAT address (100.64.0.0/10)"},
	{prefix: netip.MustParsePrefix("169.254.0.0/16"), what: "a link-local address"},
	{prefix: netip.MustParsePrefix("192.0.0.0/24"), what: "an IETF protocol assignment (192.0.0.0/24)"},
	{prefix: netip.MustParsePrefix("192.0.2.0/24"), what: "a documentation address (192.0.2.0/24)"},
	{prefix: netip.MustParsePrefix("198.51.100.0/24"), what: "a documentation address (198.51.100.0/24)"},
	{prefix: netip.MustParsePrefix("203.0.113.0/24"), what: "a documentation address (203.0.113.0/24)"},
	{prefix: netip.MustParsePrefix("192.88.99.0/24"), what: "a 6to4 relay anycast address (192.88.99.0/24)"},
	{prefix: netip.MustParsePrefix("198.18.0.0/15"), what: "a benchmarking address (198.18.0.0/15)"},
	{prefix: netip.MustParsePrefix("224.0.0.0/4"), what: "a multicast address"},
	{prefix: netip.MustParsePrefix("255.255.255.255/32"), what: "a broadcast address"},
	{prefix: netip.MustParsePrefix("240.0.0.0/4"), what: "a reserved address"},
	// IPv6
	{prefix: netip.MustParsePrefix("::/128"), what: "an unspecified address"},
	{prefix: netip.MustParsePrefix("::1/128"), what: "a loopback address"},
	{prefix: netip.MustParsePrefix("100::/64"), what: "a discard-only address (100::/64)"},
	{prefix: netip.MustParsePrefix("100:0:0:1::/64"), what: "a dummy address (100:0:0:1::/64)"},
	{prefix: netip.MustParsePrefix("2001:db8::/32"), what: "a documentation address (2001:db8::/32)"},
	{prefix: netip.MustParsePrefix("2001::/23"), what: "an IETF protocol assignment (2001::/23)"},
	{prefix: netip.MustParsePrefix("3fff::/20"), what: "a documentation address (3fff::/20)"},
	{prefix: netip.MustParsePrefix("5f00::/16"), what: "an SRv6 segment identifier (5f00::/16)"},
	{prefix: netip.MustParsePrefix("fc00::/7"), what: "a private address"},
	{prefix: netip.MustParsePrefix("fe80::/10"), what: "a link-local address"},
	{prefix: netip.MustParsePrefix("fec0::/10"), what: "a site-local address"},
	{prefix: netip.MustParsePrefix("ff00::/8"), what: "a multicast address"},
}

// globalUnicast is where IANA allocates IPv6 global unicast addresses; anything outside it that no other range
// names is refused as well.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// embedding is a range of IPv6 addresses that carry an IPv4 address, and where in them it is.
type embedding struct {
	prefix netip.Prefix
	kind   string
	// ipv4 returns the IPv4 addresses a packet to the address may reach.
	ipv4 func(b [16]byte) []netip.Addr
	// translated is set for NAT64's well-known prefix: the address stands for its IPv4 address, and is judged by it
	// alone. The others are refused whatever they carry; what they carry is named when it is non-public.
	translated bool
	// ambiguous is set when ipv4 returns guesses, not addresses: only a metadata address among them is named.
	ambiguous bool
}

// embeddings are judged before nonPublicRanges, which hold some of them (2001::/32 is in 2001::/23, ::/96 in what
// is outside 2000::/3). IPv4-mapped addresses are unmapped before anything else, and judged as IPv4.
var embeddings = []embedding{
	// NAT64 (RFC 6052): a DNS64 resolver on an IPv6-only network gives 64:ff9b::8.8.8.8 for a public IPv4 site.
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), kind: "NAT64", ipv4: last32, translated: true},
	// Local-use NAT64 (RFC 8215): the operator picks a prefix length within the /48, so every RFC 6052 position
	// that fits is read.
	{prefix: netip.MustParsePrefix("64:ff9b:1::/48"), kind: "local-use NAT64", ambiguous: true, ipv4: func(b [16]byte) []netip.Addr {
		return []netip.Addr{
			netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}),   // /48
			netip.AddrFrom4([4]byte{b[7], b[9], b[10], b[11]}),  // /56
			netip.AddrFrom4([4]byte{b[9], b[10], b[11], b[12]}), // /64
			netip.AddrFrom4([4]byte(b[12:])),                    // /96
		}
	}},
	// Teredo (RFC 4380): the server's IPv4 in bits 32-63, the client's in the last 32 bits, inverted.
	{prefix: netip.MustParsePrefix("2001::/32"), kind: "Teredo", ipv4: func(b [16]byte) []netip.Addr {
		return []netip.Addr{
			netip.AddrFrom4([4]byte(b[4:8])),
			netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}),
		}
	}},
	// 6to4 (RFC 3056): the IPv4 in bits 16-47.
	{prefix: netip.MustParsePrefix("2002::/16"), kind: "6to4", ipv4: func(b [16]byte) []netip.Addr {
		return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}
	}},
	// IPv4-translated (RFC 2765), ::ffff:0:a.b.c.d.
	{prefix: netip.MustParsePrefix("::ffff:0:0:0/96"), kind: "IPv4-translated", ipv4: last32},
	// IPv4-compatible (RFC 4291, deprecated), ::a.b.c.d; :: and ::1 are named before.
	{prefix: netip.MustParsePrefix("::/96"), kind: "IPv4-compatible", ipv4: last32},
}

func last32(b [16]byte) []netip.Addr { return []netip.Addr{netip.AddrFrom4([4]byte(b[12:]))} }

// metadataHosts are metadata services refused by name, before any lookup.
var metadataHosts = map[string]bool{"metadata.google.internal": true}

// nonPublic says what kind of non-public address ip is ("a loopback address"), or "" for a public one, and whether
// it is a cloud metadata address, which AllowPrivate does not open. An IPv6 address that carries an IPv4 address
// is judged by it too: a metadata address stays one, however it is written.
func nonPublic(ip netip.Addr) (what string, metadata bool) {
	if !ip.IsValid() {
		return "not an IP address", false
	}
	// A zoned address matches no prefix, so the zone goes first.
	ip = ip.WithZone("").Unmap()
	for _, r := range metadataRanges {
		if r.prefix.Contains(ip) {
			return r.what, true
		}
	}
	if ip.Is6() && !ip.IsUnspecified() && !ip.IsLoopback() {
		for _, e := range embeddings {
			if e.prefix.Contains(ip) {
				return e.judge(ip)
			}
		}
	}
	for _, r := range nonPublicRanges {
		if r.prefix.Contains(ip) {
			return r.what, false
		}
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return "an address outside IPv6 global unicast (2000::/3)", false
	}
	return "", false
}

// judge is nonPublic of ip, in e's range.
func (e embedding) judge(ip netip.Addr) (string, bool) {
	var first string
	for _, v4 := range e.ipv4(ip.As16()) {
		what, metadata := nonPublic(v4)
		if metadata {
			return fmt.Sprintf("%s (%s in %s)", what, v4, e.name()), true
		}
		if what != "" && first == "" && !e.ambiguous {
			first = fmt.Sprintf("%s (%s in %s)", what, v4, e.name())
		}
	}
	switch {
	case first != "":
		return first, false
	case e.translated:
		return "", false
	}
	return fmt.Sprintf("%s (%s)", e.name(), e.prefix), false
}

// name is "a 6to4 address", "an IPv4-compatible address".
func (e embedding) name() string {
	if strings.HasPrefix(e.kind, "I") {
		return "an " + e.kind + " address"
	}
	return "a " + e.kind + " address"
}

// refusedError is a fetch that was refused before anything was sent. Its message is meant for the model.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// refuseAddress is the refusal of host, which is or resolves to ip (zero when refused by name), as what.
func refuseAddress(host string, ip netip.Addr, what string, metadata bool) *refusedError {
	subject := host + " is " + what
	if ip.IsValid() && ip.String() != host {
		subject = fmt.Sprintf("%s resolves to %s, %s", host, ip, what)
	}
	if metadata {
		return &refusedError{"refused: " + subject + "; fetch_url does not reach cloud metadata services " +
			"(allow with [builtin.fetch_url] allow_hosts)"}
	}
	return &refusedError{"refused: " + subject + "; fetch_url only reaches public addresses " +
		"(allow with [builtin.fetch_url] allow_private or allow_hosts)"}
}

// dialGuard is the dialer of fetch_url. It checks the address actually dialled, after DNS, for the first request
// and every redirect alike, so a name that resolves to a private address or a redirect to one is refused too.
type dialGuard struct {
	allowPrivate bool
	// allowHosts holds canonical hosts and host:port pairs exempt from the check.
	allowHosts map[string]bool
	dialer     net.Dialer
	// socket, when set, is called with the address of each socket made, before its address is checked and it is
	// connected: tests count the dials that got as far as a socket.
	socket func(address string)
}

// newDialGuard returns a guard with the AllowPrivate and AllowHosts options, or an error naming the unusable
// entries of allowHosts.
func newDialGuard(allowPrivate bool, allowHosts []string) (*dialGuard, error) {
	g := &dialGuard{allowPrivate: allowPrivate, allowHosts: map[string]bool{}}
	var bad []string
	for _, entry := range allowHosts {
		key, ok := allowHostKey(entry)
		if !ok {
			bad = append(bad, fmt.Sprintf("%q", entry))
			continue
		}
		g.allowHosts[key] = true
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("allow_hosts: %s: want a host (example.internal) or host:port (10.0.0.5:8080)",
			strings.Join(bad, ", "))
	}
	return g, nil
}

// allowHostKey is the canonical form of an AllowHosts entry, host or host:port.
func allowHostKey(entry string) (string, bool) {
	entry = strings.TrimSpace(entry)
	host, port, err := net.SplitHostPort(entry)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]"), ""
	}
	if host == "" || strings.ContainsAny(host, "/@?# ") {
		return "", false
	}
	if _, err := netip.ParseAddr(host); err != nil && strings.Contains(host, ":") {
		return "", false
	}
	host = canonicalHost(host)
	if port == "" {
		return host, true
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return net.JoinHostPort(host, port), true
}

// canonicalHost lower-cases a host name and drops its final dot, and writes an IP address in its usual form, so
// that AllowHosts matches however the URL spells the host.
func canonicalHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String()
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// exempt reports whether host and port are in AllowHosts.
func (g *dialGuard) exempt(host, port string) bool {
	return g.allowHosts[host] || g.allowHosts[net.JoinHostPort(host, port)]
}

// check refuses ip, the address host resolved to, unless it is public or AllowPrivate lets it through.
func (g *dialGuard) check(host string, ip netip.Addr) error {
	what, metadata := nonPublic(ip)
	if what == "" || g.allowPrivate && !metadata {
		return nil
	}
	return refuseAddress(host, ip, what, metadata)
}

// DialContext is the Transport's dialer. addr is the host:port of the URL.
func (g *dialGuard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host := canonicalHost(h)
	if g.exempt(host, port) {
		return g.dialer.DialContext(ctx, network, addr)
	}
	if metadataHosts[host] {
		return nil, refuseAddress(host, netip.Addr{}, whatMetadata, true)
	}
	// An address given as such is refused before anything is done, not even a socket made.
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := g.check(host, ip); err != nil {
			return nil, err
		}
	}
	d := g.dialer
	// Control runs once the name is resolved, before each connect: the address checked is the one dialled.
	d.Control = func(_, address string, _ syscall.RawConn) error {
		if g.socket != nil {
			g.socket(address)
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &refusedError{fmt.Sprintf("refused: cannot check the address %q of %s", address, host)}
		}
		return g.check(host, ap.Addr())
	}
	return d.DialContext(ctx, network, addr)
}
