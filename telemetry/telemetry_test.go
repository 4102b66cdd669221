package telemetry_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/oteltest"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/telemetry"
)

type tool struct {
	name   string
	result *host.Result
	seen   *trace.SpanContext
}

func (t tool) Spec() host.ToolSpec { return host.ToolSpec{Name: t.name, Description: "a test tool"} }
func (t tool) Call(ctx context.Context, _ json.RawMessage, _ *host.Call) (*host.Result, error) {
	*t.seen = trace.SpanContextFromContext(ctx)
	return t.result, nil
}

type toolset []host.Tool

func (s toolset) Name() string                               { return "test" }
func (s toolset) Tools(context.Context) ([]host.Tool, error) { return s, nil }

// runOnce runs one orchestrator run whose model calls two tools, ok and bad (which reports an error), then answers.
func runOnce(t *testing.T, capture bool) ([]sdktrace.ReadOnlySpan, metricdata.ResourceMetrics, [2]trace.SpanContext) {
	tp, sr, mp, reader := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, &telemetry.Options{CaptureContent: capture})
	var seen [2]trace.SpanContext
	set := toolset{
		tool{name: "ok", result: &host.Result{Text: "fine"}, seen: &seen[0]},
		tool{name: "bad", result: &host.Result{Text: "it broke\nbadly", IsError: true}, seen: &seen[1]},
	}
	model := &oteltest.Scripted{Turns: []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ok", Arguments: `{"q":"secret argument"}`}, {ID: "c2", Name: "bad", Arguments: `{}`}}},
		{Role: llm.RoleAssistant, Content: "The answer."},
	}}
	tm := host.NewToolManager([]host.Toolset{set}, &host.ToolManagerOptions{Observer: tel.Observer()})
	orch := host.New(model, tm, &host.Options{Name: "agent1", Description: "tests", Observer: tel.Observer()})
	ans, err := orch.Ask(context.Background(), &host.Request{Prompt: "secret prompt"}, nil)
	if err != nil || ans.StoppedBy != host.StopAnswered {
		t.Fatalf("run: %v, %+v", err, ans)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return sr.Ended(), rm, seen
}

func TestObserver(t *testing.T) {
	spans, rm, seen := runOnce(t, false)
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s.Name() != "chat m1" {
			byName[s.Name()] = s
		}
	}
	run, ok := byName["invoke_agent agent1"]
	if !ok || len(spans) != 5 {
		t.Fatalf("spans: want invoke_agent, two chat, two execute_tool; got %d: %v", len(spans), byName)
	}
	a := oteltest.Attrs(run.Attributes())
	if a["gen_ai.agent.name"].AsString() != "agent1" || a["gen_ai.provider.name"].AsString() != "openai" ||
		a["gen_ai.request.model"].AsString() != "m1" || a["gen_ai.usage.input_tokens"].AsInt64() != 20 ||
		a["agenthost.stop_reason"].AsString() != "answered" || a["gen_ai.conversation.id"].AsString() == "" {
		t.Errorf("invoke_agent attributes: %v", a)
	}
	for _, s := range spans {
		if s.Name() == "chat m1" {
			a := oteltest.Attrs(s.Attributes())
			if s.Parent().SpanID() != run.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient ||
				a["gen_ai.response.model"].AsString() != "m1-2026" || a["server.address"].AsString() != "model.test" ||
				a["server.port"].AsInt64() != 443 || a["gen_ai.usage.output_tokens"].AsInt64() != 3 {
				t.Errorf("chat span: parent %v, kind %v, attributes %v", s.Parent().SpanID(), s.SpanKind(), a)
			}
			if _, ok := a["gen_ai.input.messages"]; ok {
				t.Errorf("the chat span records the messages without CaptureContent")
			}
		}
	}
	okSpan, badSpan := byName["execute_tool ok"], byName["execute_tool bad"]
	if okSpan == nil || badSpan == nil {
		t.Fatalf("no execute_tool spans: %v", byName)
	}
	if a := oteltest.Attrs(okSpan.Attributes()); a["gen_ai.tool.call.id"].AsString() != "c1" || a["agenthost.tool.source"].AsString() != "test" ||
		okSpan.Status().Code.String() != "Unset" || okSpan.Parent().SpanID() != run.SpanContext().SpanID() {
		t.Errorf("execute_tool ok: %v, status %v", a, okSpan.Status())
	}
	if _, ok := oteltest.Attrs(okSpan.Attributes())["gen_ai.tool.call.arguments"]; ok {
		t.Errorf("execute_tool records the arguments without CaptureContent")
	}
	if a := oteltest.Attrs(badSpan.Attributes()); a["error.type"].AsString() != "tool_error" || badSpan.Status().Description != "it broke" {
		t.Errorf("execute_tool bad: %v, status %v", a, badSpan.Status())
	}
	// The tools ran under their spans.
	if seen[0].SpanID() != okSpan.SpanContext().SpanID() || seen[1].SpanID() != badSpan.SpanContext().SpanID() {
		t.Errorf("the tools saw spans %v and %v, want their execute_tool spans", seen[0].SpanID(), seen[1].SpanID())
	}

	metrics := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = m.Data
		}
	}
	tokens, ok := metrics["gen_ai.client.token.usage"].(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("no token usage histogram: %v", metrics)
	}
	sums := map[string]int64{}
	for _, dp := range tokens.DataPoints {
		tt, _ := dp.Attributes.Value("gen_ai.token.type")
		sums[tt.AsString()] += dp.Sum
	}
	if sums["input"] != 20 || sums["output"] != 6 {
		t.Errorf("token usage = %v, want input 20, output 6", sums)
	}
	calls, ok := metrics["agenthost.tool.calls"].(metricdata.Sum[int64])
	if !ok || len(calls.DataPoints) != 2 {
		t.Fatalf("tool calls: %+v", metrics["agenthost.tool.calls"])
	}
	for _, dp := range calls.DataPoints {
		name, _ := dp.Attributes.Value("gen_ai.tool.name")
		et, hasErr := dp.Attributes.Value("error.type")
		if dp.Value != 1 || (name.AsString() == "bad") != (hasErr && et.AsString() == "tool_error") {
			t.Errorf("tool calls data point %v = %d", dp.Attributes.ToSlice(), dp.Value)
		}
	}
	runs, ok := metrics["agenthost.runs.active"].(metricdata.Sum[int64])
	if !ok || len(runs.DataPoints) != 1 || runs.DataPoints[0].Value != 0 {
		t.Errorf("runs in flight after the run: %+v", metrics["agenthost.runs.active"])
	}
	if _, ok := metrics["gen_ai.client.operation.duration"].(metricdata.Histogram[float64]); !ok {
		t.Errorf("no operation duration histogram")
	}
}

func TestObserverCaptureContent(t *testing.T) {
	spans, _, _ := runOnce(t, true)
	var found int
	for _, s := range spans {
		a := oteltest.Attrs(s.Attributes())
		switch s.Name() {
		case "invoke_agent agent1":
			if !strings.Contains(a["gen_ai.input.messages"].AsString(), "secret prompt") || !strings.Contains(a["gen_ai.output.messages"].AsString(), "The answer.") {
				t.Errorf("invoke_agent content: %v", a)
			}
			found++
		case "execute_tool ok":
			if a["gen_ai.tool.call.arguments"].AsString() != `{"q":"secret argument"}` || a["gen_ai.tool.call.result"].AsString() != "fine" {
				t.Errorf("execute_tool content: %v", a)
			}
			found++
		case "chat m1":
			var msgs []struct {
				Role  string `json:"role"`
				Parts []struct {
					Type    string `json:"type"`
					Content string `json:"content"`
				} `json:"parts"`
			}
			if err := json.Unmarshal([]byte(a["gen_ai.input.messages"].AsString()), &msgs); err != nil || len(msgs) == 0 {
				t.Errorf("chat input messages: %v %s", err, a["gen_ai.input.messages"].AsString())
			}
			if a["gen_ai.output.messages"].AsString() == "" || a["gen_ai.tool.definitions"].AsString() == "" {
				t.Errorf("chat content: %v", a)
			}
			found++
		}
	}
	if found != 4 {
		t.Errorf("found %d spans with content, want 4", found)
	}
}

// TestObserverChecks: each evaluation check of the answer is an event of the run's span.
func TestObserverChecks(t *testing.T) {
	tp, sr, mp, _ := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, nil)
	model := &oteltest.Scripted{Turns: []llm.Message{{Role: llm.RoleAssistant, Content: "Lyon [source 3]."}}}
	orch := host.New(model, host.NewToolManager(nil, nil), &host.Options{Name: "c", Observer: tel.Observer(),
		Checks: []string{host.CheckCitations, host.CheckComplete}})
	if _, err := orch.Ask(context.Background(), &host.Request{Prompt: "Which city?"}, nil); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, s := range sr.Ended() {
		if s.Name() != "invoke_agent c" {
			continue
		}
		for _, ev := range s.Events() {
			a := oteltest.Attrs(ev.Attributes)
			events = append(events, ev.Name+" "+a["gen_ai.evaluation.name"].AsString()+" "+a["gen_ai.evaluation.score.label"].AsString())
		}
	}
	if want := []string{"gen_ai.evaluation.result citations fail", "gen_ai.evaluation.result complete pass"}; !slices.Equal(events, want) {
		t.Errorf("span events %q, want %q", events, want)
	}
}

// The execute_tool span of search_tools carries the names it loaded, and its query when content is captured.
func TestSearchToolsSpan(t *testing.T) {
	for _, capture := range []bool{false, true} {
		tp, sr, mp, _ := oteltest.Providers(t)
		tel := telemetry.New(tp, mp, &telemetry.Options{CaptureContent: capture})
		var seen trace.SpanContext
		set := toolset{tool{name: "weather", seen: &seen}, tool{name: "mail", seen: &seen}}
		model := &oteltest.Scripted{Turns: []llm.Message{
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "s1", Name: host.SearchToolName, Arguments: `{"query":"weather test"}`}}},
			{Role: llm.RoleAssistant, Content: "The answer."},
		}}
		tm := host.NewToolManager([]host.Toolset{set}, &host.ToolManagerOptions{Observer: tel.Observer()})
		orch := host.New(model, tm, &host.Options{Observer: tel.Observer(), ToolSearch: host.ToolSearchOptions{Mode: host.ToolSearchAlways}})
		if _, err := orch.Ask(context.Background(), &host.Request{Prompt: "x"}, nil); err != nil {
			t.Fatal(err)
		}
		var span sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			if s.Name() == "execute_tool "+host.SearchToolName {
				span = s
			}
		}
		if span == nil {
			t.Fatalf("no execute_tool span of %s", host.SearchToolName)
		}
		a := oteltest.Attrs(span.Attributes())
		if got := a["agenthost.tool_search.loaded"].AsStringSlice(); !slices.Equal(got, []string{"weather", "mail"}) && !slices.Equal(got, []string{"weather"}) {
			t.Errorf("capture %v: loaded = %q", capture, got)
		}
		if q, ok := a["agenthost.tool_search.query"]; ok != capture || (capture && q.AsString() != "weather test") {
			t.Errorf("capture %v: query attribute %v (present %v)", capture, q, ok)
		}
	}
}

// oneCall is a host.CodeRunner whose every script calls the tool ok once.
type oneCall struct{}

func (oneCall) Describe([]*host.ManagedTool) string { return "Calls ok." }
func (oneCall) Run(ctx context.Context, _ string, tools host.ToolCaller) (*host.Result, error) {
	return tools.StartTool(ctx, "ok", json.RawMessage(`{}`))()
}

// A tool called from run_code's script has its execute_tool span under run_code's.
func TestCodeModeSpans(t *testing.T) {
	tp, sr, mp, _ := oteltest.Providers(t)
	tel := telemetry.New(tp, mp, nil)
	var seen trace.SpanContext
	model := &oteltest.Scripted{Turns: []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: host.CodeToolName, Arguments: `{"code":"ok()"}`}}},
		{Role: llm.RoleAssistant, Content: "The answer."},
	}}
	tm := host.NewToolManager([]host.Toolset{toolset{tool{name: "ok", result: &host.Result{Text: "fine"}, seen: &seen}}}, &host.ToolManagerOptions{Observer: tel.Observer()})
	orch := host.New(model, tm, &host.Options{Observer: tel.Observer(), CodeMode: host.CodeModeOptions{Runner: oneCall{}}})
	if _, err := orch.Ask(context.Background(), &host.Request{Prompt: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		byName[s.Name()] = s
	}
	code, ok := byName["execute_tool "+host.CodeToolName], byName["execute_tool ok"]
	if code == nil || ok == nil {
		t.Fatalf("spans: %v", byName)
	}
	if ok.Parent().SpanID() != code.SpanContext().SpanID() || seen.SpanID() != ok.SpanContext().SpanID() {
		t.Errorf("execute_tool ok is under %v, want run_code's span %v", ok.Parent().SpanID(), code.SpanContext().SpanID())
	}
	if a := oteltest.Attrs(ok.Attributes()); a["gen_ai.tool.call.id"].AsString() != "c1/1" {
		t.Errorf("execute_tool ok: %v", a)
	}
}
