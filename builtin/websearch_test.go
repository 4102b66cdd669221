package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

const (
	braveTestKey  = "BSAk3Xq9TestKey0f1e2d3c4b5a"
	tavilyTestKey = "tvly-dev-TestKey7a8b9c0d1e2f"
)

func searchFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "websearch", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// searchRequest is what a request asked a search API for.
type searchRequest struct {
	query string
	n     int // count or max_results; 0 for SearXNG, which has none
}

// searchServer is a search API as a backend's documentation describes it: it checks each request as the real
// service would receive it, then answers with respond.
type searchServer struct {
	opts WebSearchOptions

	mu       sync.Mutex
	requests []searchRequest
}

func (s *searchServer) asked() []searchRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func newSearchServer(t *testing.T, backend string, respond http.HandlerFunc) *searchServer {
	t.Helper()
	s := &searchServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := checkSearchRequest(t, backend, r)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(srv.Close)
	s.opts = WebSearchOptions{Backend: backend}
	switch backend {
	case "searxng":
		s.opts.URL = srv.URL + "/searx/"
	case "brave":
		s.opts.URL, s.opts.APIKey = srv.URL+"/res/v1/web/search", braveTestKey
	case "tavily":
		s.opts.URL, s.opts.APIKey = srv.URL+"/search", tavilyTestKey
	}
	return s
}

// checkSearchRequest reports what in r differs from a request the backend's API accepts, and returns what it asks.
func checkSearchRequest(t *testing.T, backend string, r *http.Request) searchRequest {
	header := map[string]string{"Accept": "application/json", "User-Agent": "agenthost/test (web_search)"}
	var req searchRequest
	var method, path string
	switch backend {
	case "searxng":
		method, path = http.MethodGet, "/searx/search"
		req.query = r.URL.Query().Get("q")
		if f := r.URL.Query().Get("format"); f != "json" {
			t.Errorf("searxng: format = %q, want json", f)
		}
	case "brave":
		method, path = http.MethodGet, "/res/v1/web/search"
		header["X-Subscription-Token"] = braveTestKey
		req.query = r.URL.Query().Get("q")
		var err error
		if req.n, err = strconv.Atoi(r.URL.Query().Get("count")); err != nil {
			t.Errorf("brave: count = %q", r.URL.Query().Get("count"))
		}
	case "tavily":
		method, path = http.MethodPost, "/search"
		header["Authorization"] = "Bearer " + tavilyTestKey
		header["Content-Type"] = "application/json"
		var body struct {
			Query             string `json:"query"`
			MaxResults        int    `json:"max_results"`
			SearchDepth       string `json:"search_depth"`
			IncludeRawContent *bool  `json:"include_raw_content"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("tavily: body: %v", err)
		}
		if body.SearchDepth != "basic" || body.IncludeRawContent == nil || *body.IncludeRawContent {
			t.Errorf("tavily: body = %+v, want a basic search without raw content", body)
		}
		req.query, req.n = body.Query, body.MaxResults
	}
	if r.Method != method || r.URL.Path != path {
		t.Errorf("%s: request %s %s, want %s %s", backend, r.Method, r.URL.Path, method, path)
	}
	for k, v := range header {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s: header %s = %q, want %q", backend, k, got, v)
		}
	}
	return req
}

// reply answers with a status, headers and body.
func reply(status int, body []byte, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func webSearchTool(t *testing.T, opts WebSearchOptions) host.Tool {
	t.Helper()
	ts, err := New([]string{"web_search"}, &Options{Version: "test", Now: func() time.Time { return fixedNow },
		WebSearch: opts})
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

func callWebSearch(t *testing.T, tool host.Tool, args string) *host.Result {
	t.Helper()
	res, err := tool.Call(t.Context(), json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("Call(%s) = %v", args, err)
	}
	return res
}

// checkNoKey fails when a key appears anywhere in the result, Debug included.
func checkNoKey(t *testing.T, res *host.Result) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{braveTestKey, tavilyTestKey} {
		if strings.Contains(string(b), key) {
			t.Errorf("the API key is in the result: %s", b)
		}
	}
}

func TestWebSearchSpec(t *testing.T) {
	srv := newSearchServer(t, "brave", reply(http.StatusOK, nil))
	srv.opts.MaxResults = 7
	spec := webSearchTool(t, srv.opts).Spec()
	if spec.Name != "web_search" || spec.Description == "" || !strings.Contains(spec.Prompt, "current events") ||
		!strings.Contains(spec.Prompt, "fetch_url") || !strings.Contains(spec.Prompt, "cite the sources") {
		t.Errorf("spec = %+v", spec)
	}
	var schema struct {
		Type       string
		Properties map[string]struct{ Type, Description string }
		Required   []string
	}
	if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
		t.Fatalf("input schema: %v", err)
	}
	if schema.Type != "object" || !reflect.DeepEqual(schema.Required, []string{"query"}) ||
		schema.Properties["query"].Type != "string" || schema.Properties["max_results"].Type != "integer" ||
		!strings.Contains(schema.Properties["max_results"].Description, "1 to 20; default 7") {
		t.Errorf("input schema = %s", spec.InputSchema)
	}
	if a := spec.Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.OpenWorldHint == nil ||
		!*a.OpenWorldHint {
		t.Errorf("annotations = %+v", spec.Annotations)
	}
}

func TestWebSearchNewErrors(t *testing.T) {
	tests := []struct {
		name string
		opts WebSearchOptions
		want string
	}{
		{"no backend", WebSearchOptions{}, `builtin: web_search: backend is required: "searxng", "brave" or "tavily"`},
		{"unknown backend", WebSearchOptions{Backend: "google"},
			`builtin: web_search: unknown backend "google": want "searxng", "brave" or "tavily"`},
		{"searxng without url", WebSearchOptions{Backend: "searxng"},
			`builtin: web_search: backend "searxng" needs url, the address of the instance`},
		{"relative url", WebSearchOptions{Backend: "searxng", URL: "searx.local:8888"},
			`url must be an absolute http or https URL such as http://127.0.0.1:8888, not "searx.local:8888"`},
		{"not http", WebSearchOptions{Backend: "searxng", URL: "ftp://searx.local/"},
			`url must be an absolute http or https URL such as http://127.0.0.1:8888, not "ftp://searx.local/"`},
		{"password hidden", WebSearchOptions{Backend: "searxng", URL: "ftp://me:hunter2@searx.local/"},
			`not "ftp://me:xxxxx@searx.local/"`},
		{"unparsable url", WebSearchOptions{Backend: "searxng", URL: "http://[::1"},
			`builtin: web_search: url must be an absolute http or https URL such as http://127.0.0.1:8888`},
		{"brave without key", WebSearchOptions{Backend: "brave"},
			`builtin: web_search: backend "brave" needs an API key (api_key_env): none is set`},
		{"tavily without key", WebSearchOptions{Backend: "tavily", URL: "http://127.0.0.1:1/search"},
			`builtin: web_search: backend "tavily" needs an API key (api_key_env): none is set`},
		{"negative timeout", WebSearchOptions{Backend: "brave", APIKey: braveTestKey, Timeout: -time.Second},
			"builtin: web_search: timeout must not be negative"},
		{"max_results too large", WebSearchOptions{Backend: "brave", APIKey: braveTestKey, MaxResults: 21},
			"builtin: web_search: max_results must be between 1 and 20, not 21"},
		{"every problem at once", WebSearchOptions{Backend: "tavily", URL: "tavily", MaxResults: -1},
			`builtin: web_search: backend "tavily" needs an API key (api_key_env): none is set` + "\n" +
				`url must be an absolute http or https URL such as http://127.0.0.1:8888, not "tavily"` + "\n" +
				"max_results must be between 1 and 20, not -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New([]string{"web_search"}, &Options{WebSearch: tt.opts})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("New = %v, shows the password", err)
			}
		})
	}
}

func TestWebSearchResults(t *testing.T) {
	tests := []struct {
		backend, fixture string
		wantText         string
		want             []host.Reference
	}{
		{
			backend: "searxng", fixture: "searxng.json",
			wantText: `5 results for "go generics tutorial" from SearXNG at http://`,
			want: []host.Reference{
				{Title: "Tutorial: Getting started with generics - The Go Programming Language",
					URI: "https://go.dev/doc/tutorial/generics",
					Content: "This tutorial introduces the basics of generics in Go. With generics, you can declare and " +
						"use functions or types that are written to work with any of a set of types provided by " +
						"calling code."},
				{Title: "An Introduction To Generics - The Go Programming Language",
					URI: "https://go.dev/blog/intro-generics",
					// Plain text from SearXNG: an ampersand is no entity.
					Content: "The Go 1.18 release adds support for generics. Generics are the biggest change we've " +
						"made to Go since the first open source release. Type parameters & constraints are " +
						"explained here."},
				{Title: "Go by Example: Generics", URI: "https://gobyexample.com/generics",
					Content: "Starting with version 1.18, Go has added support for generics, also known as type " +
						"parameters."},
				{Title: "constraints package - golang.org/x/exp/constraints - Go Packages",
					URI: "https://pkg.go.dev/golang.org/x/exp/constraints"},
				{Title: "How To Use Generics in Go | DigitalOcean",
					URI: "https://www.digitalocean.com/community/tutorials/how-to-use-generics-in-go",
					Content: "In this tutorial, you will create a program that simulates getting a random card " +
						"from a deck of cards."},
			},
		},
		{
			backend: "brave", fixture: "brave.json",
			wantText: `3 results for "go generics tutorial" from Brave Search.`,
			want: []host.Reference{
				{Title: "Tutorial: Getting started with generics - The Go Programming Language",
					URI: "https://go.dev/doc/tutorial/generics",
					Content: "This tutorial introduces the basics of generics in Go. With generics, you can declare and " +
						"use functions or types that are written to work with any of a set of types provided by " +
						"calling code."},
				{Title: "An Introduction To Generics - The Go Programming Language",
					URI: "https://go.dev/blog/intro-generics",
					Content: "March 22, 2022 - The Go 1.18 release adds support for generics. Generics are the " +
						"biggest change we've made to Go since the first open source release & the type checker " +
						"had to change too."},
				{Title: "Go by Example: Generics", URI: "https://gobyexample.com/generics",
					Content: "Starting with version 1.18, Go has added support for generics, also known as type " +
						"parameters."},
			},
		},
		{
			backend: "tavily", fixture: "tavily.json",
			wantText: `3 results for "go generics tutorial" from Tavily.`,
			want: []host.Reference{
				{Title: "Tutorial: Getting started with generics - The Go Programming Language",
					URI: "https://go.dev/doc/tutorial/generics",
					// Cut at a word under 300 characters.
					Content: "This tutorial introduces the basics of generics in Go. With generics, you can declare and " +
						"use functions or types that are written to work with any of a set of types provided by " +
						"calling code. In this tutorial, you'll declare two simple non-generic functions, then " +
						"capture the same logic in a single…"},
				{Title: "An Introduction To Generics - The Go Programming Language",
					URI: "https://go.dev/blog/intro-generics",
					Content: "The Go 1.18 release adds support for generics. Generics are the biggest change we've " +
						"made to Go since the first open source release. In this article we'll introduce the new " +
						"language features."},
				{Title: "Go by Example: Generics", URI: "https://gobyexample.com/generics",
					Content: "Starting with version 1.18, Go has added support for generics, also known as type " +
						"parameters. As an example of a generic function, SlicesIndex takes a slice of any " +
						"comparable type and an element of that type."},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			srv := newSearchServer(t, tt.backend, reply(http.StatusOK, searchFixture(t, tt.fixture)))
			res := callWebSearch(t, webSearchTool(t, srv.opts), `{"query": "  go generics\ttutorial "}`)
			if res.IsError || !strings.HasPrefix(res.Text, tt.wantText) {
				t.Errorf("result %q (error %v), want %q", res.Text, res.IsError, tt.wantText)
			}
			if !reflect.DeepEqual(res.References, tt.want) {
				t.Errorf("references:\n%+v\nwant\n%+v", res.References, tt.want)
			}
			wantDebug := map[string]any{"backend": tt.backend, "max_results": 5, "results": len(tt.want), "status": 200}
			if !reflect.DeepEqual(res.Debug, wantDebug) {
				t.Errorf("debug = %v, want %v", res.Debug, wantDebug)
			}
			if asked := srv.asked(); len(asked) != 1 || asked[0].query != "go generics tutorial" {
				t.Errorf("requests = %+v", asked)
			}
			checkNoKey(t, res)
		})
	}
}

func TestWebSearchMaxResults(t *testing.T) {
	fixtures := map[string]string{"searxng": "searxng.json", "brave": "brave.json", "tavily": "tavily.json"}
	available := map[string]int{"searxng": 7, "brave": 3, "tavily": 3}
	tests := []struct {
		name       string
		maxResults int // the option
		args       string
		want       int
	}{
		{"default", 0, `{"query": "q"}`, 5},
		{"option", 7, `{"query": "q"}`, 7},
		{"asked", 7, `{"query": "q", "max_results": 2}`, 2},
		{"null is the default", 3, `{"query": "q", "max_results": null}`, 3},
		{"clamped to 20", 0, `{"query": "q", "max_results": 50}`, 20},
		{"clamped to 1", 0, `{"query": "q", "max_results": 0}`, 1},
		{"negative clamped to 1", 0, `{"query": "q", "max_results": -4}`, 1},
	}
	for backend, fixture := range fixtures {
		for _, tt := range tests {
			t.Run(backend+"/"+tt.name, func(t *testing.T) {
				srv := newSearchServer(t, backend, reply(http.StatusOK, searchFixture(t, fixture)))
				srv.opts.MaxResults = tt.maxResults
				res := callWebSearch(t, webSearchTool(t, srv.opts), tt.args)
				asked := srv.asked()
				if len(asked) != 1 {
					t.Fatalf("requests = %+v", asked)
				}
				if backend != "searxng" && asked[0].n != tt.want {
					t.Errorf("the request asked for %d results, want %d", asked[0].n, tt.want)
				}
				want := min(tt.want, available[backend])
				if len(res.References) != want || res.Debug["max_results"] != tt.want {
					t.Errorf("%d references, debug %v; want %d of %d", len(res.References), res.Debug, want, tt.want)
				}
			})
		}
	}
}

func TestWebSearchNoResults(t *testing.T) {
	tests := []struct {
		backend, fixture, want string
	}{
		{"searxng", "searxng_empty.json", `No results for "xqzv quantum teapot 1893 bylaw" from SearXNG at http://`},
		{"brave", "brave_empty.json",
			`No results for "xqzv quantum teapot 1893 bylaw" from Brave Search. Try other or fewer words.`},
		{"tavily", "tavily_empty.json",
			`No results for "xqzv quantum teapot 1893 bylaw" from Tavily. Try other or fewer words.`},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			srv := newSearchServer(t, tt.backend, reply(http.StatusOK, searchFixture(t, tt.fixture)))
			res := callWebSearch(t, webSearchTool(t, srv.opts), `{"query": "xqzv quantum teapot 1893 bylaw"}`)
			if res.IsError || !strings.HasPrefix(res.Text, tt.want) || len(res.References) != 0 ||
				res.Debug["results"] != 0 {
				t.Errorf("result = %+v, want %q", res, tt.want)
			}
		})
	}
	t.Run("searxng engines that failed", func(t *testing.T) {
		srv := newSearchServer(t, "searxng", reply(http.StatusOK, searchFixture(t, "searxng_empty.json")))
		res := callWebSearch(t, webSearchTool(t, srv.opts), `{"query": "xqzv"}`)
		want := "/searx/. Engines that did not answer: google (Suspended: CAPTCHA), brave (too many requests). " +
			"Try other or fewer words."
		if !strings.HasSuffix(res.Text, want) {
			t.Errorf("text = %q, want it to end with %q", res.Text, want)
		}
	})
}

func TestWebSearchErrors(t *testing.T) {
	retryAt := fixedNow.Add(90 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name, backend string
		respond       http.HandlerFunc
		timeout       time.Duration
		want          string
	}{
		{"searxng json not enabled", "searxng", reply(http.StatusForbidden, []byte("<h1>Forbidden</h1>")), 0,
			"/searx/ refused the search (HTTP 403 Forbidden: the instance does not serve the JSON format; its " +
				"administrator must add json to search.formats in settings.yml). Searching again will not help."},
		{"searxng 401", "searxng", reply(http.StatusUnauthorized, nil), 0,
			"/searx/ refused the search (HTTP 401 Unauthorized)."},
		{"searxng 429", "searxng", reply(http.StatusTooManyRequests, []byte("Too Many Requests"), "Retry-After", "30"), 0,
			"/searx/ is limiting the rate of searches (HTTP 429 Too Many Requests). It asks to wait 30 seconds " +
				"(Retry-After); try again after that, not at once, or answer from the sources you already have."},
		{"searxng 500", "searxng", reply(http.StatusInternalServerError, nil), 0,
			"/searx/ failed (HTTP 500 Internal Server Error). Try again later."},
		{"searxng html page", "searxng", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!DOCTYPE html><title>Sign in</title>"))
		}, 0, "/searx/ answered with text/html that is not the JSON it should send. Try again later."},
		{"searxng redirect", "searxng", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://me:hunter2@search.example/searx/search", http.StatusMovedPermanently)
		}, 0, "/searx/ answered HTTP 301 Moved Permanently, a redirect to https://me:xxxxx@search.example/searx/search; " +
			"web_search follows no redirects, so the url setting of [builtin.web_search] must be the final address."},
		{"searxng timeout", "searxng", hang, 50 * time.Millisecond,
			"/searx/ did not answer within 50ms. Try again later, perhaps with a shorter query."},

		{"brave invalid token", "brave",
			reply(http.StatusUnprocessableEntity, searchFixture(t, "brave_invalid_token.json")), 0,
			"Brave Search refused the API key (HTTP 422 Unprocessable Entity: The provided subscription token is " +
				"invalid.). The key comes from the api_key_env setting of [builtin.web_search]; searching again " +
				"will not help until it is fixed."},
		{"brave 401", "brave", reply(http.StatusUnauthorized, nil), 0,
			"Brave Search refused the API key (HTTP 401 Unauthorized). The key comes from the api_key_env"},
		{"brave 429", "brave", reply(http.StatusTooManyRequests, searchFixture(t, "brave_rate_limited.json"),
			"Retry-After", "1", "X-RateLimit-Remaining", "0, 1985"), 0,
			"Brave Search is limiting the rate of searches (HTTP 429 Too Many Requests: Request rate limit exceeded " +
				"for plan). It asks to wait 1 second (Retry-After); try again after that, not at once"},
		{"brave 429 without Retry-After", "brave",
			reply(http.StatusTooManyRequests, searchFixture(t, "brave_rate_limited.json")), 0,
			"for plan). Try again later, not at once, or answer from the sources you already have."},
		{"brave other status", "brave", reply(http.StatusUnprocessableEntity, []byte(`{"type":"ErrorResponse",`+
			`"error":{"status":422,"code":"VALIDATION","detail":"Unable to validate request parameter(s)"}}`)), 0,
			"Brave Search refused the search (HTTP 422 Unprocessable Entity: Unable to validate request parameter(s))."},
		{"brave 500", "brave", reply(http.StatusInternalServerError, []byte("upstream error")), 0,
			"Brave Search failed (HTTP 500 Internal Server Error). Try again later."},
		{"brave bad json", "brave", reply(http.StatusOK, searchFixture(t, "brave.json")[:200]), 0,
			"Brave Search answered with application/json that is not the JSON it should send. Try again later."},
		{"brave too long", "brave", reply(http.StatusOK, bytes.Repeat([]byte(" "), maxSearchBody+1)), 0,
			"Brave Search sent more than 4.0 MiB, which is no page of search results. Try again later."},
		{"brave timeout", "brave", hang, 50 * time.Millisecond,
			"Brave Search did not answer within 50ms. Try again later, perhaps with a shorter query."},

		{"tavily 401", "tavily", reply(http.StatusUnauthorized, searchFixture(t, "tavily_unauthorized.json")), 0,
			"Tavily refused the API key (HTTP 401 Unauthorized: Unauthorized: missing or invalid API key.). The " +
				"key comes from the api_key_env setting of [builtin.web_search]"},
		{"tavily echoes the key", "tavily", reply(http.StatusUnauthorized,
			[]byte(`{"detail": {"error": "Unauthorized: invalid API key `+tavilyTestKey+`"}}`)), 0,
			"Tavily refused the API key (HTTP 401 Unauthorized: Unauthorized: invalid API key [redacted])."},
		{"tavily 429", "tavily", reply(http.StatusTooManyRequests, searchFixture(t, "tavily_rate_limited.json"),
			"Retry-After", retryAt), 0,
			"Tavily is limiting the rate of searches (HTTP 429 Too Many Requests: Your request has been blocked due " +
				"to excessive requests. Please reduce rate of requests.). It asks to wait 1m30s (Retry-After)"},
		{"tavily plan limit", "tavily", reply(432, []byte(`{"detail": {"error": "This request exceeds your plan's `+
			`set usage limit. Please upgrade your plan or contact support@tavily.com"}}`)), 0,
			"Tavily refused the search (HTTP 432: This request exceeds your plan's set usage limit."},
		{"tavily validation error", "tavily", reply(http.StatusBadRequest,
			[]byte(`{"detail": [{"loc": ["body", "query"], "msg": "field required"}]}`)), 0,
			"Tavily refused the search (HTTP 400 Bad Request)."},
		{"tavily 503", "tavily", reply(http.StatusServiceUnavailable, nil), 0,
			"Tavily failed (HTTP 503 Service Unavailable). Try again later."},
		{"tavily bad json", "tavily", reply(http.StatusOK, []byte(`{"results": "none"}`)), 0,
			"Tavily answered with application/json that is not the JSON it should send. Try again later."},
		{"tavily timeout", "tavily", hang, 50 * time.Millisecond,
			"Tavily did not answer within 50ms. Try again later, perhaps with a shorter query."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSearchServer(t, tt.backend, tt.respond)
			srv.opts.Timeout = tt.timeout
			res := callWebSearch(t, webSearchTool(t, srv.opts), `{"query": "go generics"}`)
			if !res.IsError || !strings.Contains(res.Text, tt.want) || len(res.References) != 0 {
				t.Errorf("result %q (error %v, %d references), want an error with %q", res.Text, res.IsError,
					len(res.References), tt.want)
			}
			_, invalid := res.Debug["invalid_json"]
			if res.Debug["backend"] != tt.backend || invalid != strings.Contains(tt.want, "not the JSON") {
				t.Errorf("debug = %v", res.Debug)
			}
			checkNoKey(t, res)
		})
	}
}

// hang answers nothing until the client gives up.
func hang(_ http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

func TestWebSearchUnreachable(t *testing.T) {
	srv := newSearchServer(t, "brave", reply(http.StatusOK, nil))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	srv.opts.URL = closed.URL + "/res/v1/web/search"
	res := callWebSearch(t, webSearchTool(t, srv.opts), `{"query": "go"}`)
	if !res.IsError || !strings.HasPrefix(res.Text, "Could not reach Brave Search: ") ||
		!strings.HasSuffix(res.Text, ". Try again later.") || strings.Contains(res.Text, "http://") {
		t.Errorf("result %q (error %v), want a refused connection without the URL", res.Text, res.IsError)
	}
	if _, ok := res.Debug["status"]; ok {
		t.Errorf("debug = %v, want no status", res.Debug)
	}
}

func TestWebSearchInvalidArguments(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"no query", `{}`, `Invalid arguments: query is required; for example {"query": "go 1.26 release notes"}`},
		{"no arguments", ``, "Invalid arguments: query is required"},
		{"blank query", `{"query": " \t\n"}`, "Invalid arguments: query is required"},
		{"query too long", fmt.Sprintf(`{"query": %q}`, strings.Repeat("word ", 80)+"x"),
			"Invalid arguments: the query has 401 characters; use at most 400, the key words only"},
		{"query not a string", `{"query": 42}`, "Invalid arguments: query must be a string, not number"},
		{"max_results not an integer", `{"query": "go", "max_results": "5"}`,
			"Invalid arguments: max_results must be an integer, not string"},
		{"not an object", `["go"]`, `Invalid arguments: the arguments must be a JSON object such as {"query":`},
	}
	srv := newSearchServer(t, "tavily", func(http.ResponseWriter, *http.Request) {
		t.Error("an invalid call reached the search service")
	})
	tool := webSearchTool(t, srv.opts)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := callWebSearch(t, tool, tt.args)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("result %q (error %v), want an error with %q", res.Text, res.IsError, tt.want)
			}
		})
	}
}

func TestWebSearchCancel(t *testing.T) {
	for _, backend := range []string{"searxng", "brave", "tavily"} {
		t.Run(backend, func(t *testing.T) {
			arrived := make(chan struct{})
			srv := newSearchServer(t, backend, func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				hang(w, r)
			})
			srv.opts.Timeout = time.Hour // only the cancellation can end the call
			tool := webSearchTool(t, srv.opts)
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-arrived
				cancel()
			}()
			res, err := tool.Call(ctx, json.RawMessage(`{"query": "go"}`), nil)
			if !errors.Is(err, context.Canceled) || res != nil {
				t.Errorf("Call = %+v, %v; want context.Canceled", res, err)
			}
		})
	}
	t.Run("already cancelled", func(t *testing.T) {
		srv := newSearchServer(t, "brave", func(http.ResponseWriter, *http.Request) {
			t.Error("a cancelled call reached the search service")
		})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res, err := webSearchTool(t, srv.opts).Call(ctx, json.RawMessage(`{"query": "go"}`), nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Call = %+v, %v; want context.Canceled", res, err)
		}
	})
}
