// Package telemetry traces and measures agenthost with OpenTelemetry: spans for runs, model calls and tool calls
// after the GenAI semantic conventions (as a host.Observer), spans for A2A calls, W3C trace context in and out of
// every edge, and the GenAI and MCP metrics. The go-sdk middleware that traces MCP requests is telemetry/mcptrace,
// apart because it imports the MCP SDK, which an edge importing telemetry (a2a, durable) should not link.
//
// It depends on OpenTelemetry's API only: the TracerProvider, MeterProvider and propagator are passed to New. The
// SDK and the OTLP exporters (and gRPC with them) are set up by package telemetry/otlp, which only the composition
// root imports, so that an edge importing telemetry does not link them.
//
// A nil *Telemetry is off: the edges check for nil and add nothing, so telemetry that is not configured costs
// nothing.
package telemetry

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
)

// instrumentation names the tracer and meter.
const instrumentation = "github.com/agenthost/agenthost/telemetry"

// Telemetry makes the spans and records the metrics. A nil *Telemetry is off.
type Telemetry struct {
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	capture bool
	m       instruments
	// shutdown flushes and stops the providers; nil when Options gave none.
	shutdown func(context.Context) error
}

// Options configures New.
type Options struct {
	// CaptureContent records prompts, answers, messages, tool arguments and tool results on the spans.
	CaptureContent bool
	// Propagator reads and writes trace context at the edges; nil means W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// Shutdown, if set, is what Telemetry.Shutdown calls: it flushes and stops the providers (telemetry/otlp sets
	// it to shut down the SDK's).
	Shutdown func(context.Context) error
}

// New returns a Telemetry over the given providers. A nil provider is a no-op one.
func New(tp trace.TracerProvider, mp metric.MeterProvider, opts *Options) *Telemetry {
	if opts == nil {
		opts = &Options{}
	}
	t := &Telemetry{capture: opts.CaptureContent, prop: opts.Propagator, shutdown: opts.Shutdown}
	if t.prop == nil {
		t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	if tp == nil {
		tp = nooptrace.NewTracerProvider()
	}
	t.tracer = tp.Tracer(instrumentation)
	t.m = newInstruments(mp)
	return t
}

// Shutdown flushes the spans and metrics still buffered and stops the exporters, by calling Options.Shutdown. It
// does nothing for a nil Telemetry or one made without it.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// InjectHTTP writes the trace context of ctx into h: for outgoing HTTP requests (model, A2A). A nil Telemetry
// writes nothing.
func (t *Telemetry) InjectHTTP(ctx context.Context, h http.Header) {
	if t == nil {
		return
	}
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// ExtractHTTP returns ctx with the trace context that h carries (traceparent), if any.
func (t *Telemetry) ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	if t == nil || h == nil {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Carry returns to with the span of from: for work that outlives the request that started it (an A2A task, a
// durable run), so that its spans stay in the request's trace.
func Carry(from, to context.Context) context.Context {
	if sc := trace.SpanContextFromContext(from); !sc.IsValid() {
		return to
	}
	return trace.ContextWithSpan(to, trace.SpanFromContext(from))
}

// noopMeter stands in when New is given no MeterProvider.
var noopMeter = noopmetric.NewMeterProvider().Meter(instrumentation)

// Tracer returns the tracer t's spans are made with, for an edge traced outside this package (telemetry/mcptrace).
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// Propagator returns the propagator that reads and writes trace context at the edges.
func (t *Telemetry) Propagator() propagation.TextMapPropagator { return t.prop }

// RecordMCPClient records the duration of an MCP request agenthost sent (mcp.client.operation.duration), with the
// conventions' attributes.
func (t *Telemetry) RecordMCPClient(ctx context.Context, d time.Duration, method string, attrs ...attribute.KeyValue) {
	t.m.mcpClient.Record(ctx, d.Seconds(), mcpconv.MethodNameAttr(method), attrs...)
}

// RecordMCPServer records the duration of an MCP request agenthost served (mcp.server.operation.duration), with
// the conventions' attributes.
func (t *Telemetry) RecordMCPServer(ctx context.Context, d time.Duration, method string, attrs ...attribute.KeyValue) {
	t.m.mcpServer.Record(ctx, d.Seconds(), mcpconv.MethodNameAttr(method), attrs...)
}
