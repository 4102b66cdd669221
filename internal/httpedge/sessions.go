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

	// What Reclaim set up; reclaim nil when it was not called.
	reclaim      func(ended int)
	ended        int
	quiet, every time.Duration
	peak         int       // the most open at once since reclaim last ran
	armed        bool      // a call of fire is pending
	last         time.Time // when reclaim last ran
	// time.AfterFunc and time.Now, but in tests.
	afterFunc func(time.Duration, func())
	now       func() time.Time
}

type subjectKey struct{ kind, subject string }

// NewSessions returns a Sessions that holds at most max sessions in all; max <= 0 means no cap over all.
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, bySubject: map[subjectKey]int{},
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) }, now: time.Now}
}

// Reclaim makes s call reclaim once at least ended sessions have ended since the most that were open at once, and
// the count is still that low quiet later; then again only after as many more have ended, and never twice within
// every. reclaim runs on a goroutine of its own (a timer's), never on a request's, and is told how many ended.
//
// It is for giving the memory of ended sessions back to the system (debug.FreeOSMemory): the Go runtime does so
// itself only minutes after a server that went idle, since an idle process runs no collection until the runtime
// forces one every 2 minutes, and its scavenger, woken by that collection through the runtime's monitor thread,
// may wait up to another minute (see BENCHMARKS.md). Call it before serving. ended < 1 or a nil reclaim turns it
// off, and a call already scheduled then does nothing: turn it off when serving stops.
func (s *Sessions) Reclaim(ended int, quiet, every time.Duration, reclaim func(ended int)) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ended < 1 || reclaim == nil {
		s.reclaim = nil
		return
	}
	s.reclaim, s.ended, s.quiet, s.every = reclaim, ended, quiet, every
	s.peak = s.open
}

// armLocked schedules fire when enough sessions have ended since the peak and none is pending. s.mu is held.
func (s *Sessions) armLocked() {
	if s.reclaim != nil && !s.armed && s.peak-s.open >= s.ended {
		s.armed = true
		s.afterFunc(s.quiet, s.fire)
	}
}

// fire calls reclaim if the count is still low enough, or waits out the rest of every since the last call.
func (s *Sessions) fire() {
	s.mu.Lock()
	s.armed = false
	if s.reclaim == nil || s.peak-s.open < s.ended {
		// Sessions came back meanwhile: their memory is in use again. The next drop arms it anew.
		s.mu.Unlock()
		return
	}
	if !s.last.IsZero() {
		if wait := s.every - s.now().Sub(s.last); wait > 0 {
			s.armed = true
			s.afterFunc(wait, s.fire)
			s.mu.Unlock()
			return
		}
	}
	ended, reclaim := s.peak-s.open, s.reclaim
	s.peak, s.last = s.open, s.now()
	s.mu.Unlock()
	reclaim(ended)
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
	s.peak = max(s.peak, s.open)
	if subject != "" {
		s.bySubject[key]++
	}
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.open--
		s.armLocked()
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
