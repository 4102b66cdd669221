package mcpserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/telemetry"
)

// TestSamplingTraced runs an agent on its caller's model, traced: each sampling request is a CLIENT span under the
// model call it serves, and carries the trace context to the caller in _meta.
func TestSamplingTraced(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	tel := telemetry.New(tp, mp, nil)
	orch := host.New(nil, host.NewToolManager(nil, nil), &host.Options{Observer: tel.Observer()})
	s, err := New(t.Context(), orch, &Options{Name: "geo", Sampling: SamplingAlways, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var parents []string
	cs := connectAt(t, s, "2025-11-25", &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			tp, _ := req.Params.Meta["traceparent"].(string)
			parents = append(parents, tp)
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "ide-model", Content: &mcp.TextContent{Text: "Paris."}}, nil
		},
	})
	if res, text := agentText(t, cs, map[string]any{"prompt": "Capital of France?"}); res.IsError || text != "Paris." {
		t.Fatalf("answer %q (error %v)", text, res.IsError)
	}
	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var asked sdktrace.ReadOnlySpan
	for _, sp := range sr.Ended() {
		spans[sp.SpanContext().SpanID()] = sp
		if sp.Name() == "sampling/createMessage" && sp.SpanKind() == trace.SpanKindClient {
			asked = sp
		}
	}
	if asked == nil {
		t.Fatal("no span for the sampling request")
	}
	var path []string
	for sp := asked; sp != nil; sp = spans[sp.Parent().SpanID()] {
		path = append(path, sp.Name())
	}
	if len(path) != 4 || !strings.HasPrefix(path[1], "chat") || !strings.HasPrefix(path[2], "invoke_agent") || path[3] != "tools/call ask_geo" {
		t.Errorf("the sampling span's ancestry %q, want chat, invoke_agent and the caller's tools/call", path)
	}
	want := "00-" + asked.SpanContext().TraceID().String() + "-" + asked.SpanContext().SpanID().String() + "-01"
	if !slices.Equal(parents, []string{want}) {
		t.Errorf("the caller was sent traceparent %q, want %q", parents, want)
	}
}
