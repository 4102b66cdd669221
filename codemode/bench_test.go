package codemode

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// instant is a tool caller whose every tool answers at once, so a benchmark measures the sandbox alone.
type instant struct{}

func (instant) StartTool(_ context.Context, _ string, args json.RawMessage) func() (*host.Result, error) {
	return func() (*host.Result, error) { return &host.Result{Structured: args}, nil }
}

// benchmarkScript runs code b.N times and reports the p50 and p99 of one script's wall time, as Run's caller sees it.
func benchmarkScript(b *testing.B, code string) {
	r := New(nil)
	ctx := context.Background()
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		res, err := r.Run(ctx, code, instant{})
		times = append(times, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("%v %v", res, err)
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkStart is a script's fixed cost: a fresh engine, the prelude, a return.
func BenchmarkStart(b *testing.B) { benchmarkScript(b, `return 1`) }

// BenchmarkTenCalls is the measure: start, 10 tool calls awaited one after the other, return.
func BenchmarkTenCalls(b *testing.B) {
	benchmarkScript(b, `let s = 0; for (let i = 0; i < 10; i++) s += (await tools.echo({i})).i; return s`)
}
