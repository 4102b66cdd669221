// Package httpedge is the HTTP edge that agenthost's servers share (the MCP endpoint of mcpserver and the A2A
// endpoint of a2a): the checks every request passes before it reaches a handler (Host and Origin against allow-lists,
// a bearer token compared in constant time or the caller's authenticator, a cap on the body), the liveness path that
// needs none of them (/livez), serving a listener until shutdown with the requests in flight cancelled and drained
// and slow or idle connections cut, and the count of sessions the listeners hold open (Sessions).
//
// It imports only the standard library.
package httpedge

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Options configures Guard. The zero value accepts loopback hosts and origins, needs no token and caps bodies at
// 4 MiB.
type Options struct {
	// Token, when not empty, is required on every request as "Authorization: Bearer <Token>".
	Token string
	// ListenAddr is the address the server listens on; its host is accepted in the Host header.
	ListenAddr string
	// AllowedHosts are Host header values accepted besides loopback names and ListenAddr's host (host or host:port).
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides loopback origins (scheme://host[:port]). A request
	// without Origin (not from a browser) is accepted.
	AllowedOrigins []string
	// OriginAllowed, when set, decides in place of the rule above whether a request's Origin header (not empty) is
	// accepted; the Host was checked first. A web console accepts its own origin only, not every loopback one.
	OriginAllowed func(r *http.Request, origin string) bool
	// MaxBodyBytes caps a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Public, when set, says which requests are served without the token (an A2A agent card, which clients read
	// before they know how to authenticate). Host and Origin are checked for them all the same.
	Public func(*http.Request) bool
	// Realm names the server in the WWW-Authenticate header of a 401; "" means "agenthost".
	Realm string
	// Auth, when set, authenticates the requests that are not Public in place of Token: it wraps the handler and
	// answers itself those it refuses (an OAuth protected resource checking bearer JWTs).
	Auth func(next http.Handler) http.Handler
	// Documents are served by URL path to anyone who passes the Host and Origin checks, before any other handler:
	// what a client reads to learn how to authenticate (OAuth protected resource metadata). The OAuth metadata paths
	// that are not among them answer 404 to anyone, so that a client that tries OAuth discovery learns at once that
	// there is none, rather than a 401 that would send it on to register itself.
	Documents map[string]http.Handler
	// Live says whether the server is serving (true) or shutting down (false), for GET /livez, which answers 200 or
	// 503 to anyone and says nothing else; nil means serving.
	Live func() bool
}

// LivePath is the liveness path every Guard serves: no token is needed, and any Host is accepted (a probe addresses
// the server by its IP), since the answer says nothing but whether the server is serving.
const LivePath = "/livez"

// Guard returns a handler that checks every request before next sees it: Host and Origin against the allow-lists
// (DNS-rebinding protection: a foreign one gets 403), then the bearer token (401 without the right one) or Auth, and
// caps the body.
func Guard(next http.Handler, o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.Realm == "" {
		o.Realm = "agenthost"
	}
	g := &guard{opts: o, next: next, authed: next, hosts: allowedHosts(o)}
	if o.Auth != nil {
		g.authed = o.Auth(next)
	}
	return g
}

type guard struct {
	opts   Options
	next   http.Handler // for public requests
	authed http.Handler // for the others: next behind Auth, if any
	hosts  []string     // accepted Host values, lower case, with and without port
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == LivePath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		g.live(w)
		return
	}
	if !g.hostAllowed(r.Host) {
		http.Error(w, "forbidden: Host not allowed", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(r, origin) {
		http.Error(w, "forbidden: Origin not allowed", http.StatusForbidden)
		return
	}
	if doc, ok := g.opts.Documents[r.URL.Path]; ok {
		doc.ServeHTTP(w, r)
		return
	}
	if oauthMetadata(r.URL.Path) {
		http.NotFound(w, r)
		return
	}
	public := g.opts.Public != nil && g.opts.Public(r)
	if g.opts.Token != "" && !public && !TokenMatches(r, g.opts.Token) {
		RefuseToken(w, r, g.opts.Realm)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	if public {
		g.next.ServeHTTP(w, r)
		return
	}
	g.authed.ServeHTTP(w, r)
}

func (g *guard) live(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if g.opts.Live != nil && !g.opts.Live() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "stopping\n")
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// oauthMetadata says whether path is where OAuth clients look for a server's metadata (RFC 9728 and RFC 8414, with
// a path suffix or not, and OpenID Connect discovery).
func oauthMetadata(path string) bool {
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// RefuseToken answers r, which lacks the bearer token it needs or carries a wrong one, with 401 and a challenge
// naming realm; a wrong token's challenge says error="invalid_token" (RFC 6750 section 3).
func RefuseToken(w http.ResponseWriter, r *http.Request, realm string) {
	msg, challenge := "unauthorized: a bearer token is required", `Bearer realm="`+realm+`"`
	if r.Header.Get("Authorization") != "" {
		msg, challenge = "unauthorized: the bearer token is not valid", challenge+`, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, http.StatusUnauthorized)
}

// TokenMatches reports whether r carries "Authorization: Bearer <token>", compared in constant time.
func TokenMatches(r *http.Request, token string) bool {
	const prefix = "Bearer "
	auth := r.Header.Get("Authorization")
	return strings.HasPrefix(auth, prefix) && subtle.ConstantTimeCompare([]byte(auth[len(prefix):]), []byte(token)) == 1
}

func allowedHosts(o Options) []string {
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

func (g *guard) originAllowed(r *http.Request, origin string) bool {
	if g.opts.OriginAllowed != nil {
		return g.opts.OriginAllowed(r, origin)
	}
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

// ServeOptions bounds how long a connection may hold the server without doing its part. A nil *ServeOptions, or a
// zero field, means the default.
type ServeOptions struct {
	// ReadHeaderTimeout is how long a request's headers may take to arrive; 0 means 10s.
	ReadHeaderTimeout time.Duration
	// ReadBodyTimeout is how long a request's body may take to arrive, from the end of its headers; 0 means 30s.
	// It bounds reading only: a response may stream for as long as it has something to say (an SSE stream of MCP
	// or A2A), which a whole-request ReadTimeout would cut.
	ReadBodyTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its next request; 0 means 2m.
	IdleTimeout time.Duration
}

// Serve serves handler on ln until ctx ends, then cancels the requests in flight (and so their runs, which end
// promptly) and drains: connections get drainTimeout to finish, then the rest are cut. A connection that is slow to
// send a request's headers or its body, or idle between requests, is closed (opts).
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, opts *ServeOptions) error {
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	o.ReadHeaderTimeout = orDefault(o.ReadHeaderTimeout, 10*time.Second)
	o.ReadBodyTimeout = orDefault(o.ReadBodyTimeout, 30*time.Second)
	o.IdleTimeout = orDefault(o.IdleTimeout, 2*time.Minute)
	runs, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	hs := &http.Server{
		Handler:           bodyDeadline(handler, o.ReadBodyTimeout),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
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

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// bodyDeadline sets a read deadline of timeout on the connection of every request that has a body: a body still
// arriving after timeout fails to read, and its connection is closed. The deadline bounds the body alone: once the
// body has been read to its end, net/http lifts it as it starts reading the connection in the background (to notice
// a caller that goes away), so a response may stream for as long as it needs.
func bodyDeadline(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// A writer that is not net/http's (a test's recorder) has no connection to set a deadline on.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		next.ServeHTTP(w, r)
	})
}
