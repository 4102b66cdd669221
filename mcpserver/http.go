package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures Handler. A nil *HTTPOptions means all defaults.
type HTTPOptions struct {
	// Path is the MCP endpoint; "" means "/mcp".
	Path string
	// Stateless serves every request on its own, without sessions: what a deployment behind a load balancer needs.
	// Without a session the server cannot ask the client anything, so sampling and elicitation (approvals) are
	// unavailable, and progress reaches only the request that started the run.
	Stateless bool
	// Token, when not empty, is required on every request as "Authorization: Bearer <Token>".
	Token string
	// ListenAddr is the address the server listens on; its host is accepted in the Host header.
	ListenAddr string
	// AllowedHosts are Host header values accepted besides loopback names and ListenAddr's host (host or host:port).
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides loopback origins (scheme://host[:port]). A request
	// without Origin (not from a browser) is accepted.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Health, when set, is reported as JSON by GET /healthz; it must hold no secrets.
	Health func() any
}

// Handler returns the HTTP handler of the MCP endpoint and /healthz. Every request passes the same checks first:
// Host and Origin against the allow-lists (DNS-rebinding protection: a foreign one gets 403), then the bearer token
// (401 without the right one, compared in constant time), and the body is capped.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless: o.Stateless,
		Logger:    s.opts.Logger,
		// Host and Origin are checked below, against lists the admin can extend.
		DisableLocalhostProtection: true,
	})
	mux := http.NewServeMux()
	mux.Handle(o.Path, mcpHandler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		status := map[string]any{"status": "ok", "tool": s.toolName}
		if o.Health != nil {
			status["servers"] = o.Health()
		}
		_ = json.NewEncoder(w).Encode(status)
	})
	g := &guard{opts: o, next: mux, hosts: allowedHosts(o)}
	return g
}

// guard checks every request before it reaches the MCP handler.
type guard struct {
	opts  HTTPOptions
	next  http.Handler
	hosts []string // accepted Host values, lower case, with and without port
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		http.Error(w, "forbidden: Host not allowed", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		http.Error(w, "forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	if g.opts.Token != "" {
		const prefix = "Bearer "
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, prefix) || subtle.ConstantTimeCompare([]byte(auth[len(prefix):]), []byte(g.opts.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
			http.Error(w, "unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	g.next.ServeHTTP(w, r)
}

func allowedHosts(o HTTPOptions) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1", "[::1]"}
	if o.ListenAddr != "" {
		if h, _, err := net.SplitHostPort(o.ListenAddr); err == nil && h != "" {
			hosts = append(hosts, strings.ToLower(h))
		}
	}
	for _, h := range o.AllowedHosts {
		hosts = append(hosts, strings.ToLower(h))
	}
	return hosts
}

func (g *guard) hostAllowed(hostport string) bool {
	hostport = strings.ToLower(hostport)
	if slices.Contains(g.hosts, hostport) {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	return slices.Contains(g.hosts, host) || slices.Contains(g.hosts, "["+host+"]")
}

func (g *guard) originAllowed(origin string) bool {
	if slices.ContainsFunc(g.opts.AllowedOrigins, func(o string) bool { return strings.EqualFold(strings.TrimSuffix(o, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// drainTimeout is how long Serve lets requests finish after it cancelled their runs, before it cuts them.
const drainTimeout = 5 * time.Second

// Serve serves handler on ln until ctx ends, then cancels the requests in flight (and so their runs, which end
// promptly) and drains: connections get drainTimeout to finish, then the rest are cut.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	runs, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return runs },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	cancelRuns()
	drain, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := hs.Shutdown(drain); err != nil {
		hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
