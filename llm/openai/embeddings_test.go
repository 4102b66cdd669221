package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// newEmbedder returns an Embedder against baseURL with short backoffs and batches of batch texts.
func newEmbedder(t *testing.T, baseURL string, batch int, edit func(*Options)) *Embedder {
	t.Helper()
	opts := &Options{BaseURL: baseURL, APIKey: testKey, Model: "embed-model"}
	if edit != nil {
		edit(opts)
	}
	e, err := NewEmbedder(opts)
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	e.m.backoff = time.Millisecond
	if batch > 0 {
		e.batch = batch
	}
	return e
}

// Texts go in batches, with the key and the context's headers, and come back one vector per text, in order.
func TestEmbed(t *testing.T) {
	s := startServer(t)
	s.SetEmbedding("scripted", []float32{0.5, -0.25, 1})
	s.SetEmbeddingDims(3)
	type traceKey struct{}
	e := newEmbedder(t, s.URL, 2, func(o *Options) {
		o.Headers = func(ctx context.Context, h http.Header) {
			if v, ok := ctx.Value(traceKey{}).(string); ok {
				h.Set("Traceparent", v)
			}
		}
	})
	if e.Model() != "embed-model" {
		t.Errorf("Model() = %q", e.Model())
	}
	texts := []string{"alpha", "scripted", "gamma delta", "epsilon", "zeta"}
	ctx := context.WithValue(t.Context(), traceKey{}, "00-trace-01")
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, text := range texts {
		if !reflect.DeepEqual(vecs[i], s.Embed(text)) {
			t.Errorf("vector %d = %v, want the server's for %q: %v", i, vecs[i], text, s.Embed(text))
		}
	}
	reqs := s.EmbeddingRequests()
	var batches [][]string
	for _, r := range reqs {
		batches = append(batches, r.Input)
		if r.Model != "embed-model" || r.Header.Get("Authorization") != "Bearer "+testKey ||
			r.Header.Get("Traceparent") != "00-trace-01" || r.Header.Get("User-Agent") != userAgent || r.Path != "/v1/embeddings" {
			t.Errorf("request %d: model %q, path %q, headers %v", r.Seq, r.Model, r.Path, r.Header)
		}
	}
	if want := [][]string{{"alpha", "scripted"}, {"gamma delta", "epsilon"}, {"zeta"}}; !reflect.DeepEqual(batches, want) {
		t.Errorf("batches = %q, want %q", batches, want)
	}
	if vecs, err := e.Embed(t.Context(), nil); err != nil || len(vecs) != 0 || len(s.EmbeddingRequests()) != 3 {
		t.Errorf("Embed of no texts = %v, %v after %d requests; want nothing and no request", vecs, err, len(s.EmbeddingRequests()))
	}
	if newEmbedder(t, s.URL, 0, nil).batch != EmbeddingBatch {
		t.Errorf("the default batch is not EmbeddingBatch")
	}
}

func TestEmbedRetries(t *testing.T) {
	tests := []struct {
		name         string
		maxRetries   int
		faults       []fakellm.EmbeddingFault
		wantRequests int
		wantErr      string // "" for success
	}{
		{"429 then success", 0, []fakellm.EmbeddingFault{{Status: 429, RetryAfter: time.Millisecond}}, 2, ""},
		{"503 twice then success", 0, []fakellm.EmbeddingFault{{Status: 503}, {Status: 503}}, 3, ""},
		{"retries exhausted", 1, []fakellm.EmbeddingFault{{Status: 500, ErrorMessage: "boom"}, {Status: 500, ErrorMessage: "boom"}}, 2,
			`openai: embeddings model "embed-model": 500 Internal Server Error: boom (2 attempts)`},
		{"400 is not retried", 0, []fakellm.EmbeddingFault{{Status: 400, ErrorMessage: "input too long"}}, 1,
			`openai: embeddings model "embed-model": 400 Bad Request: input too long`},
		{"404 names the provider's message", 0, []fakellm.EmbeddingFault{{Status: 404, ErrorMessage: "model embed-model not found"}}, 1,
			"404 Not Found: model embed-model not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t)
			s.FailEmbeddings(tt.faults...)
			e := newEmbedder(t, s.URL, 0, func(o *Options) { o.MaxRetries = tt.maxRetries })
			vecs, err := e.Embed(t.Context(), []string{"one", "two"})
			if tt.wantErr == "" {
				if err != nil || len(vecs) != 2 {
					t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if got := len(s.EmbeddingRequests()); got != tt.wantRequests {
				t.Errorf("requests = %d, want %d", got, tt.wantRequests)
			}
		})
	}
}

// The key never reaches an error or a log line, even when the provider repeats it.
func TestEmbedSecrets(t *testing.T) {
	s := startServer(t)
	s.FailEmbeddings(
		fakellm.EmbeddingFault{Status: 500, ErrorMessage: "upstream rejected key " + testKey},
		fakellm.EmbeddingFault{Status: 401, ErrorMessage: "Incorrect API key provided: " + testKey},
	)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, err := newEmbedder(t, s.URL, 0, func(o *Options) { o.Logger = logger }).Embed(t.Context(), []string{"x"})
	if err == nil || StatusCode(err) != http.StatusUnauthorized {
		t.Fatalf("Embed against a 401: err = %v", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(logs.String(), testKey) {
		t.Errorf("the key leaked: err %v, logs %s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "retrying embeddings model call") {
		t.Errorf("the retry was not logged: %s", logs.String())
	}
}

// answering serves POST /v1/embeddings with body, whatever the request.
func answering(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// The vectors are put in the order of their "index", whatever order they come in; a server that numbers none is
// taken in order.
func TestEmbedOrdersByIndex(t *testing.T) {
	for name, body := range map[string]string{
		"reversed":   `{"data":[{"index":2,"embedding":[3,3]},{"index":0,"embedding":[1,1]},{"index":1,"embedding":[2,2]}]}`,
		"unnumbered": `{"data":[{"embedding":[1,1]},{"embedding":[2,2]},{"embedding":[3,3]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			vecs, err := newEmbedder(t, answering(t, body), 0, nil).Embed(t.Context(), []string{"a", "b", "c"})
			if want := [][]float32{{1, 1}, {2, 2}, {3, 3}}; err != nil || !reflect.DeepEqual(vecs, want) {
				t.Errorf("Embed = %v, %v; want %v", vecs, err, want)
			}
		})
	}
}

// An answer that does not fit the texts fails, saying how, and is not retried.
func TestEmbedBadAnswers(t *testing.T) {
	tests := []struct{ name, body, wantErr string }{
		{"too few", `{"data":[{"index":0,"embedding":[1]}]}`, "the API answered 1 vectors for 2 texts"},
		{"too many", `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]},{"index":2,"embedding":[1]}]}`,
			"the API answered 3 vectors for 2 texts"},
		{"index out of range", `{"data":[{"index":0,"embedding":[1]},{"index":5,"embedding":[1]}]}`, "a vector of index 5 for 2 texts"},
		{"index twice", `{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[1]}]}`, "two vectors of index 1"},
		{"empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`, "an empty vector for text 0"},
		{"lengths differ", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`, "vectors of different lengths (2 and 1)"},
		{"not JSON", `<html>hello</html>`, "the answer is not a list of embeddings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests++
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			_, err := newEmbedder(t, srv.URL, 0, nil).Embed(t.Context(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), `openai: embeddings model "embed-model": `) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if requests != 1 {
				t.Errorf("%d requests, want 1", requests)
			}
		})
	}
}

// A later batch whose vectors are longer than the first batch's fails: vectors of one call must be comparable.
func TestEmbedLengthsAcrossBatches(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		vec := []float32{1}
		if n > 1 {
			vec = []float32{1, 2}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []any{map[string]any{"index": 0, "embedding": vec}}})
	}))
	t.Cleanup(srv.Close)
	_, err := newEmbedder(t, srv.URL, 1, nil).Embed(t.Context(), []string{"a", "b"})
	if err == nil || !strings.Contains(err.Error(), "different lengths (1 and 2)") {
		t.Errorf("error = %v, want vectors of different lengths", err)
	}
}

func TestEmbedCancel(t *testing.T) {
	t.Run("while the server waits", func(t *testing.T) {
		s := startServer(t)
		s.FailEmbeddings(fakellm.EmbeddingFault{Latency: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			for len(s.EmbeddingRequests()) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, err := newEmbedder(t, s.URL, 0, nil).Embed(ctx, []string{"x"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled in the chain", err)
		}
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		s := startServer(t)
		s.FailEmbeddings(fakellm.EmbeddingFault{Status: 429, RetryAfter: 50 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		e := newEmbedder(t, s.URL, 0, func(o *Options) { o.Logger = slog.New(cancelOnLog{cancel}) })
		_, err := e.Embed(ctx, []string{"x"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled in the chain", err)
		}
		if n := len(s.EmbeddingRequests()); n != 1 {
			t.Errorf("requests = %d, want 1", n)
		}
	})
	t.Run("a server gone quiet", func(t *testing.T) {
		s := startServer(t)
		s.FailEmbeddings(fakellm.EmbeddingFault{Latency: time.Hour})
		e := newEmbedder(t, s.URL, 0, func(o *Options) { o.IdleTimeout = 20 * time.Millisecond; o.MaxRetries = -1 })
		_, err := e.Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "stream idle for 20ms") {
			t.Fatalf("error = %v, want the idle timeout", err)
		}
	})
}

// cancelOnLog is a slog handler that cancels a context at the first record: the retry's warning, logged before the
// wait.
type cancelOnLog struct{ cancel context.CancelFunc }

func (h cancelOnLog) Enabled(context.Context, slog.Level) bool  { return true }
func (h cancelOnLog) Handle(context.Context, slog.Record) error { h.cancel(); return nil }
func (h cancelOnLog) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h cancelOnLog) WithGroup(string) slog.Handler             { return h }
