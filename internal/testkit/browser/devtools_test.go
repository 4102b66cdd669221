package browser

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestDisableCacheAndOnNewDocument: a script added for new documents runs before the page's own, even under a CSP
// that forbids inline scripts; a cacheable file is fetched once while the cache is used, and on every load while it
// is disabled.
func TestDisableCacheAndOnNewDocument(t *testing.T) {
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "script-src 'self'")
			w.Header().Set("Cache-Control", "no-store")
			io.WriteString(w, `<!doctype html><html><body><p id="p">page</p><script src="/app.js"></script></body></html>`)
		case "/app.js":
			fetched.Add(1)
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Cache-Control", "max-age=3600")
			io.WriteString(w, `window.seenByPage = window.early === "set before the page";`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	b := Start(t)
	b.OnNewDocument(`window.early = "set before the page";`)
	b.Visit(srv.URL)
	var seen bool
	b.Eval(`window.seenByPage`, &seen)
	if !seen {
		t.Error("the page's script did not see what the script for new documents set")
	}
	b.Visit(srv.URL + "/?again")
	if n := fetched.Load(); n != 1 {
		t.Errorf("app.js fetched %d times over two loads with the cache, want 1", n)
	}
	b.DisableCache(true)
	b.Visit(srv.URL + "/?cold")
	b.Visit(srv.URL + "/?cold-again")
	if n := fetched.Load(); n != 3 {
		t.Errorf("app.js fetched %d times after two loads without the cache, want 3", n)
	}
	b.DisableCache(false)
	b.Visit(srv.URL + "/?warm")
	if n := fetched.Load(); n != 3 {
		t.Errorf("app.js fetched %d times after a load with the cache again, want 3", n)
	}
	b.AssertNoErrors()
}
