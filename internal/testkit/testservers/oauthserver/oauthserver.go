// Package oauthserver is an MCP server protected by OAuth, with its own authorization server, for tests: protected
// resource metadata (RFC 9728), authorization server metadata (RFC 8414), dynamic client registration (RFC 7591),
// an authorization endpoint that redirects at once (no login page), and a token endpoint for the authorization code
// grant with PKCE (S256) and for refresh tokens. Its tool "whoami" answers with the client the token was issued to.
package oauthserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Server is the protected MCP server and its authorization server, on one listener.
type Server struct {
	// URL is the MCP endpoint.
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	lifetime  time.Duration     // of the access tokens it issues
	clients   map[string]string // client_id → redirect URI
	codes     map[string]grant  // authorization code → its grant
	tokens    map[string]grant  // access token → its grant
	refreshes map[string]grant  // refresh token → its grant
	counts    Counts
}

// Counts are what the authorization server did.
type Counts struct {
	Registrations, Authorizations, Tokens, Refreshes int
}

type grant struct {
	client, challenge, redirect string
	expires                     time.Time
}

// New starts a server. Close it when done.
func New() *Server {
	s := &Server{lifetime: time.Hour, clients: map[string]string{}, codes: map[string]grant{}, tokens: map[string]grant{}, refreshes: map[string]grant{}}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(mux)
	base := s.srv.URL
	s.URL = base + "/mcp"

	m := mcp.NewServer(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	mcp.AddTool(m, &mcp.Tool{Name: "whoami", Description: "Names the OAuth client of the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			info := req.Extra.TokenInfo
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "client " + info.UserID}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m }, nil)
	prm := base + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(handler))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.URL, AuthorizationServers: []string{base},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Counts returns what the authorization server did so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// SetTokenLifetime sets the lifetime of the access tokens issued from now on.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetime = d
}

// Revoke forgets every access and refresh token.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
	clear(s.refreshes)
}

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.tokens[token]
	if !ok || time.Now().After(g.expires) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: g.client, Expiration: g.expires}, nil
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + rand.Text()[:8]
	s.mu.Lock()
	s.clients[id] = md.RedirectURIs[0]
	s.counts.Registrations++
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize redirects at once with a code, as a user who consents would be redirected.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	redirect, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !ok || redirect != q.Get("redirect_uri") || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "unknown client, wrong redirect URI, or no PKCE", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = grant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: redirect}
	s.counts.Authorizations++
	s.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		client := r.Form.Get("client_id")
		if id, _, ok := r.BasicAuth(); ok { // a public client may still authenticate in the header, without a secret
			client, _ = url.QueryUnescape(id)
		}
		c, ok := s.codes[r.Form.Get("code")]
		delete(s.codes, r.Form.Get("code"))
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if !ok || c.client != client || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = c
		s.counts.Tokens++
	case "refresh_token":
		old, ok := s.refreshes[r.Form.Get("refresh_token")]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.refreshes, r.Form.Get("refresh_token")) // rotated
		g = old
		s.counts.Refreshes++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	g.expires = time.Now().Add(s.lifetime)
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	s.tokens[access], s.refreshes[refresh] = g, g
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.lifetime / time.Second)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // a client gone mid-answer is its own problem
}
