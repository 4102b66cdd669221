package openai

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

func TestProbeListsModels(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	s.SetModels("other-model", "test-model:latest")
	p, err := newModel(t, s, nil).Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Listed || len(p.Models) != 2 || !p.Has("test-model") || p.Has("missing-model") {
		t.Errorf("Probe = %+v, want both models listed, test-model found by its :latest tag, missing-model not", p)
	}
	if n := s.RequestCount(); n != 0 {
		t.Errorf("listing the models sent %d chat requests, want none", n)
	}
}

// A server without a models list is asked for the smallest chat completion instead, which proves the model name.
func TestProbeFallsBackToOneToken(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	s.Enqueue(fakellm.Turn{Text: "p"})
	p, err := newModel(t, s, nil).Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if p.Listed || !p.Has("test-model") {
		t.Errorf("Probe = %+v, want no list and the model proven", p)
	}
	req := s.LastRequest()
	if req == nil || s.RequestCount() != 1 || req.Model != "test-model" || req.Stream || req.MaxTokens == nil || *req.MaxTokens != 1 {
		t.Fatalf("requests %d, last %+v: want one unstreamed request of test-model with max_tokens 1", s.RequestCount(), req)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}

	// The model the server does not know: its 404 is the chat completion's, with the provider's message.
	s.Enqueue(fakellm.Turn{Status: http.StatusNotFound, ErrorMessage: "model nope not found"})
	_, err = newModel(t, s, func(o *Options) { o.Model = "nope" }).Probe(t.Context())
	if StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), "model nope not found") {
		t.Errorf("Probe of an unknown model = %v (status %d)", err, StatusCode(err))
	}
}

func TestProbeFailures(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + r.Header.Get("Authorization")[len("Bearer "):] + `"}}`))
	}))
	t.Cleanup(unauthorized.Close)
	m, err := New(&Options{BaseURL: unauthorized.URL + "/v1", APIKey: testKey, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Probe(t.Context())
	if StatusCode(err) != http.StatusUnauthorized || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("Probe against a 401 = %v (status %d)", err, StatusCode(err))
	}
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Errorf("the error shows the key: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	m, err = New(&Options{BaseURL: "http://" + closed + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Probe(t.Context())
	if !errors.Is(err, syscall.ECONNREFUSED) || StatusCode(err) != 0 {
		t.Errorf("Probe of a closed port = %v, want connection refused", err)
	}
}
