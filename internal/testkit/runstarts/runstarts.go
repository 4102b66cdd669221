// Package runstarts is test support: a host.Observer that records, for each run it sees start, the front end it came
// from and the caller it was made for, so that a test of a front end can check how it marks its runs.
package runstarts

import (
	"context"
	"slices"
	"sync"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// Observer records the runs it sees start. The zero value is ready; it is safe for concurrent use.
type Observer struct {
	mu       sync.Mutex
	origins  []string
	subjects []string
}

var _ host.Observer = (*Observer)(nil)

// StartRun records the run's origin (RunStart.Origin) and subject (host.Subject of ctx).
func (o *Observer) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	o.mu.Lock()
	o.origins = append(o.origins, run.Origin)
	o.subjects = append(o.subjects, host.Subject(ctx))
	o.mu.Unlock()
	return ctx, func(*host.Answer, error) {}
}

// StartModelCall observes nothing.
func (o *Observer) StartModelCall(ctx context.Context, _ *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

// StartToolCall observes nothing.
func (o *Observer) StartToolCall(ctx context.Context, _ *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return ctx, func(*host.Result, error) {}
}

// Origins returns the origins of the runs started so far, in order.
func (o *Observer) Origins() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.origins)
}

// Subjects returns the subjects of the runs started so far, in order.
func (o *Observer) Subjects() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.subjects)
}
