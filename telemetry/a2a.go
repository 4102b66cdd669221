package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// AttrA2AVersion is the A2A protocol version of a call: "1.0" or "0.3".
const AttrA2AVersion = attribute.Key("a2a.protocol.version")

// RPCError is an error with a JSON-RPC code: an A2A error, for the span's rpc.response.status_code.
type RPCError interface {
	error
	RPCCode() int
}

// StartA2AClient starts the CLIENT span of an A2A JSON-RPC call to endpoint, named "a2a <method>"; the caller
// writes the trace context into the request's headers with InjectHTTP under the returned context, and calls end
// when the call, its stream included, is over. A nil Telemetry traces nothing.
func (t *Telemetry) StartA2AClient(ctx context.Context, method, version, endpoint string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	attrs := []attribute.KeyValue{semconv.RPCSystemNameJSONRPC, semconv.RPCMethod(method), AttrA2AVersion.String(version)}
	if u, err := url.Parse(endpoint); err == nil {
		host, port, _ := net.SplitHostPort(u.Host)
		if host == "" {
			host = u.Host
		}
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	}
	ctx, span := t.tracer.Start(ctx, "a2a "+method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(err error) { endRPC(span, err) }
}

// StartA2AServer starts the SERVER span of an incoming A2A JSON-RPC call, parented by the trace context of its
// headers. A nil Telemetry traces nothing.
func (t *Telemetry) StartA2AServer(ctx context.Context, h http.Header, method, version string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	ctx = t.ExtractHTTP(ctx, h)
	ctx, span := t.tracer.Start(ctx, "a2a "+method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.RPCSystemNameJSONRPC, semconv.RPCMethod(method), AttrA2AVersion.String(version)))
	return ctx, func(err error) { endRPC(span, err) }
}

func endRPC(span trace.Span, err error) {
	if err == nil {
		span.End()
		return
	}
	var rpc RPCError
	if errors.As(err, &rpc) {
		code := strconv.Itoa(rpc.RPCCode())
		span.SetAttributes(semconv.RPCResponseStatusCode(code))
		endSpan(span, err, code)
		return
	}
	endSpan(span, err, "")
}
