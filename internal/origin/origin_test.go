package origin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestOf(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"http://example.com/a", "http://example.com:80/b?q", true},
		{"HTTPS://Example.COM/", "https://example.com:443", true},
		{"http://[0:0::1]:8080/", "http://[::1]:8080/x", true},
		{"http://127.0.0.1:1/", "http://127.0.0.1:2/", false},
		{"http://127.0.0.1:1/", "http://localhost:1/", false},
		{"http://example.com/", "https://example.com/", false},
		{"http://example.com/", "http://api.example.com/", false},
		{"https://example.com:8443/", "https://example.com/", false},
	}
	for _, tt := range tests {
		a, err := Parse(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse(tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if (a == b) != tt.same {
			t.Errorf("Of(%s) == Of(%s) is %v, want %v (%s, %s)", tt.a, tt.b, a == b, tt.same, a, b)
		}
	}
	for _, raw := range []string{"/relative", "example.com", "http://", "%"} {
		if o, err := Parse(raw); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", raw, o)
		}
	}
	if o, _ := Parse("HTTP://[::1]/"); o.String() != "http://[::1]:80" {
		t.Errorf("String = %q", o.String())
	}
}

// recorder is a test server that records the headers of each request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Header.Clone())
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// localhostURL is r's URL with localhost for 127.0.0.1: the same server under another origin.
func (r *recorder) localhostURL() string {
	return strings.Replace(r.URL, "127.0.0.1", "localhost", 1)
}

var configured = map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k3y"}

// assertNoCredentials fails when a request r recorded carried a credential.
func assertNoCredentials(t *testing.T, r *recorder) {
	t.Helper()
	for i, h := range r.headers() {
		for _, k := range []string{"Authorization", "X-Api-Key", "Cookie", "Referer"} {
			if v := h.Get(k); v != "" {
				t.Errorf("request %d to the other origin carried %s: %q", i, k, v)
			}
		}
	}
}

func TestTransportKeepsCredentialsWithTheOrigin(t *testing.T) {
	other := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {})
	for _, tt := range []struct{ name, target string }{
		{"other host", other.localhostURL() + "/b"},
		{"other port", other.URL + "/b"},
	} {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
			t.Run(tt.name+"/"+http.StatusText(code), func(t *testing.T) {
				before := len(other.headers())
				first := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, tt.target, code)
				})
				o, err := Parse(first.URL)
				if err != nil {
					t.Fatal(err)
				}
				// net/http's own redirect policy, which follows: the transport alone keeps the credentials home.
				c := &http.Client{Transport: &Transport{Origin: o, Header: configured}}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, first.URL+"/a?token=s3cret", strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Cookie", "session=c00k1e") // as a caller's own credential would be
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := first.headers(); len(got) != 1 || got[0].Get("Authorization") != "Bearer s3cret" ||
					got[0].Get("X-Api-Key") != "k3y" {
					t.Errorf("the origin got %v, want the configured headers", got)
				}
				if len(other.headers()) != before+1 {
					t.Fatalf("the redirect was not followed")
				}
				assertNoCredentials(t, other)
			})
		}
	}
}

func TestClientRefusesCrossOriginRedirects(t *testing.T) {
	other := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {})
	first := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		case "/landed":
		case "/host":
			http.Redirect(w, r, other.localhostURL()+"/x", http.StatusTemporaryRedirect)
		case "/port":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/scheme":
			http.Redirect(w, r, "https://"+r.Host+"/x", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	})
	o, err := Parse(first.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := Client(nil, o, configured)

	resp, err := c.Get(first.URL + "/same")
	if err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	resp.Body.Close()
	if got := first.headers(); len(got) != 2 || got[1].Get("X-Api-Key") != "k3y" {
		t.Errorf("the same-origin redirect got %v, want the configured headers", got)
	}

	for _, path := range []string{"/host", "/port", "/scheme"} {
		_, err := c.Get(first.URL + path)
		if !errors.Is(err, ErrCrossOrigin) {
			t.Errorf("GET %s = %v, want %v", path, err, ErrCrossOrigin)
		}
	}
	if n := len(other.headers()); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
	if _, err := c.Get(first.URL + "/loop"); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("redirect loop: %v", err)
	}

	// The base client's transport stays under the new one.
	var based bool
	base := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		based = true
		return http.DefaultTransport.RoundTrip(r)
	})}
	if resp, err := Client(base, o, nil).Get(first.URL + "/landed"); err != nil || !based {
		t.Errorf("through a base client: %v, base used %v", err, based)
	} else {
		resp.Body.Close()
	}
	if base.CheckRedirect != nil {
		t.Error("Client changed its base")
	}
}

// TestClientRedirectsWithinAnotherOrigin: a request the server sent to another origin (an SSE message endpoint, an
// A2A interface elsewhere) follows redirects within that origin, without the credentials, but not one that leads
// from it back to the credentials' origin or to a third one.
func TestClientRedirectsWithinAnotherOrigin(t *testing.T) {
	home := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {})
	third := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {})
	elsewhere := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/messages", http.StatusTemporaryRedirect)
		case "/home":
			http.Redirect(w, r, home.URL+"/x", http.StatusTemporaryRedirect)
		case "/third":
			http.Redirect(w, r, third.URL+"/x", http.StatusFound)
		}
	})
	o, err := Parse(home.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := Client(nil, o, configured)

	resp, err := c.Post(elsewhere.URL+"/moved", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("a redirect within the other origin: %v", err)
	}
	resp.Body.Close()
	if n := len(elsewhere.headers()); n != 2 {
		t.Errorf("the other origin got %d requests, want 2: the redirect was not followed", n)
	}
	assertNoCredentials(t, elsewhere)

	for _, path := range []string{"/home", "/third"} {
		if _, err := c.Get(elsewhere.URL + path); !errors.Is(err, ErrCrossOrigin) {
			t.Errorf("GET %s = %v, want %v", path, err, ErrCrossOrigin)
		}
	}
	if n, m := len(home.headers()), len(third.headers()); n != 0 || m != 0 {
		t.Errorf("the origins redirected to got %d and %d requests, want none", n, m)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzParse: an origin written out is read back as the same origin, and a URL's origin does not depend on its path,
// query, fragment or user info.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"http://example.com/a", "HTTPS://[::1]:8443/x?y#z", "http://u:p@127.0.0.1:1/", "ws://h",
		"http://[fe80::1%25eth0]/", "A://::"} {
		f.Add(s, "/path?q=1#f")
	}
	f.Fuzz(func(t *testing.T, raw, rest string) {
		o, err := Parse(raw)
		if err != nil {
			return
		}
		again, err := Parse(o.String())
		if err != nil || again != o {
			t.Errorf("Parse(%q) = %s, read back as %s, %v", raw, o, again, err)
		}
		u, _ := url.Parse(raw)
		ref, err := url.Parse(rest)
		if err != nil || ref.Scheme != "" || ref.Host != "" || strings.HasPrefix(rest, "//") {
			return
		}
		if o2 := Of(u.ResolveReference(ref)); o2 != o {
			t.Errorf("Of(%q resolved against %q) = %s, want %s", rest, raw, o2, o)
		}
	})
}
