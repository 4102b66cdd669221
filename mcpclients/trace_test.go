package mcpclients

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/telemetry"
)

// TestSamplingTraced checks that a server's sampling request, answered by the host's model, is traced in the trace
// of the call it serves: a chat span for the model call, on either protocol flow (a request of the server's own,
// or an input request in its result).
func TestSamplingTraced(t *testing.T) {
	llmSrv := fakellm.New()
	defer llmSrv.Close()
	model, err := openai.New(&openai.Options{BaseURL: llmSrv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })

	m := newMemServers()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	// The tool asks in its result; for a client on an older protocol, the SDK sends the request itself.
	srv.AddTool(textTool("summarise", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch r := req.Params.InputResponses["s"].(type) {
		case nil:
			return &mcp.CallToolResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarise MCP."}}},
				MaxTokens: 50,
			}}}, nil
		case *mcp.CreateMessageResult:
			return text("model said: " + r.Content.(*mcp.TextContent).Text), nil
		case *mcp.CreateMessageWithToolsResult:
			return text("model said: " + r.Content[0].(*mcp.TextContent).Text), nil
		default:
			return nil, fmt.Errorf("input response %T", r)
		}
	}))
	m.servers["classic"] = srv
	m.servers["latest"] = srv
	c := connect(t, m, &Options{Sampler: model, Telemetry: telemetry.New(tp, mp, nil)},
		ServerConfig{Name: "classic", Prefix: "c", AllowSampling: true, ProtocolVersion: "2025-11-25"},
		ServerConfig{Name: "latest", Prefix: "l", AllowSampling: true},
	)
	for i, set := range c.Toolsets() {
		name := []string{"c_summarise", "l_summarise"}[i]
		llmSrv.Enqueue(fakellm.Turn{Text: "A protocol for tools."})
		ctx, run := tp.Tracer("test").Start(bounded(t), "run")
		res, err := findTool(t, set, name).Call(ctx, json.RawMessage(`{}`), nil)
		run.End()
		if err != nil || res.IsError || res.Text != "model said: A protocol for tools." {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		var chat sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			if s.SpanContext().TraceID() != run.SpanContext().TraceID() {
				continue
			}
			spans[s.SpanContext().SpanID()] = s
			if s.Name() == "chat fake" {
				chat = s
			}
		}
		if chat == nil {
			t.Fatalf("%s: no chat span in the call's trace", name)
		}
		// The chat span hangs, through the spans between, from the run.
		var path []string
		for s := chat; s != nil; s = spans[s.Parent().SpanID()] {
			path = append(path, s.Name())
		}
		// On the classic flow the server's request is a span of its own, under the call in flight; on the latest,
		// the SDK answers the input request inside the tools/call.
		want := [][]string{{"chat fake", "sampling/createMessage", "run"}, {"chat fake", "tools/call summarise", "run"}}[i]
		if !slices.Equal(path, want) {
			t.Errorf("%s: the chat span's ancestry %q, want %q", name, path, want)
		}
	}
}
