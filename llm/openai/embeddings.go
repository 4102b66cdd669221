package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// EmbeddingBatch is how many texts one embeddings request carries at most: OpenAI takes up to 2,048 inputs a
// request, local servers fewer, and a smaller batch fails and is retried at a smaller cost.
const EmbeddingBatch = 256

// maxEmbeddingsBody bounds the answer to one request: 256 vectors of 3,072 dimensions written as JSON numbers are
// about 16 MiB.
const maxEmbeddingsBody = 64 << 20

// Embedder is an llm.Embedder over the embeddings API (POST <BaseURL>/embeddings) of OpenAI and of the servers that
// copy it. It sends the key and the headers a Model does, and retries as a Model does. It is safe for concurrent use.
type Embedder struct {
	m     *Model
	batch int // texts per request; tests shorten it
}

var _ llm.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder for opts, whose Model names the embedding model. RequestTimeout bounds each
// request, retries included (a call of many texts makes one request per EmbeddingBatch); IdleTimeout fails a request
// whose server sends nothing for that long. It makes no request.
func NewEmbedder(opts *Options) (*Embedder, error) {
	m, err := New(opts)
	if err != nil {
		return nil, err
	}
	return &Embedder{m: m, batch: EmbeddingBatch}, nil
}

// Model implements llm.Embedder.
func (e *Embedder) Model() string { return e.m.name }

// Embed implements llm.Embedder: it sends texts in batches of EmbeddingBatch, one after the other, and returns one
// vector per text, in order. Every vector has the length of the first.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		batch := texts[start:min(start+e.batch, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			if len(texts) > len(batch) {
				err = fmt.Errorf("%w (texts %d to %d of %d)", err, start+1, start+len(batch), len(texts))
			}
			return nil, err
		}
		for _, v := range vecs {
			dims := len(vecs[0])
			if len(out) > 0 {
				dims = len(out[0])
			}
			if len(v) != dims {
				return nil, fmt.Errorf("openai: embeddings model %q: the API answered vectors of different lengths (%d and %d)", e.m.name, dims, len(v))
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// embedBatch makes one request, retried as Generate retries.
func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	m := e.m
	body, err := json.Marshal(struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}{m.name, texts})
	if err != nil {
		return nil, fmt.Errorf("openai: embeddings model %q: %w", m.name, err)
	}
	callCtx := ctx
	if m.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	for retry := 0; ; retry++ {
		vecs, err := e.attempt(callCtx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		if ctxErr := m.contextError(ctx, callCtx); ctxErr != nil {
			return nil, fmt.Errorf("openai: embeddings: %w", ctxErr)
		}
		delay, err := m.nextAttempt(ctx, "embeddings model", err, retry)
		if err != nil {
			return nil, err
		}
		if !wait(callCtx, delay) {
			return nil, fmt.Errorf("openai: embeddings: %w", m.contextError(ctx, callCtx))
		}
	}
}

// attempt makes one request for n texts and returns their vectors, ordered by the index the server gives each.
func (e *Embedder) attempt(ctx context.Context, body []byte, n int) ([][]float32, error) {
	m := e.m
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *time.Timer
	if m.idle > 0 {
		idle = time.AfterFunc(m.idle, func() { cancel(errStreamIdle) })
		defer idle.Stop()
	}
	res, err := m.send(ctx, http.MethodPost, m.embeddings, body)
	if err != nil {
		return nil, m.idleError(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		return nil, m.statusError(res)
	}
	var r io.Reader = io.LimitReader(res.Body, maxEmbeddingsBody)
	if idle != nil {
		r = &idleReader{r: r, timer: idle, idle: m.idle}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, m.idleError(ctx, err)
	}
	var answer struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, fmt.Errorf("the answer is not a list of embeddings: %w", err)
	}
	if len(answer.Data) != n {
		return nil, fmt.Errorf("the API answered %d vectors for %d texts", len(answer.Data), n)
	}
	vecs := make([][]float32, n)
	for i, d := range answer.Data {
		idx := i // a server that numbers nothing answers in order
		if d.Index != nil {
			idx = *d.Index
		}
		switch {
		case idx < 0 || idx >= n:
			return nil, fmt.Errorf("the API answered a vector of index %d for %d texts", idx, n)
		case vecs[idx] != nil:
			return nil, fmt.Errorf("the API answered two vectors of index %d", idx)
		case len(d.Embedding) == 0:
			return nil, fmt.Errorf("the API answered an empty vector for text %d", idx)
		}
		vecs[idx] = d.Embedding
	}
	return vecs, nil
}

// idleReader resets timer to idle whenever a read brings data, so that only a server that goes quiet times out, not
// one that sends a long answer slowly.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	return n, err
}
