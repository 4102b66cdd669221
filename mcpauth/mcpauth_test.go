package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

func fileStore(t *testing.T) *FileStore {
	return &FileStore{Path: filepath.Join(t.TempDir(), "state", "grants.json")}
}

// A stored grant whose access token is about to expire is refreshed at the next request, once; the new token is
// saved, and kept across a restart (a new handler reading the store). No token reaches the log, at debug level.
func TestRefresh(t *testing.T) {
	var refreshes atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.URL.Path != "/token" || r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != "refresh-1" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		n := refreshes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"access-%d","token_type":"Bearer","expires_in":3600}`, n+1)
	}))
	defer as.Close()
	var logs testwait.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := fileStore(t)
	g := &Grant{Server: "gh", URL: "https://mcp.example/mcp", ClientID: "client-1", TokenURL: as.URL + "/token", AuthURL: as.URL + "/authorize",
		Token: &oauth2.Token{AccessToken: "access-1", TokenType: "Bearer", RefreshToken: "refresh-1", Expiry: time.Now().Add(30 * time.Second)}}
	if err := store.SaveGrant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Server: "gh", URL: "https://mcp.example/mcp", Store: store, Logger: logger}
	h, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := h.TokenSource(t.Context())
	for range 3 {
		tok, err := ts.Token()
		if err != nil || tok.AccessToken != "access-2" || tok.RefreshToken != "refresh-1" {
			t.Fatalf("Token() = %+v, %v", tok, err)
		}
	}
	if n := refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	saved, err := store.LoadGrant(t.Context(), "gh")
	if err != nil || saved.Token.AccessToken != "access-2" || saved.Token.RefreshToken != "refresh-1" || saved.ClientID != "client-1" {
		t.Fatalf("saved grant %+v, %v", saved, err)
	}

	// After a restart, the saved token is used as it is.
	h, _ = New(t.Context(), cfg)
	ts, _ = h.TokenSource(t.Context())
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "access-2" || refreshes.Load() != 1 {
		t.Errorf("after a restart: %+v, %v, %d refreshes", tok, err, refreshes.Load())
	}
	// A grant for another URL is not sent.
	other := *cfg
	other.URL = "https://elsewhere.example/mcp"
	h, _ = New(t.Context(), &other)
	if ts, _ := h.TokenSource(t.Context()); ts != nil {
		t.Error("a grant for another URL is used")
	}
	if out := logs.String(); !strings.Contains(out, "OAuth token refreshed") || strings.Contains(out, "access-") || strings.Contains(out, "refresh-1") {
		t.Errorf("the log:\n%s", out)
	}
}

// A refresh token that the authorization server refuses leaves the request without a token, so that the server's
// 401 asks for a login.
func TestRefreshRefused(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"refresh token revoked"}`)
	}))
	defer as.Close()
	store := fileStore(t)
	store.SaveGrant(t.Context(), &Grant{Server: "gh", URL: "https://mcp.example/mcp", ClientID: "c", TokenURL: as.URL,
		Token: &oauth2.Token{AccessToken: "old", RefreshToken: "dead", Expiry: time.Now().Add(-time.Hour)}})
	h, _ := New(t.Context(), &Config{Server: "gh", URL: "https://mcp.example/mcp", Store: store})
	ts, _ := h.TokenSource(t.Context())
	_, err := ts.Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("Token() error %v, want invalid_grant", err)
	}
	// Through the RoundTripper, the request goes out without a token, and the 401 is a NeedsLoginError.
	mcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a token was sent: %q", r.Header.Get("Authorization"))
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer mcp.Close()
	_, err = (&http.Client{Transport: &RoundTripper{Handler: h, URL: mcp.URL}}).Get(mcp.URL)
	if !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), "run `agenthost mcp login gh`") {
		t.Errorf("GET error %v, want a NeedsLoginError", err)
	}
}

func TestHandlerAuthorize(t *testing.T) {
	h := &Handler{server: "linear"}
	resp := func(code int, challenge string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}"))}
		if challenge != "" {
			r.Header.Set("WWW-Authenticate", challenge)
		}
		return r
	}
	err := h.Authorize(t.Context(), nil, resp(401, `Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"`))
	if !errors.Is(err, ErrNeedsLogin) || err.Error() != "needs login: run `agenthost mcp login linear`" {
		t.Errorf("401: %v", err)
	}
	err = h.Authorize(t.Context(), nil, resp(403, `Bearer error="insufficient_scope", scope="issues:write"`))
	if !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), `wants scope "issues:write"`) {
		t.Errorf("403 insufficient_scope: %v", err)
	}
	if err := h.Authorize(t.Context(), nil, resp(403, "")); err != nil {
		t.Errorf("a plain 403: %v, want nil (left to the caller)", err)
	}
}

// newFlow starts a flow whose authorization URLs are answered by a login page (no redirect at once).
func newFlow(t *testing.T, opts *LoginOptions) (*Flow, string) {
	t.Helper()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<form>log in</form>") }))
	t.Cleanup(page.Close)
	f, err := NewFlow(t.Context(), &Config{Server: "notion", Store: fileStore(t)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, page.URL + "/authorize?state=s-right&client_id=c"
}

// A redirect with another state is refused and the login goes on; the right one ends it.
func TestFlowWrongState(t *testing.T) {
	var out testwait.Buffer
	f, authURL := newFlow(t, &LoginOptions{Out: &out})
	if !strings.HasPrefix(f.RedirectURL(), "http://127.0.0.1:") {
		t.Errorf("redirect URL %s", f.RedirectURL())
	}
	type result struct {
		res *auth.AuthorizationResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := f.fetch(t.Context(), &auth.AuthorizationArgs{URL: authURL})
		done <- result{res, err}
	}()
	testwait.Until(t, 10*time.Second, "the login waits", func() bool { return strings.Contains(out.String(), "Waiting for the redirect") })
	if !strings.Contains(out.String(), authURL) {
		t.Errorf("the authorization URL was not printed:\n%s", out.String())
	}
	get := func(q string) int {
		resp, err := http.Get(f.RedirectURL() + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get("code=evil&state=s-wrong")
	testwait.Until(t, 10*time.Second, "the wrong state is ignored", func() bool {
		return strings.Contains(out.String(), "another state came in and was ignored")
	})
	select {
	case r := <-done:
		t.Fatalf("a wrong state ended the login: %+v", r)
	default:
	}
	if code := get("code=good&state=s-right&iss=https%3A%2F%2Fas.example"); code != http.StatusOK {
		t.Errorf("the right redirect got %d", code)
	}
	r := <-done
	if r.err != nil || r.res.Code != "good" || r.res.State != "s-right" || r.res.Iss != "https://as.example" {
		t.Errorf("fetch = %+v, %v", r.res, r.err)
	}
}

func TestFlowTimeout(t *testing.T) {
	f, authURL := newFlow(t, &LoginOptions{Timeout: 200 * time.Millisecond})
	_, err := f.fetch(t.Context(), &auth.AuthorizationArgs{URL: authURL})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("fetch error %v", err)
	}
}

// The authorization server's refusal, at the listener, ends the login with its reason.
func TestFlowRefused(t *testing.T) {
	f, authURL := newFlow(t, nil)
	go func() {
		time.Sleep(100 * time.Millisecond)
		if resp, err := http.Get(f.RedirectURL() + "?error=access_denied&error_description=the+user+said+no&state=s-right"); err == nil {
			resp.Body.Close()
		}
	}()
	_, err := f.fetch(t.Context(), &auth.AuthorizationArgs{URL: authURL})
	if err == nil || !strings.Contains(err.Error(), "access_denied: the user said no") {
		t.Errorf("fetch error %v", err)
	}
}

// Without a browser that reaches the listener, the address the browser was sent to can be pasted.
func TestFlowPaste(t *testing.T) {
	pr, pw := io.Pipe()
	var out testwait.Buffer
	f, authURL := newFlow(t, &LoginOptions{Out: &out, Paste: pr})
	go func() {
		io.WriteString(pw, "not a url at all\n")
		io.WriteString(pw, "http://127.0.0.1:1/callback?code=pasted&state=s-right\n")
	}()
	res, err := f.fetch(t.Context(), &auth.AuthorizationArgs{URL: authURL})
	if err != nil || res.Code != "pasted" {
		t.Errorf("fetch = %+v, %v", res, err)
	}
	if !strings.Contains(out.String(), "That is not the address") {
		t.Errorf("the bad paste was not answered:\n%s", out.String())
	}
	pw.Close()
}

// An authorization server that redirects at once is followed without a browser.
func TestFlowRedirectAtOnce(t *testing.T) {
	f, err := NewFlow(t.Context(), &Config{Server: "ci", Store: fileStore(t)}, &LoginOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
		q := u.Query()
		q.Set("code", "at-once")
		q.Set("state", r.URL.Query().Get("state"))
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}))
	defer as.Close()
	res, err := f.fetch(t.Context(), &auth.AuthorizationArgs{URL: as.URL + "/authorize?state=st&redirect_uri=" + url.QueryEscape(f.RedirectURL())})
	if err != nil || res.Code != "at-once" || res.State != "st" {
		t.Errorf("fetch = %+v, %v", res, err)
	}
}

// The RoundTripper sends the token, and after the handler authorizes a 401, the request again with its body.
func TestRoundTripper(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Header.Get("Authorization")+" "+string(b))
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	h := &fakeHandler{}
	resp, err := (&http.Client{Transport: &RoundTripper{Handler: h, URL: srv.URL + "/mcp"}}).Post(srv.URL, "application/json", strings.NewReader(`{"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || strings.Join(bodies, "|") != ` {"id":1}|Bearer fresh {"id":1}` {
		t.Errorf("got %q after %q", b, bodies)
	}
}

// The token goes only to the server's origin: a redirect to another host or another port gets none, and its 401
// does not start an authorization.
func TestRoundTripperKeepsTheTokenWithTheOrigin(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer other.Close()
	for _, tt := range []struct {
		name, target string
		code         int
	}{
		{"other host 307", strings.Replace(other.URL, "127.0.0.1", "localhost", 1), http.StatusTemporaryRedirect},
		{"other host 302", strings.Replace(other.URL, "127.0.0.1", "localhost", 1), http.StatusFound},
		{"other port 307", other.URL, http.StatusTemporaryRedirect},
		{"other port 302", other.URL, http.StatusFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var home []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				home = append(home, r.Header.Get("Authorization"))
				http.Redirect(w, r, tt.target+"/elsewhere", tt.code)
			}))
			defer srv.Close()
			mu.Lock()
			seen = nil
			mu.Unlock()
			h := &fakeHandler{ts: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "s3cret", TokenType: "Bearer"})}
			// net/http's redirect policy, which follows: the round tripper alone keeps the token home.
			resp, err := (&http.Client{Transport: &RoundTripper{Handler: h, URL: srv.URL + "/mcp"}}).Post(srv.URL+"/mcp",
				"application/json", strings.NewReader(`{"id":1}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(home) != 1 || home[0] != "Bearer s3cret" {
				t.Errorf("the server got Authorization %q, want the token", home)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || strings.Contains(seen[0], "s3cret") {
				t.Errorf("the other origin got %q, want one request without the token", seen)
			}
			if h.authorized != 0 {
				t.Errorf("the other origin's 401 started %d authorizations", h.authorized)
			}
		})
	}
	// Without the server's URL the token goes nowhere.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			t.Errorf("a RoundTripper without URL sent %q", a)
		}
	}))
	defer srv.Close()
	h := &fakeHandler{ts: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "s3cret", TokenType: "Bearer"})}
	if resp, err := (&http.Client{Transport: &RoundTripper{Handler: h}}).Get(srv.URL); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
}

type fakeHandler struct {
	ts         oauth2.TokenSource
	authorized int
}

func (f *fakeHandler) TokenSource(context.Context) (oauth2.TokenSource, error) { return f.ts, nil }

func (f *fakeHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	f.authorized++
	f.ts = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "fresh", TokenType: "Bearer"})
	return nil
}
