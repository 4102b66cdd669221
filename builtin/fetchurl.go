package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/origin"
)

const (
	maxRedirects = 5
	// excerptRunes is the length of the excerpt a reference carries.
	excerptRunes = 300
)

// fetchURL is the fetch_url tool: one web page, or one text document, as text the model can read and cite.
type fetchURL struct {
	opts      FetchURLOptions // with the defaults filled in
	transport *http.Transport
	input     json.RawMessage
	logger    *slog.Logger
}

func newFetchURL(e *env) (host.Tool, error) {
	o := e.opts.FetchURL
	if o.Timeout < 0 || o.MaxBytes < 0 || o.MaxChars < 0 {
		return nil, errors.New("timeout, max_bytes and max_chars must not be negative")
	}
	o.Timeout = cmp.Or(o.Timeout, 30*time.Second)
	o.MaxBytes = cmp.Or(o.MaxBytes, 5<<20)
	o.MaxChars = cmp.Or(o.MaxChars, 20000)
	o.UserAgent = cmp.Or(o.UserAgent, "agenthost/"+e.opts.Version+" (fetch_url)")
	guard, err := newDialGuard(o.AllowPrivate, o.AllowHosts)
	if err != nil {
		return nil, err
	}
	t := &fetchURL{
		opts: o,
		transport: &http.Transport{
			// A proxy would dial in our place, and the guard would check the proxy's address, not the page's.
			Proxy:               nil,
			DialContext:         guard.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        16,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		input: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"url":{"type":"string","description":"The absolute http or https URL of the page, `+
			`e.g. https://example.com/page"},`+
			`"max_chars":{"type":"integer","minimum":1,"description":"The most characters of text to return; `+
			`default %d. A longer page is cut, and the result says how long it was."}},`+
			`"required":["url"]}`, o.MaxChars)),
		logger: e.logger,
	}
	e.onClose(func() error {
		t.transport.CloseIdleConnections()
		return nil
	})
	return t, nil
}

func (t *fetchURL) Spec() host.ToolSpec {
	return host.ToolSpec{
		Name:  "fetch_url",
		Title: "Fetch URL",
		Description: "Fetches a web page by HTTP(S) GET and returns its readable content as markdown (title, " +
			"headings, paragraphs, lists, tables, links), or a text or JSON document as it is. Binary files " +
			"(images, PDFs, archives) and local or private network addresses are refused.",
		Prompt: "Use fetch_url to read a specific web page: a URL the user gave or asked about, a link from a page " +
			"you read, or a search result worth reading in full. Cite the page as the source of what you take " +
			"from it. Do not guess URLs. A long page is cut at max_chars and the result says how long it was; ask " +
			"again with a larger max_chars only when the part you need is missing. fetch_url cannot read images, " +
			"PDFs or other binary files, nor local or private network addresses.",
		InputSchema: t.input,
		Annotations: readOnly(true),
	}
}

const fetchURLExample = `{"url": "https://example.com/page"}`

func (t *fetchURL) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		URL      string `json:"url"`
		MaxChars *int   `json:"max_chars"`
	}
	if err := decodeArgs(args, &in, fetchURLExample); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	maxChars := t.opts.MaxChars
	if in.MaxChars != nil {
		if *in.MaxChars < 1 {
			return errorResult("Invalid arguments: max_chars must be a positive number of characters, such as "+
				"%d, not %d", t.opts.MaxChars, *in.MaxChars), nil
		}
		maxChars = *in.MaxChars
	}
	u, res := parseFetchURL(in.URL)
	if res != nil {
		return res, nil
	}

	fetchCtx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	r, err := t.fetch(fetchCtx, u)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res = t.failure(fetchCtx, u, r.url, err)
		// The result's text, not err: a redirect's URL in err may hold a password.
		t.logger.DebugContext(ctx, "builtin tool", "tool", "fetch_url", "url", u.Redacted(), "err", res.Text)
		return res, nil
	}
	t.logger.DebugContext(ctx, "builtin tool", "tool", "fetch_url", "url", r.url.Redacted(), "status", r.code,
		"bytes", len(r.body), "redirects", r.redirects)

	switch {
	case r.code/100 != 2:
		res = errorResult("%s answered %s.", r.url.Redacted(), r.status)
	case !textual(r.mediaType):
		res = errorResult("%s is %s%s, not a web page or text: fetch_url cannot read it.", r.url.Redacted(),
			r.mediaType, r.sizeNote())
	default:
		res = r.result(maxChars, t.opts.MaxBytes)
	}
	res.Debug = map[string]any{
		"url":          r.url.Redacted(),
		"status":       r.code,
		"content_type": r.contentType,
		"bytes":        len(r.body),
		"redirects":    r.redirects,
	}
	if r.cut {
		res.Debug["cut_at_max_bytes"] = true
	}
	return res, nil
}

// parseFetchURL reads the url argument, or says what is wrong with it.
func parseFetchURL(raw string) (*url.URL, *host.Result) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errorResult("Invalid arguments: url is required; for example %s", fetchURLExample)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, errorResult("Invalid arguments: url must be an absolute http or https URL such as "+
			"https://example.com/page, not %q", raw)
	}
	if err := checkURL(u); err != nil {
		return nil, errorResult("%v", err)
	}
	return u, nil
}

// checkURL refuses the URLs fetch_url never fetches, given or redirected to. Where they lead is the dialer's
// business.
func checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return &refusedError{fmt.Sprintf("refused: %s is not an http or https URL; fetch_url fetches only those",
			u.Redacted())}
	case u.User != nil:
		return &refusedError{"refused: the URL carries a user name or password (user:password@host); " +
			"fetch_url sends no credentials"}
	case u.Hostname() == "":
		return &refusedError{fmt.Sprintf("refused: %s names no host", u.Redacted())}
	}
	return nil
}

// failure is the result of a fetch of u that failed with err, within ctx, at the request for last (u or a
// redirect's target).
func (t *fetchURL) failure(ctx context.Context, u, last *url.URL, err error) *host.Result {
	var refused *refusedError
	var uerr *url.Error
	switch {
	case errors.As(err, &refused):
		if last.String() != u.String() {
			return errorResult("%s (%s redirected to %s)", refused, u.Redacted(), last.Redacted())
		}
		return errorResult("%s", refused)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errorResult("Fetching %s timed out after %s.", u.Redacted(), t.opts.Timeout)
	case errors.As(err, &uerr):
		// Its message repeats the URL, password included.
		err = uerr.Err
	}
	return errorResult("Could not fetch %s: %v", u.Redacted(), err)
}

// fetched is what a fetch brought back.
type fetched struct {
	url         *url.URL // the last request's, after redirects
	redirects   int
	code        int
	status      string
	contentType string // as the server sent it
	mediaType   string // from contentType, or sniffed from the body when there is none
	size        int64  // Content-Length, -1 when unknown
	body        []byte // nil when the response was refused before reading it
	cut         bool   // the body was longer than MaxBytes
}

// fetch GETs u, following redirects, and reads the body when the response is one fetch_url can read. When it
// fails, the result still tells the URL of the last request.
func (t *fetchURL) fetch(ctx context.Context, u *url.URL) (*fetched, error) {
	r := &fetched{url: u}
	client := &http.Client{
		// fetch_url sends no credentials; a redirect elsewhere gets no Referer either, which net/http would set to
		// the URL redirected from, query included.
		Transport: &origin.Transport{Origin: origin.Of(u), Base: t.transport},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			r.url = req.URL
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if err := checkURL(req.URL); err != nil {
				return err
			}
			r.redirects = len(via)
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return r, err
	}
	req.Header.Set("User-Agent", t.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()

	r.url, r.code, r.status, r.size = resp.Request.URL, resp.StatusCode, resp.Status, resp.ContentLength
	r.contentType = resp.Header.Get("Content-Type")
	r.mediaType = mediaType(r.contentType)
	if r.code/100 != 2 || r.mediaType != "" && !textual(r.mediaType) {
		return r, nil
	}
	// One byte more than the cap tells a body of exactly MaxBytes from a longer one.
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, t.opts.MaxBytes+1))
	if err != nil {
		return r, err
	}
	if int64(len(r.body)) > t.opts.MaxBytes {
		r.body, r.cut = r.body[:t.opts.MaxBytes], true
	}
	if r.mediaType == "" {
		r.mediaType = mediaType(http.DetectContentType(r.body))
	}
	return r, nil
}

// mediaType is the lower-case media type of a Content-Type, or "" when there is none to read.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return ""
	}
	return mt
}

// textual reports whether fetch_url reads the media type mt: web pages and text, not images, PDFs or archives.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case strings.HasPrefix(mt, "image/"): // image/svg+xml is a picture, whatever its syntax
		return false
	case strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/yaml", "application/x-yaml", "application/toml":
		return true
	}
	return false
}

// sizeNote is the size of a refused body, as far as it is known.
func (r *fetched) sizeNote() string {
	switch {
	case r.body != nil && r.cut:
		return fmt.Sprintf(" (more than %s)", formatSize(int64(len(r.body))))
	case r.body != nil:
		return fmt.Sprintf(" (%s)", formatSize(int64(len(r.body))))
	case r.size >= 0:
		return fmt.Sprintf(" (%s)", formatSize(r.size))
	}
	return ""
}

func formatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// result is the successful result of a readable response: its text cut at maxChars, and the page as a reference.
func (r *fetched) result(maxChars int, maxBytes int64) *host.Result {
	title, text := readable(r.body, r.contentType, r.mediaType, r.url)
	shown, out := text, text
	if total := utf8.RuneCountInString(text); total > maxChars {
		shown = cutRunes(text, maxChars)
		out = shown + fmt.Sprintf("\n\n[Cut at %d of %d characters. Call fetch_url again with a larger "+
			"max_chars to read more.]", maxChars, total)
	}
	if r.cut {
		out += fmt.Sprintf("\n\n[The page is longer than %s; only that much of it was read.]", formatSize(maxBytes))
	}
	if strings.TrimSpace(text) == "" {
		out = "The page has no readable text; it may be built by JavaScript, which fetch_url does not run."
	}
	return &host.Result{
		Text: out,
		References: []host.Reference{{
			Title:   cmp.Or(title, r.url.Redacted()),
			URI:     r.url.Redacted(),
			Content: excerpt(shown),
		}},
	}
}

// readable decodes a body to UTF-8 and, for HTML, converts it to markdown and finds its title.
func readable(body []byte, contentType, mt string, page *url.URL) (title, text string) {
	text = decodeText(body, contentType)
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return htmlToMarkdown(text, page)
	}
	return "", text
}

// decodeText decodes body to UTF-8 by its byte order mark, the charset of contentType, or for HTML a <meta>
// charset. A body that declares none is UTF-8 when it is valid UTF-8, else windows-1252, as browsers read it.
func decodeText(body []byte, contentType string) string {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	// DetermineEncoding looks at the first 1024 bytes only: a page whose first 1024 bytes are ASCII is UTF-8
	// when the rest says so.
	text := body
	switch {
	case !certain && name == "windows-1252" && utf8.Valid(body):
	case name != "utf-8":
		if decoded, err := enc.NewDecoder().Bytes(body); err == nil {
			text = decoded
		}
	}
	return strings.TrimPrefix(strings.ToValidUTF8(string(text), "\uFFFD"), "\uFEFF")
}

// excerpt is the start of text, white space collapsed, cut at a word.
func excerpt(text string) string {
	s := strings.Join(strings.Fields(cutRunes(text, 4*excerptRunes)), " ")
	if utf8.RuneCountInString(s) <= excerptRunes {
		return s
	}
	s = cutRunes(s, excerptRunes)
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	return s + "…"
}
