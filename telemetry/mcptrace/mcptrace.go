// Package mcptrace traces MCP requests with telemetry, after the MCP semantic conventions: go-sdk middleware for
// clients and servers that makes a span per request, carries the trace context in the request's _meta, and records
// the MCP duration metrics.
//
// It is the part of telemetry that imports the MCP SDK, kept apart so that only the MCP edges (mcpclients,
// mcpserver) and the composition root link it: a2a and durable, which import telemetry, do not.
//
// The *telemetry.Telemetry the middleware is given must not be nil: without telemetry, add no middleware.
package mcptrace

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/telemetry"
)

// Network transports of MCP sessions, for network.transport.
const (
	TransportPipe = "pipe" // stdio
	TransportTCP  = "tcp"  // streamable HTTP and SSE
)

// Client returns go-sdk middleware for a session's outgoing requests (Client.AddSendingMiddleware, and
// Server.AddSendingMiddleware for what a server asks its client: sampling, elicitation): a CLIENT span per request
// after the MCP semantic conventions, named "<method> <target>", and the trace context written into the request's
// _meta (traceparent, tracestate), where the peer reads it. transport is TransportPipe, TransportTCP, or "" when it
// is not known. Notifications pass untraced, and so do the requests agenthost makes on its own, outside any trace
// (initialize, the listings that follow a list change): a trace per listing would bury the runs.
func Client(t *telemetry.Telemetry, transport string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") || !trace.SpanContextFromContext(ctx).IsValid() {
				return next(ctx, method, req)
			}
			attrs, target := mcpAttrs(method, req, transport)
			ctx, span := t.Tracer().Start(ctx, spanName(method, target), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			if p := params(req); p != nil {
				meta := maps.Clone(p.GetMeta())
				if meta == nil {
					meta = map[string]any{}
				}
				t.Propagator().Inject(ctx, metaCarrier(meta))
				p.SetMeta(meta)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			et := endMCP(span, res, err)
			t.RecordMCPClient(ctx, time.Since(start), method, metricAttrs(attrs, et)...)
			return res, err
		}
	}
}

// Server returns go-sdk middleware for a server's incoming requests (Server.AddReceivingMiddleware): a SERVER
// span per request, parented by the trace context in the request's _meta, or else in the HTTP request's headers.
func Server(t *telemetry.Telemetry) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			transport := TransportPipe
			extra := req.GetExtra()
			if extra != nil && extra.Header != nil {
				transport = TransportTCP
			}
			if p := params(req); p != nil && hasTraceContext(p.GetMeta()) {
				ctx = t.Propagator().Extract(ctx, metaCarrier(p.GetMeta()))
			} else if transport == TransportTCP {
				ctx = t.ExtractHTTP(ctx, extra.Header)
			}
			return serveMCP(t, ctx, method, req, transport, next)
		}
	}
}

// ClientHandlers returns go-sdk middleware for the requests an MCP server sends to a client
// (Client.AddReceivingMiddleware): sampling and elicitation, each a SERVER span. Its parent is the trace context in
// the request's _meta, else the span of the context parent returns: the call the server is serving, when that is
// known (parent may return nil). Without either, the request starts a trace of its own. ping and notifications pass
// untraced.
func ClientHandlers(t *telemetry.Telemetry, transport string, parent func() context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" || strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			if p := params(req); p != nil && hasTraceContext(p.GetMeta()) {
				ctx = t.Propagator().Extract(ctx, metaCarrier(p.GetMeta()))
			} else if pc := parent(); pc != nil {
				ctx = trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(pc))
			}
			return serveMCP(t, ctx, method, req, transport, next)
		}
	}
}

// serveMCP serves an incoming request under a SERVER span, a child of ctx's, and times it.
func serveMCP(t *telemetry.Telemetry, ctx context.Context, method string, req mcp.Request, transport string, next mcp.MethodHandler) (mcp.Result, error) {
	attrs, target := mcpAttrs(method, req, transport)
	ctx, span := t.Tracer().Start(ctx, spanName(method, target), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	start := time.Now()
	res, err := next(ctx, method, req)
	et := endMCP(span, res, err)
	t.RecordMCPServer(ctx, time.Since(start), method, metricAttrs(attrs, et)...)
	return res, err
}

// mcpAttrs returns the span attributes of an MCP request, and the target that names the span: the tool or prompt.
func mcpAttrs(method string, req mcp.Request, transport string) ([]attribute.KeyValue, string) {
	attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(method)}
	if transport != "" {
		attrs = append(attrs, semconv.NetworkTransportKey.String(transport))
	}
	var target string
	switch p := params(req).(type) {
	case *mcp.CallToolParams:
		target = p.Name
	case *mcp.CallToolParamsRaw:
		target = p.Name
	case *mcp.GetPromptParams:
		target = p.Name
		attrs = append(attrs, semconv.GenAIPromptName(p.Name))
	case *mcp.ReadResourceParams:
		attrs = append(attrs, semconv.McpResourceURI(p.URI))
	case *mcp.SubscribeParams:
		attrs = append(attrs, semconv.McpResourceURI(p.URI))
	case *mcp.UnsubscribeParams:
		attrs = append(attrs, semconv.McpResourceURI(p.URI))
	}
	if method == "tools/call" && target != "" {
		attrs = append(attrs, semconv.GenAIToolName(target), semconv.GenAIOperationNameExecuteTool)
	}
	switch s := req.GetSession().(type) {
	case *mcp.ClientSession:
		if id := s.ID(); id != "" {
			attrs = append(attrs, semconv.McpSessionID(id))
		}
		if ir := s.InitializeResult(); ir != nil {
			attrs = append(attrs, semconv.McpProtocolVersion(ir.ProtocolVersion))
		}
	case *mcp.ServerSession:
		if id := s.ID(); id != "" {
			attrs = append(attrs, semconv.McpSessionID(id))
		}
		if ip := s.InitializeParams(); ip != nil {
			attrs = append(attrs, semconv.McpProtocolVersion(ip.ProtocolVersion))
		}
	}
	return attrs, target
}

// endMCP ends an MCP span with the outcome of its request, and returns its error type ("" for success): the
// JSON-RPC error code, "tool_error" for a tool result marked as an error, or the error's kind.
func endMCP(span trace.Span, res mcp.Result, err error) string {
	var et string
	var wire *jsonrpc.Error
	switch {
	case errors.As(err, &wire):
		et = strconv.FormatInt(wire.Code, 10)
		span.SetAttributes(semconv.RPCResponseStatusCode(et))
	case err != nil:
		et = telemetry.ErrorType(err)
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			et = telemetry.ErrorTool
		}
	}
	if et != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		msg := et
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
	return et
}

// metricAttrs picks the attributes the MCP duration metrics take from a span's.
func metricAttrs(attrs []attribute.KeyValue, et string) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, 4)
	for _, a := range attrs {
		switch a.Key {
		case semconv.GenAIToolNameKey, semconv.GenAIPromptNameKey, semconv.NetworkTransportKey, semconv.McpProtocolVersionKey:
			out = append(out, a)
		}
	}
	if et != "" {
		out = append(out, semconv.ErrorTypeKey.String(et))
	}
	return out
}

// params returns req's params, or nil when it has none (a nil pointer included).
func params(req mcp.Request) mcp.Params {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

func hasTraceContext(meta map[string]any) bool {
	_, ok := meta["traceparent"].(string)
	return ok
}

// metaCarrier reads and writes trace context in an MCP _meta object, as the MCP semantic conventions say.
type metaCarrier map[string]any

var _ propagation.TextMapCarrier = metaCarrier(nil)

func (c metaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k, v := range c {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func spanName(method, target string) string {
	if target == "" {
		return method
	}
	return method + " " + target
}
