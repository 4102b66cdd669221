package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm/testmodel"
	"github.com/agenthost/agenthost/telemetry"
)

// discard is a span exporter that drops what it gets: the benchmark measures making and batching spans, not a
// network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

type benchTool struct{ name string }

func (t benchTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: t.name, Description: "Looks things up in source " + t.name + ".",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`)}
}

func (t benchTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	return &host.Result{Text: "result of " + t.name, References: []host.Reference{{Title: t.name, URI: "https://example.test/" + t.name, Content: "excerpt"}}}, nil
}

// BenchmarkOrchestratorTelemetry runs host's BenchmarkOrchestratorOverhead workload (50 tools, 3 rounds of 10 tool
// calls, an answer: 4 iterations, 4 model calls and 30 tool calls per run) with telemetry off, on (spans batched
// to an exporter that drops them, metrics recorded), and on with the content captured.
func BenchmarkOrchestratorTelemetry(b *testing.B) {
	var set toolset
	for i := range 50 {
		set = append(set, benchTool{name: fmt.Sprintf("tool_%02d", i)})
	}
	for _, mode := range []string{"off", "on", "on+content"} {
		b.Run(mode, func(b *testing.B) {
			var obs host.Observer
			if mode != "off" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
				obs = telemetry.New(tp, mp, &telemetry.Options{CaptureContent: mode == "on+content"}).Observer()
			}
			o := host.New(testmodel.NewRounds(3, 10, 50), host.NewToolManager([]host.Toolset{set}, &host.ToolManagerOptions{Observer: obs}),
				&host.Options{Name: "bench", Observer: obs, Conversations: host.NewMemoryStore(&host.MemoryStoreOptions{MaxConversations: 1})})
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				ans, err := o.Ask(ctx, &host.Request{Prompt: "benchmark the loop"}, func(*host.Event) {})
				if err != nil || ans.StoppedBy != host.StopAnswered || len(ans.ToolCalls) != 30 {
					b.Fatalf("unexpected run: %v %+v", err, ans)
				}
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/4, "cpu-ns/iteration")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
