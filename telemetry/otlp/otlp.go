// Package otlp sends telemetry's spans and metrics to an OpenTelemetry collector over OTLP (HTTP/protobuf or
// gRPC): it resolves the [telemetry] settings against the standard OTEL_* variables, and builds the SDK's
// TracerProvider and MeterProvider, with their resource and exporters, for telemetry.New.
//
// The exporters are its own: the OTLP messages are encoded by hand (wire.go, encode*.go), and sent over net/http,
// OTLP/gRPC being a unary gRPC call over HTTP/2 (transport.go). The OpenTelemetry exporters would link the protobuf
// runtime, whose reflection makes the linker keep every exported method of every reachable type, and gRPC, with
// x/net/trace and html/template: tens of megabytes of binary and a few of memory, for two messages and one call.
// It honours the OTEL_EXPORTER_OTLP_* variables the Go exporters do (settings.go).
//
// It is the one package that links the OpenTelemetry SDK; it imports neither the protobuf runtime nor gRPC. Only
// the composition root (cmd/agenthost, internal/wiring) imports it, and the edges take a *telemetry.Telemetry built
// over the API.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/agenthost/agenthost/telemetry"
)

// Exporters and protocols that Config accepts.
const (
	ExporterNone = "none"
	ExporterOTLP = "otlp"

	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config says where telemetry goes. What it leaves empty comes from the standard OTEL_* variables.
type Config struct {
	// Exporter is "otlp" or "none"; "" reads OTEL_TRACES_EXPORTER, and means "none" without it.
	// OTEL_SDK_DISABLED=true turns telemetry off whatever this says.
	Exporter string
	// Protocol is "http/protobuf" or "grpc"; "" reads OTEL_EXPORTER_OTLP_PROTOCOL, and means "http/protobuf"
	// without it.
	Protocol string
	// Endpoint is the collector's base URL: http://localhost:4318 for OTLP/HTTP (traces go to /v1/traces, metrics
	// to /v1/metrics), http://localhost:4317 for gRPC. "" leaves it to OTEL_EXPORTER_OTLP_ENDPOINT and its
	// per-signal variants, and then to those defaults.
	Endpoint string
	// Headers are sent with every export, besides OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// ServiceName names the service, over OTEL_SERVICE_NAME; without either it is "agenthost". The resource's
	// other attributes come from OTEL_RESOURCE_ATTRIBUTES.
	ServiceName    string
	ServiceVersion string
	// CaptureContent records prompts, answers, messages, tool arguments and tool results on the spans.
	CaptureContent bool
	// Getenv reads the environment; nil means no variables.
	Getenv func(string) string
}

// Enabled resolves cfg's exporter against the environment: whether Setup would export anything.
func (cfg *Config) Enabled() (bool, error) {
	getenv := cfg.env()
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exporter := cfg.Exporter
	if exporter == "" {
		exporter = strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	}
	switch exporter {
	case "", ExporterNone:
		return false, nil
	case ExporterOTLP:
		return true, nil
	}
	return false, fmt.Errorf("telemetry exporter %q is not supported: use %q or %q", exporter, ExporterOTLP, ExporterNone)
}

func (cfg *Config) env() func(string) string {
	if cfg.Getenv != nil {
		return cfg.Getenv
	}
	return func(string) string { return "" }
}

// protocol resolves the OTLP protocol.
func (cfg *Config) protocol() (string, error) {
	p := cfg.Protocol
	if p == "" {
		p = strings.TrimSpace(cfg.env()("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "", ProtocolHTTP:
		return ProtocolHTTP, nil
	case ProtocolGRPC:
		return ProtocolGRPC, nil
	}
	return "", fmt.Errorf("OTLP protocol %q is not supported: use %q or %q", p, ProtocolHTTP, ProtocolGRPC)
}

// Resolved is where telemetry goes once the configuration and the environment are read.
type Resolved struct {
	// Protocol is "http/protobuf" or "grpc".
	Protocol string
	// Endpoint is where spans go: a base URL (HTTP: spans to <Endpoint>/v1/traces, unless it came from
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which is the full URL), without user info, query or fragment.
	Endpoint string
	// Service is the service name the resource gets.
	Service string
}

// Resolve reads cfg and the environment as Setup does. It returns nil, and no error, when telemetry is off.
func (cfg *Config) Resolve() (*Resolved, error) {
	on, err := cfg.Enabled()
	if err != nil || !on {
		return nil, err
	}
	proto, err := cfg.protocol()
	if err != nil {
		return nil, err
	}
	getenv := cfg.env()
	r := &Resolved{Protocol: proto, Service: "agenthost"}
	if s := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); s != "" {
		r.Service = s
	}
	if cfg.ServiceName != "" {
		r.Service = cfg.ServiceName
	}
	endpoint := cfg.Endpoint
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if endpoint == "" {
			endpoint = strings.TrimSpace(getenv(v))
		}
	}
	if endpoint == "" {
		endpoint = defaultEndpoint(proto)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry endpoint %q is not an http(s) URL", endpoint)
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	r.Endpoint = u.String()
	return r, nil
}

// defaultEndpoint is the specification's default collector: plain http on localhost.
func defaultEndpoint(proto string) string {
	if proto == ProtocolGRPC {
		return "http://localhost:4317"
	}
	return "http://localhost:4318"
}

// Setup starts exporting as cfg says. It returns nil, and no error, when telemetry is off. The exporters connect
// lazily: a collector that is down loses spans, and is reported by the SDK's error handler, but never fails a run.
// The Telemetry must be shut down, which flushes what is buffered.
func Setup(ctx context.Context, cfg Config) (*telemetry.Telemetry, error) {
	r, err := cfg.Resolve()
	if err != nil || r == nil {
		return nil, err
	}
	proto := r.Protocol
	// Later detectors override earlier ones: the default name, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
	// then the configuration.
	rattrs := []attribute.KeyValue{}
	if cfg.ServiceName != "" {
		rattrs = append(rattrs, semconv.ServiceName(cfg.ServiceName))
	}
	if cfg.ServiceVersion != "" {
		rattrs = append(rattrs, semconv.ServiceVersion(cfg.ServiceVersion))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(semconv.ServiceName("agenthost")),
		resource.WithFromEnv(), resource.WithAttributes(rattrs...))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	// A signal whose endpoint neither the configuration nor a variable names goes to the specification's default,
	// plain http on localhost, which collectors listen on.
	getenv := cfg.env()
	named := func(v string) bool { return strings.TrimSpace(getenv(v)) != "" }
	traceBase, metricBase := cfg.Endpoint, cfg.Endpoint
	if cfg.Endpoint == "" {
		local := defaultEndpoint(proto)
		if !named("OTEL_EXPORTER_OTLP_ENDPOINT") && !named("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
			traceBase = local
		}
		if !named("OTEL_EXPORTER_OTLP_ENDPOINT") && !named("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
			metricBase = local
		}
	}
	spans, metrics, err := exporters(getenv, proto, traceBase, metricBase, cfg.Headers)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	return telemetry.New(tp, mp, &telemetry.Options{CaptureContent: cfg.CaptureContent,
		Shutdown: func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }}), nil
}

// exporters returns the OTLP span and metric exporters, sending to the collector at traceBase and metricBase ("" leaves
// it to the OTEL_* variables).
func exporters(getenv func(string) string, proto, traceBase, metricBase string,
	headers map[string]string) (*spanExporter, *metricExporter, error) {
	traceBase, metricBase = strings.TrimRight(traceBase, "/"), strings.TrimRight(metricBase, "/")
	tt, err := resolveTarget(getenv, proto, traceBase, headers, traceSignal)
	if err != nil {
		return nil, nil, err
	}
	mt, err := resolveTarget(getenv, proto, metricBase, headers, metricSignal)
	if err != nil {
		return nil, nil, err
	}
	return newSpanExporter(tt), newMetricExporter(mt, temporalitySelector(getenv), aggregationSelector(getenv)), nil
}
