package builtin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSSRFNonPublic covers every range of the IANA IPv4 and IPv6 Special-Purpose Address Registries that is not
// globally reachable, and the IPv6 forms that carry an IPv4 address.
func TestSSRFNonPublic(t *testing.T) {
	const md = "a cloud metadata address"
	tests := []struct {
		addr, want string
		metadata   bool
	}{
		// IPv4, public
		{addr: "8.8.8.8"},
		{addr: "1.1.1.1"},
		{addr: "172.32.0.1"},
		{addr: "100.128.0.1"},
		{addr: "192.169.0.1"},
		{addr: "169.253.255.255"},
		{addr: "192.0.1.255"},
		{addr: "192.0.3.0"},
		{addr: "198.17.255.255"},
		{addr: "198.20.0.0"},
		{addr: "192.88.98.1"},
		{addr: "223.255.255.255"},
		// IPv4, special purpose
		{addr: "0.0.0.0", want: "an unspecified address"},
		{addr: "0.1.2.3", want: `a "this network" address (0.0.0.0/8)`},
		{addr: "10.0.0.1", want: "a private address"},
		{addr: "10.255.255.255", want: "a private address"},
		{addr: "100.64.0.1", want: "a carrier-grade NAT address (100.64.0.0/10)"},
		{addr: "100.127.255.255", want: "a carrier-grade NAT address (100.64.0.0/10)"},
		{addr: "127.0.0.1", want: "a loopback address"},
		{addr: "127.255.255.254", want: "a loopback address"},
		{addr: "169.254.1.1", want: "a link-local address"},
		{addr: "172.16.0.1", want: "a private address"},
		{addr: "172.31.255.255", want: "a private address"},
		{addr: "192.0.0.1", want: "an IETF protocol assignment (192.0.0.0/24)"},
		{addr: "192.0.0.170", want: "an IETF protocol assignment (192.0.0.0/24)"},
		{addr: "192.0.2.1", want: "a documentation address (192.0.2.0/24)"},
		{addr: "192.88.99.1", want: "a 6to4 relay anycast address (192.88.99.0/24)"},
		{addr: "192.168.1.1", want: "a private address"},
		{addr: "198.18.0.1", want: "a benchmarking address (198.18.0.0/15)"},
		{addr: "198.19.255.255", want: "a benchmarking address (198.18.0.0/15)"},
		{addr: "198.51.100.7", want: "a documentation address (198.51.100.0/24)"},
		{addr: "203.0.113.9", want: "a documentation address (203.0.113.0/24)"},
		{addr: "224.0.0.1", want: "a multicast address"},
		{addr: "239.255.255.250", want: "a multicast address"},
		{addr: "240.0.0.1", want: "a reserved address"},
		{addr: "255.255.255.254", want: "a reserved address"},
		{addr: "255.255.255.255", want: "a broadcast address"},
		{addr: "169.254.169.254", want: md, metadata: true},
		{addr: "169.254.170.2", want: md, metadata: true},
		{addr: "169.254.170.23", want: md, metadata: true},
		{addr: "169.254.170.24", want: "a link-local address"},
		{addr: "100.100.100.200", want: md, metadata: true},
		{addr: "192.0.0.192", want: md, metadata: true},
		{addr: "192.0.0.193", want: "an IETF protocol assignment (192.0.0.0/24)"},
		{addr: "168.63.129.16", want: md, metadata: true},
		{addr: "168.63.129.17"},
		// IPv6, public
		{addr: "2606:4700:4700::1111"},
		{addr: "2001:4860:4860::8888"},
		{addr: "2001:200::1"},
		{addr: "2003::1"},
		{addr: "3ffe::1"},
		{addr: "3fff:1000::1"},
		// IPv6, special purpose
		{addr: "::", want: "an unspecified address"},
		{addr: "::1", want: "a loopback address"},
		{addr: "100::1", want: "a discard-only address (100::/64)"},
		{addr: "100::ffff:ffff:ffff:ffff", want: "a discard-only address (100::/64)"},
		{addr: "100:0:0:1::1", want: "a dummy address (100:0:0:1::/64)"},
		{addr: "2001:1::1", want: "an IETF protocol assignment (2001::/23)"},
		{addr: "2001:1ff::1", want: "an IETF protocol assignment (2001::/23)"},
		{addr: "2001:db8::1", want: "a documentation address (2001:db8::/32)"},
		{addr: "3fff::1", want: "a documentation address (3fff::/20)"},
		{addr: "3fff:fff::1", want: "a documentation address (3fff::/20)"},
		{addr: "5f00::1", want: "an SRv6 segment identifier (5f00::/16)"},
		{addr: "fc00::1", want: "a private address"},
		{addr: "fd12:3456::1", want: "a private address"},
		{addr: "fd00:ec2::253", want: "a private address"},
		{addr: "fe80::1", want: "a link-local address"},
		{addr: "fe80::1%eth0", want: "a link-local address"},
		{addr: "fec0::1", want: "a site-local address"},
		{addr: "ff02::1", want: "a multicast address"},
		{addr: "fd00:ec2::254", want: md, metadata: true},
		{addr: "fd00:ec2::23", want: md, metadata: true},
		{addr: "::ffff:168.63.129.16", want: md, metadata: true},
		// IPv6 outside global unicast (2000::/3), unassigned
		{addr: "4000::1", want: "an address outside IPv6 global unicast (2000::/3)"},
		{addr: "1::1", want: "an address outside IPv6 global unicast (2000::/3)"},
		{addr: "::1:0:0:1", want: "an address outside IPv6 global unicast (2000::/3)"},
		// IPv4-mapped: judged as the IPv4 address
		{addr: "::ffff:127.0.0.1", want: "a loopback address"},
		{addr: "::ffff:10.1.2.3", want: "a private address"},
		{addr: "::ffff:198.18.0.1", want: "a benchmarking address (198.18.0.0/15)"},
		{addr: "::ffff:169.254.169.254", want: md, metadata: true},
		{addr: "::ffff:0.0.0.0", want: "an unspecified address"},
		{addr: "::ffff:8.8.8.8"},
		// NAT64 well-known prefix: the last 32 bits; a public IPv4 is reachable through it
		{addr: "64:ff9b::7f00:1", want: "a loopback address (127.0.0.1 in a NAT64 address)"},
		{addr: "64:ff9b::a9fe:a9fe", want: md + " (169.254.169.254 in a NAT64 address)", metadata: true},
		{addr: "64:ff9b::c0a8:101", want: "a private address (192.168.1.1 in a NAT64 address)"},
		{addr: "64:ff9b::c000:201", want: "a documentation address (192.0.2.0/24) (192.0.2.1 in a NAT64 address)"},
		{addr: "64:ff9b::808:808"},
		// Local-use NAT64: refused; the prefix length is the operator's, so a metadata address at any RFC 6052
		// position is named
		{addr: "64:ff9b:1::808:808", want: "a local-use NAT64 address (64:ff9b:1::/48)"},
		{addr: "64:ff9b:1::7f00:1", want: "a local-use NAT64 address (64:ff9b:1::/48)"},
		{addr: "64:ff9b:1:a9fe:a9:fe00::", want: md + " (169.254.169.254 in a local-use NAT64 address)", metadata: true},   // /48
		{addr: "64:ff9b:1:a9:fe:a9fe::", want: md + " (169.254.169.254 in a local-use NAT64 address)", metadata: true},     // /56
		{addr: "64:ff9b:1:0:a9:fea9:fe00:0", want: md + " (169.254.169.254 in a local-use NAT64 address)", metadata: true}, // /64
		{addr: "64:ff9b:1::a9fe:a9fe", want: md + " (169.254.169.254 in a local-use NAT64 address)", metadata: true},       // /96
		// 6to4: bits 16-47
		{addr: "2002:7f00:1::1", want: "a loopback address (127.0.0.1 in a 6to4 address)"},
		{addr: "2002:a9fe:a9fe::", want: md + " (169.254.169.254 in a 6to4 address)", metadata: true},
		{addr: "2002:a00:1::", want: "a private address (10.0.0.1 in a 6to4 address)"},
		{addr: "2002:808:808::1", want: "a 6to4 address (2002::/16)"},
		// Teredo: the server in bits 32-63, the client in the last 32 bits inverted
		{addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: "a documentation address (192.0.2.0/24) (192.0.2.45 in a Teredo address)"},
		{addr: "2001:0:808:808::80ff:fffe", want: "a loopback address (127.0.0.1 in a Teredo address)"},
		{addr: "2001:0:7f00:1::f7f7:f7f7", want: "a loopback address (127.0.0.1 in a Teredo address)"},
		{addr: "2001:0:808:808::5601:5601", want: md + " (169.254.169.254 in a Teredo address)", metadata: true},
		{addr: "2001:0:808:808::f7f7:f7f7", want: "a Teredo address (2001::/32)"},
		// IPv4-translated and IPv4-compatible: the last 32 bits
		{addr: "::ffff:0:7f00:1", want: "a loopback address (127.0.0.1 in an IPv4-translated address)"},
		{addr: "::ffff:0:808:808", want: "an IPv4-translated address (::ffff:0:0:0/96)"},
		{addr: "::7f00:1", want: "a loopback address (127.0.0.1 in an IPv4-compatible address)"},
		{addr: "::a9fe:a9fe", want: md + " (169.254.169.254 in an IPv4-compatible address)", metadata: true},
		{addr: "::808:808", want: "an IPv4-compatible address (::/96)"},
		{addr: "::2", want: `a "this network" address (0.0.0.0/8) (0.0.0.2 in an IPv4-compatible address)`},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			what, metadata := nonPublic(netip.MustParseAddr(tt.addr))
			if what != tt.want || metadata != tt.metadata {
				t.Errorf("nonPublic(%s) = %q, %v; want %q, %v", tt.addr, what, metadata, tt.want, tt.metadata)
			}
		})
	}
	if what, _ := nonPublic(netip.Addr{}); what != "not an IP address" {
		t.Errorf("nonPublic(zero) = %q", what)
	}
}

func TestSSRFAllowHostKey(t *testing.T) {
	tests := []struct {
		entry, want string
		ok          bool
	}{
		{"example.internal", "example.internal", true},
		{" Example.Internal. ", "example.internal", true},
		{"10.0.0.5:8080", "10.0.0.5:8080", true},
		{"Docs.Example:443", "docs.example:443", true},
		{"::1", "::1", true},
		{"[::1]", "::1", true},
		{"[0:0::1]:8080", "[::1]:8080", true},
		{"", "", false},
		{"http://example.com", "", false},
		{"example.com/path", "", false},
		{"user@example.com", "", false},
		{"example.com:http", "", false},
		{"example.com:0", "", false},
		{"example.com:65536", "", false},
		{"a:b:c", "", false},
	}
	for _, tt := range tests {
		got, ok := allowHostKey(tt.entry)
		if got != tt.want || ok != tt.ok {
			t.Errorf("allowHostKey(%q) = %q, %v; want %q, %v", tt.entry, got, ok, tt.want, tt.ok)
		}
	}
	if _, err := newDialGuard(false, []string{"ok.example", "http://bad", "bad/path"}); err == nil ||
		err.Error() != `allow_hosts: "http://bad", "bad/path": want a host (example.internal) or host:port (10.0.0.5:8080)` {
		t.Errorf("newDialGuard with bad entries: %v", err)
	}
}

func TestSSRFGuardCheck(t *testing.T) {
	const publicHint = "; fetch_url only reaches public addresses (allow with [builtin.fetch_url] allow_private or allow_hosts)"
	const metadataHint = "; fetch_url does not reach cloud metadata services (allow with [builtin.fetch_url] allow_hosts)"
	tests := []struct {
		name         string
		allowPrivate bool
		host, addr   string
		want         string // "" means allowed
	}{
		{"public", false, "example.com", "93.184.215.14", ""},
		{"loopback literal", false, "127.0.0.1", "127.0.0.1", "refused: 127.0.0.1 is a loopback address" + publicHint},
		{"name resolving to loopback", false, "localhost", "127.0.0.1",
			"refused: localhost resolves to 127.0.0.1, a loopback address" + publicHint},
		{"private allowed", true, "10.0.0.1", "10.0.0.1", ""},
		{"CGNAT allowed", true, "100.64.0.1", "100.64.0.1", ""},
		{"metadata stays refused", true, "169.254.169.254", "169.254.169.254",
			"refused: 169.254.169.254 is a cloud metadata address" + metadataHint},
		{"metadata by resolution", true, "evil.example", "fd00:ec2::254",
			"refused: evil.example resolves to fd00:ec2::254, a cloud metadata address" + metadataHint},
		{"mapped metadata", true, "::ffff:169.254.169.254", "::ffff:169.254.169.254",
			"refused: ::ffff:169.254.169.254 is a cloud metadata address" + metadataHint},
		{"6to4 metadata stays refused", true, "2002:a9fe:a9fe::1", "2002:a9fe:a9fe::1",
			"refused: 2002:a9fe:a9fe::1 is a cloud metadata address (169.254.169.254 in a 6to4 address)" + metadataHint},
		{"Teredo metadata by resolution", true, "evil.example", "2001:0:808:808::5601:5601",
			"refused: evil.example resolves to 2001:0:808:808::5601:5601, a cloud metadata address " +
				"(169.254.169.254 in a Teredo address)" + metadataHint},
		{"6to4 of a public address", false, "2002:808:808::1", "2002:808:808::1",
			"refused: 2002:808:808::1 is a 6to4 address (2002::/16)" + publicHint},
		{"6to4 allowed", true, "2002:808:808::1", "2002:808:808::1", ""},
		{"NAT64 of a public address", false, "example.com", "64:ff9b::808:808", ""},
		{"Azure WireServer refused by default", false, "wireserver.example", "168.63.129.16",
			"refused: wireserver.example resolves to 168.63.129.16, a cloud metadata address" + metadataHint},
		{"EKS Pod Identity stays refused", true, "169.254.170.23", "169.254.170.23",
			"refused: 169.254.170.23 is a cloud metadata address" + metadataHint},
		{"EKS Pod Identity over IPv6 stays refused", true, "fd00:ec2::23", "fd00:ec2::23",
			"refused: fd00:ec2::23 is a cloud metadata address" + metadataHint},
		{"OCI legacy metadata stays refused", true, "192.0.0.192", "192.0.0.192",
			"refused: 192.0.0.192 is a cloud metadata address" + metadataHint},
		{"Alibaba metadata stays refused", true, "100.100.100.200", "100.100.100.200",
			"refused: 100.100.100.200 is a cloud metadata address" + metadataHint},
		{"benchmarking", false, "bench.example", "198.18.0.1",
			"refused: bench.example resolves to 198.18.0.1, a benchmarking address (198.18.0.0/15)" + publicHint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := newDialGuard(tt.allowPrivate, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = g.check(tt.host, netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if err != nil {
					t.Errorf("check = %v, want allowed", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("check = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestSSRFGuardExempt(t *testing.T) {
	g, err := newDialGuard(false, []string{"LocalHost", "127.0.0.1:8080", "[::1]:9000", "169.254.169.254"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, port string
		want       bool
	}{
		{"localhost", "1", true},
		{"localhost", "65000", true},
		{"127.0.0.1", "8080", true},
		{"127.0.0.1", "8081", false},
		{"::1", "9000", true},
		{"::1", "9001", false},
		{"169.254.169.254", "80", true},
		{"example.com", "80", false},
	}
	for _, tt := range tests {
		if got := g.exempt(tt.host, tt.port); got != tt.want {
			t.Errorf("exempt(%s, %s) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
}

// countingServer is a test server that counts the connections it accepts and the requests it serves.
type countingServer struct {
	*httptest.Server
	conns, requests atomic.Int64
}

func newCountingServer(t *testing.T, h http.Handler) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// assertUntouched fails when s saw a connection or a request.
func (s *countingServer) assertUntouched(t *testing.T) {
	t.Helper()
	if c, r := s.conns.Load(), s.requests.Load(); c != 0 || r != 0 {
		t.Errorf("the server saw %d connections and %d requests, want none", c, r)
	}
}

func (s *countingServer) port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

func TestSSRFDialContext(t *testing.T) {
	srv := newCountingServer(t, http.NotFoundHandler())
	port := srv.port()
	tests := []struct {
		name         string
		allowPrivate bool
		allowHosts   []string
		addr         string
		want         string // "" means the dial succeeds
	}{
		{name: "loopback refused", addr: "127.0.0.1:" + port, want: "refused: 127.0.0.1 is a loopback address"},
		{name: "localhost refused", addr: "localhost:" + port, want: "refused: localhost resolves to 127.0.0.1"},
		{name: "unspecified refused", addr: "0.0.0.0:" + port, want: "refused: 0.0.0.0 is an unspecified address"},
		{name: "mapped refused", addr: "[::ffff:127.0.0.1]:" + port, want: "a loopback address"},
		{name: "metadata name refused", allowPrivate: true, addr: "metadata.google.internal:80",
			want: "refused: metadata.google.internal is a cloud metadata address"},
		{name: "other port of an allowed host:port", allowHosts: []string{"127.0.0.1:1"}, addr: "127.0.0.1:" + port,
			want: "a loopback address"},
		{name: "allow_private", allowPrivate: true, addr: "127.0.0.1:" + port},
		{name: "allow_hosts host:port", allowHosts: []string{"127.0.0.1:" + port}, addr: "127.0.0.1:" + port},
		{name: "allow_hosts host", allowHosts: []string{"localhost."}, addr: "LOCALHOST:" + port},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := newDialGuard(tt.allowPrivate, tt.allowHosts)
			if err != nil {
				t.Fatal(err)
			}
			before := srv.conns.Load()
			conn, err := g.DialContext(t.Context(), "tcp", tt.addr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DialContext = %v, want a connection", err)
				}
				conn.Close()
				return
			}
			if err == nil {
				conn.Close()
				t.Fatalf("DialContext succeeded, want %q", tt.want)
			}
			var refused *refusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DialContext = %v, want a refusal with %q", err, tt.want)
			}
			if n := srv.conns.Load() - before; n != 0 {
				t.Errorf("the server saw %d connections, want none", n)
			}
		})
	}
}

// The special-purpose addresses are refused before anything is dialled: the guard's hook, called for every socket
// made, before its address is checked, is never called for them, while it is for an address that is allowed.
func TestSSRFRefusedBeforeDialling(t *testing.T) {
	for _, addr := range []string{
		"0.0.0.1", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.8", "192.0.2.1",
		"192.88.99.1", "192.168.0.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "240.0.0.1",
		"255.255.255.255",
		"::", "::1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "64:ff9b:1::808:808", "100::1", "2001::1",
		"2001:0:808:808::80ff:fffe", "2001:db8::1", "2002:808:808::", "2002:7f00:1::", "fc00::1", "fe80::1",
		"ff02::1", "3fff::1", "5f00::1", "::7f00:1", "::808:808", "4000::1",
	} {
		t.Run(addr, func(t *testing.T) {
			g, err := newDialGuard(false, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sockets atomic.Int64
			g.socket = func(string) { sockets.Add(1) }
			conn, err := g.DialContext(t.Context(), "tcp", net.JoinHostPort(addr, "80"))
			if err == nil {
				conn.Close()
				t.Fatal("DialContext succeeded")
			}
			var refused *refusedError
			if !errors.As(err, &refused) {
				t.Errorf("DialContext = %v, want a refusal", err)
			}
			if n := sockets.Load(); n != 0 {
				t.Errorf("%d sockets made, want none", n)
			}
		})
	}
	// The hook does see the sockets that are made, by name too: what is checked is the address dialled. The dialer
	// may try the addresses of a name in parallel, so the hook takes a lock.
	srv := newCountingServer(t, http.NotFoundHandler())
	g, err := newDialGuard(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialled []string
	g.socket = func(address string) {
		mu.Lock()
		defer mu.Unlock()
		dialled = append(dialled, address)
	}
	conn, err := g.DialContext(t.Context(), "tcp", "localhost:"+srv.port())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(dialled, "127.0.0.1:"+srv.port()) {
		t.Errorf("sockets made for %q, want one for 127.0.0.1:%s", dialled, srv.port())
	}
}

// FuzzNonPublic checks the embeddings against the IPv4 address they carry: NAT64's well-known prefix and an
// IPv4-mapped address are judged as that address, the other forms are always refused, and a metadata address stays
// one in every form.
func FuzzNonPublic(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{169, 254, 169, 254}, []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8}, []byte{0x26, 0x06, 0x47, 0, 0x47, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x11})
	f.Fuzz(func(t *testing.T, v4 []byte, v6 []byte) {
		if len(v6) == 16 {
			nonPublic(netip.AddrFrom16([16]byte(v6))) // must not panic
		}
		if len(v4) != 4 {
			return
		}
		a := [4]byte(v4)
		what4, metadata4 := nonPublic(netip.AddrFrom4(a))
		forms := map[string]string{
			"mapped":     "::ffff:%d.%d.%d.%d",
			"NAT64":      "64:ff9b::%d.%d.%d.%d",
			"6to4":       "2002:%02x%02x:%02x%02x::1",
			"compatible": "::%d.%d.%d.%d",
			"translated": "::ffff:0:%d.%d.%d.%d",
		}
		for name, form := range forms {
			ip := netip.MustParseAddr(fmt.Sprintf(form, a[0], a[1], a[2], a[3]))
			what, metadata := nonPublic(ip)
			if metadata != metadata4 {
				t.Errorf("%s %s: metadata %v, the IPv4 address %v", name, ip, metadata, metadata4)
			}
			switch name {
			case "mapped", "NAT64":
				if (what == "") != (what4 == "") {
					t.Errorf("%s %s = %q, the IPv4 address %q", name, ip, what, what4)
				}
			default:
				if what == "" {
					t.Errorf("%s %s is allowed", name, ip)
				}
			}
		}
		// Teredo, with the address as the client (inverted) and as the server.
		client := netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0, 8, 8, 8, 8, 0, 0, 0, 0, ^a[0], ^a[1], ^a[2], ^a[3]})
		server := netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0, a[0], a[1], a[2], a[3], 0, 0, 0, 0, 0xf7, 0xf7, 0xf7, 0xf7})
		for _, ip := range []netip.Addr{client, server} {
			if what, metadata := nonPublic(ip); what == "" || metadata != metadata4 {
				t.Errorf("Teredo %s = %q, %v; the IPv4 address %q, %v", ip, what, metadata, what4, metadata4)
			}
		}
	})
}
