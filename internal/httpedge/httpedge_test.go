package httpedge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	h := Guard(ok, Options{
		Token: "s3cret", ListenAddr: "0.0.0.0:9000", AllowedHosts: []string{"agent.example.com"},
		AllowedOrigins: []string{"https://app.example.com"}, MaxBodyBytes: 8,
		Public: func(r *http.Request) bool { return r.URL.Path == "/public" },
	})
	for _, c := range []struct {
		name, method, path, host, origin, auth, body string
		status                                       int
		text                                         string
	}{
		{name: "token", path: "/x", host: "127.0.0.1:9000", auth: "Bearer s3cret", status: 200, text: "ok"},
		{name: "no token", path: "/x", host: "localhost", status: 401, text: "a bearer token is required"},
		{name: "wrong token", path: "/x", host: "localhost", auth: "Bearer nope", status: 401, text: "the bearer token is not valid"},
		{name: "not bearer", path: "/x", host: "localhost", auth: "Basic czNjcmV0", status: 401, text: "not valid"},
		{name: "public without token", path: "/public", host: "localhost", status: 200, text: "ok"},
		{name: "public from a foreign host", path: "/public", host: "evil.example.com", status: 403, text: "Host not allowed"},
		{name: "allowed host", path: "/x", host: "agent.example.com:443", auth: "Bearer s3cret", status: 200},
		{name: "listen host", path: "/x", host: "0.0.0.0:9000", auth: "Bearer s3cret", status: 200},
		{name: "foreign host", path: "/x", host: "evil.example.com", auth: "Bearer s3cret", status: 403},
		{name: "loopback origin", path: "/x", host: "localhost", origin: "http://localhost:3000", auth: "Bearer s3cret", status: 200},
		{name: "allowed origin", path: "/x", host: "localhost", origin: "https://app.example.com", auth: "Bearer s3cret", status: 200},
		{name: "foreign origin", path: "/x", host: "localhost", origin: "https://evil.example.com", auth: "Bearer s3cret", status: 403, text: "Origin not allowed"},
		{name: "body over the cap", method: "POST", path: "/x", host: "localhost", auth: "Bearer s3cret", body: "123456789", status: 413},
		{name: "body at the cap", method: "POST", path: "/x", host: "localhost", auth: "Bearer s3cret", body: "12345678", status: 200},
		{name: "liveness without token", path: "/livez", host: "localhost", status: 200, text: "ok\n"},
		{name: "liveness from a probe's host", path: "/livez", host: "10.1.2.3:9000", status: 200, text: "ok\n"},
		{name: "OAuth resource metadata", path: "/.well-known/oauth-protected-resource", host: "localhost", status: 404},
		{name: "OAuth server metadata", path: "/.well-known/oauth-authorization-server/mcp", host: "localhost", status: 404},
		{name: "OAuth metadata from a foreign host", path: "/.well-known/oauth-authorization-server", host: "evil.example.com", status: 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, c.path, strings.NewReader(c.body))
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.text) {
				t.Errorf("status %d, body %q; want %d with %q", w.Code, w.Body.String(), c.status, c.text)
			}
			challenge := `Bearer realm="agenthost"`
			if c.auth != "" {
				challenge += `, error="invalid_token"` // RFC 6750 section 3.1: a token was sent, and is not valid
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") != challenge {
				t.Errorf("WWW-Authenticate %q, want %q", w.Header().Get("WWW-Authenticate"), challenge)
			}
		})
	}
}

// TestGuardAuth: Auth replaces the token check for requests that are not public, and Documents are served to anyone
// who passes the Host and Origin checks.
func TestGuardAuth(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "next "+r.Header.Get("X-Auth")) })
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer jwt" {
				http.Error(w, "refused by auth", http.StatusUnauthorized)
				return
			}
			r.Header.Set("X-Auth", "checked")
			h.ServeHTTP(w, r)
		})
	}
	doc := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metadata") })
	h := Guard(next, Options{Auth: auth, Documents: map[string]http.Handler{"/.well-known/doc": doc},
		Public: func(r *http.Request) bool { return r.URL.Path == "/card" }})
	for _, c := range []struct {
		name, path, host, auth string
		status                 int
		text                   string
	}{
		{"authenticated", "/x", "localhost", "Bearer jwt", 200, "next checked"},
		{"refused", "/x", "localhost", "Bearer other", 401, "refused by auth"},
		{"public", "/card", "localhost", "", 200, "next "},
		{"document", "/.well-known/doc", "localhost", "", 200, "metadata"},
		{"document from a foreign host", "/.well-known/doc", "evil.example.com", "", 403, "Host not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			req.Host = c.host
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.text) {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body.String(), c.status, c.text)
			}
		})
	}
}

// TestLiveness serves a Guard over real HTTP: /livez answers 200 while Live says the server serves, and 503 once it
// says it stops, without the token, with nothing but that in its body; the handler behind Guard never sees it.
func TestLiveness(t *testing.T) {
	var stopping atomic.Bool
	srv := httptest.NewServer(Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the handler got %s %s", r.Method, r.URL.Path)
	}), Options{Token: "s3cret", Live: func() bool { return !stopping.Load() }}))
	defer srv.Close()
	get := func(method string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+LivePath, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET"); code != 200 || body != "ok\n" {
		t.Errorf("serving: %d %q, want 200 \"ok\\n\"", code, body)
	}
	if code, _ := get("HEAD"); code != 200 {
		t.Errorf("HEAD while serving: %d, want 200", code)
	}
	stopping.Store(true)
	if code, body := get("GET"); code != 503 || body != "stopping\n" {
		t.Errorf("stopping: %d %q, want 503 \"stopping\\n\"", code, body)
	}
	if code, _ := get("POST"); code != 401 {
		t.Errorf("POST /livez: %d, want 401: only GET and HEAD are the probe's", code)
	}
}

// TestGuardOriginAllowed: OriginAllowed decides in place of the loopback and AllowedOrigins rule, for requests that
// send an Origin, after the Host check.
func TestGuardOriginAllowed(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	h := Guard(ok, Options{
		AllowedOrigins: []string{"https://app.example.com"},
		OriginAllowed:  func(r *http.Request, origin string) bool { return origin == "http://"+r.Host },
	})
	for _, c := range []struct {
		name, host, origin string
		status             int
	}{
		{"own origin", "localhost:8767", "http://localhost:8767", 200},
		{"no origin", "localhost:8767", "", 200},
		{"another loopback port", "localhost:8767", "http://localhost:1", 403},
		{"allowed origin, refused by OriginAllowed", "localhost:8767", "https://app.example.com", 403},
		{"foreign host", "evil.example.com", "http://evil.example.com", 403},
	} {
		r := httptest.NewRequest("GET", "/x", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s: %d %q, want %d", c.name, w.Code, w.Body.String(), c.status)
		}
	}
}
