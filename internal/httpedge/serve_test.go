package httpedge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve serves h on a loopback listener with opts until the test ends, and returns its address.
func serve(t *testing.T, h http.Handler, opts *ServeOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// closedWithin reports whether the server closes conn within wait: a read ends in EOF or a reset, not in the
// test's own deadline. What the server wrote before closing is returned.
func closedWithin(t *testing.T, conn net.Conn, wait time.Duration) (string, bool) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(got), false
	}
	return string(got), true
}

// TestServeCutsAHalfSentBody: a request whose headers came but whose body never ends has its connection closed
// once the body's read deadline has passed, whatever the handler does with the error.
func TestServeCutsAHalfSentBody(t *testing.T) {
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	addr := serve(t, h, &ServeOptions{ReadBodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"half\":"); err != nil {
		t.Fatal(err)
	}
	if _, closed := closedWithin(t, conn, 30*time.Second); !closed {
		t.Fatal("the connection is still open after 30s; want it closed once the body's read deadline passed")
	}
	var ne net.Error
	if err := <-readErr; !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the handler read %v; want a timeout", err)
	}
}

// TestServeKeepsStreamsPastTheBodyDeadline: once the body has been read, the response may stream for longer than
// the body's deadline, and the request is not cancelled.
func TestServeKeepsStreamsPastTheBodyDeadline(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Errorf("read body: %v", err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			// Past the body's deadline after the second event; a cancelled request would end the stream early.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(150 * time.Millisecond):
			}
			_, _ = io.WriteString(w, "data: "+string(rune('0'+i))+"\n\n")
			http.NewResponseController(w).Flush()
		}
		_, _ = io.WriteString(w, "data: end\n\n")
	})
	addr := serve(t, h, &ServeOptions{ReadBodyTimeout: 200 * time.Millisecond})
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "data: 3") || !strings.Contains(string(body), "data: end") {
		t.Errorf("stream %q; want all four events and the end", body)
	}
}

// TestServeClosesIdleConnections: a kept-alive connection that sends no next request is closed after IdleTimeout.
func TestServeClosesIdleConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr := serve(t, h, &ServeOptions{IdleTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil || resp.Close {
		t.Fatalf("first response: %v, close %v; want a kept-alive connection", err, resp.Close)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the server wrote more than its response")
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the idle connection is still open after 30s; want it closed after IdleTimeout")
	}
}

// TestServeCutsSlowHeaders: headers that never end are cut after ReadHeaderTimeout.
func TestServeCutsSlowHeaders(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the handler was called") })
	addr := serve(t, h, &ServeOptions{ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: local"); err != nil {
		t.Fatal(err)
	}
	// 5s: generous for 200ms, and short of the 10s default, so the option is seen to apply.
	if _, closed := closedWithin(t, conn, 5*time.Second); !closed {
		t.Fatal("the connection is still open after 5s; want it closed after ReadHeaderTimeout")
	}
}

func TestSessions(t *testing.T) {
	s := NewSessions(3)
	a1, err := s.Open("session", "alice", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open("session", "alice", 2); err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, err := s.Open("session", "alice", 2); !errors.As(err, &le) || le.Status != http.StatusTooManyRequests || !strings.Contains(le.Message, "limit of 2 open sessions") {
		t.Fatalf("alice's third session: %v; want 429", err)
	}
	// Another kind has its own cap per subject, but the cap over all is shared.
	if _, err := s.Open("task", "alice", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open("session", "bob", 2); !errors.As(err, &le) || le.Status != http.StatusServiceUnavailable || !strings.Contains(le.Message, "limit of 3") {
		t.Fatalf("a fourth session: %v; want 503", err)
	}
	a1()
	a1() // twice gives back one place
	if s.Len() != 2 {
		t.Fatalf("Len %d after one release; want 2", s.Len())
	}
	if _, err := s.Open("session", "bob", 2); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := s.Open("session", "", 0); !errors.As(err, &le) || le.Status != http.StatusServiceUnavailable {
		t.Fatalf("full again: %v; want 503", err)
	}
	var none *Sessions
	if release, err := none.Open("session", "x", 1); err != nil || release == nil {
		t.Fatalf("nil Sessions: %v", err)
	}
}

// fakeTimers stands in for time.AfterFunc and time.Now in a Sessions: a test fires the pending timers itself.
type fakeTimers struct {
	now     time.Time
	pending []func()
	waits   []time.Duration
}

func (f *fakeTimers) install(s *Sessions) {
	f.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.afterFunc = func(d time.Duration, fn func()) {
		f.pending = append(f.pending, fn)
		f.waits = append(f.waits, d)
	}
	s.now = func() time.Time { return f.now }
}

// fire runs the pending timers, as their time had come.
func (f *fakeTimers) fire() {
	fns := f.pending
	f.pending = nil
	for _, fn := range fns {
		fn()
	}
}

// TestSessionsReclaim: the reclaim function runs once enough sessions have ended since the peak and the count
// stayed low until the timer fired; not when they came back meanwhile, not for fewer, and not twice within every.
func TestSessionsReclaim(t *testing.T) {
	s := NewSessions(0)
	var timers fakeTimers
	timers.install(s)
	var calls []int
	s.Reclaim(3, 10*time.Second, time.Minute, func(ended int) { calls = append(calls, ended) })
	openN := func(n int) []func() {
		var releases []func()
		for range n {
			release, err := s.Open("session", "", 0)
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, release)
		}
		return releases
	}
	sessions := openN(5)
	sessions[0]()
	sessions[1]()
	if len(timers.pending) != 0 {
		t.Fatalf("a reclaim is pending after 2 of 5 sessions ended; want none before 3")
	}
	sessions[2]()
	sessions[3]()
	if len(timers.pending) != 1 || timers.waits[0] != 10*time.Second {
		t.Fatalf("pending reclaims %d (waits %v) after 4 of 5 ended; want one, after 10s", len(timers.pending), timers.waits)
	}
	timers.now = timers.now.Add(10 * time.Second)
	timers.fire()
	if len(calls) != 1 || calls[0] != 4 {
		t.Fatalf("reclaim calls %v; want one, for 4 ended", calls)
	}

	// Sessions that come back before the timer fires cancel it: their memory is in use again.
	more := openN(4)
	more[0]()
	more[1]()
	more[2]()
	back := openN(3)
	timers.now = timers.now.Add(10 * time.Second)
	timers.fire()
	if len(calls) != 1 {
		t.Fatalf("reclaim calls %v after the sessions came back; want still one", calls)
	}

	// The next drop arms it anew, but it waits until a minute has passed since the last call.
	sessions[4]()
	more[3]()
	if len(timers.pending) != 0 {
		t.Fatalf("a reclaim is pending after 2 of %d ended", s.Len()+2)
	}
	back[0]()
	if len(timers.pending) != 1 {
		t.Fatalf("pending reclaims %d after 3 ended; want one", len(timers.pending))
	}
	timers.now = timers.now.Add(10 * time.Second) // 20s after the last call
	timers.fire()
	if len(calls) != 1 || len(timers.pending) != 1 || timers.waits[len(timers.waits)-1] != 40*time.Second {
		t.Fatalf("reclaim calls %v, pending %d, waits %v; want none yet, one pending for the 40s left of the minute",
			calls, len(timers.pending), timers.waits)
	}
	timers.now = timers.now.Add(40 * time.Second)
	timers.fire()
	if len(calls) != 2 || calls[1] != 3 {
		t.Fatalf("reclaim calls %v; want a second, for 3 ended", calls)
	}

	// Turned off (as serving stops) while a call is scheduled: the call does nothing.
	rest := openN(4)
	for _, release := range rest[:3] {
		release()
	}
	if len(timers.pending) != 1 {
		t.Fatalf("pending reclaims %d after 3 more ended; want one", len(timers.pending))
	}
	s.Reclaim(0, 0, 0, nil)
	timers.now = timers.now.Add(2 * time.Minute)
	timers.fire()
	if len(calls) != 2 {
		t.Fatalf("reclaim calls %v after it was turned off; want still two", calls)
	}

	var none *Sessions
	none.Reclaim(1, time.Second, time.Second, func(int) { t.Error("a nil Sessions reclaimed") })
}
