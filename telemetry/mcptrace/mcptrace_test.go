package mcptrace_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/internal/testkit/oteltest"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/telemetry/mcptrace"
)

// TestMCP connects a go-sdk client and server in memory, with the middleware on both: the server's span is the
// child of the client's, in the caller's trace, and the tool runs under the server's span.
func TestMCP(t *testing.T) {
	tp, sr, mp, reader := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var seen trace.SpanContext
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		seen = trace.SpanContextFromContext(ctx)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}, IsError: true}, nil, nil
	})
	server.AddReceivingMiddleware(mcptrace.Server(tel))
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	client.AddSendingMiddleware(mcptrace.Client(tel, mcptrace.TransportPipe))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// Outside any trace, the client traces nothing; the server still traces what it serves.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range sr.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			t.Errorf("a client span outside any trace: %q", s.Name())
		}
	}

	ctx, parent := tp.Tracer("test").Start(ctx, "caller")
	meta := map[string]any{"progressToken": "p1"}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}, Meta: meta}
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if _, ok := meta["traceparent"]; ok {
		t.Errorf("the trace context was written into the caller's _meta: %v", meta)
	}
	var clientSpan, serverSpan sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "tools/call echo" && s.SpanKind() == trace.SpanKindClient {
			clientSpan = s
		}
		if s.Name() == "tools/call echo" && s.SpanKind() == trace.SpanKindServer {
			serverSpan = s
		}
	}
	if clientSpan == nil || serverSpan == nil {
		t.Fatalf("spans: client %v, server %v", clientSpan, serverSpan)
	}
	if clientSpan.Parent().SpanID() != parent.SpanContext().SpanID() || serverSpan.Parent().SpanID() != clientSpan.SpanContext().SpanID() ||
		serverSpan.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("links: client's parent %v (want %v), server's parent %v (want %v)", clientSpan.Parent().SpanID(), parent.SpanContext().SpanID(),
			serverSpan.Parent().SpanID(), clientSpan.SpanContext().SpanID())
	}
	if seen.SpanID() != serverSpan.SpanContext().SpanID() {
		t.Errorf("the tool ran under span %v, want the server span %v", seen.SpanID(), serverSpan.SpanContext().SpanID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{clientSpan, serverSpan} {
		a := oteltest.Attrs(s.Attributes())
		if a["mcp.method.name"].AsString() != "tools/call" || a["gen_ai.tool.name"].AsString() != "echo" || a["error.type"].AsString() != "tool_error" ||
			a["network.transport"].AsString() != "pipe" || a["mcp.protocol.version"].AsString() == "" {
			t.Errorf("%v span attributes: %v", s.SpanKind(), a)
		}
	}

	// Both sides record the call's duration, with the method, the tool and the error type.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcp.client.operation.duration", "mcp.server.operation.duration"} {
		if !recorded(rm, name, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "error.type": "tool_error"}) {
			t.Errorf("%s: no data point for the call to echo in %+v", name, rm.ScopeMetrics)
		}
	}

	// A JSON-RPC error is recorded with its code.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("calling an unknown tool succeeded")
	}
	for _, s := range sr.Ended() {
		if s.Name() == "tools/call nope" && s.SpanKind() == trace.SpanKindClient {
			if a := oteltest.Attrs(s.Attributes()); a["rpc.response.status_code"].AsString() == "" || a["error.type"].AsString() != a["rpc.response.status_code"].AsString() {
				t.Errorf("failed call's span: %v", a)
			}
		}
	}
}

// TestMCPServerRequests traces what a server asks its client (sampling here): a CLIENT span on the server's side,
// whose trace context the request carries in _meta, and a SERVER span on the client's side, under it; without that
// context, the client's span goes under the call the parent function names, and else starts a trace.
func TestMCPServerRequests(t *testing.T) {
	tp, sr, mp, _ := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, nil)
	sample := func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}, MaxTokens: 10})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	}
	var parentCtx context.Context // what the client's parent function returns
	var sawMeta []bool
	connect := func(serverTraced bool) *mcp.ClientSession {
		server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "ask"}, sample)
		if serverTraced {
			server.AddReceivingMiddleware(mcptrace.Server(tel))
			server.AddSendingMiddleware(mcptrace.Client(tel, ""))
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				_, ok := req.Params.Meta["traceparent"]
				sawMeta = append(sawMeta, ok)
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
			},
		})
		client.AddSendingMiddleware(mcptrace.Client(tel, mcptrace.TransportPipe))
		client.AddReceivingMiddleware(mcptrace.ClientHandlers(tel, mcptrace.TransportPipe, func() context.Context { return parentCtx }))
		ct, st := mcp.NewInMemoryTransports()
		ss, err := server.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		// The classic flow, in which a server sends requests of its own (from 2026-07-28 it asks in its result).
		cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	ended := func(name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			if s.Name() == name && s.SpanKind() == kind {
				out = append(out, s)
			}
		}
		return out
	}
	call := func(cs *mcp.ClientSession, ctx context.Context) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello" {
			t.Fatalf("call: %+v, %v", res, err)
		}
	}

	// A traced server sends the trace context with its request.
	ctx, root := tp.Tracer("test").Start(context.Background(), "run")
	call(connect(true), ctx)
	root.End()
	toolServer := ended("tools/call ask", trace.SpanKindServer)
	asked := ended("sampling/createMessage", trace.SpanKindClient)
	answered := ended("sampling/createMessage", trace.SpanKindServer)
	if len(toolServer) != 1 || len(asked) != 1 || len(answered) != 1 {
		t.Fatalf("spans: tools/call server %d, sampling client %d, sampling server %d", len(toolServer), len(asked), len(answered))
	}
	if asked[0].Parent().SpanID() != toolServer[0].SpanContext().SpanID() || answered[0].Parent().SpanID() != asked[0].SpanContext().SpanID() ||
		answered[0].SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Errorf("links: sampling client's parent %v (want the tool's server span %v), sampling server's parent %v (want %v)",
			asked[0].Parent().SpanID(), toolServer[0].SpanContext().SpanID(), answered[0].Parent().SpanID(), asked[0].SpanContext().SpanID())
	}
	if a := oteltest.Attrs(answered[0].Attributes()); a["mcp.method.name"].AsString() != "sampling/createMessage" || a["network.transport"].AsString() != "pipe" {
		t.Errorf("sampling server span attributes: %v", a)
	}
	if a := oteltest.Attrs(asked[0].Attributes()); a["network.transport"].Type() != attribute.INVALID {
		t.Errorf("the server's span names a transport it does not know: %v", a)
	}

	// An untraced server sends none: the client's span goes under the call its parent function names.
	plain := connect(false)
	ctx, root = tp.Tracer("test").Start(context.Background(), "run2")
	parentCtx = ctx
	call(plain, ctx)
	root.End()
	answered = ended("sampling/createMessage", trace.SpanKindServer)
	if len(answered) != 2 || answered[1].Parent().SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("sampling server spans %d; the last one's parent %v, want the call's span %v", len(answered), answered[len(answered)-1].Parent().SpanID(), root.SpanContext().SpanID())
	}

	// With no call to go under, the request starts a trace of its own.
	parentCtx = nil
	call(plain, context.Background())
	answered = ended("sampling/createMessage", trace.SpanKindServer)
	if len(answered) != 3 || answered[2].Parent().IsValid() {
		t.Errorf("sampling server spans %d; the last one's parent %v, want none", len(answered), answered[len(answered)-1].Parent())
	}
	if !slices.Equal(sawMeta, []bool{true, false, false}) {
		t.Errorf("the client saw trace context in _meta: %v, want only from the traced server", sawMeta)
	}
}

// headerTransport adds a traceparent header to every request.
type headerTransport struct{ traceparent string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPServerHTTPHeader: over streamable HTTP, a request without trace context in _meta is parented by the
// traceparent header of its HTTP request, as a client without MCP-level propagation sends it.
func TestMCPServerHTTPHeader(t *testing.T) {
	tp, sr, mp, _ := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	server.AddReceivingMiddleware(mcptrace.Server(tel))
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer ts.Close()
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL,
		HTTPClient: &http.Client{Transport: headerTransport{"00-" + traceID + "-" + spanID + "-01"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range sr.Ended() {
		if s.Name() == "tools/call echo" {
			found = true
			if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID || !s.Parent().IsRemote() {
				t.Errorf("server span: trace %s, parent %s (remote %v); want %s, %s", s.SpanContext().TraceID(), s.Parent().SpanID(), s.Parent().IsRemote(), traceID, spanID)
			}
			if a := oteltest.Attrs(s.Attributes()); a["network.transport"].AsString() != "tcp" || a["mcp.session.id"].AsString() == "" {
				t.Errorf("server span attributes: %v", a)
			}
		}
	}
	if !found {
		t.Error("no server span for tools/call")
	}
}

// recorded reports whether rm has a data point of the histogram name with the attributes want.
func recorded(rm metricdata.ResourceMetrics, name string, want map[string]string) bool {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if m.Name != name || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if dp.Count > 0 && !slices.ContainsFunc(slices.Collect(maps.Keys(want)), func(k string) bool {
					v, _ := dp.Attributes.Value(attribute.Key(k))
					return v.AsString() != want[k]
				}) {
					return true
				}
			}
		}
	}
	return false
}
