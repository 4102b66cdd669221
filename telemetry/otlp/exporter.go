package otlp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errShutdown is what an export returns once its exporter is shut down.
var errShutdown = errors.New("otlp: the exporter is shut down")

// spanExporter sends spans to a collector over OTLP. It is safe for concurrent use; exports run one at a time.
type spanExporter struct {
	life lifecycle
	mu   sync.Mutex // held through an export: the encoder and client buffers are reused
	enc  traceEncoder
	c    *client
}

var _ sdktrace.SpanExporter = (*spanExporter)(nil)

func newSpanExporter(t *target) *spanExporter { return &spanExporter{c: newClient(t)} }

// ExportSpans implements sdktrace.SpanExporter. A collector's partial success is returned as an error, for the
// span processor to report.
func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	ctx, done, err := e.life.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	e.mu.Lock()
	defer e.mu.Unlock()
	resp, err := e.c.send(ctx, e.enc.encode(spans))
	if err != nil {
		return fmt.Errorf("otlp: traces export: %w", err)
	}
	return partialSuccess(resp, traceSignal.items)
}

// Shutdown implements sdktrace.SpanExporter: it stops an export under way, waits for it as long as ctx lets it,
// and closes the connections.
func (e *spanExporter) Shutdown(ctx context.Context) error {
	err := e.life.shutdown(ctx)
	e.c.closeIdle()
	return err
}

// metricExporter sends metrics to a collector over OTLP. It is safe for concurrent use; exports run one at a time.
type metricExporter struct {
	life        lifecycle
	temporality sdkmetric.TemporalitySelector
	aggregation sdkmetric.AggregationSelector
	mu          sync.Mutex // held through an export: the encoder and client buffers are reused
	enc         metricEncoder
	c           *client
}

var _ sdkmetric.Exporter = (*metricExporter)(nil)

func newMetricExporter(t *target, temporality sdkmetric.TemporalitySelector, aggregation sdkmetric.AggregationSelector) *metricExporter {
	return &metricExporter{c: newClient(t), temporality: temporality, aggregation: aggregation}
}

// Temporality implements sdkmetric.Exporter.
func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

// Aggregation implements sdkmetric.Exporter.
func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return e.aggregation(k)
}

// Export implements sdkmetric.Exporter. A metric OTLP cannot carry is left out and reported in the error, the rest
// sent; a collector's partial success is returned as an error, for the reader to report.
func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	ctx, done, err := e.life.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	e.mu.Lock()
	defer e.mu.Unlock()
	body, encErr := e.enc.encode(rm)
	resp, err := e.c.send(ctx, body)
	if err != nil {
		if encErr != nil {
			return fmt.Errorf("otlp: metrics export, of incomplete metrics (%w): %w", encErr, err)
		}
		return fmt.Errorf("otlp: metrics export: %w", err)
	}
	if encErr != nil {
		encErr = fmt.Errorf("otlp: metrics export: %w", encErr)
	}
	return errors.Join(encErr, partialSuccess(resp, metricSignal.items))
}

// ForceFlush implements sdkmetric.Exporter: the exporter holds nothing back.
func (e *metricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

// Shutdown implements sdkmetric.Exporter: it stops an export under way, waits for it as long as ctx lets it, and
// closes the connections.
func (e *metricExporter) Shutdown(ctx context.Context) error {
	err := e.life.shutdown(ctx)
	e.c.closeIdle()
	return err
}

// partialSuccessError is a collector's answer that it accepted an export but for some of its items, or with a warning.
type partialSuccessError struct {
	Rejected int64
	Items    string // "spans" or "metric data points"
	Message  string
}

func (p *partialSuccessError) Error() string {
	msg := p.Message
	if msg == "" {
		msg = "empty message"
	}
	return fmt.Sprintf("OTLP partial success: %s (%d %s rejected)", msg, p.Rejected, p.Items)
}

// partialSuccess reads an ExportTraceServiceResponse or ExportMetricsServiceResponse, which have the same shape
// (partial_success = 1: rejected count = 1, error_message = 2), and returns its partial success, if any, as an
// error.
func partialSuccess(resp []byte, items string) error {
	p := &partialSuccessError{Items: items}
	err := fields(resp, func(f field) error {
		if f.num != 1 || f.wire != wireBytes {
			return nil
		}
		return fields(f.data, func(g field) error {
			switch {
			case g.num == 1 && g.wire == wireVarint:
				p.Rejected = int64(g.n)
			case g.num == 2 && g.wire == wireBytes:
				p.Message = string(g.data)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("otlp: the collector's response: %w", err)
	}
	if p.Rejected == 0 && p.Message == "" {
		return nil
	}
	return p
}

// lifecycle tracks an exporter's exports so that Shutdown can stop them and wait for them: no export, and no
// goroutine of one, outlives it.
type lifecycle struct {
	mu      sync.Mutex
	closed  bool
	next    uint64
	running map[uint64]context.CancelFunc
	idle    chan struct{} // closed when the last export ends after shutdown began
}

// begin starts an export under ctx. It returns the export's context, which shutdown cancels, and done, which the
// export calls when it ends.
func (l *lifecycle) begin(ctx context.Context) (context.Context, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, errShutdown
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if l.running == nil {
		l.running = map[uint64]context.CancelFunc{}
	}
	id := l.next
	l.next++
	l.running[id] = func() { cancel(errShutdown) }
	return ctx, func() {
		cancel(nil)
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.running, id)
		if l.closed && len(l.running) == 0 && l.idle != nil {
			close(l.idle)
			l.idle = nil
		}
	}, nil
}

// shutdown refuses new exports, cancels those under way and waits for them to end, or for ctx. A second call
// returns errShutdown.
func (l *lifecycle) shutdown(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errShutdown
	}
	l.closed = true
	if len(l.running) == 0 {
		l.mu.Unlock()
		return ctx.Err()
	}
	idle := make(chan struct{})
	l.idle = idle
	for _, cancel := range l.running {
		cancel()
	}
	l.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
