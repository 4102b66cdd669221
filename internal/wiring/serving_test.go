package wiring

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// serving serves app as so says (so.Listening is set here) until stop, which cancels Serve and waits for it to
// return nil. It returns once every front end of so listens, with their endpoints by front end.
func serving(t *testing.T, app *App, so *ServeOptions) (endpoints map[string]*Endpoint, stop func()) {
	t.Helper()
	want := 0
	for _, addr := range []string{so.HTTP, so.A2A, so.UI} {
		if addr != "" {
			want++
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	listening := make(chan *Endpoint, want)
	served := make(chan error, 1)
	so.Listening = func(e *Endpoint) { listening <- e }
	go func() { served <- app.Serve(ctx, so) }()
	endpoints = map[string]*Endpoint{}
	for len(endpoints) < want {
		select {
		case e := <-listening:
			endpoints[e.Front] = e
		case err := <-served:
			cancel()
			t.Fatalf("Serve returned before it listened: %v", err)
		}
	}
	return endpoints, func() {
		cancel()
		testwait.Within(t, 30*time.Second, "Serve to return", func() {
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}
