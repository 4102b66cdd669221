package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
)

func fetchURLTool(t *testing.T, opts FetchURLOptions) host.Tool {
	t.Helper()
	if opts.Timeout == 0 {
		// A refusal that failed to happen would otherwise wait for an unreachable address for 30s.
		opts.Timeout = 10 * time.Second
	}
	ts, err := New([]string{"fetch_url"}, &Options{Version: "test", FetchURL: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	tools, err := ts.Tools(t.Context())
	if err != nil || len(tools) != 1 {
		t.Fatalf("Tools = %v, %v", tools, err)
	}
	return tools[0]
}

func fetchArgs(rawURL string, extra ...string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"url": %q%s}`, rawURL, strings.Join(extra, "")))
}

func callFetchURL(t *testing.T, tool host.Tool, args json.RawMessage) *host.Result {
	t.Helper()
	res, err := tool.Call(t.Context(), args, nil)
	if err != nil {
		t.Fatalf("Call(%s) = %v", args, err)
	}
	return res
}

const refusalHint = "; fetch_url only reaches public addresses (allow with [builtin.fetch_url] allow_private or allow_hosts)"

func TestFetchURLSpec(t *testing.T) {
	spec := fetchURLTool(t, FetchURLOptions{MaxChars: 1234}).Spec()
	if spec.Name != "fetch_url" || spec.Description == "" || !strings.Contains(spec.Prompt, "Cite the page") {
		t.Errorf("spec = %+v", spec)
	}
	var schema struct {
		Type       string
		Properties map[string]struct {
			Type        string
			Description string
		}
		Required []string
	}
	if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
		t.Fatalf("input schema: %v", err)
	}
	if schema.Type != "object" || !reflect.DeepEqual(schema.Required, []string{"url"}) ||
		schema.Properties["url"].Type != "string" || schema.Properties["max_chars"].Type != "integer" ||
		!strings.Contains(schema.Properties["max_chars"].Description, "default 1234") {
		t.Errorf("input schema = %s", spec.InputSchema)
	}
	if a := spec.Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.OpenWorldHint == nil ||
		!*a.OpenWorldHint {
		t.Errorf("annotations = %+v", spec.Annotations)
	}
}

func TestFetchURLIgnoresProxyEnvironment(t *testing.T) {
	tool, err := newFetchURL(&env{opts: Options{Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	// With a proxy, the dialer would check the proxy's address instead of the page's.
	if tool.(*fetchURL).transport.Proxy != nil {
		t.Error("the transport uses a proxy")
	}
}

func TestFetchURLNewErrors(t *testing.T) {
	tests := []struct {
		name string
		opts FetchURLOptions
		want string
	}{
		{"negative timeout", FetchURLOptions{Timeout: -1}, "builtin: fetch_url: timeout, max_bytes and max_chars must not be negative"},
		{"negative max bytes", FetchURLOptions{MaxBytes: -1}, "must not be negative"},
		{"bad allow_hosts", FetchURLOptions{AllowHosts: []string{"https://x.example/"}},
			`builtin: fetch_url: allow_hosts: "https://x.example/": want a host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New([]string{"fetch_url"}, &Options{FetchURL: tt.opts})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

const testPage = `<!DOCTYPE html>
<html><head><title>Example  Page</title><style>p { color: red }</style>
<script>document.write("<p>from a script</p>")</script></head>
<body>
<header><a href="/">Site name</a></header>
<nav><ul><li><a href="/menu">Menu</a></li></ul></nav>
<h1>Main heading</h1>
<p>See the <a href="intro.html">introduction</a> and the <a href="/api?v=2">API</a>.</p>
<ul><li>one</li><li>two</li></ul>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<footer>Copyright 2026</footer>
</body></html>`

// pngBytes is the start of a PNG file, enough for http.DetectContentType.
const pngBytes = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"

// serve answers with body as contentType; a nil contentType sends no Content-Type at all.
func serve(contentType *string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType == nil {
			w.Header()["Content-Type"] = nil // stops the server from sniffing one
		} else {
			w.Header().Set("Content-Type", *contentType)
		}
		w.Write([]byte(body))
	}
}

func ptr(s string) *string { return &s }

func TestFetchURL(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/docs/page.html", http.StatusFound)
	})
	mux.Handle("/docs/page.html", serve(ptr("text/html; charset=utf-8"), testPage))
	mux.Handle("/no-title", serve(ptr("text/html"), "<h2>First  heading</h2><p>text</p><h1>Later</h1>"))
	mux.Handle("/sniffed-html", serve(nil, "<!DOCTYPE html><title>Sniffed</title><p>hello</p>"))
	mux.Handle("/json", serve(ptr("application/json"), `{"a": [1, 2], "b": "<p>not html</p>"}`))
	mux.Handle("/problem", serve(ptr("application/problem+json"), `{"title": "x"}`))
	mux.Handle("/xml", serve(ptr("application/xml"), `<?xml version="1.0"?><a><b>c</b></a>`))
	mux.Handle("/plain", serve(ptr("text/plain"), "line one\n  line two <b>as is</b>\n"))
	mux.Handle("/long", serve(ptr("text/plain; charset=utf-8"), strings.Repeat("é", 100)))
	mux.Handle("/big", serve(ptr("text/plain"), strings.Repeat("abcdefghij", 500)))
	mux.Handle("/empty", serve(ptr("text/html"), "<html><body><script>render()</script></body></html>"))
	mux.Handle("/png", serve(ptr("image/png"), pngBytes))
	mux.Handle("/png-untyped", serve(nil, pngBytes))
	mux.Handle("/pdf", serve(ptr("application/pdf"), "%PDF-1.7\n"+strings.Repeat("x", 2000)))
	mux.Handle("/octet", serve(ptr("application/octet-stream"), "\x00\x01\x02"))
	mux.Handle("/zip", serve(ptr("application/zip"), "PK\x03\x04"))
	mux.Handle("/svg", serve(ptr("image/svg+xml"), "<svg/>"))
	mux.Handle("/missing", http.NotFoundHandler())
	mux.HandleFunc("/ua", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "UA=%s", r.UserAgent())
	})
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("arrived"))
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://files.example/x", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/to-userinfo", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://user:s3cret@files.example/x", http.StatusMovedPermanently)
	})
	srv := newCountingServer(t, mux)
	tool := fetchURLTool(t, FetchURLOptions{AllowPrivate: true, MaxBytes: 1000})

	tests := []struct {
		name, path, extra string
		wantErr           bool
		wantText          string // exact, unless empty
		contains          []string
		excludes          []string
		wantTitle         string
		wantDebug         map[string]any
	}{
		{
			name: "html page after a redirect", path: "/start",
			wantText: "# Main heading\n\n" +
				"See the [introduction](" + srv.URL + "/docs/intro.html) and the [API](" + srv.URL + "/api?v=2).\n\n" +
				"- one\n- two\n\n" +
				"| Name | Value |\n|---|---|\n| a | 1 |",
			wantTitle: "Example Page",
			wantDebug: map[string]any{"url": srv.URL + "/docs/page.html", "status": 200,
				"content_type": "text/html; charset=utf-8", "bytes": len(testPage), "redirects": 1},
		},
		{name: "title from the first heading", path: "/no-title", wantTitle: "First heading",
			wantText: "## First heading\n\ntext\n\n# Later"},
		{name: "html sniffed", path: "/sniffed-html", wantTitle: "Sniffed", wantText: "hello"},
		{name: "json as is", path: "/json", wantText: `{"a": [1, 2], "b": "<p>not html</p>"}`},
		{name: "json suffix as is", path: "/problem", wantText: `{"title": "x"}`},
		{name: "xml as is", path: "/xml", wantText: `<?xml version="1.0"?><a><b>c</b></a>`},
		{name: "plain text as is", path: "/plain", wantText: "line one\n  line two <b>as is</b>\n"},
		{
			name: "max_chars cuts in characters", path: "/long", extra: `, "max_chars": 30`,
			wantText: strings.Repeat("é", 30) + "\n\n[Cut at 30 of 100 characters. Call fetch_url again with a " +
				"larger max_chars to read more.]",
		},
		{name: "max_chars larger than the text", path: "/long", extra: `, "max_chars": 100`,
			wantText: strings.Repeat("é", 100)},
		{
			name: "byte cap", path: "/big",
			wantText: strings.Repeat("abcdefghij", 100) + "\n\n[The page is longer than 1000 bytes; only that much " +
				"of it was read.]",
			wantDebug: map[string]any{"url": srv.URL + "/big", "status": 200, "content_type": "text/plain",
				"bytes": 1000, "redirects": 0, "cut_at_max_bytes": true},
		},
		{name: "no readable text", path: "/empty",
			wantText: "The page has no readable text; it may be built by JavaScript, which fetch_url does not run."},
		{name: "user agent", path: "/ua", wantText: "UA=agenthost/test (fetch_url)"},
		{name: "five redirects", path: "/r/5", wantText: "arrived",
			wantDebug: map[string]any{"url": srv.URL + "/r/0", "status": 200, "content_type": "text/plain",
				"bytes": 7, "redirects": 5}},
		{name: "six redirects", path: "/r/6", wantErr: true,
			wantText: "Could not fetch " + srv.URL + "/r/6: stopped after 5 redirects"},
		{name: "redirect to ftp", path: "/to-ftp", wantErr: true,
			wantText: "refused: ftp://files.example/x is not an http or https URL; fetch_url fetches only those (" +
				srv.URL + "/to-ftp redirected to ftp://files.example/x)"},
		{name: "redirect with credentials", path: "/to-userinfo", wantErr: true,
			wantText: "refused: the URL carries a user name or password (user:password@host); fetch_url sends no " +
				"credentials (" + srv.URL + "/to-userinfo redirected to http://user:xxxxx@files.example/x)",
			excludes: []string{"s3cret"}},
		{name: "png", path: "/png", wantErr: true,
			wantText: srv.URL + "/png is image/png (33 bytes), not a web page or text: fetch_url cannot read it."},
		{name: "png without a type", path: "/png-untyped", wantErr: true,
			wantText: srv.URL + "/png-untyped is image/png (33 bytes), not a web page or text: fetch_url cannot read it."},
		{name: "pdf", path: "/pdf", wantErr: true,
			wantText: srv.URL + "/pdf is application/pdf (2.0 KiB), not a web page or text: fetch_url cannot read it."},
		{name: "octet-stream", path: "/octet", wantErr: true,
			contains: []string{"is application/octet-stream (3 bytes), not a web page or text"}},
		{name: "zip", path: "/zip", wantErr: true, contains: []string{"is application/zip (4 bytes)"}},
		{name: "svg is an image", path: "/svg", wantErr: true, contains: []string{"is image/svg+xml (6 bytes)"}},
		{name: "not found", path: "/missing", wantErr: true, wantText: srv.URL + "/missing answered 404 Not Found."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callFetchURL(t, tool, fetchArgs(srv.URL+tt.path, tt.extra))
			if res.IsError != tt.wantErr {
				t.Errorf("IsError = %v, want %v; text: %s", res.IsError, tt.wantErr, res.Text)
			}
			if tt.wantText != "" && res.Text != tt.wantText {
				t.Errorf("text:\n%s\nwant:\n%s", res.Text, tt.wantText)
			}
			for _, s := range tt.contains {
				if !strings.Contains(res.Text, s) {
					t.Errorf("text %q does not contain %q", res.Text, s)
				}
			}
			for _, s := range tt.excludes {
				if strings.Contains(res.Text, s) {
					t.Errorf("text %q contains %q", res.Text, s)
				}
			}
			if !utf8.ValidString(res.Text) {
				t.Errorf("text is not valid UTF-8: %q", res.Text)
			}
			if tt.wantDebug != nil && !reflect.DeepEqual(res.Debug, tt.wantDebug) {
				t.Errorf("debug = %v\nwant %v", res.Debug, tt.wantDebug)
			}
			if tt.wantErr {
				if len(res.References) != 0 {
					t.Errorf("references = %v, want none", res.References)
				}
				return
			}
			if len(res.References) != 1 {
				t.Fatalf("references = %v, want one", res.References)
			}
			ref := res.References[0]
			final, _ := res.Debug["url"].(string)
			if ref.URI != final || ref.URI == "" {
				t.Errorf("reference URI = %q, want the final URL %q", ref.URI, final)
			}
			if want := cmp.Or(tt.wantTitle, final); ref.Title != want {
				t.Errorf("reference title = %q, want %q", ref.Title, want)
			}
			if !strings.HasPrefix(strings.Join(strings.Fields(res.Text), " "), strings.TrimSuffix(ref.Content, "…")) {
				t.Errorf("reference excerpt %q is not the start of the text", ref.Content)
			}
		})
	}
}

func TestFetchURLExcerpt(t *testing.T) {
	words := strings.Repeat("word ", 100)
	if got := excerpt("# Title\n\nshort  text"); got != "# Title short text" {
		t.Errorf("excerpt = %q", got)
	}
	got := excerpt(words)
	if !strings.HasSuffix(got, "word…") || utf8.RuneCountInString(got) > excerptRunes+1 {
		t.Errorf("excerpt = %q", got)
	}
}

func TestFetchURLCharsets(t *testing.T) {
	tests := []struct {
		name, contentType, body, want string
	}{
		{"ISO-8859-1 in the header", "text/html; charset=ISO-8859-1", "<p>Caf\xe9 cr\xe8me br\xfbl\xe9e</p>",
			"Café crème brûlée"},
		{"windows-1252 in a meta", "text/html", `<meta charset="windows-1252"><p>` + "\x93quoted\x94 costs \x80 5</p>",
			"“quoted” costs € 5"},
		{"Shift_JIS in the header", "text/plain; charset=Shift_JIS", "\x93\xfa\x96\x7b\x8c\xea", "日本語"},
		{"Shift_JIS in a meta", "text/html",
			`<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><p>` + "\x93\xfa\x96\x7b\x8c\xea</p>",
			"日本語"},
		{"header wins over meta", "text/html; charset=utf-8", `<meta charset="Shift_JIS"><p>日本語</p>`, "日本語"},
		{"UTF-8 byte order mark", "text/plain", "\xef\xbb\xbfnaïve", "naïve"},
		{"undeclared UTF-8 after 1 KiB of ASCII", "text/html",
			"<!--" + strings.Repeat("x", 1100) + "--><p>naïve</p>", "naïve"},
		{"undeclared and not UTF-8", "text/html", "<p>caf\xe9</p>", "café"},
		{"invalid UTF-8 declared UTF-8", "text/plain; charset=utf-8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCountingServer(t, serve(&tt.contentType, tt.body))
			res := callFetchURL(t, fetchURLTool(t, FetchURLOptions{AllowPrivate: true}), fetchArgs(srv.URL))
			if res.IsError || res.Text != tt.want {
				t.Errorf("result = %q (error %v), want %q", res.Text, res.IsError, tt.want)
			}
		})
	}
}

func TestFetchURLArguments(t *testing.T) {
	tool := fetchURLTool(t, FetchURLOptions{})
	tests := []struct {
		name, args, want string
	}{
		{"missing url", `{}`, `Invalid arguments: url is required; for example {"url": "https://example.com/page"}`},
		{"empty url", `{"url": " "}`, `Invalid arguments: url is required`},
		{"url not a string", `{"url": 5}`, `Invalid arguments: url must be a string, not number`},
		{"not an object", `[1]`, `Invalid arguments: the arguments must be a JSON object`},
		{"not a URL", `{"url": "the docs page"}`, `Invalid arguments: url must be an absolute http or https URL ` +
			`such as https://example.com/page, not "the docs page"`},
		{"no scheme", `{"url": "example.com/page"}`, `Invalid arguments: url must be an absolute http or https URL`},
		{"opaque", `{"url": "mailto:a@example.com"}`, `Invalid arguments: url must be an absolute http or https URL`},
		{"ftp", `{"url": "ftp://example.com/file"}`,
			`refused: ftp://example.com/file is not an http or https URL; fetch_url fetches only those`},
		{"file", `{"url": "file:///etc/passwd"}`, `refused: file:///etc/passwd is not an http or https URL`},
		{"credentials", `{"url": "https://user:s3cret@example.com/"}`,
			`refused: the URL carries a user name or password (user:password@host); fetch_url sends no credentials`},
		{"user name only", `{"url": "https://user@example.com/"}`, `refused: the URL carries a user name`},
		{"no host", `{"url": "http:///path"}`, `refused: http:///path names no host`},
		{"max_chars zero", `{"url": "https://example.com", "max_chars": 0}`,
			`Invalid arguments: max_chars must be a positive number of characters, such as 20000, not 0`},
		{"max_chars not a number", `{"url": "https://example.com", "max_chars": "lots"}`,
			`Invalid arguments: max_chars must be an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callFetchURL(t, tool, json.RawMessage(tt.args))
			if !res.IsError || !strings.HasPrefix(res.Text, tt.want) {
				t.Errorf("result = %q (error %v), want it to start with %q", res.Text, res.IsError, tt.want)
			}
			if strings.Contains(res.Text, "s3cret") {
				t.Errorf("result %q repeats the password", res.Text)
			}
		})
	}
}

func TestFetchURLRefusals(t *testing.T) {
	const metadataHint = "; fetch_url does not reach cloud metadata services (allow with [builtin.fetch_url] allow_hosts)"
	target := newCountingServer(t, serve(ptr("text/plain"), "secret"))
	port := target.port()
	tests := []struct {
		name string
		opts FetchURLOptions
		url  string
		want string // exact, or the start of the text when it ends in "..."
	}{
		{name: "loopback", url: target.URL, want: "refused: 127.0.0.1 is a loopback address" + refusalHint},
		{name: "name resolving to loopback", url: "http://localhost:" + port + "/",
			want: "refused: localhost resolves to 127.0.0.1, a loopback address" + refusalHint},
		{name: "unspecified", url: "http://0.0.0.0:" + port + "/",
			want: "refused: 0.0.0.0 is an unspecified address" + refusalHint},
		{name: "unspecified v6", url: "http://[::]:" + port + "/", want: "refused: :: is an unspecified address..."},
		{name: "mapped loopback", url: "http://[::ffff:127.0.0.1]:" + port + "/",
			want: "refused: ::ffff:127.0.0.1 is a loopback address..."},
		{name: "private", url: "http://10.1.2.3/", want: "refused: 10.1.2.3 is a private address" + refusalHint},
		{name: "link-local", url: "http://169.254.1.1/", want: "refused: 169.254.1.1 is a link-local address..."},
		{name: "CGNAT", url: "http://100.64.0.1:8080/",
			want: "refused: 100.64.0.1 is a carrier-grade NAT address (100.64.0.0/10)" + refusalHint},
		{name: "multicast", url: "http://224.0.0.1/", want: "refused: 224.0.0.1 is a multicast address..."},
		{name: "broadcast", url: "http://255.255.255.255/", want: "refused: 255.255.255.255 is a broadcast address..."},
		{name: "this network", url: "http://0.1.2.3/", want: `refused: 0.1.2.3 is a "this network" address...`},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data/",
			want: "refused: 169.254.169.254 is a cloud metadata address" + metadataHint},
		{name: "metadata with allow_private", opts: FetchURLOptions{AllowPrivate: true},
			url: "http://169.254.169.254/latest/meta-data/", want: "refused: 169.254.169.254 is a cloud metadata address" + metadataHint},
		{name: "metadata v6 with allow_private", opts: FetchURLOptions{AllowPrivate: true},
			url: "http://[fd00:ec2::254]/latest/meta-data/", want: "refused: fd00:ec2::254 is a cloud metadata address" + metadataHint},
		{name: "metadata mapped", opts: FetchURLOptions{AllowPrivate: true},
			url: "http://[::ffff:a9fe:a9fe]/", want: "refused: ::ffff:169.254.169.254 is a cloud metadata address..."},
		{name: "Alibaba metadata with allow_private", opts: FetchURLOptions{AllowPrivate: true},
			url: "http://100.100.100.200/latest/meta-data/", want: "refused: 100.100.100.200 is a cloud metadata address" + metadataHint},
		{name: "metadata by name with allow_private", opts: FetchURLOptions{AllowPrivate: true},
			url:  "http://metadata.google.internal/computeMetadata/v1/",
			want: "refused: metadata.google.internal is a cloud metadata address" + metadataHint},
		{name: "benchmarking", url: "http://198.18.0.1/",
			want: "refused: 198.18.0.1 is a benchmarking address (198.18.0.0/15)" + refusalHint},
		{name: "documentation v6", url: "http://[2001:db8::1]/",
			want: "refused: 2001:db8::1 is a documentation address (2001:db8::/32)" + refusalHint},
		{name: "6to4 loopback", url: "http://[2002:7f00:1::1]:" + port + "/",
			want: "refused: 2002:7f00:1::1 is a loopback address (127.0.0.1 in a 6to4 address)" + refusalHint},
		{name: "Teredo loopback", url: "http://[2001:0:808:808::80ff:fffe]:" + port + "/",
			want: "refused: 2001:0:808:808::80ff:fffe is a loopback address (127.0.0.1 in a Teredo address)" + refusalHint},
		{name: "NAT64 loopback", url: "http://[64:ff9b::7f00:1]:" + port + "/",
			want: "refused: 64:ff9b::7f00:1 is a loopback address (127.0.0.1 in a NAT64 address)" + refusalHint},
		{name: "IPv4-compatible loopback", url: "http://[::127.0.0.1]:" + port + "/",
			want: "refused: ::7f00:1 is a loopback address (127.0.0.1 in an IPv4-compatible address)" + refusalHint},
		{name: "6to4 metadata with allow_private", opts: FetchURLOptions{AllowPrivate: true}, url: "http://[2002:a9fe:a9fe::]/",
			want: "refused: 2002:a9fe:a9fe:: is a cloud metadata address (169.254.169.254 in a 6to4 address)" + metadataHint},
		{name: "another port than allowed", opts: FetchURLOptions{AllowHosts: []string{"127.0.0.1:1"}},
			url: target.URL, want: "refused: 127.0.0.1 is a loopback address" + refusalHint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callFetchURL(t, fetchURLTool(t, tt.opts), fetchArgs(tt.url))
			prefix, open := strings.CutSuffix(tt.want, "...")
			if !res.IsError || open && !strings.HasPrefix(res.Text, prefix) || !open && res.Text != tt.want {
				t.Errorf("result = %q (error %v)\nwant %q", res.Text, res.IsError, tt.want)
			}
		})
	}
	target.assertUntouched(t)
}

// fetch_url sends no credentials, and a page it is redirected to at another origin gets the request headers
// fetch_url sends anywhere and nothing else: no Referer, which net/http sets on a redirect to the URL redirected
// from, query and its secrets included.
func TestFetchURLRedirectCarriesNoCredentials(t *testing.T) {
	var got []http.Header
	landing := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "landed")
	}))
	sent := map[string]bool{"User-Agent": true, "Accept": true, "Accept-Encoding": true}
	for _, to := range []string{"http://localhost:" + landing.port() + "/b", landing.URL + "/b"} {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
			t.Run(fmt.Sprintf("%s/%d", to, code), func(t *testing.T) {
				got = nil
				first := newCountingServer(t, http.RedirectHandler(to, code))
				res := callFetchURL(t, fetchURLTool(t, FetchURLOptions{AllowPrivate: true}), fetchArgs(first.URL+"/a?token=s3cret"))
				if res.IsError || !strings.Contains(res.Text, "landed") {
					t.Fatalf("result = %q", res.Text)
				}
				if len(got) != 1 {
					t.Fatalf("the landing page got %d requests", len(got))
				}
				for k := range got[0] {
					if !sent[k] {
						t.Errorf("the other origin got %s: %q", k, got[0].Get(k))
					}
				}
			})
		}
	}
}

func TestFetchURLRefusesRedirectToPrivate(t *testing.T) {
	private := newCountingServer(t, serve(ptr("text/plain"), "secret"))
	for _, to := range []string{
		"http://localhost:" + private.port() + "/secret",
		"http://127.0.0.1:" + private.port() + "/secret",
		"http://127.0.0.2:" + private.port() + "/secret",
		"http://169.254.169.254/latest/meta-data/",
	} {
		t.Run(to, func(t *testing.T) {
			public := newCountingServer(t, http.RedirectHandler(to, http.StatusFound))
			u, _ := url.Parse(public.URL)
			tool := fetchURLTool(t, FetchURLOptions{AllowHosts: []string{u.Host}})
			res := callFetchURL(t, tool, fetchArgs(public.URL+"/go"))
			wantEnd := fmt.Sprintf(" (%s/go redirected to %s)", public.URL, to)
			if !res.IsError || !strings.HasPrefix(res.Text, "refused: ") || !strings.HasSuffix(res.Text, wantEnd) {
				t.Errorf("result = %q (error %v), want a refusal ending in %q", res.Text, res.IsError, wantEnd)
			}
			if n := public.requests.Load(); n != 1 {
				t.Errorf("the allowed host saw %d requests, want 1", n)
			}
		})
	}
	private.assertUntouched(t)
}

func TestFetchURLAllowed(t *testing.T) {
	srv := newCountingServer(t, serve(ptr("text/plain"), "reached"))
	u, _ := url.Parse(srv.URL)
	tests := []struct {
		name string
		opts FetchURLOptions
		url  string
	}{
		{"allow_private", FetchURLOptions{AllowPrivate: true}, srv.URL},
		{"allow_private reaches localhost", FetchURLOptions{AllowPrivate: true}, "http://localhost:" + srv.port()},
		{"allow_hosts host:port", FetchURLOptions{AllowHosts: []string{u.Host}}, srv.URL},
		{"allow_hosts host", FetchURLOptions{AllowHosts: []string{"localhost"}}, "http://LocalHost:" + srv.port() + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callFetchURL(t, fetchURLTool(t, tt.opts), fetchArgs(tt.url))
			if res.IsError || res.Text != "reached" {
				t.Errorf("result = %q (error %v), want reached", res.Text, res.IsError)
			}
		})
	}
}

// hangingServer accepts requests and answers none until the test ends; arrived receives each request.
func hangingServer(t *testing.T) (*countingServer, chan struct{}) {
	arrived := make(chan struct{}, 10)
	done := make(chan struct{})
	srv := newCountingServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done) }) // runs before the server's Close, which waits for handlers
	return srv, arrived
}

func TestFetchURLTimeout(t *testing.T) {
	srv, _ := hangingServer(t)
	tool := fetchURLTool(t, FetchURLOptions{AllowPrivate: true, Timeout: 100 * time.Millisecond})
	res := callFetchURL(t, tool, fetchArgs(srv.URL+"/slow"))
	if want := "Fetching " + srv.URL + "/slow timed out after 100ms."; !res.IsError || res.Text != want {
		t.Errorf("result = %q (error %v), want %q", res.Text, res.IsError, want)
	}
}

func TestFetchURLCancel(t *testing.T) {
	srv, arrived := hangingServer(t)
	tool := fetchURLTool(t, FetchURLOptions{AllowPrivate: true})

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	res, err := tool.Call(ctx, fetchArgs(srv.URL), nil)
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("Call = %v, %v; want context.Canceled", res, err)
	}

	before := srv.requests.Load()
	res, err = tool.Call(ctx, fetchArgs(srv.URL), nil)
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Errorf("Call with a cancelled context = %v, %v; want context.Canceled", res, err)
	}
	if n := srv.requests.Load() - before; n != 0 {
		t.Errorf("a cancelled call sent %d requests", n)
	}
}

// benchmarkPage is a generated page of about size bytes, shaped like an article with its site around it.
func benchmarkPage(size int) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Benchmark article</title>` +
		`<style>body { font: 16px sans-serif } .nav a { color: #333 }</style>` +
		`<script>window.dataLayer = []; function track(e) { dataLayer.push(e) }</script></head><body>` +
		`<header><a href="/"><img src="/logo.svg" alt="Logo"></a><nav class="nav"><ul>` +
		`<li><a href="/docs">Docs</a></li><li><a href="/blog">Blog</a></li><li><a href="/about">About</a></li>` +
		`</ul></nav></header><main><article>`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d: configuring the widget</h2>`, i, i)
		fmt.Fprintf(&b, `<p>The <strong>widget</strong> reads its settings from <code>widget.toml</code> at start-up. `+
			`See <a href="/docs/widget/%d">the reference</a> and <a href="https://example.org/spec#s%d">the spec</a> `+
			`for every option; the defaults are chosen so that <em>most</em> installations need none.</p>`, i, i)
		b.WriteString(`<ul><li>Set <code>timeout</code> to bound each request.</li>` +
			`<li>Set <code>retries</code> for flaky networks, with <a href="../backoff.html">back-off</a>.</li>` +
			`<li>Leave <code>debug</code> off in production.</li></ul>`)
		b.WriteString(`<table><thead><tr><th>Option</th><th>Default</th><th>Meaning</th></tr></thead><tbody>`)
		for r := range 5 {
			fmt.Fprintf(&b, `<tr><td>option_%d</td><td>%d</td><td>What option %d changes, in a sentence.</td></tr>`, r, r*10, r)
		}
		b.WriteString(`</tbody></table>`)
		fmt.Fprintf(&b, `<script>track({section: %d})</script><pre><code>widget --config widget.toml --section %d</code></pre>`, i, i)
	}
	b.WriteString(`</article><aside>Related: <a href="/more">more</a></aside></main>` +
		`<footer><p>Copyright 2026 Example</p><form><input name="email"><button>Subscribe</button></form></footer>` +
		`</body></html>`)
	return b.String()
}

func BenchmarkFetchURLConvert1MB(b *testing.B) {
	page := []byte(benchmarkPage(1 << 20))
	final, _ := url.Parse("https://example.com/docs/widget/guide.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		title, text := readable(page, "text/html; charset=utf-8", "text/html", final)
		if title == "" || text == "" {
			b.Fatal("empty conversion")
		}
	}
}
