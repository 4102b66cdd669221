package otlp_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/oteltest"
	"github.com/agenthost/agenthost/internal/testkit/otlpsink"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/telemetry/otlp"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		exporter string
		env      map[string]string
		want     bool
		err      string
	}{
		{want: false},
		{exporter: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{exporter: "otlp", want: true},
		{exporter: "otlp", env: map[string]string{"OTEL_SDK_DISABLED": "true"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: `"zipkin" is not supported`},
	} {
		cfg := otlp.Config{Exporter: tc.exporter, Getenv: func(k string) string { return tc.env[k] }}
		got, err := cfg.Enabled()
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("exporter %q, env %v: %v, %v; want %v, %q", tc.exporter, tc.env, got, err, tc.want, tc.err)
		}
	}
	if _, err := otlp.Setup(context.Background(), otlp.Config{Exporter: "otlp", Protocol: "thrift"}); err == nil || !strings.Contains(err.Error(), "thrift") {
		t.Errorf("an unknown protocol: %v", err)
	}
	if tel, err := otlp.Setup(context.Background(), otlp.Config{}); tel != nil || err != nil {
		t.Errorf("Setup with telemetry off = %v, %v; want nil, nil", tel, err)
	}
}

// traceService is an OTLP/gRPC trace receiver.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
	auth  []string
}

func (s *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.names = append(s.names, sp.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricService is an OTLP/gRPC metrics receiver that drops what it gets.
type metricService struct {
	colmetricpb.UnimplementedMetricsServiceServer
}

func (metricService) Export(context.Context, *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// TestSetupGRPC exports a run's spans over OTLP/gRPC to a receiver, with the configured headers.
func TestSetupGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		headers = append(headers, metadataValue(ctx, "x-key"))
		return h(ctx, req)
	}))
	svc := &traceService{}
	coltracepb.RegisterTraceServiceServer(srv, svc)
	colmetricpb.RegisterMetricsServiceServer(srv, metricService{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	tel, err := otlp.Setup(context.Background(), otlp.Config{Exporter: "otlp", Protocol: "grpc", Endpoint: "http://" + ln.Addr().String(),
		Headers: map[string]string{"x-key": "v"}, Getenv: func(string) string { return "" }})
	if err != nil || tel == nil {
		t.Fatalf("Setup: %v, %v", tel, err)
	}
	model := &oteltest.Scripted{Turns: []llm.Message{{Role: llm.RoleAssistant, Content: "hello"}}}
	orch := host.New(model, host.NewToolManager(nil, nil), &host.Options{Name: "g", Observer: tel.Observer()})
	if _, err := orch.Ask(context.Background(), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if strings.Join(svc.names, ",") != "chat m1,invoke_agent g" {
		t.Errorf("spans received over gRPC: %v", svc.names)
	}
	if len(headers) == 0 || headers[0] != "v" {
		t.Errorf("x-key headers: %v", headers)
	}
}

func metadataValue(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// runTraced runs one answer-only run observed by tel, then shuts tel down, which flushes its spans.
func runTraced(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	model := &oteltest.Scripted{Turns: []llm.Message{{Role: llm.RoleAssistant, Content: "hello"}}}
	orch := host.New(model, host.NewToolManager(nil, nil), &host.Options{Name: "env", Observer: tel.Observer()})
	if _, err := orch.Ask(context.Background(), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestSetupFromEnvironment turns telemetry on with the standard variables alone.
func TestSetupFromEnvironment(t *testing.T) {
	sink := otlpsink.New()
	defer sink.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-from-env=yes")
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	tel, err := otlp.Setup(context.Background(), otlp.Config{Getenv: os.Getenv})
	if err != nil || tel == nil {
		t.Fatalf("Setup: %v, %v", tel, err)
	}
	runTraced(t, tel)
	spans := sink.Spans()
	if len(spans) != 2 || spans[0].Service != "from-env" {
		t.Errorf("spans: %+v", spans)
	}
	if h := sink.Headers(); len(h) == 0 || h[0].Get("X-From-Env") != "yes" {
		t.Errorf("export headers: %v", h)
	}
	// The configuration's service name wins over the variable.
	sink2 := otlpsink.New()
	defer sink2.Close()
	tel, err = otlp.Setup(context.Background(), otlp.Config{Exporter: "otlp", Endpoint: sink2.URL, ServiceName: "from-config", Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	runTraced(t, tel)
	if spans := sink2.Spans(); len(spans) != 2 || spans[0].Service != "from-config" {
		t.Errorf("spans with service_name set: %+v", spans)
	}
}

// TestSetupDefaultEndpoint checks that without an endpoint the spans go to http://localhost:4318, as the
// specification says, and not over TLS, as the Go exporters would.
func TestSetupDefaultEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Fatalf("this test needs port 4318 of 127.0.0.1, the OTLP/HTTP default: %v", err)
	}
	sink := otlpsink.NewOn(ln)
	defer sink.Close()
	tel, err := otlp.Setup(context.Background(), otlp.Config{Exporter: "otlp", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	runTraced(t, tel)
	if spans := sink.Spans(); len(spans) != 2 {
		t.Errorf("spans at the default endpoint: %+v", spans)
	}
}

// TestResolveTrims: variables set to blanks count as unset, as the exporters read them.
func TestResolveTrims(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": " ", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "\t", "OTEL_SERVICE_NAME": "  "}
	cfg := otlp.Config{Exporter: otlp.ExporterOTLP, Getenv: func(k string) string { return env[k] }}
	r, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.Endpoint != "http://localhost:4318" || r.Service != "agenthost" {
		t.Errorf("Resolve = %+v, want the default endpoint and service", r)
	}
}
