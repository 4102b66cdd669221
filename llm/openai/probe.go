package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrNotAPI is Probe's error when what answers at the base URL is not an OpenAI-compatible API: a models list that is
// not JSON (a web page), or 404 both for the list and for a chat completion whose error does not name the model.
var ErrNotAPI = errors.New("not an OpenAI-compatible API")

// Probed is what Probe learned of the API.
type Probed struct {
	// Listed says the server listed its models (GET <base>/models); Models are their ids, in its order. When the
	// server has no such list, Listed is false and the model name was proven by a chat completion instead.
	Listed bool
	Models []string
}

// Has reports whether the API serves the model name: it is listed, alone or with Ollama's default tag
// (":latest", which Ollama adds to a name given without one). Without a list it is true: the chat completion
// that proved the name succeeded.
func (p *Probed) Has(name string) bool {
	if !p.Listed {
		return true
	}
	for _, id := range p.Models {
		if id == name || id == name+":latest" {
			return true
		}
	}
	return false
}

// maxModelList bounds how much of the models list is read.
const maxModelList = 4 << 20

// Probe checks that the API can be reached and takes the key: it lists the models (GET <base>/models), or, when the
// server has no list (404 or 405), sends the smallest chat completion the model can answer (one token, not
// streamed), which proves the model name too. It makes one attempt, never retried, bounded only by ctx. An error
// status is reported with its code (see StatusCode) and the provider's message, the key taken out.
func (m *Model) Probe(ctx context.Context) (*Probed, error) {
	res, err := m.send(ctx, http.MethodGet, m.models, nil)
	if err != nil {
		return nil, fmt.Errorf("openai: list models: %w", err)
	}
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed:
		_ = m.statusError(res) // reads and closes the body
	case res.StatusCode >= 400:
		return nil, fmt.Errorf("openai: list models: %w", m.statusError(res))
	default:
		defer res.Body.Close()
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, maxModelList))
		if err != nil {
			return nil, fmt.Errorf("openai: list models: %w", err)
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("openai: list models: %w: the answer is not a list of models (%v)", ErrNotAPI, err)
		}
		p := &Probed{Listed: true}
		for _, d := range list.Data {
			p.Models = append(p.Models, d.ID)
		}
		return p, nil
	}

	if err := m.Answer(ctx); err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusNotFound && !strings.Contains(se.message, m.name) &&
			!strings.Contains(strings.ToLower(se.message), "model") {
			return nil, fmt.Errorf("openai: %w: %s and %s both answered 404 Not Found", ErrNotAPI, m.models, m.endpoint)
		}
		return nil, err
	}
	return &Probed{}, nil
}

// Answer sends the smallest chat completion the model can answer (one token, not streamed), once: it proves the
// key and the model name. An error status is reported as by Probe.
func (m *Model) Answer(ctx context.Context) error {
	body := map[string]any{"model": m.name, "messages": []map[string]string{{"role": "user", "content": "ping"}}}
	if m.maxCompletionTokens {
		body["max_completion_tokens"] = 1
	} else {
		body["max_tokens"] = 1
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	res, err := m.send(ctx, http.MethodPost, m.endpoint, b)
	if err != nil {
		return fmt.Errorf("openai: model %q: %w", m.name, err)
	}
	if res.StatusCode >= 400 {
		return fmt.Errorf("openai: model %q: %w", m.name, m.statusError(res))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	return nil
}

// send makes one request of the probe, with the key and the context's headers.
func (m *Model) send(ctx context.Context, method, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if m.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}
	if m.headers != nil {
		m.headers(ctx, req.Header)
	}
	return m.client.Do(req) // the key is in a header: no error of the client's names it
}
