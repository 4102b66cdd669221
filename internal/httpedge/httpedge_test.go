package httpedge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") != `Bearer realm="agenthost"` {
				t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
			}
		})
	}
}
