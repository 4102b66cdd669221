package otlp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The messages of opentelemetry-proto (opentelemetry/proto/metrics/v1, collector/metrics/v1) that carry metrics,
// encoded from the SDK's data as the OTLP exporters' transform does. Field numbers are the .proto files'.

var (
	errUnknownAggregation = errors.New("unknown aggregation")
	errUnknownTemporality = errors.New("unknown temporality")
)

// metricEncoder encodes ExportMetricsServiceRequests. Its buffer is reused from one export to the next: it is not
// safe for concurrent use.
type metricEncoder struct {
	buf []byte
}

// encode returns rm as an ExportMetricsServiceRequest. The slice is the encoder's, valid until the next call. A
// metric of an aggregation or temporality OTLP has no message for is left out, and reported in the error; the rest
// is encoded all the same.
func (e *metricEncoder) encode(rm *metricdata.ResourceMetrics) ([]byte, error) {
	var errs []error
	// ResourceMetrics: resource = 1, scope_metrics = 2, schema_url = 3. The resource and each scope are always sent.
	b, m := beginMessage(e.buf[:0], 1)
	b = appendResource(b, 1, rm.Resource)
	for i := range rm.ScopeMetrics {
		sm := &rm.ScopeMetrics[i]
		// ScopeMetrics: scope = 1, metrics = 2, schema_url = 3.
		var sp int
		b, sp = beginMessage(b, 2)
		b = appendScope(b, 1, sm.Scope)
		for j := range sm.Metrics {
			var err error
			if b, err = appendMetric(b, 2, &sm.Metrics[j]); err != nil {
				errs = append(errs, fmt.Errorf("metric %q: %w", sm.Metrics[j].Name, err))
			}
		}
		b = appendString(b, 3, sm.Scope.SchemaURL)
		b = endMessage(b, sp)
	}
	b = appendString(b, 3, rm.Resource.SchemaURL())
	b = endMessage(b, m)
	e.buf = b
	return b, errors.Join(errs...)
}

// appendMetric appends a Metric: name = 1, description = 2, unit = 3, and one of gauge = 5, sum = 7, histogram = 9,
// exponential_histogram = 10, summary = 11. A metric it cannot encode leaves b as it was.
func appendMetric(b []byte, field int, m *metricdata.Metrics) ([]byte, error) {
	start := len(b)
	b, mm := beginMessage(b, field)
	b = appendString(b, 1, m.Name)
	b = appendString(b, 2, m.Description)
	b = appendString(b, 3, m.Unit)
	var err error
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		b = appendGauge(b, a)
	case metricdata.Gauge[float64]:
		b = appendGauge(b, a)
	case metricdata.Sum[int64]:
		b, err = appendSum(b, a)
	case metricdata.Sum[float64]:
		b, err = appendSum(b, a)
	case metricdata.Histogram[int64]:
		b, err = appendHistogram(b, a)
	case metricdata.Histogram[float64]:
		b, err = appendHistogram(b, a)
	case metricdata.ExponentialHistogram[int64]:
		b, err = appendExponentialHistogram(b, a)
	case metricdata.ExponentialHistogram[float64]:
		b, err = appendExponentialHistogram(b, a)
	case metricdata.Summary:
		b = appendSummary(b, a)
	default:
		err = fmt.Errorf("%w: %T", errUnknownAggregation, a)
	}
	if err != nil {
		return b[:start], err
	}
	return endMessage(b, mm), nil
}

// temporality is the AggregationTemporality of t: delta 1, cumulative 2.
func temporality(t metricdata.Temporality) (uint64, error) {
	switch t {
	case metricdata.DeltaTemporality:
		return 1, nil
	case metricdata.CumulativeTemporality:
		return 2, nil
	}
	return 0, fmt.Errorf("%w: %s", errUnknownTemporality, t)
}

// appendGauge appends a Gauge: data_points = 1.
func appendGauge[N int64 | float64](b []byte, g metricdata.Gauge[N]) []byte {
	b, m := beginMessage(b, 5)
	for i := range g.DataPoints {
		b = appendNumberDataPoint(b, 1, &g.DataPoints[i])
	}
	return endMessage(b, m)
}

// appendSum appends a Sum: data_points = 1, aggregation_temporality = 2, is_monotonic = 3.
func appendSum[N int64 | float64](b []byte, s metricdata.Sum[N]) ([]byte, error) {
	t, err := temporality(s.Temporality)
	if err != nil {
		return b, err
	}
	b, m := beginMessage(b, 7)
	for i := range s.DataPoints {
		b = appendNumberDataPoint(b, 1, &s.DataPoints[i])
	}
	b = appendVarint(b, 2, t)
	b = appendVarint(b, 3, boolVarint(s.IsMonotonic))
	return endMessage(b, m), nil
}

// appendNumberDataPoint appends a NumberDataPoint: start_time_unix_nano = 2, time_unix_nano = 3, exemplars = 5,
// attributes = 7, and the value, of the oneof as_double = 4 and as_int = 6, last.
func appendNumberDataPoint[N int64 | float64](b []byte, field int, p *metricdata.DataPoint[N]) []byte {
	b, m := beginMessage(b, field)
	b = appendFixed64(b, 2, unixNano(p.StartTime))
	b = appendFixed64(b, 3, unixNano(p.Time))
	b = appendExemplars(b, 5, p.Exemplars)
	b = appendAttributeSet(b, 7, p.Attributes)
	b = appendNumber(b, 4, 6, p.Value)
	return endMessage(b, m)
}

// appendNumber appends v as the double field or the sfixed64 field of a oneof.
func appendNumber[N int64 | float64](b []byte, double, sfixed64 int, v N) []byte {
	if isInt[N]() {
		return appendFixed64Always(b, sfixed64, uint64(int64(v)))
	}
	return appendFixed64Always(b, double, math.Float64bits(float64(v)))
}

// appendHistogram appends a Histogram: data_points = 1, aggregation_temporality = 2.
func appendHistogram[N int64 | float64](b []byte, h metricdata.Histogram[N]) ([]byte, error) {
	t, err := temporality(h.Temporality)
	if err != nil {
		return b, err
	}
	b, m := beginMessage(b, 9)
	for i := range h.DataPoints {
		// HistogramDataPoint: start_time_unix_nano = 2, time_unix_nano = 3, count = 4, sum = 5, bucket_counts = 6,
		// explicit_bounds = 7, exemplars = 8, attributes = 9, min = 11, max = 12.
		p := &h.DataPoints[i]
		var pm int
		b, pm = beginMessage(b, 1)
		b = appendFixed64(b, 2, unixNano(p.StartTime))
		b = appendFixed64(b, 3, unixNano(p.Time))
		b = appendFixed64(b, 4, p.Count)
		b = appendFixed64Always(b, 5, math.Float64bits(float64(p.Sum)))
		b = appendPackedFixed64(b, 6, p.BucketCounts, func(v uint64) uint64 { return v })
		b = appendPackedFixed64(b, 7, p.Bounds, math.Float64bits)
		b = appendExemplars(b, 8, p.Exemplars)
		b = appendAttributeSet(b, 9, p.Attributes)
		b = appendExtrema(b, 11, p.Min)
		b = appendExtrema(b, 12, p.Max)
		b = endMessage(b, pm)
	}
	b = appendVarint(b, 2, t)
	return endMessage(b, m), nil
}

// appendExponentialHistogram appends an ExponentialHistogram: data_points = 1, aggregation_temporality = 2.
func appendExponentialHistogram[N int64 | float64](b []byte, h metricdata.ExponentialHistogram[N]) ([]byte, error) {
	t, err := temporality(h.Temporality)
	if err != nil {
		return b, err
	}
	b, m := beginMessage(b, 10)
	for i := range h.DataPoints {
		// ExponentialHistogramDataPoint: attributes = 1, start_time_unix_nano = 2, time_unix_nano = 3, count = 4,
		// sum = 5, scale = 6, zero_count = 7, positive = 8, negative = 9, exemplars = 11, min = 12, max = 13,
		// zero_threshold = 14.
		p := &h.DataPoints[i]
		var pm int
		b, pm = beginMessage(b, 1)
		b = appendAttributeSet(b, 1, p.Attributes)
		b = appendFixed64(b, 2, unixNano(p.StartTime))
		b = appendFixed64(b, 3, unixNano(p.Time))
		b = appendFixed64(b, 4, p.Count)
		b = appendFixed64Always(b, 5, math.Float64bits(float64(p.Sum)))
		b = appendSint32(b, 6, p.Scale)
		b = appendFixed64(b, 7, p.ZeroCount)
		b = appendBuckets(b, 8, p.PositiveBucket)
		b = appendBuckets(b, 9, p.NegativeBucket)
		b = appendExemplars(b, 11, p.Exemplars)
		b = appendExtrema(b, 12, p.Min)
		b = appendExtrema(b, 13, p.Max)
		b = appendDouble(b, 14, p.ZeroThreshold)
		b = endMessage(b, pm)
	}
	b = appendVarint(b, 2, t)
	return endMessage(b, m), nil
}

// appendBuckets appends ExponentialHistogramDataPoint.Buckets: offset = 1, bucket_counts = 2 (packed varints).
func appendBuckets(b []byte, field int, bk metricdata.ExponentialBucket) []byte {
	b, m := beginMessage(b, field)
	b = appendSint32(b, 1, bk.Offset)
	if len(bk.Counts) > 0 {
		var c int
		b, c = beginMessage(b, 2)
		for _, n := range bk.Counts {
			b = binary.AppendUvarint(b, n)
		}
		b = endMessage(b, c)
	}
	return endMessage(b, m)
}

// appendSummary appends a Summary: data_points = 1.
func appendSummary(b []byte, s metricdata.Summary) []byte {
	b, m := beginMessage(b, 11)
	for i := range s.DataPoints {
		// SummaryDataPoint: start_time_unix_nano = 2, time_unix_nano = 3, count = 4, sum = 5, quantile_values = 6,
		// attributes = 7.
		p := &s.DataPoints[i]
		var pm int
		b, pm = beginMessage(b, 1)
		b = appendFixed64(b, 2, unixNano(p.StartTime))
		b = appendFixed64(b, 3, unixNano(p.Time))
		b = appendFixed64(b, 4, p.Count)
		b = appendDouble(b, 5, p.Sum)
		for _, q := range p.QuantileValues {
			// ValueAtQuantile: quantile = 1, value = 2.
			var qm int
			b, qm = beginMessage(b, 6)
			b = appendDouble(b, 1, q.Quantile)
			b = appendDouble(b, 2, q.Value)
			b = endMessage(b, qm)
		}
		b = appendAttributeSet(b, 7, p.Attributes)
		b = endMessage(b, pm)
	}
	return endMessage(b, m)
}

// appendExemplars appends Exemplars: time_unix_nano = 2, span_id = 4, trace_id = 5, filtered_attributes = 7, and the
// value, of the oneof as_double = 3 and as_int = 6, last.
func appendExemplars[N int64 | float64](b []byte, field int, es []metricdata.Exemplar[N]) []byte {
	for i := range es {
		e := &es[i]
		var m int
		b, m = beginMessage(b, field)
		b = appendFixed64(b, 2, unixNano(e.Time))
		b = appendBytes(b, 4, e.SpanID)
		b = appendBytes(b, 5, e.TraceID)
		for _, kv := range e.FilteredAttributes {
			b = appendKeyValue(b, 7, kv)
		}
		b = appendNumber(b, 3, 6, e.Value)
		b = endMessage(b, m)
	}
	return b
}

// appendExtrema appends an optional double: sent when the extremum is known, even if zero.
func appendExtrema[N int64 | float64](b []byte, field int, e metricdata.Extrema[N]) []byte {
	if v, ok := e.Value(); ok {
		b = appendFixed64Always(b, field, math.Float64bits(float64(v)))
	}
	return b
}

// appendPackedFixed64 appends a packed repeated fixed64 or double field, nothing when it is empty.
func appendPackedFixed64[T any](b []byte, field int, vs []T, bits func(T) uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	b = appendTag(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(8*len(vs)))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, bits(v))
	}
	return b
}

func appendAttributeSet(b []byte, field int, s attribute.Set) []byte {
	for it := s.Iter(); it.Next(); {
		b = appendKeyValue(b, field, it.Attribute())
	}
	return b
}

// isInt reports whether N is int64.
func isInt[N int64 | float64]() bool {
	var zero N
	_, ok := any(zero).(int64)
	return ok
}
