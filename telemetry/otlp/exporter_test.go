package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the receiver takes gzip-compressed calls
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// exportersFor returns the exporters Setup would build for cfg, shut down when the test ends.
func exportersFor(t *testing.T, proto, endpoint string, env map[string]string, headers map[string]string) (*spanExporter, *metricExporter) {
	t.Helper()
	spans, metrics, err := exporters(vars(env), proto, endpoint, endpoint, headers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = spans.Shutdown(context.Background())
		_ = metrics.Shutdown(context.Background())
	})
	return spans, metrics
}

// recordWaits makes the backoff record its waits instead of waiting, for the test.
func recordWaits(t *testing.T) *[]time.Duration {
	old := sleep
	var waits []time.Duration
	sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	t.Cleanup(func() { sleep = old })
	return &waits
}

// request is what an OTLP/HTTP receiver got.
type request struct {
	path   string
	header http.Header
	body   []byte // uncompressed
}

// receiver is an OTLP/HTTP receiver that answers as respond says; respond gets the number of the request, from 0.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newReceiver(t *testing.T, tls bool, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		rc.mu.Lock()
		n := len(rc.reqs)
		rc.reqs = append(rc.reqs, request{path: r.URL.Path, header: r.Header.Clone(), body: b})
		rc.mu.Unlock()
		if respond != nil {
			respond(n, w, r)
		}
	})
	if tls {
		rc.Server = httptest.NewTLSServer(h)
	} else {
		rc.Server = httptest.NewServer(h)
	}
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// TestExportHTTP sends spans and metrics over OTLP/HTTP: the receiver gets, at the signals' paths, exactly what the
// encoders write, which TestEncodeSpans and TestEncodeMetrics compare with the OpenTelemetry exporters'.
func TestExportHTTP(t *testing.T) {
	rc := newReceiver(t, false, nil)
	spans, metrics := exportersFor(t, ProtocolHTTP, rc.URL+"/base/", nil, nil)
	ss, rm := testSpans(t), testMetrics(t, metricdata.CumulativeTemporality)
	if err := spans.ExportSpans(t.Context(), ss); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Export(t.Context(), rm); err != nil {
		t.Fatal(err)
	}
	wantSpans := (&traceEncoder{}).encode(ss)
	wantMetrics, _ := (&metricEncoder{}).encode(rm)
	reqs := rc.requests()
	if len(reqs) != 2 || reqs[0].path != "/base/v1/traces" || reqs[1].path != "/base/v1/metrics" {
		t.Fatalf("requests: %+v", reqs)
	}
	if !bytes.Equal(reqs[0].body, wantSpans) || !bytes.Equal(reqs[1].body, wantMetrics) {
		t.Error("the bodies are not the encoded requests")
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(reqs[0].body, &req); err != nil || len(req.ResourceSpans) != 2 {
		t.Errorf("decoded spans: %v, %v", err, len(req.ResourceSpans))
	}
	for _, r := range reqs {
		if ct := r.header.Get("Content-Type"); ct != "application/x-protobuf" || r.header.Get("Content-Encoding") != "" {
			t.Errorf("content type %q, encoding %q", ct, r.header.Get("Content-Encoding"))
		}
	}
	// Nothing to send sends nothing.
	if err := spans.ExportSpans(t.Context(), nil); err != nil || len(rc.requests()) != 2 {
		t.Errorf("an empty export: %v, %d requests", err, len(rc.requests()))
	}
}

// TestHTTPSettings checks the variables that shape a request: per-signal endpoints, headers from the variables
// and the configuration, and gzip.
func TestHTTPSettings(t *testing.T) {
	rc := newReceiver(t, false, nil)
	spans, metrics := exportersFor(t, ProtocolHTTP, "", map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":            rc.URL + "/all",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":     rc.URL + "/just/traces",
		"OTEL_EXPORTER_OTLP_HEADERS":             "a=1, b=x%20y ,c=general",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":      "b=2",
		"OTEL_EXPORTER_OTLP_COMPRESSION":         "gzip",
		"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "none",
	}, map[string]string{"c": "config"})
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Export(t.Context(), testMetrics(t, metricdata.DeltaTemporality)); err != nil {
		t.Fatal(err)
	}
	reqs := rc.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	tr, mr := reqs[0], reqs[1]
	if tr.path != "/just/traces" || mr.path != "/all/v1/metrics" {
		t.Errorf("paths %q, %q", tr.path, mr.path)
	}
	for _, c := range []struct {
		r             request
		a, b, c, gzip string
	}{{tr, "1", "2", "config", "gzip"}, {mr, "1", "x y", "config", ""}} {
		h := c.r.header
		if h.Get("A") != c.a || h.Get("B") != c.b || h.Get("C") != c.c || h.Get("Content-Encoding") != c.gzip {
			t.Errorf("%s headers: %v", c.r.path, h)
		}
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(tr.body, &req); err != nil || len(req.ResourceSpans) != 2 {
		t.Errorf("the gzip-compressed spans: %v", err)
	}
}

// TestHTTPRetry retries a 503 after the Retry-After wait, and not a 400.
func TestHTTPRetry(t *testing.T) {
	waits := recordWaits(t)
	rc := newReceiver(t, false, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "20")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
	spans, _ := exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err != nil {
		t.Fatalf("export after a 503: %v", err)
	}
	if n := len(rc.requests()); n != 2 || len(*waits) != 1 || (*waits)[0] < 20*time.Second {
		t.Errorf("%d requests, waits %v; want 2 requests and a wait of at least the 20 s asked", n, *waits)
	}

	*waits = nil
	rc = newReceiver(t, false, func(_ int, w http.ResponseWriter, _ *http.Request) { http.Error(w, "bad spans", http.StatusBadRequest) })
	spans, _ = exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	err := spans.ExportSpans(t.Context(), testSpans(t))
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "bad spans") {
		t.Errorf("export answered 400: %v", err)
	}
	if n := len(rc.requests()); n != 1 || len(*waits) != 0 {
		t.Errorf("a 400 was retried: %d requests, waits %v", n, *waits)
	}

	// Retries end when the backoff's minute would pass.
	*waits = nil
	rc = newReceiver(t, false, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	spans, _ = exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err == nil || len(rc.requests()) != 1 {
		t.Errorf("a wait past the backoff's limit: %v, %d requests", err, len(rc.requests()))
	}
}

// TestHTTPTimeout gives up on a request after OTEL_EXPORTER_OTLP_TIMEOUT, and retries it.
func TestHTTPTimeout(t *testing.T) {
	// The first retry due is enough to see.
	old := sleep
	var waits []time.Duration
	sleep = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return errors.New("no more retries")
	}
	t.Cleanup(func() { sleep = old })
	rc := newReceiver(t, false, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	spans, _ := exportersFor(t, ProtocolHTTP, rc.URL, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "50"}, nil)
	err := spans.ExportSpans(t.Context(), testSpans(t))
	if err == nil || len(waits) != 1 {
		t.Errorf("a request that never ends: %v, waits %v; want an error after one retry was due", err, waits)
	}
}

// TestHTTPPartialSuccess reports a partial success through the SDK's error handler.
func TestHTTPPartialSuccess(t *testing.T) {
	rc := newReceiver(t, false, func(_ int, w http.ResponseWriter, r *http.Request) {
		var b []byte
		if strings.HasSuffix(r.URL.Path, "traces") {
			b, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}})
		} else {
			b, _ = proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{PartialSuccess: &colmetricpb.ExportMetricsPartialSuccess{RejectedDataPoints: 5}})
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})
	spans, metrics := exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	var mu sync.Mutex
	var handled []string
	old := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, err.Error())
	}))
	t.Cleanup(func() { otel.SetErrorHandler(old) })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	_, s := tp.Tracer("t").Start(t.Context(), "s")
	s.End()
	mu.Lock()
	got := strings.Join(handled, "\n")
	mu.Unlock()
	if !strings.Contains(got, "OTLP partial success: too old (2 spans rejected)") {
		t.Errorf("handled: %q", got)
	}
	err := metrics.Export(t.Context(), testMetrics(t, metricdata.CumulativeTemporality))
	if err == nil || err.Error() != "OTLP partial success: empty message (5 metric data points rejected)" {
		t.Errorf("metrics partial success: %v", err)
	}
}

// TestHTTPRedirect follows a redirect within the collector's origin, with the headers, and refuses one to another
// origin, which gets nothing.
func TestHTTPRedirect(t *testing.T) {
	elsewhere := newReceiver(t, false, nil)
	rc := newReceiver(t, false, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/traces":
			http.Redirect(w, r, "/moved/v1/traces", http.StatusTemporaryRedirect)
		case "/v1/metrics":
			http.Redirect(w, r, elsewhere.URL+"/v1/metrics", http.StatusTemporaryRedirect)
		}
	})
	spans, metrics := exportersFor(t, ProtocolHTTP, rc.URL, nil, map[string]string{"Authorization": "Bearer secret"})
	ss := testSpans(t)
	if err := spans.ExportSpans(t.Context(), ss); err != nil {
		t.Fatalf("a redirect within the origin: %v", err)
	}
	reqs := rc.requests()
	if len(reqs) != 2 || reqs[1].path != "/moved/v1/traces" || reqs[1].header.Get("Authorization") != "Bearer secret" ||
		!bytes.Equal(reqs[1].body, (&traceEncoder{}).encode(ss)) {
		t.Errorf("redirected within the origin: %+v", reqs)
	}
	err := metrics.Export(t.Context(), testMetrics(t, metricdata.CumulativeTemporality))
	if err == nil || !strings.Contains(err.Error(), "redirect to another origin refused") {
		t.Errorf("a redirect to another origin: %v", err)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}

// TestHTTPTLS trusts the CA of OTEL_EXPORTER_OTLP_CERTIFICATE, and without it not the collector's certificate.
func TestHTTPTLS(t *testing.T) {
	rc := newReceiver(t, true, nil)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	spans, _ := exportersFor(t, ProtocolHTTP, rc.URL, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": ca}, nil)
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	spans, _ = exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("%d requests received", n)
	}
}

// TestShutdown stops an export under way, waits for it, and refuses exports after.
func TestShutdown(t *testing.T) {
	arrived := make(chan struct{})
	rc := newReceiver(t, false, func(_ int, _ http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	spans, metrics := exportersFor(t, ProtocolHTTP, rc.URL, nil, nil)
	exported := make(chan error, 1)
	go func() { exported <- spans.ExportSpans(context.Background(), testSpans(t)) }()
	<-arrived
	if err := spans.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-exported; err == nil {
		t.Error("the export under way at Shutdown succeeded")
	}
	if err := spans.ExportSpans(t.Context(), testSpans(t)); !errors.Is(err, errShutdown) {
		t.Errorf("export after Shutdown: %v", err)
	}
	if err := spans.Shutdown(t.Context()); !errors.Is(err, errShutdown) {
		t.Errorf("second Shutdown: %v", err)
	}
	if err := metrics.Shutdown(t.Context()); err != nil {
		t.Fatalf("metrics Shutdown: %v", err)
	}
	if err := metrics.Export(t.Context(), testMetrics(t, metricdata.CumulativeTemporality)); !errors.Is(err, errShutdown) {
		t.Errorf("metrics export after Shutdown: %v", err)
	}
	if err := metrics.ForceFlush(t.Context()); err != nil {
		t.Errorf("ForceFlush: %v", err)
	}
}

// TestMetricPreferences reads the temporality preference and the default histogram aggregation.
func TestMetricPreferences(t *testing.T) {
	for _, c := range []struct {
		pref                  string
		counter, updown, hist metricdata.Temporality
	}{
		{"", metricdata.CumulativeTemporality, metricdata.CumulativeTemporality, metricdata.CumulativeTemporality},
		{"Delta", metricdata.DeltaTemporality, metricdata.CumulativeTemporality, metricdata.DeltaTemporality},
		{"lowmemory", metricdata.DeltaTemporality, metricdata.CumulativeTemporality, metricdata.DeltaTemporality},
		{"cumulative", metricdata.CumulativeTemporality, metricdata.CumulativeTemporality, metricdata.CumulativeTemporality},
	} {
		_, m := exportersFor(t, ProtocolHTTP, "http://127.0.0.1:1", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": c.pref}, nil)
		updown := m.Temporality(sdkmetric.InstrumentKindUpDownCounter)
		if got := m.Temporality(sdkmetric.InstrumentKindCounter); got != c.counter || updown != c.updown ||
			m.Temporality(sdkmetric.InstrumentKindHistogram) != c.hist {
			t.Errorf("%q: counter %v, up-down %v", c.pref, got, updown)
		}
		// What tells delta from lowmemory: an observable counter is delta for the one, cumulative for the other.
		observed := m.Temporality(sdkmetric.InstrumentKindObservableCounter)
		if (observed == metricdata.DeltaTemporality) != (c.pref == "Delta") {
			t.Errorf("%q: observable counter %v", c.pref, observed)
		}
	}
	_, m := exportersFor(t, ProtocolHTTP, "http://127.0.0.1:1", map[string]string{
		"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": "base2_exponential_bucket_histogram"}, nil)
	if a, ok := m.Aggregation(sdkmetric.InstrumentKindHistogram).(sdkmetric.AggregationBase2ExponentialHistogram); !ok || a.MaxSize != 160 {
		t.Errorf("exponential histograms: %#v", m.Aggregation(sdkmetric.InstrumentKindHistogram))
	}
	_, m = exportersFor(t, ProtocolHTTP, "http://127.0.0.1:1", nil, nil)
	if _, ok := m.Aggregation(sdkmetric.InstrumentKindHistogram).(sdkmetric.AggregationExplicitBucketHistogram); !ok {
		t.Errorf("default histograms: %#v", m.Aggregation(sdkmetric.InstrumentKindHistogram))
	}
}

// TestResolveTarget checks where each signal goes for the forms of endpoint the variables take.
func TestResolveTarget(t *testing.T) {
	for _, c := range []struct {
		proto, base string
		env         map[string]string
		sig         signal
		want        string
	}{
		{ProtocolHTTP, "http://c:4318", nil, traceSignal, "http://c:4318/v1/traces"},
		{ProtocolHTTP, "https://c/prefix", nil, metricSignal, "https://c/prefix/v1/metrics"},
		{ProtocolHTTP, "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:1/p/"}, traceSignal, "http://c:1/p/v1/traces"},
		{ProtocolHTTP, "", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:1"}, metricSignal, "http://c:1/"},
		{ProtocolHTTP, "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, traceSignal, "http://c/v1/traces"},
		{ProtocolHTTP, "http://c", map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "false"}, traceSignal, "http://c/v1/traces"},
		{ProtocolGRPC, "http://c:4317/ignored", nil, traceSignal, "http://c:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export"},
		{ProtocolGRPC, "", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://c:4317"}, metricSignal, "https://c:4317/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"},
	} {
		tg, err := resolveTarget(vars(c.env), c.proto, c.base, nil, c.sig)
		if err != nil || tg.url.String() != c.want {
			t.Errorf("%s %q %v: %v, %v; want %s", c.proto, c.base, c.env, tg, err, c.want)
		}
	}
	if _, err := resolveTarget(vars(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "c:4317"}), ProtocolGRPC, "", nil, metricSignal); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
	tg, _ := resolveTarget(vars(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "1500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "x"}), ProtocolHTTP, "http://c", nil, traceSignal)
	if tg.timeout != defaultTimeout {
		t.Errorf("a timeout that is not a number: %v", tg.timeout)
	}
	tg, _ = resolveTarget(vars(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "1500"}), ProtocolHTTP, "http://c", nil, traceSignal)
	if tg.timeout != 1500*time.Millisecond {
		t.Errorf("timeout %v", tg.timeout)
	}
}

// collector is an OTLP/gRPC receiver on a real gRPC server. fail, when set, answers each call in its place.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricpb.UnimplementedMetricsServiceServer
	addr string
	fail func(n int) (proto.Message, error)

	mu      sync.Mutex
	calls   int
	spans   []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	md      []metadata.MD
}

func newCollector(t *testing.T) *collector {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{addr: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, c)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{c})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return c
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *collector) call(ctx context.Context) (proto.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	c.md = append(c.md, md)
	n := c.calls
	c.calls++
	if c.fail != nil {
		return c.fail(n)
	}
	return nil, nil
}

func (c *collector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	resp, err := c.call(ctx)
	c.mu.Lock()
	c.spans = append(c.spans, req)
	c.mu.Unlock()
	if r, ok := resp.(*coltracepb.ExportTraceServiceResponse); ok {
		return r, err
	}
	return &coltracepb.ExportTraceServiceResponse{}, err
}

// metricsService puts the metrics service's Export, which has the trace service's name, on its own type.
type metricsService struct{ *collector }

func (m metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	_, err := m.call(ctx)
	m.mu.Lock()
	m.metrics = append(m.metrics, req)
	m.mu.Unlock()
	return &colmetricpb.ExportMetricsServiceResponse{}, err
}

// TestExportGRPC sends spans and metrics over OTLP/gRPC, plain and gzip-compressed, to a gRPC server, which
// decodes exactly the encoded requests, with the headers as metadata.
func TestExportGRPC(t *testing.T) {
	for _, compression := range []string{"", "gzip"} {
		c := newCollector(t)
		spans, metrics := exportersFor(t, ProtocolGRPC, c.addr, map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": compression,
			"OTEL_EXPORTER_OTLP_HEADERS": "x-env=e"}, map[string]string{"x-key": "v"})
		ss, rm := testSpans(t), testMetrics(t, metricdata.CumulativeTemporality)
		if err := spans.ExportSpans(t.Context(), ss); err != nil {
			t.Fatalf("%q: spans: %v", compression, err)
		}
		if err := metrics.Export(t.Context(), rm); err != nil {
			t.Fatalf("%q: metrics: %v", compression, err)
		}
		var wantSpans coltracepb.ExportTraceServiceRequest
		var wantMetrics colmetricpb.ExportMetricsServiceRequest
		_ = proto.Unmarshal((&traceEncoder{}).encode(ss), &wantSpans)
		b, _ := (&metricEncoder{}).encode(rm)
		_ = proto.Unmarshal(b, &wantMetrics)
		c.mu.Lock()
		if len(c.spans) != 1 || !proto.Equal(c.spans[0], &wantSpans) || len(c.metrics) != 1 || !proto.Equal(c.metrics[0], &wantMetrics) {
			t.Errorf("%q: the server decoded other requests", compression)
		}
		for _, md := range c.md {
			if got := md.Get("x-key"); len(got) != 1 || got[0] != "v" || len(md.Get("x-env")) != 1 {
				t.Errorf("%q: metadata %v", compression, md)
			}
		}
		c.mu.Unlock()
	}
}

// TestGRPCStatus retries the codes the Go exporter retries, RESOURCE_EXHAUSTED only with a RetryInfo, whose delay
// it waits, and fails on the others; a partial success is reported.
func TestGRPCStatus(t *testing.T) {
	exhausted, _ := status.New(grpccodes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(25 * time.Second)})
	for _, c := range []struct {
		name  string
		fail  error
		calls int
		wait  time.Duration // the least first wait
		err   string
	}{
		{"unavailable", status.Error(grpccodes.Unavailable, "down"), 2, time.Second, ""},
		{"aborted", status.Error(grpccodes.Aborted, "again"), 2, time.Second, ""},
		{"invalid", status.Error(grpccodes.InvalidArgument, "bad spans: 100%"), 1, 0, "INVALID_ARGUMENT: bad spans: 100%"},
		{"exhausted", status.Error(grpccodes.ResourceExhausted, "quota"), 1, 0, "RESOURCE_EXHAUSTED: quota"},
		{"exhausted with retry info", exhausted.Err(), 2, 25 * time.Second, ""},
		{"unauthenticated", status.Error(grpccodes.Unauthenticated, "who"), 1, 0, "UNAUTHENTICATED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			waits := recordWaits(t)
			col := newCollector(t)
			col.fail = func(n int) (proto.Message, error) {
				if n == 0 {
					return nil, c.fail
				}
				return nil, nil
			}
			spans, _ := exportersFor(t, ProtocolGRPC, col.addr, nil, nil)
			err := spans.ExportSpans(t.Context(), testSpans(t))
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
			if n := col.count(); n != c.calls || len(*waits) != c.calls-1 || len(*waits) > 0 && (*waits)[0] < c.wait {
				t.Errorf("%d calls, waits %v; want %d calls, a wait of at least %v", n, *waits, c.calls, c.wait)
			}
		})
	}

	col := newCollector(t)
	col.fail = func(int) (proto.Message, error) {
		return &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "dup"}}, nil
	}
	spans, _ := exportersFor(t, ProtocolGRPC, col.addr, nil, nil)
	if err := spans.ExportSpans(t.Context(), testSpans(t)); err == nil || err.Error() != "OTLP partial success: dup (1 spans rejected)" {
		t.Errorf("partial success: %v", err)
	}

	// A server that is not there is UNAVAILABLE, retried until the export's time is up.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	waits := recordWaits(t)
	ctx, cancel := context.WithCancel(t.Context())
	sleep = func(context.Context, time.Duration) error {
		*waits = append(*waits, 0)
		cancel()
		return context.Canceled
	}
	spans, _ = exportersFor(t, ProtocolGRPC, "http://"+addr, nil, nil)
	if err := spans.ExportSpans(ctx, testSpans(t)); err == nil || !strings.Contains(err.Error(), "UNAVAILABLE") || len(*waits) != 1 {
		t.Errorf("no server: %v, waits %v", err, *waits)
	}
}
