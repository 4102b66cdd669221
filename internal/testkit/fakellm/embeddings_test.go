package fakellm_test

import (
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

func cosine(a []float64, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += a[i] * float64(b[i])
	}
	return dot
}

func embed(t *testing.T, client openai.Client, texts ...string) *openai.CreateEmbeddingResponse {
	t.Helper()
	res, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "fake-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
	})
	if err != nil {
		t.Fatalf("Embeddings.New: %v", err)
	}
	return res
}

// The embeddings endpoint answers one unit vector per text, in order; texts sharing words are nearer than texts
// that share none, and a text's vector is the same whatever the batch.
func TestEmbeddings(t *testing.T) {
	s, client := start(t)
	texts := []string{"read a file from disk", "read the file contents", "send an email message"}
	res := embed(t, client, texts...)
	if len(res.Data) != 3 || res.Model != "fake-embed" {
		t.Fatalf("got %d vectors of model %q", len(res.Data), res.Model)
	}
	for i, d := range res.Data {
		if d.Index != int64(i) || len(d.Embedding) != fakellm.DefaultEmbeddingDims {
			t.Errorf("vector %d: index %d, %d dims", i, d.Index, len(d.Embedding))
		}
		var norm float64
		for _, x := range d.Embedding {
			norm += x * x
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("vector %d has norm² %v, want 1", i, norm)
		}
		if got := s.Embed(texts[i]); len(got) != len(d.Embedding) || math.Abs(float64(got[0])-d.Embedding[0]) > 1e-6 {
			t.Errorf("Embed(%q) differs from the answer", texts[i])
		}
	}
	near := cosine(res.Data[0].Embedding, s.Embed(texts[1]))
	far := cosine(res.Data[0].Embedding, s.Embed(texts[2]))
	if !(near > far) || near <= 0.3 {
		t.Errorf("cos(file, file) = %v, cos(file, email) = %v: want texts sharing words nearer", near, far)
	}
	again := embed(t, client, texts[2])
	if cosine(again.Data[0].Embedding, s.Embed(texts[2])) < 0.9999 {
		t.Errorf("a text alone got another vector than in a batch")
	}

	reqs := s.EmbeddingRequests()
	if len(reqs) != 2 || !reflect.DeepEqual(reqs[0].Input, texts) || reqs[0].Model != "fake-embed" || reqs[1].Seq != 2 ||
		reqs[0].Path != "/v1/embeddings" || reqs[0].Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("recorded requests: %+v", reqs)
	}
	if s.EmbeddedTexts() != 4 {
		t.Errorf("EmbeddedTexts() = %d, want 4", s.EmbeddedTexts())
	}
	if s.RequestCount() != 0 {
		t.Errorf("embeddings were recorded as %d chat requests", s.RequestCount())
	}
}

func TestEmbeddingsScripted(t *testing.T) {
	s, client := start(t)
	s.SetEmbedding("north", []float32{0, 1, 0})
	s.SetEmbeddingDims(3)
	res := embed(t, client, "north", "anything else")
	if got := res.Data[0].Embedding; !reflect.DeepEqual(got, []float64{0, 1, 0}) {
		t.Errorf("scripted vector = %v", got)
	}
	if len(res.Data[1].Embedding) != 3 {
		t.Errorf("SetEmbeddingDims(3): got %d dims", len(res.Data[1].Embedding))
	}
	s.SetEmbedding("north", nil)
	if got := s.Embed("north"); reflect.DeepEqual(got, []float32{0, 1, 0}) {
		t.Errorf("the script was not removed")
	}
	if got := fakellm.BagOfWords("", 8); len(got) != 8 || reflect.DeepEqual(got, make([]float32, 8)) {
		t.Errorf("BagOfWords of no words = %v, want a unit vector", got)
	}
}

func TestEmbeddingsFaults(t *testing.T) {
	s, client := start(t)
	s.FailEmbeddings(fakellm.EmbeddingFault{Status: http.StatusTooManyRequests, ErrorMessage: "slow down"})
	_, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "fake-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Message != "slow down" {
		t.Fatalf("err = %v, want the scripted 429", err)
	}
	if s.EmbeddedTexts() != 0 {
		t.Errorf("a failed request counted %d texts", s.EmbeddedTexts())
	}
	res := embed(t, client, "x")
	if len(res.Data) != 1 || s.EmbeddedTexts() != 1 {
		t.Errorf("after the fault: %d vectors, EmbeddedTexts %d", len(res.Data), s.EmbeddedTexts())
	}
	if reqs := s.EmbeddingRequests(); len(reqs) != 2 || !reflect.DeepEqual(reqs[0].Input, []string{"x"}) {
		t.Errorf("a string input was recorded as %+v", reqs)
	}

	resp, err := http.Post(s.URL+"/embeddings", "application/json", strings.NewReader(`{"model":"m","input":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("input of numbers: status %d, want 400", resp.StatusCode)
	}
}
