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
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/runlog"
)

// The secrets of the content tests: each is in the prompt, an argument, a result or the model's text.
var secrets = []string{"SECRET-PROMPT", "SECRET-ARG", "SECRET-TASK", "SECRET-SUB", "SECRET-ANSWER", "SECRET-FAIL",
	"SECRET-PROGRESS", "SECRET-TITLE", "SECRET-URI", "SECRET-EXCERPT", "SECRET-PARTIAL"}

// failingTurns script a run whose first turn calls a tool that fails (its text and debug details secret), one that
// reports secret progress, one that fails with a Go error, one with a secret reference (and checks), and the
// sub-agent helper, which writes a secret, calls echo, then fails for good (its answer, an error, holds its secret
// text); then the run answers, citing the reference.
func failingTurns() []fakellm.Turn {
	return []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{
			{ID: "f1", Name: "fail", Arguments: `{"x":"SECRET-FAIL"}`},
			{ID: "p1", Name: "chatty", Arguments: `{"n":1,"msg":"SECRET-PROGRESS"}`},
			{ID: "o1", Name: "oops", Arguments: `{}`},
			{ID: "r1", Name: "cited", Arguments: `{}`},
			{ID: "s1", Name: "helper", Arguments: `{"task":"SECRET-TASK"}`},
		}},
		{Text: "SECRET-PARTIAL first", ToolCalls: []fakellm.ToolCall{{ID: "h1", Name: "echo", Arguments: `{"x":"sub"}`}}}, // the helper's
		{Status: 400, ErrorMessage: "bad request"}, // the helper's
		{Text: "SECRET-ANSWER, says [source 1]."},
	}
}

// noSecret fails t when the JSON of v holds a secret.
func noSecret(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds %s: %s", what, s, b)
		}
	}
}

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

// progressOf returns the tool_progress entries of the call callID.
func progressOf(entries []runlog.Entry, callID string) []runlog.Entry {
	return slices.DeleteFunc(only(entries, runlog.KindToolProgress), func(e runlog.Entry) bool { return e.CallID != callID })
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
		noSecret(t, "entry "+string(e.Kind), e)
	}
	noSecret(t, "the summary", sum)
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

	// Tools that fail, report progress, cite; a sub-agent that fails: the tools' own texts are not kept, nor debug
	// details, progress messages, check details, reference titles and URIs. The numbers and a Go error's text are.
	ans, err = h.ask(ctx, "SECRET-PROMPT: fail", nil, failingTurns()...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ans.Text, "SECRET-TITLE") || len(ans.Checks) != 2 {
		t.Fatalf("answer %q with checks %+v; want it to list the secret source, checked", ans.Text, ans.Checks)
	}
	sum, entries = lastRun(t, h.rec)
	for _, e := range entries {
		noSecret(t, "entry "+string(e.Kind), e)
	}
	noSecret(t, "the summary", sum)
	ends := map[string]runlog.Entry{}
	for _, e := range only(entries, runlog.KindToolEnd) {
		ends[e.CallID] = e
	}
	if e := ends["f1"]; e.OK == nil || *e.OK || e.Error != "" || e.Info == nil || e.Info.Debug != nil || e.Bytes == 0 {
		t.Errorf("fail's tool_end = %+v; want it failed, without its error text or debug details", e)
	}
	if e := ends["o1"]; e.Error != "oops broke" || e.Info == nil || e.Info.Error != "oops broke" {
		t.Errorf("oops's tool_end = %+v; want its Go error", e)
	}
	if e := ends["s1"]; e.OK == nil || *e.OK || e.Error != "" || e.Info.Debug != nil {
		t.Errorf("helper's tool_end = %+v; want it failed, without its answer's text", e)
	}
	// chatty (p1) runs beside the sub-agent (s1), whose status reaches the run as progress too: in either order.
	if chatty := progressOf(entries, "p1"); len(chatty) == 0 || chatty[0].Progress.Progress != 1 || chatty[0].Progress.Total != 1 {
		t.Errorf("chatty's progress = %+v; want its numbers", chatty)
	}
	if c := only(entries, runlog.KindCheck); len(c) != 2 || c[1].Check.Name != host.CheckSchema || !c[1].Check.Passed || c[1].Check.Detail != "" {
		t.Errorf("checks = %+v; want both, without details", c)
	}
	a := only(entries, runlog.KindAnswer)
	root := a[len(a)-1].Answer
	if len(root.References) != 1 || root.References[0].Number != 1 || len(root.Checks) != 2 || root.Checks[1].Detail != "" || root.Result != nil {
		t.Errorf("the answer = %+v; want its reference numbered, its checks without details", root)
	}
	for _, c := range root.ToolCalls {
		if want := map[string]string{"o1": "oops broke"}[c.ID]; c.Error != want || c.Debug != nil {
			t.Errorf("the answer's call %s = %+v; want error %q, no debug details", c.ID, c, want)
		}
	}
	if len(root.ToolCalls) != 5 {
		t.Errorf("the answer's calls = %+v; want 5", root.ToolCalls)
	}

	// The same run from the console keeps all of it.
	_, err = h.ask(host.WithOrigin(t.Context(), "console"), "SECRET-PROMPT: fail", nil, failingTurns()...)
	if err != nil {
		t.Fatal(err)
	}
	_, entries = lastRun(t, h.rec)
	ends = map[string]runlog.Entry{}
	for _, e := range only(entries, runlog.KindToolEnd) {
		ends[e.CallID] = e
	}
	if e := ends["f1"]; e.Error != "failed SECRET-FAIL" || e.Info.Debug["why"] != "SECRET-FAIL" {
		t.Errorf("fail's tool_end = %+v; want its error and debug details", e)
	}
	if e := ends["s1"]; !strings.Contains(e.Error, "SECRET-PARTIAL") {
		t.Errorf("helper's tool_end = %+v; want its error", e)
	}
	if p := progressOf(entries, "p1"); len(p) == 0 || p[0].Progress.Message != "SECRET-PROGRESS" {
		t.Errorf("chatty's progress = %+v; want its message", p)
	}
	a = only(entries, runlog.KindAnswer)
	if root := a[len(a)-1].Answer; root.References[0].Title != "SECRET-TITLE" || root.Checks[1].Detail == "" {
		t.Errorf("the answer = %+v; want its reference's title and its checks' details", root)
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

// What a recorder keeps is its own: changing what it was handed afterwards changes no entry.
func TestEntriesAreCopies(t *testing.T) {
	rec := runlog.New(nil)
	ctx, id := rec.Expect(t.Context(), "console")
	runCtx, end := rec.StartRun(ctx, &host.RunStart{Agent: "a", Prompt: "p"})
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi", ToolCalls: []llm.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}}
	_, endModel := rec.StartModelCall(runCtx, &host.ModelCallStart{Iteration: 1, Request: &llm.Request{Messages: msgs}})
	resp := &llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}}
	endModel(resp, nil)
	args := json.RawMessage(`{"a":1}`)
	info := &host.ToolCallInfo{ID: "c", Name: "n", Flags: []string{"forced"}, Debug: map[string]any{"k": "v"}, OK: true}
	rec.ObserveEvent(runCtx, &host.Event{Kind: host.EventToolEnd, Iteration: 1, ToolCall: &host.ToolEvent{ID: "c", Name: "n",
		Arguments: args, Result: &host.Result{Text: "r"}, Info: info}})
	check := &host.CheckResult{Name: "complete", Detail: "d"}
	rec.ObserveEvent(runCtx, &host.Event{Kind: host.EventCheck, Check: check})
	ans := &host.Answer{StoppedBy: host.StopAnswered, ToolCalls: []host.ToolCallInfo{*info}, Checks: []host.CheckResult{*check},
		Iterations: []host.IterationInfo{{Iteration: 1, ToolsLoaded: []string{"x"}}}}
	end(ans, nil)
	_, entries, _ := rec.Run(id, 0)
	want, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}

	msgs[0].ToolCalls[0].Arguments = "changed"
	resp.Message.ToolCalls[0].Arguments = "changed"
	copy(args, `{"b":2}`)
	info.Flags[0], info.Debug["k"] = "changed", "changed"
	check.Detail = "changed"
	ans.ToolCalls[0].Flags[0], ans.Checks[0].Detail, ans.Iterations[0].ToolsLoaded[0] = "changed", "changed", "changed"
	_, entries, _ = rec.Run(id, 0)
	if got, _ := json.Marshal(entries); string(got) != string(want) {
		t.Errorf("the entries changed with what the recorder was handed:\n%s\nwant:\n%s", got, want)
	}
}
