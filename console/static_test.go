package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"gzip":                 true,
		"gzip, deflate, br":    true,
		"deflate;q=1, gzip":    true,
		"GZIP;Q=0.5":           true,
		"gzip;q=0.001":         true,
		"gzip;q=0":             false,
		"gzip; q=0":            false,
		"gzip;q=0.0":           false,
		"gzip;q=0.000":         false,
		"gzip;q=nonsense":      false,
		"*":                    true,
		"*;q=0":                false,
		"*;q=0, gzip":          true, // an explicit gzip entry wins over *
		"*, gzip;q=0":          false,
		"gzip;q=0, *":          false,
		"":                     false,
		"identity":             false,
		"br;q=1, identity;q=0": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// The gzipped and the plain file are two representations: each has its ETag, and a conditional request is
// answered 304 only for the one it would get.
func TestGzipHasItsOwnETag(t *testing.T) {
	a := newAssets(fstest.MapFS{"web/app.js": {Data: []byte(strings.Repeat("let console = 1;\n", 500))}})
	srv := httptest.NewServer(a)
	defer srv.Close()
	get := func(accept, ifNoneMatch string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+"/app.js", nil)
		req.Header.Set("Accept-Encoding", accept)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	gz, plain := get("gzip", ""), get("identity", "")
	gzTag, plainTag := gz.Header.Get("ETag"), plain.Header.Get("ETag")
	if gz.Header.Get("Content-Encoding") != "gzip" || plain.Header.Get("Content-Encoding") != "" {
		t.Fatalf("encodings %q and %q", gz.Header.Get("Content-Encoding"), plain.Header.Get("Content-Encoding"))
	}
	if gzTag == "" || plainTag == "" || gzTag == plainTag {
		t.Errorf("ETags %q (gzip) and %q (identity): want two", gzTag, plainTag)
	}
	for _, resp := range []*http.Response{gz, plain} {
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Vary %q", resp.Header.Get("Vary"))
		}
	}
	if resp := get("gzip", gzTag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("gzip with its own ETag: %d", resp.StatusCode)
	}
	if resp := get("identity", gzTag); resp.StatusCode != http.StatusOK {
		t.Errorf("identity with the gzip ETag: %d, want the file", resp.StatusCode)
	}
	if resp := get("gzip", plainTag); resp.StatusCode != http.StatusOK {
		t.Errorf("gzip with the identity ETag: %d, want the file", resp.StatusCode)
	}
}
