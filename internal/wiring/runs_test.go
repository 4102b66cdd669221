package wiring

import (
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/runlog"
)

// An app built with RecordRuns records its runs, the sub-agents' nested in them, with the content of the console's
// only unless [telemetry] capture_content says otherwise; without it there is no recorder.
func TestRecordRuns(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	for _, capture := range []bool{false, true} {
		cfg, err := config.Parse("agent.toml", []byte(`[model]
provider = "openai"
model = "scripted"
base_url = "`+s.URL+`"
api_key_env = "MODEL_KEY"

[builtin]
tools = ["calculate"]

[state]
backend = "memory"

[agents.helper]
description = "helps"
`), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		cfg.Telemetry.CaptureContent = capture
		app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return map[string]string{"MODEL_KEY": "sk"}[k] }, Version: "test", RecordRuns: true})
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		rec := app.Runs()
		if rec == nil {
			t.Fatal("Runs is nil with RecordRuns")
		}
		ctx, id := rec.Expect(t.Context(), "console")
		s.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculate", Arguments: `{"expression":"6*7"}`}, {ID: "c2", Name: "helper", Arguments: `{"task":"check it"}`}}},
			fakellm.Turn{Text: "checked"}, // the helper's
			fakellm.Turn{Text: "42"},
			fakellm.Turn{Text: "4"}, // the cli's run
		)
		if _, err := app.Orchestrator().Ask(ctx, &host.Request{Prompt: "what is 6*7?"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Orchestrator().Ask(host.WithOrigin(t.Context(), "cli"), &host.Request{Prompt: "what is 2+2?"}, nil); err != nil {
			t.Fatal(err)
		}
		runs := rec.Runs()
		if len(runs) != 2 || runs[1].ID != id {
			t.Fatalf("runs = %+v; want the console's and the cli's", runs)
		}
		console, cli := runs[1], runs[0]
		if console.Origin != "console" || !console.Content || console.Prompt != "what is 6*7?" || console.Status == runlog.StatusRunning || console.ModelCalls == 0 {
			t.Errorf("the console's run = %+v", console)
		}
		if cli.Origin != "cli" || cli.Content != capture || (cli.Prompt != "") == !capture {
			t.Errorf("capture_content %v: the cli's run = %+v", capture, cli)
		}
		if console.ToolCalls != 2 || console.ModelCalls != 3 {
			t.Errorf("the console's run = %+v; want its calls and the helper's", console)
		}
		_, entries, _ := rec.Run(id, 0)
		if len(entries) < 2 || entries[0].Kind != runlog.KindRunStart || entries[len(entries)-1].Kind != runlog.KindRunEnd {
			t.Errorf("the console's entries: %+v", entries)
		}
		// The helper's run nests in its call, and calculate's result is recorded.
		spans := map[string]string{} // tool call id -> span
		nested := 0
		for _, e := range entries {
			switch {
			case e.Kind == runlog.KindToolStart:
				spans[e.CallID] = e.Span
			case e.Kind == runlog.KindRunStart && e.Parent != "":
				nested++
				if e.Parent != spans["c2"] || e.Agent != "helper" {
					t.Errorf("the nested run_start = %+v; want it in helper's call %s", e, spans["c2"])
				}
			case e.Kind == runlog.KindToolEnd && e.CallID == "c1" && e.Result != "6*7 = 42":
				t.Errorf("calculate's tool_end = %+v", e)
			}
		}
		if nested != 1 {
			t.Errorf("%d nested runs; want the helper's", nested)
		}
	}

	cfg := config.Default()
	cfg.State.Backend = config.StateMemory
	app, err := Build(t.Context(), cfg, &Options{Model: "test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if app.Runs() != nil {
		t.Error("Runs is not nil without RecordRuns")
	}
}
