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

// nonPublicRanges are the addresses fetch_url does not reach by default, with what to call them. The first match
// wins, so the metadata addresses come before the ranges that hold them.
var nonPublicRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), whatMetadata}, // AWS, GCP, Azure, OCI, DigitalOcean...
	{netip.MustParsePrefix("100.100.100.200/32"), whatMetadata}, // Alibaba Cloud
	{netip.MustParsePrefix("fd00:ec2::254/128"), whatMetadata},  // AWS over IPv6
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address (0.0.0.0/8)`},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "a broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// nat64 is the well-known NAT64 prefix: 64:ff9b::7f00:1 reaches 127.0.0.1 through a NAT64 gateway.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// metadataHosts are metadata services refused by name, before any lookup.
var metadataHosts = map[string]bool{"metadata.google.internal": true}

// nonPublic says what kind of non-public address ip is ("a loopback address"), or "" for a public one. IPv4-mapped
// and NAT64 addresses are judged by the IPv4 address they carry.
func nonPublic(ip netip.Addr) string {
	if !ip.IsValid() {
		return "not an IP address"
	}
	// A zoned address matches no prefix, so the zone goes first.
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, r := range nonPublicRanges {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

// refusedError is a fetch that was refused before anything was sent. Its message is meant for the model.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// refuseAddress is the refusal of host, which is or resolves to ip (zero when refused by name), as what.
func refuseAddress(host string, ip netip.Addr, what string) *refusedError {
	subject := host + " is " + what
	if ip.IsValid() && ip.String() != host {
		subject = fmt.Sprintf("%s resolves to %s, %s", host, ip, what)
	}
	if what == whatMetadata {
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
	what := nonPublic(ip)
	if what == "" || g.allowPrivate && what != whatMetadata {
		return nil
	}
	return refuseAddress(host, ip, what)
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
		return nil, refuseAddress(host, netip.Addr{}, whatMetadata)
	}
	d := g.dialer
	// Control runs once the name is resolved, before each connect: the address checked is the one dialled.
	d.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &refusedError{fmt.Sprintf("refused: cannot check the address %q of %s", address, host)}
		}
		return g.check(host, ap.Addr())
	}
	return d.DialContext(ctx, network, addr)
}
