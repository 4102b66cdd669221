package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// earlyAnswer is a RoundTripper that answers 400 at once and keeps each request's body unread, as a transport does
// whose collector answered before reading the body: net/http may go on reading a request's body after Do returned.
type earlyAnswer struct{ bodies []io.ReadCloser }

func (e *earlyAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	e.bodies = append(e.bodies, req.Body)
	return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestBodyOutlivesResponse: the body of one export is read only after the next exports were encoded, with gzip and
// without; each must still be its own export's request, whole.
func TestBodyOutlivesResponse(t *testing.T) {
	for _, gzip := range []bool{false, true} {
		env := map[string]string{}
		if gzip {
			env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
		}
		spans, _ := exportersFor(t, ProtocolHTTP, "http://127.0.0.1:9", env, nil)
		rt := &earlyAnswer{}
		spans.c.http.Transport = rt
		const exports = 3
		for i := range exports {
			if err := spans.ExportSpans(t.Context(), bigSpans(t, 4, marker(i))); err == nil || !strings.Contains(err.Error(), "400") {
				t.Fatalf("export %d: %v, want the collector's 400", i, err)
			}
		}
		if len(rt.bodies) != exports {
			t.Fatalf("%d requests, want %d", len(rt.bodies), exports)
		}
		for i, body := range rt.bodies {
			b, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if gzip {
				if b, err = gunzip(b); err != nil {
					t.Fatalf("gzip %v, body %d: %v", gzip, i, err)
				}
			}
			var req coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(b, &req); err != nil {
				t.Fatalf("gzip %v, body %d does not decode: %v", gzip, i, err)
			}
			n := 0
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						n++
						if got := s.Attributes[0].Value.GetStringValue(); got != marker(i) {
							t.Fatalf("gzip %v, body %d: a span of another export (%.8q...)", gzip, i, got)
						}
					}
				}
			}
			if n != 4 {
				t.Errorf("gzip %v, body %d: %d spans, want 4", gzip, i, n)
			}
		}
	}
}

func marker(i int) string { return strings.Repeat(string(rune('a'+i)), 4<<10) }

// bigSpans returns n ended spans, each with one attribute of value v.
func bigSpans(t *testing.T, n int, v string) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("big")
	for range n {
		_, s := tracer.Start(context.Background(), "big")
		s.SetAttributes(attribute.String("v", v))
		s.End()
	}
	return rec.Ended()
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}
