package testwait

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of ending the test, so the failures themselves can be
// checked. Fatalf ends the goroutine, as the real one does.
type recorder struct {
	testing.TB
	failed atomic.Bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) {
	r.failed.Store(true)
	runtime.Goexit()
}

// run calls f as a test body on a goroutine of its own, as the testing package does, and reports whether it failed.
func run(t *testing.T, f func(tb testing.TB)) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failed.Load()
}

func TestUntil(t *testing.T) {
	n := 0
	if run(t, func(tb testing.TB) { Until(tb, time.Minute, "three polls", func() bool { n++; return n == 3 }) }) {
		t.Error("Until failed on a condition that came true")
	}
	if !run(t, func(tb testing.TB) { Until(tb, 20*time.Millisecond, "never", func() bool { return false }) }) {
		t.Error("Until did not fail on a condition that never came true")
	}
}

func TestWithin(t *testing.T) {
	if run(t, func(tb testing.TB) { Within(tb, time.Minute, "nothing", func() {}) }) {
		t.Error("Within failed on a function that returned")
	}
	block := make(chan struct{})
	defer close(block)
	if !run(t, func(tb testing.TB) { Within(tb, 20*time.Millisecond, "a blocked receive", func() { <-block }) }) {
		t.Error("Within did not fail on a function that never returned")
	}
}

func TestContext(t *testing.T) {
	ctx := Context(t, 20*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the context did not end after its limit")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", ctx.Err())
	}
}
