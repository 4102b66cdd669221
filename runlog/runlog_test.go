package runlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/runlog"
)

// The secrets of the content tests: each is in the prompt, an argument, a result or the model's text.
var secrets = []string{"SECRET-PROMPT", "SECRET-ARG", "SECRET-TASK", "SECRET-SUB", "SECRET-ANSWER"}

// nestedTurns script a run that calls echo and the sub-agent helper in one turn, then answers.
func nestedTurns() []fakellm.Turn {
	return []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{
			{ID: "c1", Name: "echo", Arguments: `{"x":"SECRET-ARG"}`},
			{ID: "c2", Name: "helper", Arguments: `{"task":"SECRET-TASK"}`},
		}},
		{Text: "SECRET-SUB says hello"},      // the helper's answer
		{Text: "SECRET-ANSWER: all is well"}, // main's
	}
}

// A run expected and followed before it starts is handed over whole, in order, without a gap or a duplicate: the
// root run, its model calls, its tool calls and the sub-agent's run nested in its call, up to the end.
func TestFollowRecordsNestedRun(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	if id == "" {
		t.Fatal("Expect gave no id")
	}
	sum, entries, ok := h.rec.Run(id, 0)
	if !ok || sum.Status != runlog.StatusRunning || len(entries) != 0 || sum.Origin != "console" {
		t.Fatalf("the expected run before it starts = %+v, %d entries, %v; want it running, console's, without entries", sum, len(entries), ok)
	}
	wait := follow(t.Context(), h.rec, id)

	ans, err := h.ask(ctx, "SECRET-PROMPT: say hello", nil, nestedTurns()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wait()
	if err != nil {
		t.Fatalf("Follow = %v; want nil once the run ended", err)
	}
	sum, entries, _ = h.rec.Run(id, 0)
	if !reflect.DeepEqual(got, entries) {
		t.Fatalf("Follow handed over %d entries that differ from the %d kept", len(got), len(entries))
	}
	for i, e := range got {
		if e.Seq != i+1 {
			t.Fatalf("entry %d has seq %d", i+1, e.Seq)
		}
	}
	want := []string{
		"run_start r1<",
		"iteration r1<",
		"model_start m2<r1",
		"model_end m2<r1",
		"tool_start t3<r1",
		"tool_start t4<r1",
		"run_start r5<t4",
		"iteration r5<t4",
		"model_start m6<r5",
		"text m6<r5",
		"model_end m6<r5",
		"answer r5<t4",
		"run_end r5<t4",
		"tool_end t3<r1",
		"tool_end t4<r1",
		"iteration r1<",
		"model_start m7<r1",
		"text m7<r1",
		"model_end m7<r1",
		"answer r1<",
		"run_end r1<",
	}
	if k := kinds(got); !slices.Equal(k, want) {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(k, "\n"), strings.Join(want, "\n"))
	}

	// The content of a console's run is kept.
	if e := got[0]; e.Prompt != "SECRET-PROMPT: say hello" || e.Agent != "main" || e.Model != "fake-model" {
		t.Errorf("run_start = %+v", e)
	}
	if e := got[4]; e.Name != "echo" || e.CallID != "c1" || string(e.Arguments) != `{"x":"SECRET-ARG"}` || e.Source != "kit" {
		t.Errorf("echo's tool_start = %+v", e)
	}
	if e := got[6]; e.Prompt != "SECRET-TASK" || e.Agent != "helper" {
		t.Errorf("the nested run_start = %+v", e)
	}
	ends := only(got, runlog.KindToolEnd)
	if e := ends[0]; e.Result != "echoed SECRET-ARG" || e.OK == nil || !*e.OK || e.Info == nil || e.Info.ID != "c1" {
		t.Errorf("echo's tool_end = %+v", e)
	}
	if e := ends[1]; !strings.Contains(e.Result, "SECRET-SUB says hello") || e.OK == nil || !*e.OK {
		t.Errorf("helper's tool_end = %+v", e)
	}
	if s := text(got, "m7"); s != "SECRET-ANSWER: all is well" {
		t.Errorf("main's text = %q", s)
	}
	starts := only(got, runlog.KindModelStart)
	if e := starts[2]; len(e.Messages) == 0 || e.Messages[0].Content == "" || e.Tools == 0 || e.Iteration != 1 {
		t.Errorf("main's second model_start = %+v", e)
	}
	if e := only(got, runlog.KindModelEnd)[0]; len(e.ToolCalls) != 2 || e.Usage == nil || e.Usage.TotalTokens != 30 || e.FinishReason != "tool_calls" {
		t.Errorf("main's first model_end = %+v", e)
	}
	last := got[len(got)-1]
	if last.StoppedBy != host.StopAnswered || last.Usage == nil || last.Error != "" {
		t.Errorf("run_end = %+v", last)
	}
	if a := got[len(got)-2].Answer; a == nil || a.Text != ans.Text || len(a.ToolCalls) != 2 {
		t.Errorf("the answer entry = %+v; want the run's answer %q", a, ans.Text)
	}

	if sum.Status != runlog.Status(host.StopAnswered) || sum.Ended == nil || sum.ModelCalls != 3 || sum.ToolCalls != 2 ||
		sum.Usage.TotalTokens != 90 || sum.Entries != len(entries) || sum.Dropped != 0 || !sum.Content ||
		sum.Prompt != "SECRET-PROMPT: say hello" || sum.Agent != "main" || sum.ID != id {
		t.Errorf("summary = %+v", sum)
	}
	if runs := h.rec.Runs(); len(runs) != 1 || runs[0].ID != id {
		t.Errorf("Runs = %+v; want the one run", runs)
	}
	// Following an ended run hands over what is kept after the seq given, and returns.
	var rest []runlog.Entry
	if err := h.rec.Follow(t.Context(), id, len(entries)-2, func(e runlog.Entry) { rest = append(rest, e) }); err != nil || len(rest) != 2 || rest[1].Kind != runlog.KindRunEnd {
		t.Errorf("Follow of the ended run after %d = %v, %+v; want its last two entries", len(entries)-2, err, rest)
	}
	if err := h.rec.Follow(t.Context(), "nope", 0, func(runlog.Entry) {}); err == nil {
		t.Error("Follow of an unknown run returned nil")
	}
}

// Without content (the default for any origin but the console's) no prompt, argument, result, text or answer is
// kept: only sizes, names, timings, usage and errors.
func TestRunWithoutContent(t *testing.T) {
	h := newHarness(t, nil)
	ctx := host.WithOrigin(t.Context(), "mcp")
	ans, err := h.ask(ctx, "SECRET-PROMPT: say hello", nil, nestedTurns()...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, "SECRET-ANSWER") {
		t.Fatalf("answer %q", ans.Text)
	}
	sum, entries := lastRun(t, h.rec)
	if sum.Origin != "mcp" || sum.Content || sum.Prompt != "" {
		t.Errorf("summary = %+v; want mcp's, without content", sum)
	}
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("entry %s holds %s: %s", e.Kind, s, b)
			}
		}
	}
	b, _ := json.Marshal(sum)
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("the summary holds %s: %s", s, b)
		}
	}
	// The sizes stay.
	if e := entries[0]; e.Bytes != len("SECRET-PROMPT: say hello") {
		t.Errorf("run_start = %+v; want the prompt's size", e)
	}
	if e := only(entries, runlog.KindToolStart)[0]; e.Name != "echo" || e.Bytes != len(`{"x":"SECRET-ARG"}`) {
		t.Errorf("echo's tool_start = %+v; want its name and the arguments' size", e)
	}
	if e := only(entries, runlog.KindToolEnd)[0]; e.Bytes != len("echoed SECRET-ARG") || e.OK == nil || !*e.OK {
		t.Errorf("echo's tool_end = %+v; want the result's size", e)
	}
	if a := only(entries, runlog.KindAnswer)[1].Answer; a == nil || a.Text != "" || a.StoppedBy != host.StopAnswered || len(a.ToolCalls) != 2 {
		t.Errorf("the answer = %+v; want it without text, with the rest", a)
	}
	if texts := only(entries, runlog.KindText); len(texts) == 0 || texts[0].Bytes == 0 {
		t.Errorf("text entries = %+v; want their sizes", texts)
	}

	// Content, when the options say so for an origin, is kept for it.
	h = newHarness(t, &runlog.Options{Content: func(origin string) bool { return origin == "mcp" }})
	if _, err := h.ask(ctx, "SECRET-PROMPT", nil, fakellm.Turn{Text: "SECRET-ANSWER"}); err != nil {
		t.Fatal(err)
	}
	if sum, entries := lastRun(t, h.rec); !sum.Content || entries[0].Prompt != "SECRET-PROMPT" {
		t.Errorf("summary = %+v, run_start %+v; want mcp's content kept", sum, entries[0])
	}
}

// A cancelled run ends, cancelled; a follower sees the end.
func TestCancelledRun(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctx, id := h.rec.Expect(ctx, "console")
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- h.rec.Follow(t.Context(), id, 0, func(e runlog.Entry) {
			if e.Kind == runlog.KindToolStart {
				close(started)
			}
		})
	}()
	h.llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b1", Name: "block", Arguments: `{}`}}})
	go func() {
		<-started
		cancel()
	}()
	_, err := h.orch.Ask(ctx, &host.Request{Prompt: "wait"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask = %v; want cancelled", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v", err)
	}
	sum, entries, _ := h.rec.Run(id, 0)
	last := entries[len(entries)-1]
	if sum.Status != runlog.Status(host.StopCancelled) || sum.Ended == nil || last.Kind != runlog.KindRunEnd || last.StoppedBy != host.StopCancelled || last.Error == "" {
		t.Errorf("summary %+v, last entry %+v; want the run ended, cancelled", sum, last)
	}
	if e := only(entries, runlog.KindToolEnd); len(e) != 1 || e[0].OK == nil || *e[0].OK {
		t.Errorf("tool_end = %+v; want block's, failed", e)
	}
}

// Ending ctx ends Follow with ctx's error.
func TestFollowEndsWithContext(t *testing.T) {
	rec := runlog.New(nil)
	_, id := rec.Expect(t.Context(), "console")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rec.Follow(ctx, id, 0, func(runlog.Entry) {}) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Follow = %v; want context.Canceled", err)
	}
}
