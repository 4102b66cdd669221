package console

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/runlog"
)

// lookupTool answers with a document to cite.
type lookupTool struct{}

func (lookupTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "lookup", Description: "looks up the capital of a country", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (lookupTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	return &host.Result{Text: "found", References: []host.Reference{{Title: "Atlas", URI: "https://atlas.example/france", Content: "Paris is the capital of France."}}}, nil
}

// dangerTool needs an approval; its calls are counted.
type dangerTool struct{ calls *atomic.Int32 }

func (dangerTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "danger", Description: "does something risky", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (d dangerTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	d.calls.Add(1)
	return &host.Result{Text: "done the risky thing"}, nil
}

// askTool asks the person for a city, by elicitation, and answers with what they gave.
type askTool struct{}

func (askTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "ask_city", Description: "asks the user for a city", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (askTool) Call(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
	res, err := call.Interactor().Elicit(ctx, &host.ElicitRequest{Message: "Which city?", Source: "ask_city",
		Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	return &host.Result{Text: string(b)}, nil
}

type toolList []host.Tool

func (toolList) Name() string                                 { return "test" }
func (l toolList) Tools(context.Context) ([]host.Tool, error) { return l, nil }

// fixture is a console over a real orchestrator, whose model is the scripted server, recording its runs.
type fixture struct {
	llm     *fakellm.Server
	orch    *host.Orchestrator
	runs    *runlog.Recorder
	console *Console
	srv     *httptest.Server
	client  *http.Client
	danger  *atomic.Int32
}

func newFixture(t *testing.T, edit func(*Options)) *fixture {
	t.Helper()
	return newFixtureRuns(t, nil, edit)
}

// newFixtureRuns is newFixture with the recorder's options.
func newFixtureRuns(t *testing.T, ropts *runlog.Options, edit func(*Options)) *fixture {
	t.Helper()
	f := &fixture{llm: fakellm.New(), danger: &atomic.Int32{}}
	t.Cleanup(f.llm.Close)
	model, err := openai.New(&openai.Options{BaseURL: f.llm.URL, APIKey: "sk-test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	f.runs = runlog.New(ropts)
	tm := host.NewToolManager([]host.Toolset{toolList{lookupTool{}, dangerTool{f.danger}, askTool{}}},
		&host.ToolManagerOptions{Policies: map[string]host.ToolPolicy{"danger": {RequireApproval: true}}, Observer: f.runs})
	f.orch = host.New(model, tm, &host.Options{Name: "tester", Observer: f.runs, CompileSchema: schemacheck.Compile})
	opts := &Options{Orchestrator: f.orch, Runs: f.runs, CompileSchema: schemacheck.Compile, Agent: Agent{Name: "tester", Model: "fake", Provider: "openai"}}
	if edit != nil {
		edit(opts)
	}
	f.console = New(opts)
	f.srv = httptest.NewServer(f.console.Handler())
	t.Cleanup(func() {
		f.console.Close()
		f.srv.Close()
	})
	jar, _ := cookiejar.New(nil)
	f.client = &http.Client{Jar: jar, Transport: &http.Transport{DisableCompression: true}}
	return f
}

// do sends a request with headers (name, value pairs) and returns the response, its body read.
func (f *fixture) do(t *testing.T, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// csrf returns the session's CSRF token.
func (f *fixture) csrf(t *testing.T) string {
	t.Helper()
	resp, b := f.do(t, "GET", "/api/session", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/session: %d %s", resp.StatusCode, b)
	}
	var s struct{ CSRF string }
	if err := json.Unmarshal(b, &s); err != nil || s.CSRF == "" {
		t.Fatalf("session %s: %v", b, err)
	}
	return s.CSRF
}

// chat starts a run of message and returns its id.
func (f *fixture) chat(t *testing.T, body string) string {
	t.Helper()
	resp, b := f.do(t, "POST", "/api/chat", body, "X-CSRF-Token", f.csrf(t))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/chat: %d %s", resp.StatusCode, b)
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.RunID == "" {
		t.Fatalf("POST /api/chat: %s: %v", b, err)
	}
	return r.RunID
}

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	name, id string
	data     []byte
}

// follow reads the run's event stream after after, handing each entry to onEntry, until "end", whose summary it
// returns.
func (f *fixture) follow(t *testing.T, id string, after int, onEntry func(runlog.Entry, string)) runlog.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/runs/"+id+"/events", nil)
	if after > 0 {
		req.Header.Set("Last-Event-ID", itoa(after))
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for ev := range readSSE(t, resp.Body) {
		switch ev.name {
		case "entry":
			var e runlog.Entry
			if err := json.Unmarshal(ev.data, &e); err != nil {
				t.Fatal(err)
			}
			if ev.id != itoa(e.Seq) {
				t.Errorf("entry %d has id %q", e.Seq, ev.id)
			}
			onEntry(e, ev.id)
		case "end":
			var s runlog.Summary
			if err := json.Unmarshal(ev.data, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatal("the event stream ended without an end event")
	return runlog.Summary{}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// readSSE yields the events of a text/event-stream.
func readSSE(t *testing.T, r io.Reader) func(func(sseEvent) bool) {
	return func(yield func(sseEvent) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" && !yield(ev) {
					return
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = append(ev.data, line[len("data: "):]...)
			}
		}
	}
}

func TestSessionUnprotected(t *testing.T) {
	f := newFixture(t, nil)
	resp, b := f.do(t, "GET", "/api/session", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var s struct {
		CSRF         string          `json:"csrf"`
		Auth         string          `json:"auth"`
		Agent        Agent           `json:"agent"`
		Features     map[string]bool `json:"features"`
		OutputSchema json.RawMessage `json:"output_schema"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.CSRF == "" || s.Auth != "none" || s.Agent.Name != "tester" || s.Agent.Model != "fake" || string(s.OutputSchema) != "null" {
		t.Errorf("session %s", b)
	}
	for _, k := range []string{"state", "tasks", "evals", "content"} {
		if v, ok := s.Features[k]; !ok || v {
			t.Errorf("features.%s = %v, %v: want false", k, v, ok)
		}
	}
	// The evals are not there.
	if resp, _ := f.do(t, "GET", "/api/evals", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/evals without a suite: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "POST", "/api/evals/x/run", "{}", "X-CSRF-Token", s.CSRF); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /api/evals/x/run without a suite: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/api/conversations", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/conversations without a state database: %d", resp.StatusCode)
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, nil)
	for _, path := range []string{"/", "/api/session", "/api/nothing", "/nothing.js"} {
		resp, _ := f.do(t, "GET", path, "")
		h := resp.Header
		if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
		if api := strings.HasPrefix(path, "/api/"); api != (h.Get("Cache-Control") == "no-store") {
			t.Errorf("%s: Cache-Control %q", path, h.Get("Cache-Control"))
		}
	}
	if !strings.Contains(contentSecurityPolicy, "frame-ancestors 'none'") || strings.Contains(contentSecurityPolicy, "unsafe") {
		t.Errorf("CSP %q", contentSecurityPolicy)
	}
}

func TestStaticFiles(t *testing.T) {
	f := newFixture(t, nil)
	want, err := web.ReadFile("web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	// Plain.
	resp, b := f.do(t, "GET", "/", "")
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, want) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	// Compressed, when asked, and when it is smaller.
	resp, b = f.do(t, "GET", "/index.html", "", "Accept-Encoding", "gzip, br")
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(plain, want) {
			t.Errorf("the gzipped page is not the page: %v", err)
		}
	} else if len(want) > 1024 {
		t.Errorf("a %d-byte page was not gzipped: %v", len(want), resp.Header)
	}
	// The gzipped file is another representation: an ETag of its own.
	if gz := resp.Header.Get("Content-Encoding") == "gzip"; (resp.Header.Get("ETag") == etag) == gz ||
		!strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("headers %v", resp.Header)
	}
	// Revalidated.
	if resp, b := f.do(t, "GET", "/", "", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Errorf("GET / If-None-Match: %d", resp.StatusCode)
	}
	for _, path := range []string{"/nothing.js", "/web/index.html", "/../console.go", "/api/nothing"} {
		if resp, _ := f.do(t, "GET", path, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestGzipPreparedLazily(t *testing.T) {
	a := newAssets(web)
	if len(a.m) != 0 {
		t.Fatal("assets prepared before any request")
	}
	f, ok := a.get("web/index.html")
	if !ok || f.etag == "" || len(f.raw) == 0 {
		t.Fatalf("index.html: %v %+v", ok, f)
	}
	if len(f.raw) > 1024 && (f.gz == nil || len(f.gz) >= len(f.raw)) {
		t.Errorf("index.html of %d bytes compressed to %d", len(f.raw), len(f.gz))
	}
	if _, ok := a.get("web/missing.js"); ok {
		t.Error("a missing file was found")
	}
}

func TestGzip(t *testing.T) {
	page := strings.Repeat("<p>the console</p>\n", 500)
	a := newAssets(fstest.MapFS{"web/app.js": {Data: []byte(page)}, "web/tiny.css": {Data: []byte("a{}")}})
	srv := httptest.NewServer(a)
	defer srv.Close()
	get := func(path, accept string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", accept)
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("/app.js", "gzip, deflate")
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("headers %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || string(b) != page {
		t.Errorf("the gzipped file is not the file: %v", err)
	}
	for _, c := range []struct{ path, accept string }{{"/app.js", ""}, {"/app.js", "br"}, {"/tiny.css", "gzip"}} {
		resp := get(c.path, c.accept)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "" || len(b) == 0 {
			t.Errorf("%s with Accept-Encoding %q: %v", c.path, c.accept, resp.Header)
		}
	}
}

func TestCSRFAndOrigin(t *testing.T) {
	f := newFixture(t, nil)
	csrf := f.csrf(t)
	body := `{"message":"hi"}`
	cases := []struct {
		name    string
		headers []string
		want    int
	}{
		{"no CSRF header", nil, http.StatusForbidden},
		{"wrong CSRF header", []string{"X-CSRF-Token", csrf + "x"}, http.StatusForbidden},
		{"foreign origin", []string{"X-CSRF-Token", csrf, "Origin", "https://evil.example"}, http.StatusForbidden},
		{"not JSON", []string{"X-CSRF-Token", csrf, "Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
	}
	for _, c := range cases {
		resp, b := f.do(t, "POST", "/api/chat", body, c.headers...)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.want)
		}
	}
	if resp, _ := f.do(t, "DELETE", "/api/conversations/x", ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("DELETE without CSRF: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/api/session", "", "Host", "evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d", resp.StatusCode)
	}
	if got := f.llm.Requests(); len(got) != 0 {
		t.Errorf("a refused chat reached the model: %d requests", len(got))
	}
}

const (
	staticToken = "static-token-0123456789"
	callerToken = "caller-token-9876543210"
)

// TestLoginCookieSecureBehindTLS: the session cookie is Secure when the page that logs in was loaded over HTTPS,
// as behind a proxy that ends TLS and forwards plain HTTP (its Origin is an https one), and not for a page loaded
// over plain HTTP.
func TestLoginCookieSecureBehindTLS(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Token = staticToken })
	host := strings.TrimPrefix(f.srv.URL, "http://")
	for _, tc := range []struct {
		origin string
		secure bool
	}{
		{"https://" + host, true},
		{"http://" + host, false},
		{"", false},
	} {
		var headers []string
		if tc.origin != "" {
			headers = []string{"Origin", tc.origin}
		}
		resp, b := f.do(t, "POST", "/api/login", `{"token":"`+staticToken+`"}`, headers...)
		if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
			t.Fatalf("login from %q: %d %s, cookies %v", tc.origin, resp.StatusCode, b, resp.Cookies())
		}
		if ck := resp.Cookies()[0]; ck.Secure != tc.secure {
			t.Errorf("login from %q: cookie Secure = %v, want %v", tc.origin, ck.Secure, tc.secure)
		}
	}
}

func TestLogin(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Token, o.Tokens = staticToken, map[string]string{callerToken: "ALICE_TOKEN"}
	})
	// Before the login the session says how to log in, with a 200 (a browser logs a 401 as an error), and nothing
	// else: no CSRF token, no agent.
	resp, b := f.do(t, "GET", "/api/session", "")
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"login":"token"}` {
		t.Fatalf("GET /api/session before login: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/api/runs", "/api/tools", "/api/servers", "/api/runs/x/events"} {
		if resp, _ := f.do(t, "GET", p, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s before login: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := f.do(t, "POST", "/api/chat", `{"message":"hi"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /api/chat before login: %d", resp.StatusCode)
	}
	// The page's files need no login.
	if resp, _ := f.do(t, "GET", "/", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / before login: %d", resp.StatusCode)
	}
	for _, bad := range []string{`{"token":"wrong"}`, `{"token":""}`, `{"token":"` + staticToken + `x"}`} {
		if resp, _ := f.do(t, "POST", "/api/login", bad); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("login with %s: %d", bad, resp.StatusCode)
		}
	}
	for _, token := range []string{staticToken, callerToken} {
		f.client.Jar, _ = cookiejar.New(nil)
		resp, b := f.do(t, "POST", "/api/login", `{"token":"`+token+`"}`)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("login: %d %s", resp.StatusCode, b)
		}
		cookies := resp.Cookies()
		if len(cookies) != 1 {
			t.Fatalf("cookies %v", cookies)
		}
		ck := cookies[0]
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.MaxAge != 0 || !ck.Expires.IsZero() ||
			strings.Contains(ck.Value, token) {
			t.Errorf("cookie %+v", ck)
		}
		resp, b = f.do(t, "GET", "/api/session", "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"auth":"token"`) || strings.Contains(string(b), token) {
			t.Fatalf("session after login: %d %s", resp.StatusCode, b)
		}
		if resp, b := f.do(t, "GET", "/api/runs", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /api/runs after login: %d %s", resp.StatusCode, b)
		}
		// Logging out needs the CSRF token, and ends the session.
		if resp, _ := f.do(t, "POST", "/api/logout", ""); resp.StatusCode != http.StatusForbidden {
			t.Errorf("logout without CSRF: %d", resp.StatusCode)
		}
		if resp, _ := f.do(t, "POST", "/api/logout", "", "X-CSRF-Token", f.csrf(t)); resp.StatusCode != http.StatusNoContent {
			t.Errorf("logout: %d", resp.StatusCode)
		}
		if resp, _ := f.do(t, "GET", "/api/runs", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /api/runs after logout: %d", resp.StatusCode)
		}
	}
	// A script's bearer token works without a session, and needs no CSRF token.
	f.client.Jar, _ = cookiejar.New(nil)
	if resp, b := f.do(t, "GET", "/api/runs", "", "Authorization", "Bearer "+callerToken); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/runs with a bearer token: %d %s", resp.StatusCode, b)
	}
	if resp, _ := f.do(t, "GET", "/api/runs", "", "Authorization", "Bearer nope"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/runs with a bad bearer token: %d", resp.StatusCode)
	}
}

func TestLoginOAuth(t *testing.T) {
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	f := newFixture(t, func(o *Options) {
		o.Verify = func(_ context.Context, bearer string) (string, time.Time, error) {
			if bearer != "a.jwt.token" {
				return "", time.Time{}, errBadToken
			}
			return "user-1", expires, nil
		}
	})
	resp, b := f.do(t, "GET", "/api/session", "")
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"login":"oauth"}` {
		t.Fatalf("GET /api/session: %d %s", resp.StatusCode, b)
	}
	if resp, _ := f.do(t, "POST", "/api/login", `{"token":"forged"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a bad JWT: %d", resp.StatusCode)
	}
	resp, _ = f.do(t, "POST", "/api/login", `{"token":"a.jwt.token"}`)
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Expires.Equal(expires) {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	if resp, b := f.do(t, "GET", "/api/session", ""); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"auth":"oauth"`) {
		t.Errorf("session: %d %s", resp.StatusCode, b)
	}
}

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newSessions(func() time.Time { return now })
	a := s.open("", time.Time{})
	now = now.Add(sessionIdle - time.Minute)
	if _, ok := s.get(a.id); !ok {
		t.Fatal("a session used within the idle time ended")
	}
	now = now.Add(sessionIdle + time.Minute)
	if _, ok := s.get(a.id); ok {
		t.Fatal("an idle session lives on")
	}
	b := s.open("", now.Add(time.Minute))
	now = now.Add(2 * time.Minute)
	if _, ok := s.get(b.id); ok {
		t.Fatal("a session lives past its JWT's expiry")
	}
	first := s.open("", time.Time{})
	for range maxSessions + 5 {
		now = now.Add(time.Second)
		s.open("", time.Time{})
	}
	if len(s.m) > maxSessions {
		t.Errorf("%d sessions kept", len(s.m))
	}
	if _, ok := s.get(first.id); ok {
		t.Error("the least recently used session was kept over newer ones")
	}
}

func TestTools(t *testing.T) {
	f := newFixture(t, nil)
	resp, b := f.do(t, "GET", "/api/tools", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var list struct {
		Tools  []toolJSON `json:"tools"`
		Search struct {
			On     bool   `json:"on"`
			Reason string `json:"reason"`
		} `json:"search"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]toolJSON{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	if d, ok := byName["danger"]; !ok || d.Source != "test" || strings.Join(d.Flags, ",") != "require_approval" || string(d.InputSchema) != `{"type":"object"}` {
		t.Errorf("danger: %+v", d)
	}
	if l, ok := byName["lookup"]; !ok || len(l.Flags) != 0 || l.Score != nil {
		t.Errorf("lookup: %+v", l)
	}
	if list.Search.Reason == "" {
		t.Errorf("search %+v", list.Search)
	}
	resp, b = f.do(t, "GET", "/api/tools?q=capital+country", "")
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if len(list.Tools) == 0 || list.Tools[0].Name != "lookup" || list.Tools[0].Score == nil || *list.Tools[0].Score <= 0 {
		t.Errorf("search for capital: %s", b)
	}
}

func TestServers(t *testing.T) {
	want := []ServerState{{Name: "files", Kind: "mcp", Transport: "stdio", State: "connected", Tools: 3},
		{Name: "docs", Kind: "mcp", Transport: "http", URL: "http://127.0.0.1:1/mcp", State: "needs_login", Login: "agenthost mcp login docs"}}
	f := newFixture(t, func(o *Options) { o.Servers = func() []ServerState { return want } })
	resp, b := f.do(t, "GET", "/api/servers", "")
	var got struct{ Servers []ServerState }
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if len(got.Servers) != 2 || got.Servers[1] != want[1] || got.Servers[0] != want[0] {
		t.Errorf("servers %+v", got.Servers)
	}
}

// memConversations is a Conversations in memory.
type memConversations struct{ m map[string]*host.Conversation }

func (c *memConversations) List(context.Context) ([]ConversationSummary, error) {
	var out []ConversationSummary
	for _, conv := range c.m {
		out = append(out, ConversationSummary{ID: conv.ID, Messages: len(conv.Messages)})
	}
	return out, nil
}

func (c *memConversations) Get(_ context.Context, id string) (*host.Conversation, error) {
	if conv, ok := c.m[id]; ok {
		return conv, nil
	}
	return nil, ErrNotFound
}

func (c *memConversations) Delete(_ context.Context, id string) error {
	if _, ok := c.m[id]; !ok {
		return ErrNotFound
	}
	delete(c.m, id)
	return nil
}

func TestConversationsAPI(t *testing.T) {
	convs := &memConversations{m: map[string]*host.Conversation{"c1": {ID: "c1"}}}
	f := newFixture(t, func(o *Options) { o.Conversations = convs })
	csrf := f.csrf(t)
	if resp, b := f.do(t, "GET", "/api/conversations", ""); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":"c1"`) {
		t.Errorf("list: %d %s", resp.StatusCode, b)
	}
	if resp, b := f.do(t, "GET", "/api/conversations/c1", ""); resp.StatusCode != http.StatusOK || string(b) != `{"id":"c1","messages":[]}`+"\n" {
		t.Errorf("get: %d %s", resp.StatusCode, b)
	}
	if resp, _ := f.do(t, "GET", "/api/conversations/nope", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("get unknown: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "DELETE", "/api/conversations/c1", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "DELETE", "/api/conversations/c1", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNotFound {
		t.Errorf("delete again: %d", resp.StatusCode)
	}
}

func TestChatBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	csrf := f.csrf(t)
	for _, body := range []string{`{"message":""}`, `not json`, `{"message":"hi","output_schema":{"type":5}}`} {
		if resp, b := f.do(t, "POST", "/api/chat", body, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("chat %s: %d %s", body, resp.StatusCode, b)
		}
	}
	if resp, _ := f.do(t, "POST", "/api/runs/nope/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNotFound {
		t.Errorf("cancel an unknown run: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "GET", "/api/runs/nope/events", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("events of an unknown run: %d", resp.StatusCode)
	}
}

func TestChatStreamsTheRunWithItsCitation(t *testing.T) {
	f := newFixture(t, nil)
	f.llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"country":"France"}`}}},
		fakellm.Turn{Text: "Paris is the capital [1]."},
	)
	id := f.chat(t, `{"message":"What is the capital of France?"}`)
	var kinds []runlog.Kind
	var answer *host.Answer
	lastSeq := 0
	end := f.follow(t, id, 0, func(e runlog.Entry, _ string) {
		if e.Seq != lastSeq+1 {
			t.Errorf("entry %d after %d", e.Seq, lastSeq)
		}
		lastSeq = e.Seq
		kinds = append(kinds, e.Kind)
		if e.Kind == runlog.KindToolStart && (e.Name != "lookup" || !strings.Contains(string(e.Arguments), "France")) {
			t.Errorf("tool_start %+v", e)
		}
		if e.Kind == runlog.KindAnswer {
			answer = e.Answer
		}
	})
	if end.ID != id || end.Origin != "console" || end.Status == runlog.StatusRunning || end.Ended == nil {
		t.Errorf("end %+v", end)
	}
	if !slicesContain(kinds, runlog.KindToolStart) || !slicesContain(kinds, runlog.KindToolEnd) || !slicesContain(kinds, runlog.KindAnswer) {
		t.Errorf("kinds %v", kinds)
	}
	if answer == nil || len(answer.References) != 1 || answer.References[0].URI != "https://atlas.example/france" ||
		!strings.Contains(answer.Text, "Paris is the capital") {
		t.Fatalf("answer %+v", answer)
	}
	// The run is listed, and replayed from after a given entry.
	if resp, b := f.do(t, "GET", "/api/runs", ""); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":"`+id+`"`) {
		t.Errorf("GET /api/runs: %s", b)
	}
	resp, b := f.do(t, "GET", "/api/runs/"+id, "")
	var got struct {
		Run     runlog.Summary
		Entries []runlog.Entry
	}
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK || len(got.Entries) != lastSeq {
		t.Fatalf("GET /api/runs/%s: %d %d entries, want %d: %v", id, resp.StatusCode, len(got.Entries), lastSeq, err)
	}
	var replayed []int
	f.follow(t, id, lastSeq-2, func(e runlog.Entry, _ string) { replayed = append(replayed, e.Seq) })
	if len(replayed) != 2 || replayed[0] != lastSeq-1 {
		t.Errorf("after %d, replayed %v", lastSeq-2, replayed)
	}
}

func slicesContain[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestChatApproval(t *testing.T) {
	for _, approve := range []bool{true, false} {
		f := newFixture(t, nil)
		f.llm.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{"path":"/tmp/x"}`}}},
			fakellm.Turn{Text: "Handled."},
		)
		id := f.chat(t, `{"message":"do the risky thing"}`)
		csrf := f.csrf(t)
		var answered *runlog.ApprovalAnswer
		f.follow(t, id, 0, func(e runlog.Entry, _ string) {
			switch e.Kind {
			case runlog.KindApproval:
				w := e.Approval
				if w == nil || w.Type != "approval" || w.Tool != "danger" || !strings.Contains(string(w.Arguments), "/tmp/x") {
					t.Fatalf("approval %+v", w)
				}
				if resp, _ := f.do(t, "POST", "/api/runs/"+id+"/answer", `{"id":"other","approved":true}`, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNotFound {
					t.Errorf("answer to no question: %d", resp.StatusCode)
				}
				body, _ := json.Marshal(map[string]any{"id": w.ID, "approved": approve})
				if resp, b := f.do(t, "POST", "/api/runs/"+id+"/answer", string(body), "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
					t.Fatalf("answer: %d %s", resp.StatusCode, b)
				}
			case runlog.KindApprovalDone:
				answered = e.Answered
			}
		})
		if answered == nil || answered.Approved != approve {
			t.Errorf("approve=%v: answered %+v", approve, answered)
		}
		want := int32(0)
		if approve {
			want = 1
		}
		if got := f.danger.Load(); got != want {
			t.Errorf("approve=%v: the tool ran %d times", approve, got)
		}
	}
}

func TestChatCancel(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.MaxRuns = 1 })
	f.llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	id := f.chat(t, `{"message":"take your time"}`)
	// The run hangs in its model call: cancelled before it, it would leave the hanging turn to the next run.
	testwait.Until(t, 10*time.Second, "the run's model call", func() bool { return f.llm.RequestCount() == 1 })
	csrf := f.csrf(t)
	// One run at a time.
	if resp, _ := f.do(t, "POST", "/api/chat", `{"message":"another"}`, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second run beyond MaxRuns: %d", resp.StatusCode)
	}
	if resp, b := f.do(t, "POST", "/api/runs/"+id+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	end := f.follow(t, id, 0, func(runlog.Entry, string) {})
	if end.Status != runlog.Status(host.StopCancelled) {
		t.Errorf("the cancelled run ended %+v", end)
	}
	if resp, _ := f.do(t, "POST", "/api/runs/"+id+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusConflict {
		t.Errorf("cancel an ended run: %d", resp.StatusCode)
	}
	// A run of another front end is not the console's to stop.
	f.llm.Enqueue(fakellm.Turn{Text: "from the CLI"})
	if _, err := f.orch.Ask(host.WithOrigin(t.Context(), "cli"), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	var other string
	for _, s := range f.runs.Runs() {
		if s.Origin == "cli" {
			other = s.ID
		}
	}
	if other == "" {
		t.Fatalf("the CLI's run is not recorded: %+v", f.runs.Runs())
	}
	if resp, _ := f.do(t, "POST", "/api/runs/"+other+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusConflict {
		t.Errorf("cancel another front end's run: %d", resp.StatusCode)
	}
}

func TestCloseCancelsRuns(t *testing.T) {
	f := newFixture(t, nil)
	f.llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	id := f.chat(t, `{"message":"hang"}`)
	f.console.Close()
	sum, _, ok := f.runs.Run(id, 0)
	if !ok || sum.Status == runlog.StatusRunning {
		t.Errorf("after Close the run is %+v", sum)
	}
	if resp, _ := f.do(t, "POST", "/api/chat", `{"message":"more"}`, "X-CSRF-Token", f.csrf(t)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("chat after Close: %d", resp.StatusCode)
	}
}

func TestLiveRuns(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/runs/live", nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	f.llm.Enqueue(fakellm.Turn{Text: "live"})
	id := f.chat(t, `{"message":"watch me"}`)
	for ev := range readSSE(t, resp.Body) {
		var s runlog.Summary
		if ev.name != "run" || json.Unmarshal(ev.data, &s) != nil {
			t.Fatalf("event %q %s", ev.name, ev.data)
		}
		if s.ID == id && s.Status != runlog.StatusRunning {
			return
		}
	}
	t.Fatal("the stream ended before the run did")
}

func TestChatElicitation(t *testing.T) {
	f := newFixture(t, nil)
	f.llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "ask_city", Arguments: `{}`}}},
		fakellm.Turn{Text: "Lyon it is."},
	)
	id := f.chat(t, `{"message":"ask me"}`)
	csrf := f.csrf(t)
	var result string
	f.follow(t, id, 0, func(e runlog.Entry, _ string) {
		switch e.Kind {
		case runlog.KindApproval:
			w := e.Approval
			if w == nil || w.Type != "elicitation" || w.Message != "Which city?" || !strings.Contains(string(w.Schema), "city") {
				t.Fatalf("question %+v", w)
			}
			if resp, _ := f.do(t, "POST", "/api/runs/"+id+"/answer", `{"id":"`+w.ID+`","action":"maybe"}`, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("a bad action: %d", resp.StatusCode)
			}
			body := `{"id":"` + w.ID + `","action":"accept","content":{"city":"Lyon"}}`
			if resp, b := f.do(t, "POST", "/api/runs/"+id+"/answer", body, "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("answer: %d %s", resp.StatusCode, b)
			}
		case runlog.KindToolEnd:
			result = e.Result
		}
	})
	if !strings.Contains(result, "Lyon") || !strings.Contains(result, "accept") {
		t.Errorf("the tool got %q", result)
	}
}

// The console accepts its own origin (the scheme and Host it is reached at) and [serve] allowed_origins, not
// another loopback page's.
func TestOriginIsTheConsoles(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AllowedOrigins = []string{"https://console.example.com"} })
	csrf := f.csrf(t)
	for origin, want := range map[string]int{
		"http://localhost:1":          http.StatusForbidden,
		"http://127.0.0.1:9":          http.StatusForbidden,
		"https://evil.example":        http.StatusForbidden,
		f.srv.URL:                     http.StatusNoContent,
		"https://console.example.com": http.StatusNoContent,
	} {
		if resp, b := f.do(t, "POST", "/api/logout", "", "X-CSRF-Token", csrf, "Origin", origin); resp.StatusCode != want {
			t.Errorf("POST with Origin %s: %d %s, want %d", origin, resp.StatusCode, b, want)
		}
	}
}

// A console listening beyond loopback (with a token) works from its own origin, the address it listens on.
func TestOwnOriginBeyondLoopback(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Token, o.ListenAddr = staticToken, "0.0.0.0:8767" })
	h := []string{"Host", "0.0.0.0:8767", "Origin", "http://0.0.0.0:8767"}
	if resp, b := f.do(t, "POST", "/api/login", `{"token":"`+staticToken+`"}`, h...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("login from the console's own origin: %d %s", resp.StatusCode, b)
	}
	resp, b := f.do(t, "GET", "/api/session", "", h...)
	var s struct{ CSRF string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &s) != nil {
		t.Fatalf("session: %d %s", resp.StatusCode, b)
	}
	if resp, b := f.do(t, "POST", "/api/logout", "", append(h, "X-CSRF-Token", s.CSRF)...); resp.StatusCode != http.StatusNoContent {
		t.Errorf("logout from the console's own origin: %d %s", resp.StatusCode, b)
	}
	// Another host's page, even one the Host check would let through, is not the console's.
	if resp, _ := f.do(t, "POST", "/api/login", `{"token":"`+staticToken+`"}`, "Host", "0.0.0.0:8767", "Origin", "http://localhost:8767"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("login from another origin: %d", resp.StatusCode)
	}
}

// An approval or elicitation nobody answers is, after InputTimeout, denied or cancelled, and the run goes on.
func TestUnansweredQuestionsTimeOut(t *testing.T) {
	for _, tool := range []string{"danger", "ask_city"} {
		f := newFixture(t, func(o *Options) { o.InputTimeout = time.Millisecond })
		f.llm.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: tool, Arguments: `{}`}}},
			fakellm.Turn{Text: "nobody answered"},
		)
		id := f.chat(t, `{"message":"go"}`)
		var answered *runlog.ApprovalAnswer
		var result string
		end := f.follow(t, id, 0, func(e runlog.Entry, _ string) {
			switch e.Kind {
			case runlog.KindApprovalDone:
				answered = e.Answered
			case runlog.KindToolEnd:
				result = e.Result
			}
		})
		if end.Status != runlog.Status(host.StopAnswered) {
			t.Errorf("%s: the run ended %+v", tool, end)
		}
		switch tool {
		case "danger":
			if answered == nil || answered.Approved || f.danger.Load() != 0 {
				t.Errorf("approval: answered %+v, the tool ran %d times", answered, f.danger.Load())
			}
		case "ask_city":
			if answered == nil || answered.Action != "cancel" || !strings.Contains(result, "cancel") {
				t.Errorf("elicitation: answered %+v, the tool got %q", answered, result)
			}
		}
	}
}

// The session's "login" before the login and its "auth" after are one label: what the page asks for.
func TestLoginAndAuthAgree(t *testing.T) {
	verify := func(_ context.Context, bearer string) (string, time.Time, error) {
		if bearer != "a.jwt.token" {
			return "", time.Time{}, errBadToken
		}
		return "user-1", time.Time{}, nil
	}
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"oauth only", func(o *Options) { o.Verify = verify }, "oauth"},
		{"oauth and a static token", func(o *Options) { o.Verify, o.Token = verify, staticToken }, "token"},
		{"callers' tokens", func(o *Options) { o.Tokens = map[string]string{callerToken: "ALICE"} }, "token"},
	} {
		f := newFixture(t, c.edit)
		_, b := f.do(t, "GET", "/api/session", "")
		var refused struct{ Login string }
		_ = json.Unmarshal(b, &refused)
		_, b = f.do(t, "GET", "/api/session", "", "Authorization", "Bearer a.jwt.token")
		if c.name == "callers' tokens" {
			_, b = f.do(t, "GET", "/api/session", "", "Authorization", "Bearer "+callerToken)
		}
		var session struct{ Auth string }
		_ = json.Unmarshal(b, &session)
		if refused.Login != c.want || session.Auth != c.want {
			t.Errorf("%s: login %q, auth %q, want %q", c.name, refused.Login, session.Auth, c.want)
		}
	}
}
