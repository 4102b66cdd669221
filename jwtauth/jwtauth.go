// Package jwtauth makes agenthost's HTTP servers an OAuth 2.0 protected resource behind one identity provider. It
// accepts only bearer JWTs (RFC 9068 access tokens, or any JWT with the claims below) signed by one of the issuer's
// published keys, with the issuer's "iss", the resource's "aud", an "exp" still ahead and the required scopes; it
// publishes the resource's metadata (RFC 9728) and answers a refused request as RFC 6750 says: 401 with a
// WWW-Authenticate challenge naming the metadata, or 403 insufficient_scope with the scopes needed.
//
// The keys are fetched from the issuer's JWK Set, cached, refreshed every hour and at once (at most every
// refreshEvery) when a token names a key ID not in the cache, so that a key rotation needs no restart. Only
// asymmetric signatures are accepted: a token signed with "none" or an HMAC is refused, whatever its claims.
//
// It builds on go-sdk's auth package for the metadata document and the token information it hands to the MCP
// handler (which binds a session to the token's subject), on golang-jwt for the signatures and claims, and on keyfunc
// for the JWK Set.
package jwtauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/time/rate"
)

// Config configures a Verifier.
type Config struct {
	// Issuer is the authorization server's issuer identifier: tokens must carry it as "iss", exactly.
	Issuer string
	// Audience is this resource's identifier: tokens must name it in "aud" (a trailing slash aside). When it is an
	// http or https URL, the metadata is announced at the URL RFC 9728 derives from it.
	Audience string
	// JWKSURL is the issuer's JWK Set; "" means the jwks_uri of the issuer's metadata.
	JWKSURL string
	// RequiredScopes must all be granted to a token, in its "scope" claim (space-separated) or "scp" (a list or a
	// string, as some providers write it).
	RequiredScopes []string
	// ResourceName names the resource in its metadata, for people.
	ResourceName string
	// HTTPClient fetches the metadata and the keys; nil means a client with a 30-second timeout.
	HTTPClient *http.Client
	// Logger receives a line per refused token (why, never the token) and per failed key refresh; nil discards.
	Logger *slog.Logger
}

// leeway is the clock skew allowed on "exp", "nbf" and "iat".
const leeway = 30 * time.Second

// refreshEvery bounds how often a token with an unknown key ID makes the keys be fetched again; fetchTimeout bounds
// that fetch.
const (
	refreshEvery = 10 * time.Second
	fetchTimeout = 10 * time.Second
)

// errUnknownKey refuses a token whose key ID is not among the issuer's keys, when they were fetched again less than
// refreshEvery ago.
var errUnknownKey = fmt.Errorf("%w: the token's key is not among the issuer's keys", keyfunc.ErrKeyfunc)

// algorithms are the signature algorithms accepted: asymmetric ones only, so that a public key can never be used as
// an HMAC secret.
var algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Verifier checks bearer JWTs. Close it to stop its key refreshes.
type Verifier struct {
	cfg     Config
	meta    *oauthex.AuthServerMeta // the issuer's metadata; nil when it publishes none
	metaURL string                  // where meta was found
	keys    keyfunc.Keyfunc
	parser  *jwt.Parser
	cancel  context.CancelFunc
	logger  *slog.Logger
	// unknownKID lets a token with a key ID the cache lacks make the keys be fetched again, once per refreshEvery.
	unknownKID *rate.Limiter
}

// New returns a verifier for cfg. It reads the issuer's metadata (RFC 8414, else OpenID Connect discovery): that
// must succeed when cfg.JWKSURL is "", as the keys are found there. The first fetch of the keys may fail (the
// issuer is down): tokens are then refused until a later fetch succeeds.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("jwtauth: the issuer and the audience are required")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{cfg: cfg, logger: logger}
	meta, metaURL, err := discover(ctx, cfg.HTTPClient, cfg.Issuer)
	switch {
	case err != nil && cfg.JWKSURL == "":
		return nil, fmt.Errorf("jwtauth: %w (set jwks_url to skip discovery)", err)
	case err != nil:
		logger.Warn("the issuer's metadata could not be read; the agent card offers a plain bearer scheme", "issuer", cfg.Issuer, "err", err)
	default:
		v.meta, v.metaURL = meta, metaURL
	}
	jwksURL := cfg.JWKSURL
	if jwksURL == "" {
		if jwksURL = meta.JWKSURI; jwksURL == "" {
			return nil, fmt.Errorf("jwtauth: the metadata at %s has no jwks_uri (set jwks_url)", metaURL)
		}
	}
	keysCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	keys, err := keyfunc.NewDefaultOverrideCtx(keysCtx, []string{jwksURL}, keyfunc.Override{
		Client:          cfg.HTTPClient,
		RefreshInterval: time.Hour,
		// Verify decides when an unknown key ID may refresh the keys (unknownKID): once it lets a token through, the
		// refresh runs at once, and the fetch has fetchTimeout (jwkset bounds the fetch with the limiter's wait).
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
		RateLimitWaitMax:  fetchTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				logger.Warn("fetching the issuer's keys failed", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("jwtauth: the issuer's keys at %s: %w", jwksURL, err)
	}
	v.keys, v.cancel = keys, cancel
	v.unknownKID = rate.NewLimiter(rate.Every(refreshEvery), 1)
	v.parser = jwt.NewParser(jwt.WithValidMethods(algorithms), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway), jwt.WithIssuer(cfg.Issuer))
	return v, nil
}

// Close stops the key refreshes.
func (v *Verifier) Close() { v.cancel() }

// Metadata returns the issuer's authorization server metadata and the URL it was read from, or nil and "" when it
// could not be read.
func (v *Verifier) Metadata() (*oauthex.AuthServerMeta, string) { return v.meta, v.metaURL }

// Keys returns how many of the issuer's keys are in the cache (New fetched them first): 0 means no token can be
// verified now.
func (v *Verifier) Keys(ctx context.Context) int {
	keys, err := v.keys.Storage().KeyReadAll(ctx)
	if err != nil {
		return 0
	}
	return len(keys)
}

// knownKey reports whether the cache holds the key kid, without fetching anything.
func (v *Verifier) knownKey(ctx context.Context, kid string) bool {
	keys, err := v.keys.Storage().KeyReadAll(ctx)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(keys, func(k jwkset.JWK) bool { return k.Marshal().KID == kid })
}

// RequiredScopes returns the scopes every token must carry.
func (v *Verifier) RequiredScopes() []string { return slices.Clone(v.cfg.RequiredScopes) }

// claims are the claims Verify reads.
type claims struct {
	jwt.RegisteredClaims
	Scope    string `json:"scope"`
	Scp      any    `json:"scp"`
	ClientID string `json:"client_id"`
}

// scopes returns the scopes the token grants.
func (c *claims) scopes() []string {
	out := strings.Fields(c.Scope)
	switch scp := c.Scp.(type) {
	case string:
		out = append(out, strings.Fields(scp)...)
	case []any:
		for _, s := range scp {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// ScopeError is the error of a valid token that lacks required scopes.
type ScopeError struct {
	// Subject is the token's "sub".
	Subject string
	// Missing are the required scopes the token does not carry.
	Missing []string
}

func (e *ScopeError) Error() string {
	return "the token lacks the scope " + strings.Join(e.Missing, " ")
}

// Verify checks a bearer token and returns what it grants: its subject as UserID, its scopes and expiry, and its
// client in Extra["client_id"]. A token that is not valid gives an error wrapping auth.ErrInvalidToken; a valid one
// that lacks a required scope, a *ScopeError.
func (v *Verifier) Verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	var c claims
	keyOf := v.keys.KeyfuncCtx(ctx)
	gate := func(t *jwt.Token) (any, error) {
		// A key ID the cache lacks may mean a rotation: the keys are fetched again, at most every refreshEvery. Any
		// other token naming an unknown key is refused at once, so that forged key IDs cannot hold requests.
		if kid, _ := t.Header["kid"].(string); kid != "" && !v.knownKey(ctx, kid) && !v.unknownKID.Allow() {
			return nil, errUnknownKey
		}
		return keyOf(t)
	}
	if _, err := v.parser.ParseWithClaims(token, &c, gate); err != nil {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, reason(err))
	}
	if !oauthex.MatchesResource(c.Audience, v.cfg.Audience) {
		return nil, fmt.Errorf("%w: the token is not for this resource (aud %q)", auth.ErrInvalidToken, []string(c.Audience))
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: the token has no subject", auth.ErrInvalidToken)
	}
	granted := c.scopes()
	var missing []string
	for _, s := range v.cfg.RequiredScopes {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, &ScopeError{Subject: c.Subject, Missing: missing}
	}
	info := &auth.TokenInfo{Scopes: granted, Expiration: c.ExpiresAt.Time, UserID: c.Subject}
	if c.ClientID != "" {
		info.Extra = map[string]any{"client_id": c.ClientID}
	}
	return info, nil
}

// reason says in a few words why golang-jwt refused a token.
func reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a JWT"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, keyfunc.ErrKeyfunc):
		return "the token is not signed by a key of the issuer"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && strings.Contains(err.Error(), "signing method"):
		return "the token's algorithm is not accepted (an asymmetric signature is required)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token's signature is not valid"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token is from another issuer"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token has no expiry"
	}
	return "the token is not valid"
}

// verifiedKey carries the token information from Middleware's check to go-sdk's RequireBearerToken, which puts it
// where the MCP handler reads it.
type verifiedKey struct{}

// Middleware returns a wrapper that lets a request through only with a valid bearer token, and answers the others
// with 401 or 403 and a challenge. The token's information reaches next through auth.TokenInfoFromContext.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	// RequireBearerToken only hands over what was verified below: it is how the information gets into the context
	// under go-sdk's own key.
	handOver := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		info, _ := r.Context().Value(verifiedKey{}).(*auth.TokenInfo)
		if info == nil {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{ClockSkew: leeway})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			v.refuse(w, r, http.StatusUnauthorized, "", "a bearer token is required", v.cfg.RequiredScopes)
			return
		}
		info, err := v.Verify(r.Context(), token)
		var scopeErr *ScopeError
		switch {
		case errors.As(err, &scopeErr):
			v.logger.Info("refused a token without the required scopes", "sub", scopeErr.Subject, "missing", scopeErr.Missing)
			v.refuse(w, r, http.StatusForbidden, "insufficient_scope", scopeErr.Error(), v.cfg.RequiredScopes)
		case err != nil:
			msg := strings.TrimPrefix(err.Error(), auth.ErrInvalidToken.Error()+": ")
			v.logger.Info("refused a bearer token", "reason", msg)
			v.refuse(w, r, http.StatusUnauthorized, "invalid_token", msg, v.cfg.RequiredScopes)
		default:
			handOver.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, info)))
		}
	})
}

// bearer returns the token of an "Authorization: Bearer" header (the scheme in any case).
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// refuse answers with code and a Bearer challenge (RFC 6750 section 3) that names the resource metadata (RFC 9728
// section 5.1) and the scopes.
func (v *Verifier) refuse(w http.ResponseWriter, r *http.Request, code int, errCode, description string, scopes []string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", v.metadataURL(r))}
	if errCode != "" {
		params = append(params, fmt.Sprintf("error=%q", errCode), fmt.Sprintf("error_description=%q", challengeText(description)))
	}
	if len(scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "unauthorized: "+description, code)
}

// challengeText keeps the characters RFC 6750 allows in error_description (printable ASCII but '"' and '\').
func challengeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// wellKnown is the path prefix of protected resource metadata (RFC 9728 section 3).
const wellKnown = "/.well-known/oauth-protected-resource"

// audienceURL returns the audience as an http(s) URL, or nil when it is not one.
func (v *Verifier) audienceURL() *url.URL {
	u, err := url.Parse(v.cfg.Audience)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil
	}
	return u
}

// metadataURL is the URL of the resource metadata: where RFC 9728 puts it for the audience when that is a URL, else
// under the host the request came to.
func (v *Verifier) metadataURL(r *http.Request) string {
	if u := v.audienceURL(); u != nil {
		return u.Scheme + "://" + u.Host + wellKnown + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	return "http://" + r.Host + wellKnown
}

// Documents returns the resource metadata's handler by URL path: the well-known path, and the one RFC 9728 derives
// from the audience's path when it has one. They must be served without a token.
func (v *Verifier) Documents() map[string]http.Handler {
	md := &oauthex.ProtectedResourceMetadata{
		Resource:               v.cfg.Audience,
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.cfg.RequiredScopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           v.cfg.ResourceName,
	}
	h := auth.ProtectedResourceMetadataHandler(md)
	docs := map[string]http.Handler{wellKnown: h}
	if u := v.audienceURL(); u != nil {
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			docs[wellKnown+p] = h
		}
	}
	return docs
}

// discover reads the issuer's metadata: RFC 8414's well-known URL first (with the issuer's path after it), then
// OpenID Connect's (the path before it). The document must name the issuer exactly.
func discover(ctx context.Context, c *http.Client, issuer string) (*oauthex.AuthServerMeta, string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, "", fmt.Errorf("issuer %q: %w", issuer, err)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	origin := u.Scheme + "://" + u.Host
	candidates := []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + path + "/.well-known/openid-configuration",
	}
	var problems []string
	for _, mu := range candidates {
		meta, err := fetchMeta(ctx, c, mu)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if strings.TrimSuffix(meta.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			problems = append(problems, fmt.Sprintf("%s names the issuer %q, not %q", mu, meta.Issuer, issuer))
			continue
		}
		return meta, mu, nil
	}
	return nil, "", fmt.Errorf("no metadata for the issuer %s: %s", issuer, strings.Join(problems, "; "))
}

// fetchMeta GETs one metadata document.
func fetchMeta(ctx context.Context, c *http.Client, u string) (*oauthex.AuthServerMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	var meta oauthex.AuthServerMeta
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return &meta, nil
}
