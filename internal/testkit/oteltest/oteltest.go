// Package oteltest is test support for the telemetry packages: OpenTelemetry SDK providers that record in memory, an
// attribute lookup, and a scripted model that describes itself as a real provider would.
package oteltest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/agenthost/llm"
)

// Providers returns a tracer provider recording into the returned recorder, and a meter provider read by the
// returned reader; both are shut down when the test ends.
func Providers(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder, *sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return tp, sr, mp, reader
}

// Attrs maps attributes by key.
func Attrs(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// Scripted is a model that answers with Turns in order (an error once they run out) and describes itself as
// provider "openai", model "m1" at model.test:443.
type Scripted struct {
	mu    sync.Mutex
	Turns []llm.Message
}

var _ llm.Model = (*Scripted)(nil)

// Describe implements llm.Describer.
func (m *Scripted) Describe() llm.Info {
	return llm.Info{Provider: "openai", Name: "m1", Address: "model.test", Port: 443}
}

// Generate implements llm.Model.
func (m *Scripted) Generate(_ context.Context, _ *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.Turns) == 0 {
		return nil, errors.New("script exhausted")
	}
	msg := m.Turns[0]
	m.Turns = m.Turns[1:]
	finish := llm.FinishStop
	if len(msg.ToolCalls) > 0 {
		finish = llm.FinishToolCalls
	}
	return &llm.Response{Message: msg, FinishReason: finish, Model: "m1-2026", Usage: llm.Usage{Requests: 1, PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}}, nil
}
