package mcpclients

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// headerLog is a test server that records the headers of every request it gets before h answers it.
type headerLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newHeaderLog(t *testing.T, h http.Handler) *headerLog {
	t.Helper()
	l := &headerLog{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Clone())
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *headerLog) requests() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen
}

// credentialsSeen lists the credentials the requests l got, from the one numbered from, carried.
func (l *headerLog) credentialsSeen(from int) []string {
	var out []string
	for i, h := range l.requests()[from:] {
		for _, k := range []string{"Authorization", "X-Api-Key"} {
			if v := h.Get(k); v != "" {
				out = append(out, fmt.Sprintf("request %d: %s: %s", i, k, v))
			}
		}
	}
	return out
}

// staticToken is an OAuth handler that holds a token already.
type staticToken struct{}

func (staticToken) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "0auth-s3cret", TokenType: "Bearer"}), nil
}

func (staticToken) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return fmt.Errorf("no authorization in this test")
}

var _ auth.OAuthHandler = staticToken{}

// credentialed is the configuration of a server at url with a custom header and, over oauth, an OAuth token.
func credentialed(transport, url string, oauth bool) ServerConfig {
	cfg := ServerConfig{
		Name: "web", Transport: transport, URL: url, Required: true, ConnectTimeout: 10 * time.Second,
		Headers: map[string]string{"X-Api-Key": "k3y-s3cret"},
	}
	if oauth {
		cfg.OAuth = func(context.Context) (auth.OAuthHandler, error) { return staticToken{}, nil }
	} else {
		cfg.Headers["Authorization"] = "Bearer s3cret"
	}
	return cfg
}

// A server that redirects to another origin, another host name or another port of the same host, is not followed
// there: the other origin gets no request, so neither the configured headers nor the OAuth token.
func TestHTTPCrossOriginRedirectRefused(t *testing.T) {
	for _, transport := range []string{TransportHTTP, TransportSSE} {
		var handler http.Handler = streamable(echoServer("ping"))
		if transport == TransportSSE {
			handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return echoServer("ping") }, nil)
		}
		other := newHeaderLog(t, handler)
		for _, target := range []struct{ name, url string }{
			{"other host", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)},
			{"other port", other.URL},
		} {
			for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
				for _, oauth := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%d/oauth=%v", transport, target.name, code, oauth)
					t.Run(name, func(t *testing.T) {
						before := len(other.requests())
						first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							http.Redirect(w, r, target.url+r.URL.RequestURI(), code)
						}))
						defer first.Close()
						c, err := Connect(bounded(t), []ServerConfig{credentialed(transport, first.URL+"/mcp", oauth)}, nil)
						if err == nil {
							c.Close()
							t.Error("Connect followed the redirect to another origin")
						} else if !strings.Contains(err.Error(), "redirect to another origin refused") {
							t.Errorf("Connect = %v, want the redirect refused", err)
						}
						if seen := other.credentialsSeen(before); len(seen) > 0 {
							t.Errorf("the other origin got credentials: %q", seen)
						}
						if n := len(other.requests()) - before; n != 0 {
							t.Errorf("the other origin got %d requests, want none", n)
						}
					})
				}
			}
		}
	}
}

// A redirect within the origin is followed, with the configured headers.
func TestHTTPSameOriginRedirectFollowed(t *testing.T) {
	h := streamable(echoServer("ping"))
	var srv *headerLog
	srv = newHeaderLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
			return
		}
		h.ServeHTTP(w, r)
	}))
	c, err := Connect(bounded(t), []ServerConfig{credentialed(TransportHTTP, srv.URL+"/old", false)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	reqs := srv.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Get("Authorization") != "Bearer s3cret" || r.Get("X-Api-Key") != "k3y-s3cret" {
			t.Errorf("request %d had Authorization %q and X-Api-Key %q", i, r.Get("Authorization"), r.Get("X-Api-Key"))
		}
	}
}

// An SSE server whose endpoint event names another origin gets its messages posted there without the configured
// headers or the OAuth token.
func TestSSEEndpointElsewhereGetsNoCredentials(t *testing.T) {
	other := newHeaderLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	for _, target := range []struct{ name, url string }{
		{"other host", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)},
		{"other port", other.URL},
	} {
		for _, oauth := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/oauth=%v", target.name, oauth), func(t *testing.T) {
				before := len(other.requests())
				sse := newHeaderLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", target.url)
					w.(http.Flusher).Flush()
					<-r.Context().Done()
				}))
				c, err := Connect(bounded(t), []ServerConfig{credentialed(TransportSSE, sse.URL+"/sse", oauth)}, nil)
				if err == nil {
					c.Close()
					t.Fatal("Connect succeeded")
				}
				if n := len(other.requests()) - before; n == 0 {
					t.Fatal("nothing was posted to the endpoint")
				}
				if seen := other.credentialsSeen(before); len(seen) > 0 {
					t.Errorf("the other origin got credentials: %q", seen)
				}
				// The SSE stream itself, at the configured origin, had them.
				if r := sse.requests(); len(r) == 0 || r[0].Get("X-Api-Key") != "k3y-s3cret" || r[0].Get("Authorization") == "" {
					t.Errorf("the configured origin got %v, want the credentials", r)
				}
			})
		}
	}
}
