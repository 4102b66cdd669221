// Package jwtissuer is an OAuth 2.1 authorization server that issues JWT access tokens (RFC 9068), for the tests of
// agenthost as a protected resource. It publishes its metadata (RFC 8414, and the same document as OpenID Connect
// discovery), its signing keys as a JWK Set, dynamic client registration (RFC 7591), an authorization endpoint that
// redirects at once (no login page), and a token endpoint for the authorization code grant with PKCE (S256), the
// client credentials grant and refresh tokens. A token's "aud" is the resource indicator (RFC 8707) of its request.
//
// Tests also mint tokens directly with Sign, and rotate the signing key with RotateKey.
package jwtissuer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// Server is the authorization server. Its issuer identifier is Issuer, the base URL of its listener.
type Server struct {
	// Issuer is the "iss" of its tokens and the base URL of its endpoints.
	Issuer string

	srv *httptest.Server

	mu        sync.Mutex
	keys      []signingKey             // the newest last; all are published
	clients   map[string]client        // client_id → client
	codes     map[string]authCode      // authorization code → its request
	refreshes map[string]authCode      // refresh token → what it was issued for
	fetches   int                      // of the JWK Set
	lifetime  time.Duration            // of the tokens it issues
	issued    []jwt.MapClaims          // the claims of every token issued at the token endpoint
	extra     map[string]jwt.MapClaims // client_id → claims added to its tokens
}

type signingKey struct {
	kid string
	key *ecdsa.PrivateKey
}

type client struct {
	secret   string // "" for a public client
	redirect string
}

type authCode struct {
	client, challenge, redirect, scope, resource string
}

// New starts a server with one signing key. Close it when done.
func New() *Server {
	s := &Server{clients: map[string]client{}, codes: map[string]authCode{}, refreshes: map[string]authCode{},
		lifetime: time.Hour, extra: map[string]jwt.MapClaims{}}
	s.RotateKey()
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(mux)
	s.Issuer = s.srv.URL
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", s.metadata)
	mux.HandleFunc("GET /jwks", s.jwks)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// JWKSURL is where the signing keys are published.
func (s *Server) JWKSURL() string { return s.Issuer + "/jwks" }

// JWKSFetches is how many times the JWK Set was fetched.
func (s *Server) JWKSFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// RotateKey adds a new signing key, used from now on; the old ones stay published.
func (s *Server) RotateKey() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, signingKey{kid: "key-" + rand.Text()[:8], key: key})
}

// AddClient registers a confidential client for the client credentials grant. Claims, when not nil, are added to
// every token issued to it.
func (s *Server) AddClient(id, secret string, claims jwt.MapClaims) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = client{secret: secret}
	if claims != nil {
		s.extra[id] = claims
	}
}

// Issued returns the claims of the tokens issued at the token endpoint so far.
func (s *Server) Issued() []jwt.MapClaims {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]jwt.MapClaims(nil), s.issued...)
}

// Sign signs claims with the current key, as the token endpoint does, without filling anything in.
func (s *Server) Sign(claims jwt.MapClaims) string {
	s.mu.Lock()
	k := s.keys[len(s.keys)-1]
	s.mu.Unlock()
	return SignWith(k.kid, k.key, claims)
}

// SignWith signs claims with key under kid: a key the server does not publish, for forged tokens.
func SignWith(kid string, key *ecdsa.PrivateKey, claims jwt.MapClaims) string {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["kid"] = kid
	t.Header["typ"] = "at+jwt"
	signed, err := t.SignedString(key)
	if err != nil {
		panic(err) // an ES256 signature with a valid key does not fail
	}
	return signed
}

// CurrentKID is the kid of the key that signs from now on.
func (s *Server) CurrentKID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1].kid
}

// Claims returns the claims of a token this server would issue to sub for audience with scopes, valid for
// lifetime (negative for one that has expired).
func (s *Server) Claims(sub, audience string, scopes []string, lifetime time.Duration) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": s.Issuer, "sub": sub, "aud": audience, "iat": now.Unix(),
		"exp": now.Add(lifetime).Unix(), "jti": rand.Text(), "client_id": sub}
	if len(scopes) > 0 {
		c["scope"] = strings.Join(scopes, " ")
	}
	return c
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	base := s.Issuer
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
		"registration_endpoint": base + "/register", "jwks_uri": base + "/jwks",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "client_credentials", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                      []string{"agent:use", "agent:admin"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
	})
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	set := jwkset.JWKSMarshal{}
	for _, k := range s.keys {
		jwk, err := jwkset.NewJWKFromKey(&k.key.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			ALG: jwkset.AlgES256, KID: k.kid, USE: jwkset.UseSig}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	writeJSON(w, http.StatusOK, set)
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
	s.clients[id] = client{redirect: md.RedirectURIs[0]}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "none"})
}

// authorize redirects at once with a code, as a user who consents would be redirected.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !ok || c.redirect != q.Get("redirect_uri") || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "unknown client, wrong redirect URI, or no PKCE", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = authCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: c.redirect,
		scope: q.Get("scope"), resource: q.Get("resource")}
	s.mu.Unlock()
	u, _ := url.Parse(c.redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.clients[id]
	if !known || c.secret != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var g authCode
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		code, ok := s.codes[r.Form.Get("code")]
		delete(s.codes, r.Form.Get("code"))
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if !ok || code.client != id || code.redirect != r.Form.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = code
	case "client_credentials":
		if c.secret == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unauthorized_client"})
			return
		}
		g = authCode{client: id, scope: r.Form.Get("scope"), resource: r.Form.Get("resource")}
	case "refresh_token":
		old, ok := s.refreshes[r.Form.Get("refresh_token")]
		if !ok || old.client != id {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.refreshes, r.Form.Get("refresh_token")) // rotated
		g = old
		if scope := r.Form.Get("scope"); scope != "" {
			g.scope = scope
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	now := time.Now()
	claims := jwt.MapClaims{"iss": s.Issuer, "sub": g.client, "client_id": g.client, "iat": now.Unix(),
		"exp": now.Add(s.lifetime).Unix(), "jti": rand.Text()}
	if g.resource != "" {
		claims["aud"] = g.resource
	}
	if g.scope != "" {
		claims["scope"] = g.scope
	}
	for k, v := range s.extra[g.client] {
		claims[k] = v
	}
	s.issued = append(s.issued, claims)
	k := s.keys[len(s.keys)-1]
	body := map[string]any{"access_token": SignWith(k.kid, k.key, claims), "token_type": "Bearer",
		"expires_in": int(s.lifetime / time.Second), "scope": g.scope}
	if r.Form.Get("grant_type") != "client_credentials" {
		refresh := "rt-" + rand.Text()
		s.refreshes[refresh] = g
		body["refresh_token"] = refresh
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // a client gone mid-answer is its own problem
}
