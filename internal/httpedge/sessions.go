package httpedge

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RetryAfter is what a refused session is told to wait before it tries again, in the Retry-After header: sessions
// end when their callers close them or when they have been idle too long, so a place may free up at any time.
const RetryAfter = 10 * time.Second

// CodeServerBusy is the JSON-RPC error code of a session or task refused for a cap (a *LimitError): in the range
// JSON-RPC leaves to servers, and used by neither MCP nor A2A.
const CodeServerBusy = -32000

// Sessions counts what the callers of the listeners sharing it hold open between requests (the sessions of the MCP
// endpoint, the unfinished tasks of the A2A endpoint), against a cap over them all and caps per subject (the
// caller a token names) and kind: one caller cannot take all the places, and all callers together cannot take all
// the memory. A nil *Sessions counts nothing and refuses nothing. It is safe for concurrent use.
type Sessions struct {
	max int

	mu        sync.Mutex
	open      int
	bySubject map[subjectKey]int
}

type subjectKey struct{ kind, subject string }

// NewSessions returns a Sessions that holds at most max sessions in all; max <= 0 means no cap over all.
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, bySubject: map[subjectKey]int{}}
}

// LimitError is why Open refused a session.
type LimitError struct {
	// Status is the HTTP status to answer with: 503 when the server is full, 429 when the subject is.
	Status int
	// Message says which cap was reached, for the caller.
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// WriteHeaders sets Retry-After and writes e's status: what a JSON-RPC body saying why follows.
func (e *LimitError) WriteHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	w.WriteHeader(e.Status)
}

// Open takes a place for one session of kind ("session", "task": the word the messages use) for subject (""
// when callers are not told apart, which perSubject then does not apply to), of which subject may hold at most
// perSubject (<= 0: no cap). It returns the function that gives the place back, which may be called more than
// once, or a *LimitError.
func (s *Sessions) Open(kind, subject string, perSubject int) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	key := subjectKey{kind, subject}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The caller's own cap first: a caller that holds its share is told so, whatever the others hold.
	if subject != "" && perSubject > 0 && s.bySubject[key] >= perSubject {
		return nil, &LimitError{Status: http.StatusTooManyRequests,
			Message: fmt.Sprintf("this caller already holds its limit of %d open %ss; close one or let it finish, then retry", perSubject, kind)}
	}
	if s.max > 0 && s.open >= s.max {
		return nil, &LimitError{Status: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("the server is at its limit of %d open sessions and tasks; retry later", s.max)}
	}
	s.open++
	if subject != "" {
		s.bySubject[key]++
	}
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.open--
		if subject != "" {
			if s.bySubject[key]--; s.bySubject[key] <= 0 {
				delete(s.bySubject, key)
			}
		}
	}), nil
}

// Len reports how many sessions are open, all kinds and subjects together.
func (s *Sessions) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}
