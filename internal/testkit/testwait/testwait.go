// Package testwait bounds the waits of tests: what should happen soon either happens or fails the test, and never
// hangs the whole package until its timeout. The limits callers pass are generous, for a loaded machine; none is a
// claim about how long anything takes.
package testwait

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// poll is how often Until checks its condition.
const poll = 10 * time.Millisecond

// Until polls cond until it holds, failing the test when it still does not after limit. It is for state that
// settles asynchronously: a reconnection, a refreshed list, a process gone.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting until %s", limit, what)
		}
		time.Sleep(poll)
	}
}

// Context returns a context for work that should end on its own: it ends after limit, or with the test.
func Context(t testing.TB, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	return ctx
}

// Within runs f on a goroutine of its own and fails the test when it has not returned after limit. f must not call
// t.Fatal (t.Error is fine).
func Within(t testing.TB, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not end within %v", what, limit)
	}
}

// Buffer collects output that a test reads while something else still writes it (a log, a prompt), for Until to
// wait on. It is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
