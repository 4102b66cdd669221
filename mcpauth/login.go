package mcpauth

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultLoginTimeout bounds a login when LoginOptions.Timeout is 0.
const DefaultLoginTimeout = 5 * time.Minute

// callbackPath is the redirect listener's path.
const callbackPath = "/callback"

// LoginOptions configures a login.
type LoginOptions struct {
	// RedirectPort is the loopback listener's port on 127.0.0.1; 0 means the one the last login used when it is
	// free (a dynamically registered client keeps its redirect URI), else any free one.
	RedirectPort int
	// Timeout bounds the wait for the redirect; 0 means DefaultLoginTimeout.
	Timeout time.Duration
	// Out receives the authorization URL and what to do with it; nil discards them.
	Out io.Writer
	// OpenBrowser opens the authorization URL; nil opens none.
	OpenBrowser func(url string) error
	// Paste, when set, is read for a redirect URL pasted by hand: the way to finish a login on a machine whose
	// browser cannot reach the listener.
	Paste io.Reader
}

// Flow is one login's loopback redirect listener. Close it when done.
type Flow struct {
	cfg      *Config
	opts     LoginOptions
	ln       net.Listener
	srv      *http.Server
	redirect string
	results  chan callback
}

// callback is what reached the redirect URI: a code and its state, or the authorization server's error.
type callback struct {
	code, state, iss string
	err              error
}

// NewFlow starts the redirect listener of a login to cfg's server.
func NewFlow(ctx context.Context, cfg *Config, opts *LoginOptions) (*Flow, error) {
	f := &Flow{cfg: cfg, results: make(chan callback, 4)}
	if opts != nil {
		f.opts = *opts
	}
	if f.opts.Timeout <= 0 {
		f.opts.Timeout = DefaultLoginTimeout
	}
	port := f.opts.RedirectPort
	if port == 0 {
		if g, err := cfg.Store.LoadGrant(ctx, cfg.Server); err == nil && g != nil && g.Registered {
			if u, err := url.Parse(g.RedirectURL); err == nil {
				if p, err := strconv.Atoi(u.Port()); err == nil {
					if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
						f.ln = ln
					}
				}
			}
		}
	}
	if f.ln == nil {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("the login's redirect listener: %w", err)
		}
		f.ln = ln
	}
	f.redirect = "http://" + f.ln.Addr().String() + callbackPath
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serveCallback), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(f.ln)
	return f, nil
}

// RedirectURL is the URL the authorization server sends the browser back to.
func (f *Flow) RedirectURL() string { return f.redirect }

// Close stops the listener.
func (f *Flow) Close() error { return f.srv.Close() }

// serveCallback takes a redirect from the authorization server. A redirect with the wrong state is refused and the
// wait goes on: it is not from this login.
func (f *Flow) serveCallback(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != callbackPath {
		http.NotFound(w, r)
		return
	}
	cb := callbackFrom(r.URL.Query())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if cb.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<p>agenthost: the login to %s failed: %s</p>", html.EscapeString(f.cfg.Server), html.EscapeString(cb.err.Error()))
	} else {
		fmt.Fprintf(w, "<p>agenthost: the login to %s is done. You can close this tab.</p>", html.EscapeString(f.cfg.Server))
	}
	select {
	case f.results <- cb:
	default: // a flood of redirects: the first ones decide
	}
}

// callbackFrom reads a redirect's query.
func callbackFrom(q url.Values) callback {
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return callback{state: q.Get("state"), err: fmt.Errorf("the authorization server refused: %s", msg)}
	}
	if q.Get("code") == "" {
		return callback{err: errors.New("the redirect carries no authorization code")}
	}
	return callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
}

// fetch is the SDK's AuthorizationCodeFetcher: it returns the code for the authorization URL. An authorization
// server that redirects at once (no login page: a test server, a session it already has) is followed here;
// otherwise the URL is printed and opened, and the redirect awaited at the listener or pasted.
func (f *Flow) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	authURL, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("authorization URL: %w", err)
	}
	state := authURL.Query().Get("state")
	if cb, ok := f.followAtOnce(ctx, args.URL); ok {
		return f.result(cb, state)
	}

	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	out := f.opts.Out
	if out == nil {
		out = io.Discard
	}
	fmt.Fprintf(out, "To log in to %s, open this URL in a browser:\n\n  %s\n\n", f.cfg.Server, args.URL)
	if f.opts.OpenBrowser != nil {
		if err := f.opts.OpenBrowser(args.URL); err != nil {
			fmt.Fprintf(out, "(no browser could be opened: %v)\n", err)
		}
	}
	pasted := make(chan callback, 1)
	if f.opts.Paste != nil {
		fmt.Fprintf(out, "Waiting for the redirect to %s (up to %v). If the browser cannot reach it, paste the address it was sent to here.\n", f.redirect, f.opts.Timeout)
		go readPasted(ctx, f.opts.Paste, pasted, out)
	} else {
		fmt.Fprintf(out, "Waiting for the redirect to %s (up to %v).\n", f.redirect, f.opts.Timeout)
	}
	for {
		var cb callback
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("the login to %s timed out after %v waiting for the redirect", f.cfg.Server, f.opts.Timeout)
			}
			return nil, ctx.Err()
		case cb = <-f.results:
		case cb = <-pasted:
		}
		if cb.state != state {
			fmt.Fprintln(out, "A redirect with another state came in and was ignored: it is not from this login.")
			continue
		}
		return f.result(cb, state)
	}
}

func (f *Flow) result(cb callback, state string) (*auth.AuthorizationResult, error) {
	if cb.err != nil {
		return nil, cb.err
	}
	if cb.state != state {
		return nil, errors.New("the redirect's state does not match the login's")
	}
	return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
}

// followAtOnce asks for the authorization URL without a browser, and returns the redirect when the authorization
// server sends one to this flow's listener straight away.
func (f *Flow) followAtOnce(ctx context.Context, authURL string) (callback, bool) {
	client := *f.cfg.client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return callback{}, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return callback{}, false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	loc, err := resp.Location()
	if resp.StatusCode < 300 || resp.StatusCode > 399 || err != nil || !strings.HasPrefix(loc.String(), f.redirect) {
		return callback{}, false
	}
	return callbackFrom(loc.Query()), true
}

// readPasted reads lines until one is a redirect URL (or its query) with a code or an error.
func readPasted(ctx context.Context, r io.Reader, out chan<- callback, w io.Writer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() && ctx.Err() == nil {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || (u.Query().Get("code") == "" && u.Query().Get("error") == "") {
			fmt.Fprintln(w, "That is not the address the browser was sent to (it has a code=... parameter); try again.")
			continue
		}
		select {
		case out <- callbackFrom(u.Query()):
		case <-ctx.Done():
		}
		return
	}
}

// NewLoginHandler returns a handler that runs the login through f when the server asks for authorization, and
// saves the grant it gets. A client that an earlier login registered dynamically is used again.
func NewLoginHandler(ctx context.Context, cfg *Config, f *Flow) (auth.OAuthHandler, error) {
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              f.redirect,
		AuthorizationCodeFetcher: f.fetch,
		RequestRefreshToken:      true,
		Client:                   cfg.client(),
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			return saving(ctx, cfg, f.redirect, oc, tok)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              "agenthost",
			RedirectURIs:            []string{f.redirect},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
	}
	if len(cfg.Scopes) > 0 {
		hc.ScopeFilter = func([]string) []string { return cfg.Scopes }
	}
	if cfg.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.ClientMetadataURL}
	}
	switch g, err := cfg.Store.LoadGrant(ctx, cfg.Server); {
	case err != nil:
		return nil, fmt.Errorf("reading the login of %s: %w", cfg.Server, err)
	case cfg.ClientID != "":
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cfg.ClientID}
		if cfg.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}
		}
	case g != nil && g.Registered && g.URL == cfg.URL && g.RedirectURL == f.redirect:
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: g.ClientID}
		if g.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: g.ClientSecret}
		}
	}
	return auth.NewAuthorizationCodeHandler(hc)
}

// Login runs the login to cfg's server through f. connect connects to the server with the handler it is given
// and lists its tools, as agenthost does at start-up: whatever request the server refuses first (initialize, or a
// later one) runs the authorization, and the grant it gets is saved. Login returns that grant, or an error when the
// server asked for no authorization.
func Login(ctx context.Context, cfg *Config, f *Flow, connect func(context.Context, auth.OAuthHandler) error) (*Grant, error) {
	h, err := NewLoginHandler(ctx, cfg, f)
	if err != nil {
		return nil, err
	}
	counted := &countingHandler{OAuthHandler: h}
	if err := connect(ctx, counted); err != nil {
		return nil, err
	}
	if counted.authorized.Load() == 0 {
		return nil, fmt.Errorf("%s asked for no authorization: it needs no login", cfg.Server)
	}
	g, err := cfg.Store.LoadGrant(ctx, cfg.Server)
	if err == nil && g == nil {
		err = errors.New("the login ended without a saved grant")
	}
	return g, err
}

// countingHandler counts the authorizations that succeeded.
type countingHandler struct {
	auth.OAuthHandler
	authorized atomic.Int32
}

func (c *countingHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := c.OAuthHandler.Authorize(ctx, req, resp)
	if err == nil {
		c.authorized.Add(1)
	}
	return err
}
