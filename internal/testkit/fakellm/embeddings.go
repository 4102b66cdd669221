package fakellm

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// The embeddings endpoint, POST /v1/embeddings (and /embeddings), answers {model, input} with one vector per input
// text, in the order of the input and numbered by "index". A text's vector is the one scripted for it
// (SetEmbedding), or else a hashed bag of its words, normalised: texts that share words are near, the same text
// always gets the same vector, and vectors never depend on the order or the batch texts come in.

// DefaultEmbeddingDims is the length of the vectors of the hashed bag of words, until SetEmbeddingDims.
const DefaultEmbeddingDims = 256

// EmbeddingRequest is one recorded embeddings request.
type EmbeddingRequest struct {
	// Seq numbers embeddings requests from 1 in arrival order (apart from the chat requests' numbers).
	Seq    int
	Path   string
	Header http.Header
	// Body is the raw request body, exactly as received.
	Body  []byte
	Model string
	// Input is the texts to embed: a string input is one text.
	Input []string
}

// EmbeddingFault makes one embeddings request fail instead of answering: FailEmbeddings queues them.
type EmbeddingFault struct {
	// Status is the HTTP error status answered, with an OpenAI-style error body; 0 means 500.
	Status int
	// ErrorMessage is the error body's message; "" means the status text.
	ErrorMessage string
	// RetryAfter, when positive, is sent as Retry-After and Retry-After-Ms.
	RetryAfter time.Duration
	// Latency is how long the server waits before answering, ended early when the client goes away.
	Latency time.Duration
}

// SetEmbedding scripts the vector of text: every later request embedding that exact text gets vec. A nil vec
// removes the script.
func (s *Server) SetEmbedding(text string, vec []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.embeddings == nil {
		s.embeddings = map[string][]float32{}
	}
	if vec == nil {
		delete(s.embeddings, text)
		return
	}
	s.embeddings[text] = append([]float32(nil), vec...)
}

// SetEmbeddingDims sets the length of the hashed bag-of-words vectors; n <= 0 means DefaultEmbeddingDims.
func (s *Server) SetEmbeddingDims(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embeddingDims = n
}

// FailEmbeddings queues faults: each of the next embeddings requests takes the oldest and fails with it.
func (s *Server) FailEmbeddings(faults ...EmbeddingFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embeddingFaults = append(s.embeddingFaults, faults...)
}

// EmbeddingRequests returns every embeddings request received so far, in arrival order. They must not be modified.
func (s *Server) EmbeddingRequests() []*EmbeddingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*EmbeddingRequest(nil), s.embeddingRequests...)
}

// EmbeddedTexts returns how many texts the server answered with vectors, over all its embeddings requests: the
// count a test of a cache asserts on. Failed requests do not count.
func (s *Server) EmbeddedTexts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embedded
}

// Embed returns the vector the server answers for text: the scripted one, or the hashed bag of its words.
func (s *Server) Embed(text string) []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vector(text)
}

// vector is Embed with s.mu held.
func (s *Server) vector(text string) []float32 {
	if v, ok := s.embeddings[text]; ok {
		return append([]float32(nil), v...)
	}
	dims := s.embeddingDims
	if dims <= 0 {
		dims = DefaultEmbeddingDims
	}
	return BagOfWords(text, dims)
}

// BagOfWords returns the hashed bag of words of text in dims dimensions, of length 1: each word (a run of letters
// and digits, lower-cased) adds one to the dimension its FNV-1a hash picks. A text without words is all in the
// dimension of the empty word, so that no vector is zero.
func BagOfWords(text string, dims int) []float32 {
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		words = []string{""}
	}
	for _, w := range words {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// The embeddings response, as OpenAI's API writes it.
type (
	embeddingResponse struct {
		Object string          `json:"object"`
		Data   []embeddingData `json:"data"`
		Model  string          `json:"model"`
		Usage  embeddingUsage  `json:"usage"`
	}
	embeddingData struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	embeddingUsage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
)

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: read body: "+err.Error(), 0)
		return
	}
	req := &EmbeddingRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var decoded struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	decodeErr := json.Unmarshal(body, &decoded)
	if decodeErr == nil {
		req.Model = decoded.Model
		var one string
		if json.Unmarshal(decoded.Input, &one) == nil {
			req.Input = []string{one}
		} else if err := json.Unmarshal(decoded.Input, &req.Input); err != nil {
			decodeErr = fmt.Errorf("input is neither a string nor an array of strings: %w", err)
		}
	}

	s.mu.Lock()
	req.Seq = len(s.embeddingRequests) + 1
	s.embeddingRequests = append(s.embeddingRequests, req)
	var fault *EmbeddingFault
	if decodeErr == nil && len(s.embeddingFaults) > 0 {
		f := s.embeddingFaults[0]
		s.embeddingFaults = s.embeddingFaults[1:]
		fault = &f
	}
	s.mu.Unlock()

	switch {
	case decodeErr != nil:
		writeError(w, http.StatusBadRequest, "fakellm: invalid embeddings request: "+decodeErr.Error(), 0)
		return
	case req.Model == "":
		writeError(w, http.StatusBadRequest, "fakellm: embeddings request without a model", 0)
		return
	case len(req.Input) == 0:
		writeError(w, http.StatusBadRequest, "fakellm: embeddings request without input", 0)
		return
	}
	if fault != nil {
		if fault.Latency > 0 && !s.wait(r.Context(), fault.Latency) {
			return
		}
		status := fault.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		msg := fault.ErrorMessage
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeError(w, status, msg, fault.RetryAfter)
		return
	}

	resp := embeddingResponse{Object: "list", Model: req.Model, Data: make([]embeddingData, len(req.Input))}
	s.mu.Lock()
	for i, text := range req.Input {
		resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: s.vector(text)}
		resp.Usage.PromptTokens += len(strings.Fields(text))
	}
	s.embedded += len(req.Input)
	s.mu.Unlock()
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
