package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// The ways to authorize, as [mcp.servers.X] auth names them.
const (
	ModeAuto              = ""                   // OAuth when the server asks for it
	ModeNone              = "none"               // never
	ModeOAuth             = "oauth"              // the authorization code flow, with PKCE
	ModeClientCredentials = "client_credentials" // the client credentials grant, with a pre-registered client
)

// ErrNeedsLogin is the error of a connection to a server that asks for authorization when no login has been done
// for it, or the grant no longer works.
var ErrNeedsLogin = errors.New("needs login")

// NeedsLoginError says which server needs a login, and how to do it.
type NeedsLoginError struct {
	Server string
	// Scope is the scope the server asked for, when it refused a token for lacking it.
	Scope string
}

func (e *NeedsLoginError) Error() string {
	if e.Scope != "" {
		return fmt.Sprintf("needs login: the server wants scope %q; run `agenthost mcp login %s`", e.Scope, e.Server)
	}
	return fmt.Sprintf("needs login: run `agenthost mcp login %s`", e.Server)
}

func (e *NeedsLoginError) Is(target error) bool { return target == ErrNeedsLogin }

// Config is how agenthost authorizes itself to one server.
type Config struct {
	// Server is the server's configured name; URL its endpoint.
	Server string
	URL    string
	// Mode is ModeAuto, ModeOAuth or ModeClientCredentials. (ModeNone needs no handler.)
	Mode string
	// ClientID and ClientSecret are a client registered beforehand; ClientMetadataURL is a client ID metadata
	// document. With none of them, the login registers a client dynamically.
	ClientID, ClientSecret string
	ClientMetadataURL      string
	// Scopes replace those the server names, when set.
	Scopes []string
	// Store keeps the grants.
	Store Store
	// HTTPClient makes the requests to the authorization server; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives the refreshes and their failures (never a token); nil discards them.
	Logger *slog.Logger
}

func (c *Config) client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// storeTimeout bounds the saves of refreshed grants, which no request's context bounds.
const storeTimeout = 10 * time.Second

// refreshEarly is how long before its expiry an access token is refreshed.
const refreshEarly = time.Minute

// New returns the handler for a running agent: the client credentials grant for ModeClientCredentials, else the
// stored grant's token, refreshed before it expires, and ErrNeedsLogin when the server asks for more.
func New(ctx context.Context, cfg *Config) (auth.OAuthHandler, error) {
	if cfg.Mode == ModeClientCredentials {
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: cfg.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}},
			HTTPClient:  cfg.HTTPClient,
		})
	}
	h := &Handler{server: cfg.Server}
	g, err := cfg.Store.LoadGrant(ctx, cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("reading the login of %s: %w", cfg.Server, err)
	}
	if g != nil && g.URL == cfg.URL && g.Token != nil {
		h.ts = newRefresher(cfg, g)
	}
	return h, nil
}

// Handler sends a stored grant's token, and never prompts: when the server asks for authorization anyway, the
// request fails with a NeedsLoginError.
type Handler struct {
	server string
	ts     oauth2.TokenSource // nil without a grant
}

var _ auth.OAuthHandler = (*Handler)(nil)

// TokenSource implements auth.OAuthHandler.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) { return h.ts, nil }

// Authorize implements auth.OAuthHandler. A 403 that is not about scopes is left to the caller, as the SDK asks.
func (h *Handler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	var errCode, scope string
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			errCode, scope = c.Params["error"], c.Params["scope"]
		}
	}
	if resp.StatusCode == http.StatusForbidden && errCode != "insufficient_scope" {
		return nil
	}
	if errCode != "insufficient_scope" {
		scope = ""
	}
	return &NeedsLoginError{Server: h.server, Scope: scope}
}

// refresher is a grant's token source: it refreshes the access token refreshEarly before it expires, and saves
// each new token in the store.
type refresher struct {
	cfg *Config
	oc  *oauth2.Config
	ctx context.Context // carries the HTTP client

	mu sync.Mutex
	g  *Grant
}

func newRefresher(cfg *Config, g *Grant) *refresher {
	return &refresher{cfg: cfg, oc: g.config(), ctx: context.WithValue(context.Background(), oauth2.HTTPClient, cfg.client()), g: g}
}

// Token implements oauth2.TokenSource.
func (r *refresher) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tok := r.g.Token
	if tok.AccessToken != "" && (tok.Expiry.IsZero() || time.Until(tok.Expiry) > r.margin(tok)) {
		return tok, nil
	}
	if tok.RefreshToken == "" {
		return tok, nil // expired or about to: the server's 401 asks for a login
	}
	// A token without an access token is refreshed at once.
	next, err := r.oc.TokenSource(r.ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		if tok.AccessToken != "" && time.Now().Before(tok.Expiry) {
			r.cfg.logger().Warn("refreshing an OAuth token failed; using the current one until it expires", "server", r.cfg.Server, "err", err)
			return tok, nil
		}
		r.cfg.logger().Warn("refreshing an OAuth token failed", "server", r.cfg.Server, "err", err)
		return nil, err
	}
	if next.RefreshToken == "" {
		next.RefreshToken = tok.RefreshToken
	}
	g := *r.g
	g.Token, g.Updated = next, time.Now()
	r.g = &g
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.cfg.Store.SaveGrant(ctx, &g); err != nil {
		r.cfg.logger().Warn("saving a refreshed OAuth token failed; the next start must refresh it again", "server", r.cfg.Server, "err", err)
	}
	r.cfg.logger().Debug("OAuth token refreshed", "server", r.cfg.Server, "expiry", next.Expiry)
	return next, nil
}

// margin is how long before its expiry tok is refreshed: refreshEarly, or a quarter of the token's lifetime when
// that is shorter, so that a short-lived token is not refreshed at every request.
func (r *refresher) margin(tok *oauth2.Token) time.Duration {
	if lifetime := tok.Expiry.Sub(r.g.Updated); lifetime > 0 && lifetime/4 < refreshEarly {
		return lifetime / 4
	}
	return refreshEarly
}

// saving wraps the token source the SDK's handler made after a login: it saves the grant once, with the client
// and the endpoints of cfg, and then refreshes like a stored grant.
func saving(ctx context.Context, cfg *Config, redirectURL string, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	g := &Grant{
		Server: cfg.Server, URL: cfg.URL,
		ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
		Registered:  oc.ClientID != cfg.ClientID && oc.ClientID != cfg.ClientMetadataURL,
		RedirectURL: redirectURL,
		AuthURL:     oc.Endpoint.AuthURL, TokenURL: oc.Endpoint.TokenURL, AuthStyle: oc.Endpoint.AuthStyle,
		Scopes: slices.Clone(oc.Scopes), Token: tok, Updated: time.Now(),
	}
	if err := cfg.Store.SaveGrant(ctx, g); err != nil {
		return nil, fmt.Errorf("saving the login of %s: %w", cfg.Server, err)
	}
	return newRefresher(cfg, g), nil
}
