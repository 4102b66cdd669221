package wiring

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/telemetry"
)

// recordConfig is an agent on the scripted model at url, with calculate, telemetry as [telemetry] enabled says.
func recordConfig(tb testing.TB, url string, telemetryOn bool) *config.Config {
	tb.Helper()
	toml := `[model]
provider = "openai"
model = "scripted"
base_url = "` + url + `"
api_key_env = "MODEL_KEY"

[builtin]
tools = ["calculate"]

[state]
backend = "memory"
`
	if telemetryOn {
		toml += "\n[telemetry]\nexporter = \"otlp\"\nprotocol = \"http/protobuf\"\nendpoint = \"http://127.0.0.1:1\"\n" // nothing listens: spans are dropped
	}
	cfg, err := config.Parse("agent.toml", []byte(toml), func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

func buildRecorded(tb testing.TB, cfg *config.Config, record bool) *App {
	tb.Helper()
	app, err := Build(context.Background(), cfg, &Options{Getenv: func(k string) string { return map[string]string{"MODEL_KEY": "sk"}[k] }, Version: "test", RecordRuns: record})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { app.Close() })
	return app
}

// TestNoRecorderWithoutRecordRuns: without RecordRuns (`run`, and `serve` without --ui) the runs are observed by
// telemetry alone, or by nothing when it is off: no recorder sits in their path.
func TestNoRecorderWithoutRecordRuns(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	for _, on := range []bool{false, true} {
		app := buildRecorded(t, recordConfig(t, s.URL, on), false)
		if app.Runs() != nil {
			t.Errorf("telemetry %v: Runs is not nil without RecordRuns", on)
		}
		if want := app.tel.Observer(); app.observer != want {
			t.Errorf("telemetry %v: the runs' observer is %T, want telemetry's (%T)", on, app.observer, want)
		}
		if on != (app.observer != nil) {
			t.Errorf("telemetry %v: the runs' observer is %T", on, app.observer)
		}
		if _, ok := app.observer.(*telemetry.Telemetry); on && !ok {
			t.Errorf("the runs' observer is %T, want *telemetry.Telemetry", app.observer)
		}
		// With the recorder, it is not telemetry's alone.
		rec := buildRecorded(t, recordConfig(t, s.URL, on), true)
		if rec.Runs() == nil || rec.observer == rec.tel.Observer() {
			t.Errorf("telemetry %v: RecordRuns installed no recorder (observer %T)", on, rec.observer)
		}
	}
}

// benchmarkRun runs b.N runs of one calculate call and a streamed answer on the scripted model, through the app
// Build makes with or without the console's recorder (telemetry off, as by default).
func benchmarkRun(b *testing.B, record bool) {
	s := fakellm.New()
	b.Cleanup(s.Close)
	app := buildRecorded(b, recordConfig(b, s.URL, false), record)
	s.SetResponder(func(r *fakellm.Request) fakellm.Turn {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return fakellm.Turn{Text: "The answer is 42, as calculate says: six times seven is forty-two."}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "calculate", Arguments: `{"expression":"6*7"}`}}}
	})
	ctx := host.WithOrigin(context.Background(), "console")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := app.Orchestrator().Ask(ctx, &host.Request{Prompt: "what is 6*7?"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	if record && len(app.Runs().Runs()) == 0 {
		b.Fatal("no run recorded")
	}
}

// BenchmarkRunPlain: a run as `run` and `serve` make it, with no console.
func BenchmarkRunPlain(b *testing.B) { benchmarkRun(b, false) }

// BenchmarkRunRecorded: the same run with the console's recorder installed (RecordRuns), its content recorded.
func BenchmarkRunRecorded(b *testing.B) { benchmarkRun(b, true) }
