package otlp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// allAttributes has an attribute of every type the API has.
var allAttributes = []attribute.KeyValue{
	attribute.Bool("bool", true),
	attribute.Bool("false", false),
	attribute.Int64("int", -42),
	attribute.Int64("zero", 0),
	attribute.Float64("float", 2.5),
	attribute.String("string", "héllo"),
	attribute.String("empty-string", ""),
	attribute.BoolSlice("bools", []bool{true, false}),
	attribute.Int64Slice("ints", []int64{1, -2, 1 << 40}),
	attribute.Float64Slice("floats", []float64{0.5, -1}),
	attribute.StringSlice("strings", []string{"a", "", "c"}),
	attribute.ByteSlice("bytes", []byte{0, 1, 2}),
	attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two")),
	attribute.Map("map", attribute.String("k", "v"), attribute.Int("n", 3)),
	{Key: "none"},
	attribute.String("long", string(bytes.Repeat([]byte("x"), 300))), // a length of two varint bytes
}

var (
	remoteParent = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1},
		TraceFlags: trace.FlagsSampled, Remote: true, TraceState: mustTraceState("vendor=opaque"),
	})
	linked = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, SpanID: trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2},
		Remote: true,
	})
)

func mustTraceState(s string) trace.TraceState {
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		panic(err)
	}
	return ts
}

// testSpans returns spans of the real SDK with everything a span can carry: every attribute type, events, links,
// each status and kind, a remote parent, two scopes and two resources.
func testSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "svc"),
		attribute.Int("pid", 7))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	a := tp.Tracer("scope-a", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL("https://example.com/schema"),
		trace.WithInstrumentationAttributes(attribute.String("lib", "a")))
	b := tp.Tracer("scope-b")

	at := time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remoteParent)
	ctx, root := a.Start(ctx, "root", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(allAttributes...),
		trace.WithTimestamp(at), trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "cause")}}))
	root.AddEvent("event", trace.WithTimestamp(at.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("n", 1)))
	root.AddEvent("bare", trace.WithTimestamp(at.Add(2*time.Millisecond)))
	root.SetStatus(codes.Error, "boom")
	for i, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindInternal, trace.SpanKindProducer, trace.SpanKindConsumer} {
		tracer := a
		if i%2 == 1 {
			tracer = b
		}
		_, s := tracer.Start(ctx, "child", trace.WithSpanKind(kind), trace.WithTimestamp(at))
		if i == 0 {
			s.SetStatus(codes.Ok, "")
		}
		s.End(trace.WithTimestamp(at.Add(time.Second)))
	}
	root.End(trace.WithTimestamp(at.Add(2 * time.Second)))

	// A span of another resource, without a scope.
	spans := append(rec.Ended(), tracetest.SpanStub{Name: "elsewhere", StartTime: at, EndTime: at,
		Resource: resource.NewSchemaless(attribute.String("service.name", "other"))}.Snapshot())
	if len(spans) != 6 {
		t.Fatalf("%d spans recorded", len(spans))
	}
	return spans
}

// testMetrics returns metrics of the real SDK of every kind: int and float sums (monotonic or not), gauges,
// explicit and exponential histograms, with exemplars, and a summary, which the SDK does not make.
func testMetrics(t testing.TB, temporality metricdata.Temporality) *metricdata.ResourceMetrics {
	t.Helper()
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return temporality
	}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithExemplarFilter(exemplar.AlwaysOnFilter),
		sdkmetric.WithResource(resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "svc"))),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "exp.*"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})))
	m := mp.Meter("meter", metric.WithInstrumentationVersion("v2"), metric.WithInstrumentationAttributes(attribute.Int("n", 1)))
	ctx := trace.ContextWithSpanContext(context.Background(), remoteParent) // sampled: exemplars carry its ids
	attrs := metric.WithAttributes(attribute.String("route", "/x"), attribute.Bool("ok", true))

	ic, _ := m.Int64Counter("int.counter", metric.WithUnit("{call}"), metric.WithDescription("calls"))
	ic.Add(ctx, 3, attrs)
	fc, _ := m.Float64UpDownCounter("float.updown")
	fc.Add(ctx, -1.5, attrs)
	fc.Add(ctx, 0.25)
	ig, _ := m.Int64Gauge("int.gauge")
	ig.Record(ctx, 7)
	fg, _ := m.Float64Gauge("float.gauge")
	fg.Record(ctx, 0)
	ih, _ := m.Int64Histogram("int.histogram")
	for _, v := range []int64{1, 10, 100, 1000} {
		ih.Record(ctx, v, attrs)
	}
	fh, _ := m.Float64Histogram("float.histogram", metric.WithExplicitBucketBoundaries(0.1, 1))
	fh.Record(ctx, 0.5)
	eh, _ := m.Float64Histogram("exp.histogram")
	for _, v := range []float64{-2, 0, 0.001, 3, 3000} {
		eh.Record(ctx, v)
	}
	ieh, _ := m.Int64Histogram("exp.int")
	ieh.Record(ctx, 5)
	_, _ = m.Int64ObservableCounter("observed", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(11)
		return nil
	}))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	start, now := time.Unix(1700000000, 1), time.Unix(1700000060, 2)
	rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{
		Scope: instrumentation.Scope{Name: "summaries", Version: "v1", SchemaURL: "https://example.com/s"},
		Metrics: []metricdata.Metrics{{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
			Attributes: attribute.NewSet(attribute.String("q", "p")), StartTime: start, Time: now, Count: 4, Sum: 10.5,
			QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 0.5, Value: 2.5}, {Quantile: 1, Value: 4}},
		}}}}},
	})
	return &rm
}

// capture is an OTLP/HTTP receiver that keeps the bodies it gets.
type capture struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) last(t *testing.T) []byte {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == 0 {
		t.Fatal("nothing received")
	}
	return c.bodies[len(c.bodies)-1]
}

// upstreamSpans is what the OpenTelemetry OTLP/HTTP exporter sends for spans.
func upstreamSpans(t *testing.T, spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	c := newCapture(t)
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(c.URL+"/v1/traces"), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	if err := exp.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(c.last(t), &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// upstreamMetrics is what the OpenTelemetry OTLP/HTTP exporter sends for rm.
func upstreamMetrics(t *testing.T, rm *metricdata.ResourceMetrics) []byte {
	t.Helper()
	c := newCapture(t)
	exp, err := otlpmetrichttp.New(t.Context(), otlpmetrichttp.WithEndpointURL(c.URL+"/v1/metrics"), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	if err := exp.Export(t.Context(), rm); err != nil {
		t.Fatal(err)
	}
	return c.last(t)
}

// TestEncodeSpans checks the encoding of spans against what the OpenTelemetry exporter sends for them, and that it
// is the canonical encoding, proto.Marshal's, byte for byte.
func TestEncodeSpans(t *testing.T) {
	spans := testSpans(t)
	var enc traceEncoder
	got := bytes.Clone(enc.encode(spans))
	if again := enc.encode(spans); !bytes.Equal(got, again) {
		t.Fatal("the same spans encoded twice differ")
	}
	var mine coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(got, &mine); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if canonical, _ := proto.Marshal(&mine); !bytes.Equal(got, canonical) {
		t.Errorf("the encoding is not proto.Marshal's:\n got %x\nwant %x", got, canonical)
	}

	// Field by field, the things the OpenTelemetry transform leaves out or groups at random aside.
	if n := len(mine.ResourceSpans); n != 2 {
		t.Fatalf("%d resource spans, want 2", n)
	}
	rs := mine.ResourceSpans[0]
	if rs.SchemaUrl != "https://opentelemetry.io/schemas/1.26.0" || len(rs.ScopeSpans) != 2 {
		t.Errorf("first resource: %v", prototext.Format(rs))
	}
	a := rs.ScopeSpans[0]
	if s := a.Scope; s.Name != "scope-a" || s.Version != "1.2.3" || a.SchemaUrl != "https://example.com/schema" ||
		len(s.Attributes) != 1 || s.Attributes[0].Value.GetStringValue() != "a" {
		t.Errorf("scope a: %v", prototext.Format(a.Scope))
	}
	var root *tracepb.Span
	for _, s := range a.Spans {
		if s.Name == "root" {
			root = s
		}
	}
	if root == nil {
		t.Fatal("no root span")
	}
	checkRoot(t, root)
	if other := mine.ResourceSpans[1].ScopeSpans[0]; other.Scope != nil || other.Spans[0].Name != "elsewhere" {
		t.Errorf("span without a scope: %v", prototext.Format(other))
	}

	// Then everything against the OpenTelemetry exporter, once the link's trace state, which it does not send, is
	// put aside. It groups resources in map order: compare resource by resource.
	want := upstreamSpans(t, spans)
	root.Links[0].TraceState = ""
	if len(want.ResourceSpans) != 2 {
		t.Fatalf("upstream: %d resource spans", len(want.ResourceSpans))
	}
	for _, w := range want.ResourceSpans {
		matched := false
		for _, g := range mine.ResourceSpans {
			matched = matched || proto.Equal(g, w)
		}
		if !matched {
			t.Errorf("no resource spans like upstream's:\n%v\nmine:\n%v", prototext.Format(w), prototext.Format(&mine))
		}
	}
}

func checkRoot(t *testing.T, root *tracepb.Span) {
	t.Helper()
	if !bytes.Equal(root.TraceId, traceID(remoteParent)) || !bytes.Equal(root.ParentSpanId, []byte{1, 1, 1, 1, 1, 1, 1, 1}) ||
		root.TraceState != "vendor=opaque" || len(root.SpanId) != 8 {
		t.Errorf("ids: trace %x parent %x span %x state %q", root.TraceId, root.ParentSpanId, root.SpanId, root.TraceState)
	}
	if root.Flags != 0x301 { // sampled, parent known to be remote, and remote
		t.Errorf("flags %#x", root.Flags)
	}
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER || root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || root.Status.GetMessage() != "boom" {
		t.Errorf("kind %v status %v", root.Kind, root.Status)
	}
	if root.StartTimeUnixNano != uint64(time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC).UnixNano()) || root.EndTimeUnixNano-root.StartTimeUnixNano != uint64(2*time.Second) {
		t.Errorf("times %d %d", root.StartTimeUnixNano, root.EndTimeUnixNano)
	}
	got := map[string]*commonpb.AnyValue{}
	for _, kv := range root.Attributes {
		got[kv.Key] = kv.Value
	}
	for key, want := range map[string]*commonpb.AnyValue{
		"bool":         {Value: &commonpb.AnyValue_BoolValue{BoolValue: true}},
		"false":        {Value: &commonpb.AnyValue_BoolValue{BoolValue: false}},
		"int":          {Value: &commonpb.AnyValue_IntValue{IntValue: -42}},
		"zero":         {Value: &commonpb.AnyValue_IntValue{IntValue: 0}},
		"float":        {Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 2.5}},
		"string":       {Value: &commonpb.AnyValue_StringValue{StringValue: "héllo"}},
		"empty-string": {Value: &commonpb.AnyValue_StringValue{StringValue: ""}},
		"bools":        array(&commonpb.AnyValue_BoolValue{BoolValue: true}, &commonpb.AnyValue_BoolValue{BoolValue: false}),
		"ints":         array(&commonpb.AnyValue_IntValue{IntValue: 1}, &commonpb.AnyValue_IntValue{IntValue: -2}, &commonpb.AnyValue_IntValue{IntValue: 1 << 40}),
		"floats":       array(&commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}, &commonpb.AnyValue_DoubleValue{DoubleValue: -1}),
		"strings":      array(&commonpb.AnyValue_StringValue{StringValue: "a"}, &commonpb.AnyValue_StringValue{StringValue: ""}, &commonpb.AnyValue_StringValue{StringValue: "c"}),
		"bytes":        {Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2}}},
		"mixed":        array(&commonpb.AnyValue_IntValue{IntValue: 1}, &commonpb.AnyValue_StringValue{StringValue: "two"}),
		"map": {Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}},
			{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 3}}},
		}}}},
		"none": {},
	} {
		if !proto.Equal(got[key], want) {
			t.Errorf("attribute %s = %v, want %v", key, got[key], want)
		}
	}
	if len(root.Events) != 2 || root.Events[0].Name != "event" || root.Events[0].Attributes[0].Value.GetIntValue() != 1 ||
		root.Events[1].TimeUnixNano-root.StartTimeUnixNano != uint64(2*time.Millisecond) {
		t.Errorf("events: %v", root.Events)
	}
	if len(root.Links) != 1 {
		t.Fatalf("links: %v", root.Links)
	}
	l := root.Links[0]
	if !bytes.Equal(l.SpanId, []byte{2, 2, 2, 2, 2, 2, 2, 2}) || l.Flags != 0x300 || l.Attributes[0].Value.GetStringValue() != "cause" {
		t.Errorf("link: %v", l)
	}
}

func traceID(sc trace.SpanContext) []byte {
	id := sc.TraceID()
	return id[:]
}

func array(vs ...any) *commonpb.AnyValue {
	a := &commonpb.ArrayValue{}
	for _, v := range vs {
		switch v := v.(type) {
		case *commonpb.AnyValue_BoolValue:
			a.Values = append(a.Values, &commonpb.AnyValue{Value: v})
		case *commonpb.AnyValue_IntValue:
			a.Values = append(a.Values, &commonpb.AnyValue{Value: v})
		case *commonpb.AnyValue_DoubleValue:
			a.Values = append(a.Values, &commonpb.AnyValue{Value: v})
		case *commonpb.AnyValue_StringValue:
			a.Values = append(a.Values, &commonpb.AnyValue{Value: v})
		}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: a}}
}

// TestEncodeMetrics checks the encoding of metrics of every kind, byte for byte, against what the OpenTelemetry
// exporter sends for them, in both temporalities.
func TestEncodeMetrics(t *testing.T) {
	for _, temporality := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		rm := testMetrics(t, temporality)
		var enc metricEncoder
		got, err := enc.encode(rm)
		if err != nil {
			t.Fatal(err)
		}
		want := upstreamMetrics(t, rm)
		if !bytes.Equal(got, want) {
			var g, w colmetricpb.ExportMetricsServiceRequest
			_ = proto.Unmarshal(got, &g)
			_ = proto.Unmarshal(want, &w)
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("%s: not the OpenTelemetry exporter's encoding (equal messages: %v; from byte %d: %x, want %x):\n%v\nwant:\n%v",
				temporality, proto.Equal(&g, &w), i, got[i:min(i+40, len(got))], want[i:min(i+40, len(want))], prototext.Format(&g), prototext.Format(&w))
		}

		// What the comparison rests on: each kind is there, with its exemplars.
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(got, &req); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]*metricpb.Metric{}
		for _, sm := range req.ResourceMetrics[0].ScopeMetrics {
			for _, m := range sm.Metrics {
				kinds[m.Name] = m
			}
		}
		wantTemporality := metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
		if temporality == metricdata.DeltaTemporality {
			wantTemporality = metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		}
		if s := kinds["int.counter"].GetSum(); !s.GetIsMonotonic() || s.GetAggregationTemporality() != wantTemporality ||
			s.DataPoints[0].GetAsInt() != 3 || len(s.DataPoints[0].Exemplars) == 0 ||
			!bytes.Equal(s.DataPoints[0].Exemplars[0].TraceId, traceID(remoteParent)) || kinds["int.counter"].Unit != "{call}" {
			t.Errorf("int counter: %v", prototext.Format(kinds["int.counter"]))
		}
		if s := kinds["float.updown"].GetSum(); s.GetIsMonotonic() || len(s.GetDataPoints()) != 2 {
			t.Errorf("float up-down counter: %v", prototext.Format(kinds["float.updown"]))
		}
		if g := kinds["float.gauge"].GetGauge(); g == nil || g.DataPoints[0].GetValue() == nil {
			t.Errorf("float gauge of 0: %v", prototext.Format(kinds["float.gauge"]))
		}
		if h := kinds["int.histogram"].GetHistogram(); h == nil || h.DataPoints[0].GetCount() != 4 || h.DataPoints[0].GetMax() != 1000 ||
			len(h.DataPoints[0].ExplicitBounds) == 0 {
			t.Errorf("histogram: %v", prototext.Format(kinds["int.histogram"]))
		}
		if h := kinds["exp.histogram"].GetExponentialHistogram(); h == nil || h.DataPoints[0].GetCount() != 5 || h.DataPoints[0].GetZeroCount() != 1 ||
			len(h.DataPoints[0].GetPositive().GetBucketCounts()) == 0 || h.DataPoints[0].GetMin() != -2 {
			t.Errorf("exponential histogram: %v", prototext.Format(kinds["exp.histogram"]))
		}
		if s := kinds["summary"].GetSummary(); s == nil || len(s.DataPoints[0].QuantileValues) != 3 {
			t.Errorf("summary: %v", prototext.Format(kinds["summary"]))
		}
	}
}

// TestEncodeMetricsUnknown leaves out a metric OTLP cannot carry and says so, and encodes the rest.
func TestEncodeMetricsUnknown(t *testing.T) {
	rm := &metricdata.ResourceMetrics{Resource: resource.Empty(), ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "odd", Data: nil},
		{Name: "sum", Data: metricdata.Sum[int64]{Temporality: metricdata.Temporality(9), DataPoints: []metricdata.DataPoint[int64]{{Value: 1}}}},
		{Name: "good", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: 1}}}},
	}}}}
	got, err := (&metricEncoder{}).encode(rm)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"odd"`)) || !bytes.Contains([]byte(err.Error()), []byte("temporality")) {
		t.Errorf("error: %v", err)
	}
	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(got, &req); err != nil {
		t.Fatal(err)
	}
	ms := req.ResourceMetrics[0].ScopeMetrics[0].Metrics
	if len(ms) != 1 || ms[0].Name != "good" {
		t.Errorf("metrics: %v", prototext.Format(&req))
	}
}

// FuzzFields checks that the reader of collector responses never fails but with an error on any input.
func FuzzFields(f *testing.F) {
	ok, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "m"}})
	f.Add(ok)
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = partialSuccess(b, "spans")
		_, _ = retryInfo(b)
	})
}

// BenchmarkEncode measures the encoding of a batch of spans and of metrics of every kind into the reused buffers.
func BenchmarkEncode(b *testing.B) {
	spans, rm := testSpans(b), testMetrics(b, metricdata.CumulativeTemporality)
	b.Run("spans", func(b *testing.B) {
		var enc traceEncoder
		b.ReportAllocs()
		for b.Loop() {
			enc.encode(spans)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		var enc metricEncoder
		b.ReportAllocs()
		for b.Loop() {
			_, _ = enc.encode(rm)
		}
	})
}
