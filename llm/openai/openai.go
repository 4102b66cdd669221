// Package openai implements llm.Model over the Chat Completions API of OpenAI and of the servers that copy it
// (Ollama, vLLM, LM Studio, OpenRouter ...), and llm.Embedder over their embeddings API. It writes the request
// body, sends it with net/http, and reads the event stream itself: only a few fields of the API are ever used, and a
// general SDK, whose package initialisation registers every type of every endpoint, would more than double the size
// and start-up memory of the binary.
//
// It owns the conversion between llm types and the wire format, streaming, retries and the stream's idle
// timeout. It imports llm and the standard library, no other package of this project.
//
// Only fields every compatible server understands are relied on. The one exception is llm.Request.MaxTokens:
// it is sent as max_tokens, except to api.openai.com, whose newer models accept only max_completion_tokens.
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// Defaults for the zero values of Options.
const (
	DefaultBaseURL     = "https://api.openai.com/v1"
	DefaultMaxRetries  = 4
	DefaultIdleTimeout = 60 * time.Second

	// maxIdleConnsPerHost is how many idle connections to the model API are kept for reuse.
	maxIdleConnsPerHost = 256
)

// Backoff between retries when the server gives no Retry-After: base·2^retry, at most maxBackoff, minus up to a
// quarter of jitter. A Retry-After longer than maxRetryAfter is not waited for: the call fails instead.
const (
	defaultBackoff = 500 * time.Millisecond
	maxBackoff     = 8 * time.Second
	maxRetryAfter  = 60 * time.Second
)

// Options configures a Model.
type Options struct {
	// BaseURL is the API's base URL, up to and including the version, e.g. "http://localhost:11434/v1".
	// Requests go to <BaseURL>/chat/completions; a query in it is kept (Azure OpenAI's ?api-version=...).
	// "" means DefaultBaseURL. The environment (OPENAI_BASE_URL) is not read.
	BaseURL string
	// APIKey is sent as a bearer token. "" sends no Authorization header, which local servers accept. The
	// environment (OPENAI_API_KEY) is not read. The key is never logged.
	APIKey string
	// Model is the model name sent with every request. Required.
	Model string
	// RequestTimeout bounds a whole Generate call, retries included. 0 means no bound beyond the caller's ctx.
	RequestTimeout time.Duration
	// MaxRetries is how many times a call is retried after a 408, 429 or 5xx status or a connection error that
	// happened before the first chunk arrived. 0 means DefaultMaxRetries; a negative value means no retries.
	MaxRetries int
	// IdleTimeout fails a call when the server sends nothing for this long, whether it is waiting for the
	// response headers, for the first chunk or for the next one. 0 means DefaultIdleTimeout; a negative value
	// means no idle timeout.
	IdleTimeout time.Duration
	// HTTPClient sends the requests. nil means a client of the Model's own over a clone of
	// http.DefaultTransport keeping up to 256 idle connections. A client Timeout, if set, bounds each attempt, streaming included.
	// Its CheckRedirect is not used: redirects are refused whatever the client.
	HTTPClient *http.Client
	// Logger receives retries and protocol oddities. nil discards them.
	Logger *slog.Logger
	// Headers, when set, adds headers to each request from the call's context: trace context, for one.
	Headers func(ctx context.Context, h http.Header)
}

// Model is an llm.Model over a Chat Completions API. It is safe for concurrent use.
type Model struct {
	name string
	info llm.Info
	// client sends the requests to endpoint, the chat completions URL under the base URL.
	client   *http.Client
	endpoint string
	models   string // the models list's URL, for Probe
	headers  func(ctx context.Context, h http.Header)
	logger   *slog.Logger

	embeddings string // the embeddings URL, for an Embedder

	timeout    time.Duration
	idle       time.Duration // 0: none
	maxRetries int
	backoff    time.Duration // base of the exponential backoff; tests shorten it
	apiKey     string        // only to redact it from provider messages

	// maxCompletionTokens sends llm.Request.MaxTokens as max_completion_tokens, which OpenAI's newer models
	// require, instead of max_tokens, which the compatible servers understand.
	maxCompletionTokens bool
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for opts. It makes no request.
func New(opts *Options) (*Model, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.Model == "" {
		return nil, errors.New("openai: no model name")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: model %q: base url %q is not an http(s) URL", opts.Model, base)
	}

	m := &Model{
		name:                opts.Model,
		info:                llm.Info{Provider: "openai", Name: opts.Model, Address: u.Hostname(), Port: port(u)},
		logger:              opts.Logger,
		timeout:             max(opts.RequestTimeout, 0),
		idle:                opts.IdleTimeout,
		maxRetries:          opts.MaxRetries,
		backoff:             defaultBackoff,
		apiKey:              opts.APIKey,
		maxCompletionTokens: u.Hostname() == "api.openai.com",
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case m.idle == 0:
		m.idle = DefaultIdleTimeout
	case m.idle < 0:
		m.idle = 0
	}
	switch {
	case m.maxRetries == 0:
		m.maxRetries = DefaultMaxRetries
	case m.maxRetries < 0:
		m.maxRetries = 0
	}

	httpClient := opts.HTTPClient
	if httpClient == nil {
		transport := http.DefaultTransport
		if t, ok := transport.(*http.Transport); ok {
			t = t.Clone()
			// All calls go to one host, many at once when runs are concurrent: keep their connections for reuse
			// instead of the default two, which made every other call open a new connection under load.
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
			transport = t
		}
		httpClient = &http.Client{Transport: transport, CheckRedirect: refuseRedirect}
	} else {
		// A client of the caller's refuses redirects too: the key and the conversation stay with the base URL.
		c := *httpClient
		c.CheckRedirect = refuseRedirect
		httpClient = &c
	}
	m.client = httpClient
	m.endpoint = u.JoinPath("chat/completions").String()
	m.models = u.JoinPath("models").String()
	m.embeddings = u.JoinPath("embeddings").String()
	m.headers = opts.Headers
	return m, nil
}

// refuseRedirect is the CheckRedirect of the Model's own client. A chat completions endpoint has no reason to
// redirect a POST, and following one would take the API key, and the conversation in the body, wherever it points
// (net/http keeps Authorization when only the port or the scheme changes). The error names where the redirect led, so
// that base_url can be set to it.
func refuseRedirect(req *http.Request, via []*http.Request) error {
	from := via[len(via)-1].URL
	return fmt.Errorf("the model API at %s://%s redirected to %s://%s%s: redirects are not followed (the API key would go with them); set base_url to where the API is",
		from.Scheme, from.Host, req.URL.Scheme, req.URL.Host, req.URL.Path)
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.name }

// Describe implements llm.Describer.
func (m *Model) Describe() llm.Info { return m.info }

// port is u's port, or the scheme's.
func port(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// Generate sends req as one streamed chat completion and returns the assembled answer. Text deltas reach onDelta
// as they arrive. Failures before the first chunk are retried as Options.MaxRetries says; once a chunk has
// arrived the call is never retried, since deltas may already have been forwarded.
func (m *Model) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if req == nil {
		return nil, fmt.Errorf("openai: model %q: nil request", m.name)
	}
	body, err := m.body(req)
	if err != nil {
		return nil, fmt.Errorf("openai: model %q: %w", m.name, err)
	}

	callCtx := ctx
	if m.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}

	for retry := 0; ; retry++ {
		res, chunks, err := m.attempt(callCtx, body, onDelta)
		if err == nil {
			return res, nil
		}
		if ctxErr := m.contextError(ctx, callCtx); ctxErr != nil {
			return nil, ctxErr
		}
		if chunks > 0 {
			return nil, fmt.Errorf("openai: model %q: stream broken after %d chunks: %w", m.name, chunks, err)
		}
		delay, err := m.nextAttempt(ctx, "model", err, retry)
		if err != nil {
			return nil, err
		}
		if !wait(callCtx, delay) {
			return nil, m.contextError(ctx, callCtx)
		}
	}
}

// contextError returns the error for a call ended by the caller's ctx or by RequestTimeout, or nil.
func (m *Model) contextError(ctx, callCtx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("openai: model %q: %w", m.name, err)
	}
	if err := callCtx.Err(); err != nil {
		return fmt.Errorf("openai: model %q: request timed out after %s: %w", m.name, m.timeout, err)
	}
	return nil
}

// errStreamIdle is the cancellation cause of an attempt whose stream went quiet.
var errStreamIdle = errors.New("stream idle")

// idleError is returned when an attempt timed out waiting for the server. It does not wrap a context error:
// the caller did not cancel anything.
type idleError struct{ idle time.Duration }

func (e *idleError) Error() string { return fmt.Sprintf("stream idle for %s", e.idle) }

// attempt makes one streamed request. It returns the number of chunks received, so that the caller knows
// whether a failure may be retried.
func (m *Model) attempt(ctx context.Context, reqBody []byte, onDelta func(llm.Delta)) (*llm.Response, int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *time.Timer
	if m.idle > 0 {
		idle = time.AfterFunc(m.idle, func() { cancel(errStreamIdle) })
		defer idle.Stop()
	}

	resp, err := m.post(ctx, reqBody)
	if err != nil {
		return nil, 0, m.idleError(ctx, err)
	}
	defer resp.Body.Close()

	acc := newAccumulator()
	events := newEventReader(resp.Body)
	for {
		data, err := events.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, acc.chunks, m.idleError(ctx, err)
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		// Time spent in onDelta is the consumer's, not the server's.
		if idle != nil {
			idle.Stop()
		}
		var c chunk
		if err := decodeChunk(data, &c); err != nil {
			return nil, acc.chunks, err
		}
		acc.add(&c, onDelta)
		if idle != nil {
			idle.Reset(m.idle)
		}
	}
	if acc.chunks == 0 {
		return nil, 0, errors.New("the stream ended without any chunk")
	}
	res := acc.response()
	if acc.finish == "" {
		m.logger.LogAttrs(ctx, slog.LevelWarn, "openai: stream ended without a finish reason",
			slog.String("model", m.name), slog.Int("chunks", acc.chunks))
	}
	if res.Model == "" {
		res.Model = m.name
	}
	return res, acc.chunks, nil
}

// post sends one chat completions request with body and returns the response of a successful status, its event
// stream unread. An error status becomes a statusError, with the provider's message and retry hints.
func (m *Model) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", userAgent)
	if m.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}
	if m.headers != nil {
		m.headers(ctx, req.Header)
	}
	res, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	return m.checkResponse(res)
}

// userAgent names the client to the model API.
const userAgent = "agenthost"

// idleError replaces err with an idleError when the attempt was cancelled because the stream went quiet.
func (m *Model) idleError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStreamIdle) {
		return &idleError{idle: m.idle}
	}
	return err
}

// nextAttempt decides what follows a failed attempt of a call of kind ("model", "embeddings model"): the delay
// before the next attempt, logged, or the error the call ends with.
func (m *Model) nextAttempt(ctx context.Context, kind string, err error, retry int) (time.Duration, error) {
	delay, ok := m.retryDelay(err, retry)
	if !ok {
		suffix := ""
		if retry > 0 {
			suffix = fmt.Sprintf(" (%d attempts)", retry+1)
		}
		return 0, fmt.Errorf("openai: %s %q: %w%s", kind, m.name, err, suffix)
	}
	m.logger.LogAttrs(ctx, slog.LevelWarn, "openai: retrying "+kind+" call",
		slog.String("model", m.name), slog.Int("retry", retry+1), slog.Duration("delay", delay),
		slog.String("err", err.Error()))
	llm.ReportRetry(ctx, llm.Retry{Attempt: retry + 1, Err: err, Delay: delay})
	return delay, nil
}

// wait sleeps for d or until ctx is done; it reports whether d elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
