package otlp

import (
	"encoding/binary"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The messages of opentelemetry-proto (opentelemetry/proto/{common,resource,trace}/v1, collector/trace/v1) that
// carry spans, encoded from the SDK's data as the OTLP exporters' transform does. Field numbers are the .proto
// files'.

// Span flags of trace.proto: the low byte is the W3C trace flags.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// spanGroup is the spans of one resource and instrumentation scope, in the order they came.
type spanGroup struct {
	res   attribute.Distinct
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

// traceEncoder encodes ExportTraceServiceRequests. Its buffers are reused from one export to the next: it is not
// safe for concurrent use.
type traceEncoder struct {
	buf    []byte
	groups []spanGroup
}

// encode returns spans as an ExportTraceServiceRequest. The slice is the encoder's, valid until the next call.
// Spans are grouped by resource, then by scope, each in order of first appearance, so the same spans always give
// the same bytes.
func (e *traceEncoder) encode(spans []sdktrace.ReadOnlySpan) []byte {
	groups := e.groups[:0]
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource().Equivalent(), s.InstrumentationScope()
		i := 0
		for i < len(groups) && (groups[i].res != res || groups[i].scope != scope) {
			i++
		}
		if i == len(groups) {
			if i < cap(groups) {
				groups = groups[:i+1]
				groups[i].res, groups[i].scope, groups[i].spans = res, scope, groups[i].spans[:0]
			} else {
				groups = append(groups, spanGroup{res: res, scope: scope})
			}
		}
		groups[i].spans = append(groups[i].spans, s)
	}

	b := e.buf[:0]
	for i, g := range groups {
		if resourceSeen(groups[:i], g.res) {
			continue
		}
		// ResourceSpans: resource = 1, scope_spans = 2, schema_url = 3.
		var rs int
		b, rs = beginMessage(b, 1)
		r := g.spans[0].Resource()
		if r != nil {
			b = appendResource(b, 1, r)
		}
		for _, sg := range groups[i:] {
			if sg.res != g.res {
				continue
			}
			b = appendScopeSpans(b, 2, &sg)
		}
		b = appendString(b, 3, r.SchemaURL())
		b = endMessage(b, rs)
	}
	// The groups keep no span once encoded, so as not to hold them until the next export.
	for i := range groups {
		clear(groups[i].spans)
	}
	e.groups, e.buf = groups, b
	return b
}

func resourceSeen(groups []spanGroup, res attribute.Distinct) bool {
	for _, g := range groups {
		if g.res == res {
			return true
		}
	}
	return false
}

// appendResource appends a Resource: attributes = 1.
func appendResource(b []byte, field int, r *resource.Resource) []byte {
	b, m := beginMessage(b, field)
	for it := r.Iter(); it.Next(); {
		b = appendKeyValue(b, 1, it.Attribute())
	}
	return endMessage(b, m)
}

// appendScope appends an InstrumentationScope: name = 1, version = 2, attributes = 3.
func appendScope(b []byte, field int, s instrumentation.Scope) []byte {
	b, m := beginMessage(b, field)
	b = appendString(b, 1, s.Name)
	b = appendString(b, 2, s.Version)
	for it := s.Attributes.Iter(); it.Next(); {
		b = appendKeyValue(b, 3, it.Attribute())
	}
	return endMessage(b, m)
}

// appendScopeSpans appends a ScopeSpans: scope = 1, spans = 2, schema_url = 3. A span without a scope has none.
func appendScopeSpans(b []byte, field int, g *spanGroup) []byte {
	b, m := beginMessage(b, field)
	if g.scope != (instrumentation.Scope{}) {
		b = appendScope(b, 1, g.scope)
	}
	for _, s := range g.spans {
		b = appendSpan(b, 2, s)
	}
	b = appendString(b, 3, g.scope.SchemaURL)
	return endMessage(b, m)
}

// appendSpan appends a Span.
func appendSpan(b []byte, field int, s sdktrace.ReadOnlySpan) []byte {
	b, m := beginMessage(b, field)
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, spanKind(s.SpanKind()))
	b = appendFixed64(b, 7, unixNano(s.StartTime()))
	b = appendFixed64(b, 8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, 9, kv)
	}
	b = appendVarint(b, 10, clampUint32(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		// Span.Event: time_unix_nano = 1, name = 2, attributes = 3, dropped_attributes_count = 4.
		var em int
		b, em = beginMessage(b, 11)
		b = appendFixed64(b, 1, unixNano(ev.Time))
		b = appendString(b, 2, ev.Name)
		for _, kv := range ev.Attributes {
			b = appendKeyValue(b, 3, kv)
		}
		b = appendVarint(b, 4, clampUint32(ev.DroppedAttributeCount))
		b = endMessage(b, em)
	}
	b = appendVarint(b, 12, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		// Span.Link: trace_id = 1, span_id = 2, trace_state = 3, attributes = 4, dropped_attributes_count = 5,
		// flags = 6.
		var lm int
		b, lm = beginMessage(b, 13)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, 1, ltid[:])
		b = appendBytes(b, 2, lsid[:])
		b = appendString(b, 3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			b = appendKeyValue(b, 4, kv)
		}
		b = appendVarint(b, 5, clampUint32(l.DroppedAttributeCount))
		b = appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = endMessage(b, lm)
	}
	b = appendVarint(b, 14, clampUint32(s.DroppedLinks()))
	// Status: message = 2, code = 3 (unset 0, ok 1, error 2). It is always sent, as the Go exporters do.
	st := s.Status()
	var sm int
	b, sm = beginMessage(b, 15)
	b = appendString(b, 2, st.Description)
	switch st.Code {
	case codes.Ok:
		b = appendVarint(b, 3, 1)
	case codes.Error:
		b = appendVarint(b, 3, 2)
	}
	b = endMessage(b, sm)
	b = appendFixed32(b, 16, spanFlags(sc.TraceFlags(), parent))
	return endMessage(b, m)
}

// spanFlags are the W3C trace flags, and whether the parent (or the linked span) is remote, which is always known.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | spanFlagsHasIsRemote
	if parent.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

// spanKind is the Span.SpanKind of k.
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// appendKeyValue appends a KeyValue: key = 1, value = 2. The value is always sent, empty for an empty one.
func appendKeyValue(b []byte, field int, kv attribute.KeyValue) []byte {
	b, m := beginMessage(b, field)
	b = appendString(b, 1, string(kv.Key))
	b = appendAnyValue(b, 2, kv.Value)
	return endMessage(b, m)
}

// appendAnyValue appends an AnyValue: string_value = 1, bool_value = 2, int_value = 3, double_value = 4,
// array_value = 5 (ArrayValue: values = 1), kvlist_value = 6 (KeyValueList: values = 1), bytes_value = 7. They are a
// oneof: the one set is sent even when it is zero.
func appendAnyValue(b []byte, field int, v attribute.Value) []byte {
	b, m := beginMessage(b, field)
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		b = appendTag(b, 2, wireVarint)
		b = append(b, boolByte(v.AsBool()))
	case attribute.INT64:
		b = appendTag(b, 3, wireVarint)
		b = binary.AppendUvarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendFixed64Always(b, 4, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendStringAlways(b, 1, v.AsString())
	case attribute.BYTESLICE:
		b = appendTag(b, 7, wireBytes)
		bs := v.AsByteSlice()
		b = binary.AppendUvarint(b, uint64(len(bs)))
		b = append(b, bs...)
	case attribute.BOOLSLICE:
		b = appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		b = appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		b = appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		b = appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		b = appendArray(b, v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		var a int
		b, a = beginMessage(b, 6)
		for _, kv := range v.AsMap() {
			b = appendKeyValue(b, 1, kv)
		}
		b = endMessage(b, a)
	default:
		b = appendStringAlways(b, 1, "INVALID") // as the Go exporters send a type they do not know
	}
	return endMessage(b, m)
}

// appendArray appends the array_value of an AnyValue: each of xs, made a Value by value.
func appendArray[T any](b []byte, xs []T, value func(T) attribute.Value) []byte {
	b, m := beginMessage(b, 5)
	for _, x := range xs {
		b = appendAnyValue(b, 1, value(x))
	}
	return endMessage(b, m)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func boolVarint(v bool) uint64 { return uint64(boolByte(v)) }

// unixNano is t in nanoseconds since the epoch, 0 for a time before it.
func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

func clampUint32(v int) uint64 { return uint64(min(max(v, 0), math.MaxUint32)) }
