package builtin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
)

const (
	// maxWebResults is the most results a call may ask for: the most Brave and Tavily return at once.
	maxWebResults = 20
	// maxQueryRunes is Brave's limit on a query; no backend searches better with a longer one.
	maxQueryRunes = 400
	// maxSearchBody bounds the response read; a page of results is tens of KiB.
	maxSearchBody = 4 << 20

	braveEndpoint  = "https://api.search.brave.com/res/v1/web/search"
	tavilyEndpoint = "https://api.tavily.com/search"
)

// webSearch is the web_search tool: a query sent to a search service, the results returned as references.
type webSearch struct {
	backend   string // as configured: "searxng", "brave" or "tavily"
	name      string // the service as messages name it: "Brave Search", "SearXNG at http://..."
	api       searchAPI
	key       string // redacted from the text of results
	opts      WebSearchOptions
	userAgent string
	client    *http.Client
	now       func() time.Time
	logger    *slog.Logger
	input     json.RawMessage
}

// searchAPI is one search service's protocol.
type searchAPI interface {
	// request asks for the first n results of query.
	request(ctx context.Context, query string, n int) (*http.Request, error)
	// parse reads a successful response.
	parse(body []byte) (searchPage, error)
	// explain reads an error response: the service's own words, and whether they say the API key was refused
	// whatever the status.
	explain(status int, body []byte) (detail string, keyRefused bool)
}

// searchPage is what a successful search found.
type searchPage struct {
	hits []searchHit
	// note says more about an empty page (the engines of a SearXNG instance that failed).
	note string
}

type searchHit struct {
	title, url, snippet string
}

// webSearchBackends are the services web_search can ask.
var webSearchBackends = map[string]struct {
	name     string
	endpoint string // "" when the url setting is required
	keyed    bool
	api      func(endpoint *url.URL, key string) searchAPI
}{
	"searxng": {"SearXNG", "", false, func(u *url.URL, _ string) searchAPI { return &searxng{u.JoinPath("search")} }},
	"brave":   {"Brave Search", braveEndpoint, true, func(u *url.URL, key string) searchAPI { return &brave{u, key} }},
	"tavily":  {"Tavily", tavilyEndpoint, true, func(u *url.URL, key string) searchAPI { return &tavily{u, key} }},
}

func newWebSearch(e *env) (host.Tool, error) {
	o := e.opts.WebSearch
	var errs []error
	b, known := webSearchBackends[o.Backend]
	switch {
	case o.Backend == "":
		errs = append(errs, errors.New(`backend is required: "searxng", "brave" or "tavily"`))
	case !known:
		errs = append(errs, fmt.Errorf(`unknown backend %q: want "searxng", "brave" or "tavily"`, o.Backend))
	case b.keyed && o.APIKey == "":
		errs = append(errs, fmt.Errorf("backend %q needs an API key (api_key_env): none is set", o.Backend))
	}
	t := &webSearch{backend: o.Backend, name: b.name, key: o.APIKey, now: e.now, logger: e.logger,
		userAgent: "agenthost/" + e.opts.Version + " (web_search)"}
	switch raw := cmp.Or(o.URL, b.endpoint); {
	case !known:
	case raw == "":
		errs = append(errs, fmt.Errorf("backend %q needs url, the address of the instance", o.Backend))
	default:
		u, err := endpointURL(raw)
		if err != nil {
			errs = append(errs, err)
			break
		}
		t.api = b.api(u, o.APIKey)
		if b.endpoint == "" {
			// A self-hosted instance is known by its address.
			t.name += " at " + u.Redacted()
		}
	}
	if o.Timeout < 0 {
		errs = append(errs, errors.New("timeout must not be negative"))
	}
	if o.MaxResults < 0 || o.MaxResults > maxWebResults {
		errs = append(errs, fmt.Errorf("max_results must be between 1 and %d, not %d", maxWebResults, o.MaxResults))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.Timeout = cmp.Or(o.Timeout, 15*time.Second)
	o.MaxResults = cmp.Or(o.MaxResults, 5)
	t.opts = o

	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.client = &http.Client{
		Transport: transport,
		// A redirect would carry Brave's key header to wherever it leads, and the endpoints have no reason to move.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.input = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","description":"What to search for: a few precise keywords, as typed into a `+
		`search engine, at most %d characters"},`+
		`"max_results":{"type":"integer","description":"How many results to return, 1 to %d; default %d"}},`+
		`"required":["query"]}`, maxQueryRunes, maxWebResults, o.MaxResults))
	e.onClose(func() error {
		transport.CloseIdleConnections()
		return nil
	})
	return t, nil
}

// endpointURL parses the address of a search service.
func endpointURL(raw string) (*url.URL, error) {
	const want = "url must be an absolute http or https URL such as http://127.0.0.1:8888"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, errors.New(want)
	case !u.IsAbs() || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, fmt.Errorf("%s, not %q", want, u.Redacted())
	}
	return u, nil
}

func (t *webSearch) Spec() host.ToolSpec {
	return host.ToolSpec{
		Name:  "web_search",
		Title: "Web search",
		Description: "Searches the web and returns the top results as sources, each with its title, URL and a " +
			"snippet of the page.",
		Prompt: "Use web_search for what you cannot answer reliably from memory: current events and news, facts " +
			"that may have changed since your training, things you do not know, and to find pages worth reading in " +
			"full (with fetch_url, when you have it). Search with a few precise keywords, not a whole sentence. Each " +
			"result is a source: cite the sources you use, and claim no more than their snippets or pages say. When " +
			"nothing useful is found, try other words once before saying so.",
		InputSchema: t.input,
		Annotations: readOnly(true),
	}
}

const webSearchExample = `{"query": "go 1.26 release notes"}`

func (t *webSearch) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Query      string `json:"query"`
		MaxResults *int   `json:"max_results"`
	}
	if err := decodeArgs(args, &in, webSearchExample); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	query := strings.Join(strings.Fields(in.Query), " ")
	if query == "" {
		return errorResult("Invalid arguments: query is required; for example %s", webSearchExample), nil
	}
	if n := utf8.RuneCountInString(query); n > maxQueryRunes {
		return errorResult("Invalid arguments: the query has %d characters; use at most %d, the key words only",
			n, maxQueryRunes), nil
	}
	n := t.opts.MaxResults
	if in.MaxResults != nil {
		n = min(max(*in.MaxResults, 1), maxWebResults)
	}

	searchCtx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	res, status, invalid, err := t.search(searchCtx, query, n)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res = t.unreachable(searchCtx, err)
	}
	res.Text = t.redact(res.Text)
	res.Debug = map[string]any{"backend": t.backend, "max_results": n, "results": len(res.References)}
	if status != 0 {
		res.Debug["status"] = status
	}
	if invalid != nil {
		res.Debug["invalid_json"] = invalid.Error()
	}
	t.logger.DebugContext(ctx, "builtin tool", "tool", "web_search", "backend", t.backend, "status", status,
		"results", len(res.References), "failed", res.IsError)
	return res, nil
}

// search asks the service and reads its answer: a result, the response's status, and why a body was not the JSON
// expected. An error means no answer came; a refusal is a result.
func (t *webSearch) search(ctx context.Context, query string, n int) (res *host.Result, status int, invalid, err error) {
	req, err := t.api.request(ctx, query, n)
	if err != nil {
		return nil, 0, nil, err
	}
	req.Header.Set("User-Agent", t.userAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, 0, nil, err
	}
	defer resp.Body.Close()
	// One byte more than the cap tells a body of exactly the cap from a longer one.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody+1))
	if err != nil {
		return nil, 0, nil, err
	}
	switch status = resp.StatusCode; {
	case status/100 != 2:
		return t.refused(resp, body), status, nil, nil
	case len(body) > maxSearchBody:
		return errorResult("%s sent more than %s, which is no page of search results. Try again later.", t.name,
			formatSize(maxSearchBody)), status, nil, nil
	}
	page, invalid := t.api.parse(body)
	if invalid != nil {
		// Why the JSON is wrong is for debug info: Go's words for it would not help the model.
		return errorResult("%s answered with %s that is not the JSON it should send. Try again later.", t.name,
			cmp.Or(mediaType(resp.Header.Get("Content-Type")), "a body")), status, invalid, nil
	}
	return t.found(query, n, page), status, nil, nil
}

// found is the result of a search that worked: the first n hits as references.
func (t *webSearch) found(query string, n int, page searchPage) *host.Result {
	var refs []host.Reference
	for _, h := range page.hits {
		uri := strings.TrimSpace(h.url)
		if uri == "" {
			continue
		}
		refs = append(refs, host.Reference{Title: cmp.Or(oneLine(h.title), uri), URI: uri, Content: excerpt(h.snippet)})
		if len(refs) == n {
			break
		}
	}
	if len(refs) == 0 {
		text := fmt.Sprintf("No results for %q from %s.", query, t.name)
		if page.note != "" {
			text += " " + page.note
		}
		return &host.Result{Text: text + " Try other or fewer words."}
	}
	plural := "s"
	if len(refs) == 1 {
		plural = ""
	}
	return &host.Result{
		Text:       fmt.Sprintf("%d result%s for %q from %s.", len(refs), plural, query, t.name),
		References: refs,
	}
}

// refused is the result of an error response.
func (t *webSearch) refused(resp *http.Response, body []byte) *host.Result {
	code := resp.StatusCode
	detail, keyRefused := t.api.explain(code, body)
	status := "HTTP " + strconv.Itoa(code)
	if text := http.StatusText(code); text != "" {
		status += " " + text
	}
	if detail = oneLine(detail); detail != "" {
		status += ": " + detail
	}
	switch {
	case keyRefused || t.key != "" && (code == http.StatusUnauthorized || code == http.StatusForbidden):
		return errorResult("%s refused the API key (%s). The key comes from the api_key_env setting of "+
			"[builtin.web_search]; searching again will not help until it is fixed.", t.name, status)
	case code == http.StatusForbidden:
		return errorResult("%s refused the search (%s). Searching again will not help.", t.name, status)
	case code == http.StatusTooManyRequests:
		wait := "Try again later"
		if after := t.retryAfter(resp.Header.Get("Retry-After")); after != "" {
			wait = fmt.Sprintf("It asks to wait %s (Retry-After); try again after that", after)
		}
		return errorResult("%s is limiting the rate of searches (%s). %s, not at once, or answer from the "+
			"sources you already have.", t.name, status, wait)
	case code/100 == 5:
		return errorResult("%s failed (%s). Try again later.", t.name, status)
	case code/100 == 3:
		where := "elsewhere"
		if loc, err := resp.Location(); err == nil {
			where = "to " + loc.Redacted()
		}
		return errorResult("%s answered %s, a redirect %s; web_search follows no redirects, so the url setting "+
			"of [builtin.web_search] must be the final address.", t.name, status, where)
	}
	return errorResult("%s refused the search (%s).", t.name, status)
}

// retryAfter reads a Retry-After header, seconds or a date, as a wait; "" when it says nothing usable.
func (t *webSearch) retryAfter(h string) string {
	h = strings.TrimSpace(h)
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		if s == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", s)
	}
	if when, err := http.ParseTime(h); err == nil {
		if d := when.Sub(t.now()).Round(time.Second); d > 0 {
			return d.String()
		}
	}
	return ""
}

// unreachable is the result of a search that got no answer within ctx.
func (t *webSearch) unreachable(ctx context.Context, err error) *host.Result {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorResult("%s did not answer within %s. Try again later, perhaps with a shorter query.",
			t.name, t.opts.Timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		// Its message repeats the URL, which may hold the instance's password.
		err = uerr.Err
	}
	return errorResult("Could not reach %s: %v. Try again later.", t.name, err)
}

// redact removes the API key from text a service may have echoed it into.
func (t *webSearch) redact(text string) string {
	if t.key == "" {
		return text
	}
	return strings.ReplaceAll(text, t.key, "[redacted]")
}

// searxng speaks the JSON API of a SearXNG instance, which must list json in its search.formats.
type searxng struct {
	search *url.URL
}

func (s *searxng) request(ctx context.Context, query string, _ int) (*http.Request, error) {
	// SearXNG has no result count: it answers with a page of results, cut to n by found.
	u := *s.search
	q := u.Query()
	q.Set("q", query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
}

func (s *searxng) parse(body []byte) (searchPage, error) {
	var r struct {
		Results []struct {
			Title, URL, Content string
		}
		// Pairs of an engine's name and its error.
		UnresponsiveEngines [][]string `json:"unresponsive_engines"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return searchPage{}, err
	}
	var page searchPage
	for _, h := range r.Results {
		page.hits = append(page.hits, searchHit{title: h.Title, url: h.URL, snippet: h.Content})
	}
	var failed []string
	for _, e := range r.UnresponsiveEngines {
		if len(e) == 2 {
			failed = append(failed, fmt.Sprintf("%s (%s)", e[0], e[1]))
		}
	}
	if len(failed) > 0 {
		page.note = "Engines that did not answer: " + strings.Join(failed, ", ") + "."
	}
	return page, nil
}

func (s *searxng) explain(status int, _ []byte) (string, bool) {
	if status == http.StatusForbidden {
		return "the instance does not serve the JSON format; its administrator must add json to search.formats " +
			"in settings.yml", false
	}
	return "", false
}

// brave speaks the Brave Search web search API.
type brave struct {
	endpoint *url.URL
	key      string
}

func (b *brave) request(ctx context.Context, query string, n int) (*http.Request, error) {
	u := *b.endpoint
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", b.key)
	return req, nil
}

func (b *brave) parse(body []byte) (searchPage, error) {
	var r struct {
		Web struct {
			Results []struct {
				Title, URL, Description string
			}
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return searchPage{}, err
	}
	var page searchPage
	for _, h := range r.Web.Results {
		// Brave marks the query's words with <strong> and escapes the rest as HTML.
		_, title := plainText(h.Title)
		_, snippet := plainText(h.Description)
		page.hits = append(page.hits, searchHit{title: title, url: h.URL, snippet: snippet})
	}
	return page, nil
}

func (b *brave) explain(_ int, body []byte) (string, bool) {
	var r struct {
		Error struct {
			Code, Detail string
		}
	}
	if json.Unmarshal(body, &r) != nil {
		return "", false
	}
	// Brave answers a wrong key with 422.
	return r.Error.Detail, r.Error.Code == "SUBSCRIPTION_TOKEN_INVALID"
}

// tavily speaks the Tavily search API.
type tavily struct {
	endpoint *url.URL
	key      string
}

func (t *tavily) request(ctx context.Context, query string, n int) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{
		"query":       query,
		"max_results": n,
		// Stated, so that Tavily's choices cannot make a search cost more or return more than snippets.
		"search_depth":        "basic",
		"include_answer":      false,
		"include_raw_content": false,
		"include_images":      false,
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	return req, nil
}

func (t *tavily) parse(body []byte) (searchPage, error) {
	var r struct {
		Results []struct {
			Title, URL, Content string
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return searchPage{}, err
	}
	var page searchPage
	for _, h := range r.Results {
		page.hits = append(page.hits, searchHit{title: h.Title, url: h.URL, snippet: h.Content})
	}
	return page, nil
}

func (t *tavily) explain(_ int, body []byte) (string, bool) {
	var r struct {
		Detail struct {
			Error string
		}
	}
	// A validation error makes detail an array, with no message to read.
	if json.Unmarshal(body, &r) != nil {
		return "", false
	}
	return r.Detail.Error, false
}
