package mcpserver

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/httpedge"
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
	// Auth, when set, authenticates every request in place of Token (see httpedge.Options), and Documents are served
	// to anyone (the OAuth protected resource metadata).
	Auth      func(http.Handler) http.Handler
	Documents map[string]http.Handler
	// ListenAddr is the address the server listens on; its host is accepted in the Host header.
	ListenAddr string
	// AllowedHosts are Host header values accepted besides loopback names and ListenAddr's host (host or host:port).
	AllowedHosts []string
	// AllowedOrigins are Origin header values accepted besides loopback origins (scheme://host[:port]). A request
	// without Origin (not from a browser) is accepted.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Health, when set, is reported as JSON by GET /healthz, behind the token; it must hold no secrets.
	Health func() any
	// Live says whether the server is serving (true) or shutting down (false), for GET /livez, which answers 200
	// or 503 without the token and says nothing else (httpedge.LivePath); nil means serving.
	Live func() bool
	// Sessions, when set, counts the sessions against its caps (shared with the A2A listener's tasks): past them a
	// new session gets 503, or 429 past MaxSessionsPerSubject, with Retry-After and a JSON-RPC error saying why.
	// Without sessions (Stateless) nothing is counted.
	Sessions *httpedge.Sessions
	// MaxSessionsPerSubject bounds the sessions of one subject (the token's under Auth, as the SDK's TokenInfo names
	// it); 0 means no cap per subject.
	MaxSessionsPerSubject int
	// SessionIdleTimeout closes a session that has received no request for this long; 0 means never. An open GET
	// stream does not keep a session: its client keeps it with requests (a ping).
	SessionIdleTimeout time.Duration
}

// Handler returns the HTTP handler of the MCP endpoint, /healthz and /livez. Every request passes httpedge's checks first:
// Host and Origin against the allow-lists (DNS-rebinding protection: a foreign one gets 403), then the bearer token
// (401 without the right one, compared in constant time) or Auth, and the body is capped.
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
	var mcpHandler http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:      o.Stateless,
		Logger:         s.opts.Logger,
		SessionTimeout: o.SessionIdleTimeout,
		// Host and Origin are checked below, against lists the admin can extend.
		DisableLocalhostProtection: true,
	})
	if o.Sessions != nil && !o.Stateless {
		mcpHandler = s.limitSessions(mcpHandler, o.Sessions, o.MaxSessionsPerSubject)
	}
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
	return httpedge.Guard(mux, httpedge.Options{
		Token: o.Token, Auth: o.Auth, Documents: o.Documents, ListenAddr: o.ListenAddr, AllowedHosts: o.AllowedHosts, AllowedOrigins: o.AllowedOrigins,
		MaxBodyBytes: o.MaxBodyBytes, Live: o.Live,
	})
}
