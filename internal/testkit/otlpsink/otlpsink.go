// Package otlpsink is an OTLP/HTTP receiver for tests: it decodes the protobuf exports of traces and metrics that
// an OpenTelemetry SDK sends to /v1/traces and /v1/metrics and keeps them for the test to read.
package otlpsink

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened.
type Span struct {
	Service  string // the resource's service.name
	Name     string
	Kind     string // "internal", "server", "client", "producer", "consumer"
	TraceID  string
	SpanID   string
	ParentID string // "" for a root span
	// Attrs are the span's attributes: strings, int64s, float64s, bools, or []any for arrays.
	Attrs map[string]any
	// Error is the status message of a span whose status is ERROR; OK is false then.
	OK    bool
	Error string
}

// Sink is a running receiver.
type Sink struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []Span
	metrics map[string]map[string]bool // metric name → services that sent it
	headers []http.Header
}

// New starts a receiver on a free port of 127.0.0.1. Close it when done.
func New() *Sink { return NewOn(nil) }

// NewOn starts a receiver on ln, or on a free port of 127.0.0.1 when ln is nil. Close it when done.
func NewOn(ln net.Listener) *Sink {
	s := &Sink{metrics: map[string]map[string]bool{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if ln != nil {
		s.Listener.Close()
		s.Listener = ln
	}
	s.Start()
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	var reply proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.addSpans(&req)
		reply = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.addMetrics(&req)
		reply = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *Sink) addSpans(req *coltracepb.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service, _ := attrs(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				span := Span{
					Service: service, Name: sp.GetName(), Kind: kind(sp.GetKind()),
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					Attrs: attrs(sp.GetAttributes()), OK: sp.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR,
				}
				if p := sp.GetParentSpanId(); len(p) > 0 {
					span.ParentID = hex.EncodeToString(p)
				}
				if !span.OK {
					span.Error = sp.GetStatus().GetMessage()
				}
				s.spans = append(s.spans, span)
			}
		}
	}
}

func (s *Sink) addMetrics(req *colmetricpb.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		service, _ := attrs(rm.GetResource().GetAttributes())["service.name"].(string)
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if s.metrics[m.GetName()] == nil {
					s.metrics[m.GetName()] = map[string]bool{}
				}
				s.metrics[m.GetName()][service] = true
			}
		}
	}
}

// Spans returns the spans received so far, in arrival order.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spans)
}

// Metric reports whether service sent the metric name.
func (s *Sink) Metric(name, service string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metrics[name][service]
}

// Headers returns the headers of every export request received.
func (s *Sink) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.headers)
}

func kind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}
