// Package otlp sends telemetry's spans and metrics to an OpenTelemetry collector over OTLP (HTTP/protobuf or
// gRPC): it resolves the [telemetry] settings against the standard OTEL_* variables, and builds the SDK's
// TracerProvider and MeterProvider, with their resource and exporters, for telemetry.New.
//
// It is the one package that links the OpenTelemetry SDK, the OTLP exporters and gRPC; only the composition root
// (cmd/agenthost, internal/wiring) imports it, and the edges take a *telemetry.Telemetry built over the API.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
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
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		r.Service = s
	}
	if cfg.ServiceName != "" {
		r.Service = cfg.ServiceName
	}
	endpoint := cfg.Endpoint
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if endpoint == "" {
			endpoint = getenv(v)
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

	// The Go exporters default to https://localhost; the specification's default, which collectors listen on, is
	// plain http. A signal whose endpoint no variable names gets it.
	getenv := cfg.env()
	traceBase, metricBase := cfg.Endpoint, cfg.Endpoint
	if cfg.Endpoint == "" {
		local := defaultEndpoint(proto)
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			traceBase = local
		}
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
			metricBase = local
		}
	}
	spans, metrics, err := exporters(ctx, proto, traceBase, metricBase, cfg.Headers)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	return telemetry.New(tp, mp, &telemetry.Options{CaptureContent: cfg.CaptureContent,
		Shutdown: func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }}), nil
}

// exporters returns the OTLP span and metric exporters, sending to the collector at traceBase and metricBase
// ("" leaves it to the OTEL_* variables).
func exporters(ctx context.Context, proto, traceBase, metricBase string, headers map[string]string) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	traceBase, metricBase = strings.TrimRight(traceBase, "/"), strings.TrimRight(metricBase, "/")
	if proto == ProtocolGRPC {
		var topts []otlptracegrpc.Option
		var mopts []otlpmetricgrpc.Option
		if traceBase != "" {
			topts = append(topts, otlptracegrpc.WithEndpointURL(traceBase))
		}
		if metricBase != "" {
			mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(metricBase))
		}
		if len(headers) > 0 {
			topts = append(topts, otlptracegrpc.WithHeaders(headers))
			mopts = append(mopts, otlpmetricgrpc.WithHeaders(headers))
		}
		spans, err := otlptracegrpc.New(ctx, topts...)
		if err != nil {
			return nil, nil, fmt.Errorf("OTLP/gRPC span exporter: %w", err)
		}
		metrics, err := otlpmetricgrpc.New(ctx, mopts...)
		if err != nil {
			_ = spans.Shutdown(ctx)
			return nil, nil, fmt.Errorf("OTLP/gRPC metric exporter: %w", err)
		}
		return spans, metrics, nil
	}
	var topts []otlptracehttp.Option
	var mopts []otlpmetrichttp.Option
	if traceBase != "" {
		topts = append(topts, otlptracehttp.WithEndpointURL(traceBase+"/v1/traces"))
	}
	if metricBase != "" {
		mopts = append(mopts, otlpmetrichttp.WithEndpointURL(metricBase+"/v1/metrics"))
	}
	if len(headers) > 0 {
		topts = append(topts, otlptracehttp.WithHeaders(headers))
		mopts = append(mopts, otlpmetrichttp.WithHeaders(headers))
	}
	spans, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP/HTTP span exporter: %w", err)
	}
	metrics, err := otlpmetrichttp.New(ctx, mopts...)
	if err != nil {
		_ = spans.Shutdown(ctx)
		return nil, nil, fmt.Errorf("OTLP/HTTP metric exporter: %w", err)
	}
	return spans, metrics, nil
}
