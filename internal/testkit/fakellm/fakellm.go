// Package fakellm is a scripted OpenAI-compatible Chat Completions server for tests and benchmarks, with an
// embeddings endpoint (see embeddings.go).
//
// It speaks the real wire format of POST /v1/chat/completions (and /chat/completions): JSON responses, or
// server-sent events when the request says "stream": true, with text split into many deltas, tool-call arguments
// split into fragments, parallel calls told apart by index, and a usage chunk when the request asks for one. Each
// answer is a scripted Turn, taken from a FIFO queue or computed by a responder; a Turn can also inject faults
// (error statuses, latency, a stream that hangs or a connection that is cut). Every request is recorded, raw and
// decoded, so tests can check exactly what a client sent.
//
// It owns nothing but the fake: it imports the standard library and, of this project, only llm (for the tags
// around tool output, which it takes off).
package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// DefaultChunkSize is how many characters (runes) of text or of tool-call arguments one streamed delta carries
// when Turn.ChunkSize is 0.
const DefaultChunkSize = 3

// DefaultUsage returns the usage reported for a Turn whose Usage is nil: 10 prompt tokens, 20 completion tokens,
// 30 in total.
func DefaultUsage() Usage { return Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30} }

// Turn is one scripted answer.
//
// The zero Turn answers with an empty assistant message and finish reason "stop".
type Turn struct {
	// Text is the assistant's text. When streamed it is split into deltas of ChunkSize runes.
	Text string
	// ToolCalls are the calls the assistant makes, in index order.
	ToolCalls []ToolCall
	// InterleaveCalls streams the argument fragments of parallel calls round-robin instead of one call after the
	// other, which OpenAI does not do but a client must still reassemble by index.
	InterleaveCalls bool
	// FinishReason is reported as it is; "" means "tool_calls" when there are ToolCalls, otherwise "stop".
	FinishReason string
	// Usage is reported in the response (streamed only when the request set stream_options.include_usage);
	// nil means DefaultUsage().
	Usage *Usage
	// OmitUsage leaves usage out entirely, as some servers do.
	OmitUsage bool
	// Model is the model name reported in the response; "" echoes the request's model.
	Model string

	// Status, when neither 0 nor 200, makes the server answer with this HTTP status and an OpenAI-style error
	// body instead of a completion.
	Status int
	// ErrorMessage is the error body's message; "" means the status text.
	ErrorMessage string
	// RetryAfter, when positive, is sent as Retry-After (whole seconds, rounded up) and Retry-After-Ms.
	RetryAfter time.Duration

	// Latency is how long the server waits before answering at all (headers included). The wait ends early when
	// the client goes away or the server is closed.
	Latency time.Duration
	// HangAfter, when not 0, makes the stream stop after that many data chunks (Immediately: right after the
	// headers; a count past the last chunk: before [DONE]) and hang until the client goes away or the server is
	// closed, which then cuts the connection. A non-streamed answer hangs before its body.
	HangAfter int
	// CutAfter, when not 0, closes the connection abruptly after that many data chunks (Immediately: right after
	// the headers), without the [DONE] marker or the end of the chunked body. A non-streamed answer is cut
	// before its body. HangAfter wins when both are set.
	CutAfter int
	// ChunkSize is how many runes one streamed delta carries; 0 means DefaultChunkSize.
	ChunkSize int
	// ChunkDelay is how long a streamed answer waits before each data chunk after the first, so that a client sees
	// it arrive in steps. The wait ends early, and the stream with it, when the client goes away or the server is
	// closed.
	ChunkDelay time.Duration
}

// Immediately, as Turn.HangAfter or Turn.CutAfter, means before the first data chunk.
const Immediately = -1

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call id; "" means a generated one: "call_1", "call_2" ... numbered across the server's life in
	// the order turns are served. Set it when concurrent requests need stable ids.
	ID   string
	Name string
	// Arguments is sent as it is, so invalid JSON can be scripted too.
	Arguments string
}

// Usage is the token usage a response reports.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client, ending in /v1 (for example http://127.0.0.1:40000/v1).
	URL string

	srv       *httptest.Server
	done      chan struct{} // closed by Close: unblocks latency waits and hanging streams
	closeOnce sync.Once

	mu         sync.Mutex
	queue      []Turn
	responder  func(*Request) Turn
	requests   []*Request
	unscripted int
	models     []string // listed by GET /models when listModels
	listModels bool
	served     int // responses started, for completion ids
	callSeq    int // generated tool-call ids

	// The embeddings endpoint's script and record (embeddings.go).
	embeddings        map[string][]float32 // scripted vectors by text
	embeddingDims     int
	embeddingFaults   []EmbeddingFault
	embeddingRequests []*EmbeddingRequest
	embedded          int // texts answered with vectors
}

// New starts a fake server on a loopback port. Call Close when done (t.Cleanup(s.Close)).
func New() *Server {
	s := &Server{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleCompletions)
	mux.HandleFunc("POST /chat/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("POST /embeddings", s.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fakellm: no route for %s %s", r.Method, r.URL.Path), 0)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close unblocks every waiting or hanging response, cuts every connection, and shuts the server down, waiting
// for its handlers to return. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		// Also frees a handler blocked writing to a client that stopped reading.
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue appends turns to the script. Each request takes the oldest queued turn.
func (s *Server) Enqueue(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, turns...)
}

// SetResponder sets a function that answers requests when the queue is empty (nil removes it). It is called
// concurrently for concurrent requests, with the recorded request, which it must not modify.
func (s *Server) SetResponder(f func(*Request) Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// SetModels makes GET /models (and /v1/models) list ids, as OpenAI's API does; until it is called, the fake has no
// such endpoint (404), like a server that serves only chat completions. Listing is not recorded as a request.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models, s.listModels = append([]string(nil), ids...), true
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ids, listed := s.models, s.listModels
	s.mu.Unlock()
	if !listed {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fakellm: no route for %s %s", r.Method, r.URL.Path), 0)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: "fakellm"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// Requests returns every chat-completion request received so far, in arrival order. The requests must not be
// modified.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// RequestCount returns how many chat-completion requests were received.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// LastRequest returns the most recent request, or nil if there was none.
func (s *Server) LastRequest() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// Pending returns how many queued turns were not used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Unscripted returns how many requests found neither a queued turn nor a responder and were answered with a
// 500 error. A test that expects its script to cover every request asserts that this is 0.
func (s *Server) Unscripted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unscripted
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: read body: "+err.Error(), 0)
		return
	}
	req, decodeErr := decodeRequest(r, body)

	s.mu.Lock()
	req.Seq = len(s.requests) + 1
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if decodeErr != nil {
		writeError(w, http.StatusBadRequest, "fakellm: invalid request body: "+decodeErr.Error(), 0)
		return
	}

	turn, ok := s.nextTurn(req)
	if !ok {
		w.Header().Set("X-Should-Retry", "false")
		writeError(w, http.StatusInternalServerError, fmt.Sprintf(
			"fakellm: script ran out: request %d found no queued turn and no responder", req.Seq), 0)
		return
	}

	if turn.Latency > 0 && !s.wait(r.Context(), turn.Latency) {
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		msg := turn.ErrorMessage
		if msg == "" {
			msg = http.StatusText(turn.Status)
		}
		writeError(w, turn.Status, msg, turn.RetryAfter)
		return
	}

	resp := s.prepare(req, turn)
	if req.Stream {
		s.stream(w, r, req, turn, resp)
	} else {
		s.complete(w, r, turn, resp)
	}
}

// nextTurn takes the next queued turn, or asks the responder.
func (s *Server) nextTurn(req *Request) (Turn, bool) {
	s.mu.Lock()
	if len(s.queue) > 0 {
		t := s.queue[0]
		s.queue[0] = Turn{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return t, true
	}
	responder := s.responder
	if responder == nil {
		s.unscripted++
	}
	s.mu.Unlock()
	if responder == nil {
		return Turn{}, false
	}
	return responder(req), true
}

// prepared is what a turn resolves to once ids and defaults are filled in.
type prepared struct {
	id           string
	model        string
	calls        []ToolCall
	finishReason string
	usage        *Usage // nil: omitted
}

func (s *Server) prepare(req *Request, t Turn) prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served++
	p := prepared{
		id:           fmt.Sprintf("chatcmpl-%d", s.served),
		model:        t.Model,
		finishReason: t.FinishReason,
	}
	if p.model == "" {
		p.model = req.Model
	}
	p.calls = make([]ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			s.callSeq++
			c.ID = fmt.Sprintf("call_%d", s.callSeq)
		}
		p.calls[i] = c
	}
	if p.finishReason == "" {
		p.finishReason = "stop"
		if len(p.calls) > 0 {
			p.finishReason = "tool_calls"
		}
	}
	if !t.OmitUsage {
		u := DefaultUsage()
		if t.Usage != nil {
			u = *t.Usage
		}
		p.usage = &u
	}
	return p
}

// wait sleeps for d unless the client goes away or the server closes first; it reports whether d elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// hang blocks until the client goes away or the server closes, then cuts the connection so the client never
// sees a clean end.
func (s *Server) hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
	cut(w)
}

// cut closes the connection under a response abruptly.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): make net/http reset the stream instead.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// apiError is the OpenAI error body.
type apiError struct {
	Error apiErrorDetail `json:"error"`
}

type apiErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	typ, code := "server_error", ""
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		typ, code = "invalid_request_error", "not_found"
	case status < 500:
		typ = "invalid_request_error"
	}
	body := apiError{Error: apiErrorDetail{Message: msg, Type: typ}}
	if code != "" {
		body.Error.Code = &code
	}
	if retryAfter > 0 {
		secs := (retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", fmt.Sprint(int64(secs)))
		w.Header().Set("Retry-After-Ms", fmt.Sprint(retryAfter.Milliseconds()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
