package llm

import (
	"context"
	"time"
)

// Retry describes a failed attempt of a model call that the model is about to make again.
type Retry struct {
	// Attempt is the number of the attempt that failed: 1 for the first.
	Attempt int
	// Err is why it failed, and Delay how long the model waits before the next attempt.
	Err   error
	Delay time.Duration
}

type retryKey struct{}

// WithRetryReporter returns ctx carrying report, which a Model calls, on the goroutine of Generate, each time it
// retries a call made under ctx: an observer of model calls learns of the attempts a call took.
func WithRetryReporter(ctx context.Context, report func(Retry)) context.Context {
	return context.WithValue(ctx, retryKey{}, report)
}

// ReportRetry tells the reporter of ctx (see WithRetryReporter), if any, that a call is retried.
func ReportRetry(ctx context.Context, r Retry) {
	if report, ok := ctx.Value(retryKey{}).(func(Retry)); ok {
		report(r)
	}
}
