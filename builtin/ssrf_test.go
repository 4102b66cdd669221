package builtin

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSSRFNonPublic(t *testing.T) {
	tests := []struct {
		addr, want string
	}{
		// IPv4
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"192.169.0.1", ""},
		{"169.253.255.255", ""},
		{"0.0.0.0", "an unspecified address"},
		{"0.1.2.3", `a "this network" address (0.0.0.0/8)`},
		{"127.0.0.1", "a loopback address"},
		{"127.255.255.254", "a loopback address"},
		{"10.0.0.1", "a private address"},
		{"172.16.0.1", "a private address"},
		{"172.31.255.255", "a private address"},
		{"192.168.1.1", "a private address"},
		{"100.64.0.1", "a carrier-grade NAT address (100.64.0.0/10)"},
		{"100.127.255.255", "a carrier-grade NAT address (100.64.0.0/10)"},
		{"169.254.1.1", "a link-local address"},
		{"169.254.169.254", "a cloud metadata address"},
		{"100.100.100.200", "a cloud metadata address"},
		{"224.0.0.1", "a multicast address"},
		{"239.255.255.250", "a multicast address"},
		{"255.255.255.255", "a broadcast address"},
		{"240.0.0.1", "a reserved address"},
		// IPv6
		{"2606:4700:4700::1111", ""},
		{"2001:db8::1", ""},
		{"::", "an unspecified address"},
		{"::1", "a loopback address"},
		{"fc00::1", "a private address"},
		{"fd12:3456::1", "a private address"},
		{"fd00:ec2::254", "a cloud metadata address"},
		{"fd00:ec2::253", "a private address"},
		{"fe80::1", "a link-local address"},
		{"fe80::1%eth0", "a link-local address"},
		{"fec0::1", "a site-local address"},
		{"ff02::1", "a multicast address"},
		// IPv4 in IPv6: mapped and NAT64
		{"::ffff:127.0.0.1", "a loopback address"},
		{"::ffff:10.1.2.3", "a private address"},
		{"::ffff:169.254.169.254", "a cloud metadata address"},
		{"::ffff:0.0.0.0", "an unspecified address"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "a loopback address"},
		{"64:ff9b::a9fe:a9fe", "a cloud metadata address"},
		{"64:ff9b::c0a8:101", "a private address"},
		{"64:ff9b::808:808", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := nonPublic(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Errorf("nonPublic(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
	if got := nonPublic(netip.Addr{}); got != "not an IP address" {
		t.Errorf("nonPublic(zero) = %q", got)
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
