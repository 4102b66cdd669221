package host

// The loop's tests drive the orchestrator through the real OpenAI wire format: llm/openai talks to
// internal/testkit/fakellm, a scripted Chat Completions server, so every request the loop makes is checked as JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// harness is an orchestrator wired to a fakellm server.
type harness struct {
	srv    *fakellm.Server
	orch   *Orchestrator
	mu     sync.Mutex
	events []*Event
}

type harnessConfig struct {
	tools    []Tool
	policies map[string]ToolPolicy
	opts     Options
	sets     []Toolset // extra sources, after the tools above
	idle     time.Duration
}

func newHarness(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	idle := cfg.idle
	if idle == 0 {
		idle = 30 * time.Second
	}
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 2, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	sets := append([]Toolset{&staticSet{name: "test", tools: cfg.tools}}, cfg.sets...)
	tm := NewToolManager(sets, &ToolManagerOptions{Policies: cfg.policies})
	opts := cfg.opts
	if opts.Conversations == nil {
		n := 0
		opts.Conversations = NewMemoryStore(&MemoryStoreOptions{NewID: func() string { n++; return fmt.Sprintf("conv-%d", n) }})
	}
	return &harness{srv: srv, orch: New(model, tm, &opts)}
}

func (h *harness) ask(t *testing.T, req *Request) (*Answer, error) {
	t.Helper()
	return h.orch.Ask(t.Context(), req, func(ev *Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	})
}

// mustAsk runs req and fails the test on error or when the script was not used up exactly.
func (h *harness) mustAsk(t *testing.T, req *Request) *Answer {
	t.Helper()
	ans, err := h.ask(t, req)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if n := h.srv.Unscripted(); n > 0 {
		t.Errorf("the model was called %d times more than scripted", n)
	}
	if n := h.srv.Pending(); n > 0 {
		t.Errorf("%d scripted turns were not used", n)
	}
	return ans
}

// toolMessages returns the tool messages of a recorded request, by tool_call_id, without their delimiters.
func toolMessages(req *fakellm.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.ToolOutput()
		}
	}
	return out
}

func call(id, name, args string) fakellm.ToolCall {
	return fakellm.ToolCall{ID: id, Name: name, Arguments: args}
}

// counter is a tool that counts its calls and echoes its arguments.
type counter struct {
	name  string
	calls atomic.Int32
}

func (c *counter) tool() Tool {
	return &funcTool{spec: ToolSpec{Name: c.name, Description: "echo " + c.name, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}}}`)},
		fn: func(_ context.Context, args json.RawMessage, _ *Call) (*Result, error) {
			c.calls.Add(1)
			return &Result{Text: c.name + " got " + string(args)}, nil
		}}
}

func TestSingleToolCall(t *testing.T) {
	weather := &counter{name: "weather"}
	h := newHarness(t, harnessConfig{tools: []Tool{weather.tool()}, opts: Options{Instructions: "Be brief."}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", "weather", `{"q":"Paris"}`)}},
		fakellm.Turn{Text: "It is sunny in Paris."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Weather in Paris?"})
	if ans.Text != "It is sunny in Paris." || ans.StoppedBy != StopAnswered {
		t.Errorf("answer = %q (%s)", ans.Text, ans.StoppedBy)
	}
	if weather.calls.Load() != 1 {
		t.Errorf("tool ran %d times, want 1", weather.calls.Load())
	}
	reqs := h.srv.Requests()
	first := reqs[0]
	if first.Messages[0].Role != "system" || !strings.HasPrefix(first.Messages[0].Content, "Be brief.") {
		t.Errorf("first message = %+v, want the system prompt with the instructions", first.Messages[0])
	}
	if got := first.ToolNames(); !slices.Equal(got, []string{"weather"}) || first.ToolChoiceMode() != "auto" {
		t.Errorf("first request offers %v with tool_choice %s", got, first.ToolChoiceMode())
	}
	if got := toolMessages(reqs[1])["c1"]; got != `weather got {"q":"Paris"}` {
		t.Errorf("tool message = %q", got)
	}
	if ans.Usage.Requests != 2 || ans.Usage.TotalTokens == 0 {
		t.Errorf("usage = %+v, want 2 requests and some tokens", ans.Usage)
	}
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "test" {
		t.Errorf("tool call info = %+v", ans.ToolCalls)
	}
	if ans.ConversationID != "conv-1" {
		t.Errorf("conversation id = %q", ans.ConversationID)
	}
}

func TestSeveralCallsOneTurnAndChains(t *testing.T) {
	a, b := &counter{name: "a"}, &counter{name: "b"}
	h := newHarness(t, harnessConfig{tools: []Tool{a.tool(), b.tool()}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("x1", "a", `{"q":"1"}`), call("x2", "b", `{"q":"2"}`), call("x3", "a", `{"q":"3"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("y1", "b", `{"q":"chained"}`)}},
		fakellm.Turn{Text: "done"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "go"})
	if ans.Text != "done" || a.calls.Load() != 2 || b.calls.Load() != 2 {
		t.Fatalf("answer %q, a ran %d, b ran %d", ans.Text, a.calls.Load(), b.calls.Load())
	}
	// The second request carries the assistant message with all three calls, then the results in the model's order.
	msgs := h.srv.Requests()[1].Messages
	var order []string
	for _, m := range msgs[2:] {
		if m.Role == "tool" {
			order = append(order, m.ToolCallID)
		}
	}
	if !slices.Equal(order, []string{"x1", "x2", "x3"}) || len(msgs[2].ToolCalls) != 3 {
		t.Errorf("tool messages in order %v after %d calls", order, len(msgs[2].ToolCalls))
	}
	third := h.srv.Requests()[2]
	if got := toolMessages(third)["y1"]; got != `b got {"q":"chained"}` {
		t.Errorf("chained result = %q", got)
	}
	if len(ans.Iterations) != 3 {
		t.Errorf("%d iterations recorded, want 3", len(ans.Iterations))
	}
}

func TestToolErrorsReachTheModel(t *testing.T) {
	failing := &funcTool{spec: ToolSpec{Name: "failing"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return &Result{Text: "disk full", IsError: true}, nil
	}}
	broken := &funcTool{spec: ToolSpec{Name: "broken"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return nil, errors.New("server unreachable")
	}}
	panics := &funcTool{spec: ToolSpec{Name: "panics"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		panic("nil map")
	}}
	strict := &funcTool{spec: ToolSpec{Name: "strict", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}}
	h := newHarness(t, harnessConfig{tools: []Tool{failing, broken, panics, strict}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			call("e1", "failing", `{}`),
			call("e2", "broken", `{}`),
			call("e3", "panics", `{}`),
			call("e4", "nope", `{}`),
			call("e5", "strict", `{"n": `),
			call("e6", "strict", `{"n": "x"}`),
			call("e7", "strict", `[1]`),
		}},
		fakellm.Turn{Text: "recovered"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "go"})
	if ans.Text != "recovered" {
		t.Fatalf("answer = %q", ans.Text)
	}
	got := toolMessages(h.srv.Requests()[1])
	want := map[string]string{
		"e1": "Error: disk full",
		"e2": "Error: server unreachable",
		"e3": "Error: the tool crashed (panic: nil map)",
		"e4": `Error: unknown tool "nope". Available tools: failing, broken, panics, strict.`,
		"e5": "Error: the arguments are not valid JSON",
		"e6": "Error: the arguments of strict do not match its schema: n: expected integer, got string.",
		"e7": "Error: the arguments must be a JSON object, not array",
	}
	for id, w := range want {
		if !strings.HasPrefix(got[id], w) {
			t.Errorf("%s: tool message %q, want prefix %q", id, got[id], w)
		}
	}
	for _, info := range ans.ToolCalls {
		if info.OK || info.Error == "" {
			t.Errorf("call %s recorded as %+v, want a failure with its error", info.ID, info)
		}
	}
}

func TestIterationLimitAndFinalIterationOffersNoTools(t *testing.T) {
	loop := &counter{name: "loop"}
	h := newHarness(t, harnessConfig{tools: []Tool{loop.tool()}, opts: Options{MaxIterations: 3}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("a", "loop", `{"n":1}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("b", "loop", `{"n":2}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c", "loop", `{"n":3}`)}}, // disobeys: no tools were offered
	)
	ans := h.mustAsk(t, &Request{Prompt: "loop forever"})
	if ans.StoppedBy != StopIterationLimit || !strings.Contains(ans.Text, "limit of 3 iterations") {
		t.Errorf("answer %q stopped by %s", ans.Text, ans.StoppedBy)
	}
	last := h.srv.Requests()[2]
	if len(last.Tools) != 0 || last.ToolChoice != nil {
		t.Errorf("last request offers tools %v, tool_choice %s; want none", last.ToolNames(), last.ToolChoice)
	}
	if loop.calls.Load() != 2 {
		t.Errorf("tool ran %d times, want 2 (the final iteration's call is ignored)", loop.calls.Load())
	}
	if ans.Iterations[2].Mode != "final" {
		t.Errorf("last iteration mode %q", ans.Iterations[2].Mode)
	}

	// On the final iteration the model answers: that is an ordinary answer.
	h2 := newHarness(t, harnessConfig{tools: []Tool{loop.tool()}, opts: Options{MaxIterations: 2}})
	h2.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("a", "loop", `{}`)}}, fakellm.Turn{Text: "final"})
	if ans := h2.mustAsk(t, &Request{Prompt: "x"}); ans.Text != "final" || ans.StoppedBy != StopAnswered {
		t.Errorf("answer %q stopped by %s", ans.Text, ans.StoppedBy)
	}
}

func TestEmptyResponse(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.srv.Enqueue(fakellm.Turn{Text: ""})
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	if ans.StoppedBy != StopNoOutput || ans.Text != "The model produced no output." || ans.Iterations[0].Note != "the model produced no output" {
		t.Errorf("answer %q stopped by %s, note %q", ans.Text, ans.StoppedBy, ans.Iterations[0].Note)
	}
}

func TestForcedToolsRunConcurrently(t *testing.T) {
	a, b, c := &counter{name: "a"}, &counter{name: "b"}, &counter{name: "c"}
	h := newHarness(t, harnessConfig{tools: []Tool{a.tool(), b.tool(), c.tool()}, policies: map[string]ToolPolicy{"b": {Forced: true}, "a": {Forced: true}}})
	// Each forced request waits until both have arrived: sequential requests would never meet.
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	var n atomic.Int32
	h.srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		switch forced := req.ForcedTool(); forced {
		case "a", "b":
			arrived.Done()
			select {
			case <-both:
			case <-time.After(10 * time.Second):
				return fakellm.Turn{Status: 500, ErrorMessage: "forced requests were not concurrent"}
			}
			return fakellm.Turn{Text: "thinking " + forced, ToolCalls: []fakellm.ToolCall{call("call_1", forced, `{"q":"`+forced+`"}`)}}
		default:
			if n.Add(1) > 1 {
				return fakellm.Turn{Status: 500, ErrorMessage: "unexpected request"}
			}
			return fakellm.Turn{Text: "both done"}
		}
	})
	ans, err := h.ask(t, &Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "both done" || a.calls.Load() != 1 || b.calls.Load() != 1 || c.calls.Load() != 0 {
		t.Fatalf("answer %q; a %d, b %d, c %d calls", ans.Text, a.calls.Load(), b.calls.Load(), c.calls.Load())
	}
	reqs := h.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, r := range reqs[:2] {
		if !slices.Equal(r.ToolNames(), []string{"a", "b", "c"}) {
			t.Errorf("forced request offers %v, want every offered tool", r.ToolNames())
		}
	}
	// Merged in forced order (source order: a before b), with the clashing ids made unique.
	calls := reqs[2].Messages[2].ToolCalls
	if len(calls) != 2 || calls[0].Function.Name != "a" || calls[1].Function.Name != "b" || calls[0].ID == calls[1].ID {
		t.Errorf("merged calls = %+v", calls)
	}
	if reqs[2].Messages[2].Content != "thinking a" {
		t.Errorf("merged text = %q, want the first response's", reqs[2].Messages[2].Content)
	}
	if ans.Usage.Requests != 3 || ans.Iterations[0].Mode != "forced" || ans.Iterations[0].ModelCalls != 2 {
		t.Errorf("usage %+v, first iteration %+v", ans.Usage, ans.Iterations[0])
	}
}

func TestToolSelection(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	var tools []Tool
	for _, n := range names {
		tools = append(tools, (&counter{name: n}).tool())
	}
	tests := []struct {
		name       string
		policies   map[string]ToolPolicy
		sel        Selection
		wantOffer  []string
		wantForced []string
	}{
		{name: "exclusive", policies: map[string]ToolPolicy{"c": {Exclusive: true}}, wantOffer: []string{"c"}},
		{name: "enabled false", policies: map[string]ToolPolicy{"a": {Disabled: true}}, wantOffer: []string{"b", "c", "d"}},
		{name: "disabled_tools", sel: Selection{DisabledTools: []string{"b", "d"}}, wantOffer: []string{"a", "c"}},
		{name: "tool_choices", sel: Selection{ToolChoices: []string{"d"}}, wantOffer: []string{"d"}, wantForced: []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{tools: tools, policies: tt.policies})
			h.srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
				if f := req.ForcedTool(); f != "" {
					return fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("f", f, `{}`)}}
				}
				return fakellm.Turn{Text: "ok"}
			})
			if _, err := h.ask(t, &Request{Prompt: "x", Selection: tt.sel}); err != nil {
				t.Fatal(err)
			}
			reqs := h.srv.Requests()
			var forced []string
			for _, r := range reqs {
				if !slices.Equal(r.ToolNames(), tt.wantOffer) {
					t.Errorf("request %d offers %v, want %v", r.Seq, r.ToolNames(), tt.wantOffer)
				}
				if f := r.ForcedTool(); f != "" {
					forced = append(forced, f)
				}
			}
			if !slices.Equal(forced, tt.wantForced) {
				t.Errorf("forced %v, want %v", forced, tt.wantForced)
			}
		})
	}

	t.Run("unknown names", func(t *testing.T) {
		h := newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{"d": {Disabled: true}}})
		_, err := h.ask(t, &Request{Prompt: "x", Selection: Selection{ToolChoices: []string{"zz"}, DisabledTools: []string{"d"}}})
		for _, want := range []string{`tool_choices: unknown tool "zz"; available tools: a, b, c`, `disabled_tools: tool "d" is disabled`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want it to contain %q", err, want)
			}
		}
		if h.srv.RequestCount() != 0 {
			t.Error("the model was called for a request with unknown tool names")
		}
	})
	t.Run("a call to a tool outside the selection is refused", func(t *testing.T) {
		b := &counter{name: "b"}
		h := newHarness(t, harnessConfig{tools: []Tool{(&counter{name: "a"}).tool(), b.tool()}, policies: map[string]ToolPolicy{"a": {Exclusive: true}}})
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "b", `{}`)}}, fakellm.Turn{Text: "ok"})
		h.mustAsk(t, &Request{Prompt: "x"})
		if b.calls.Load() != 0 || !strings.HasPrefix(toolMessages(h.srv.Requests()[1])["1"], `Error: unknown tool "b". Available tools: a.`) {
			t.Errorf("b ran %d times; message %q", b.calls.Load(), toolMessages(h.srv.Requests()[1])["1"])
		}
	})
}

func TestDuplicatesRunOnce(t *testing.T) {
	search := &counter{name: "search"}
	h := newHarness(t, harnessConfig{tools: []Tool{search.tool()}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			call("d1", "search", `{"q":"go","n":2}`),
			call("d2", "search", "{ \"n\": 2,\n \"q\": \"go\" }"),
			call("d3", "search", `{"q":"rust","n":2}`),
		}},
		fakellm.Turn{Text: "ok"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	if search.calls.Load() != 2 {
		t.Errorf("search ran %d times, want 2", search.calls.Load())
	}
	got := toolMessages(h.srv.Requests()[1])
	if len(got) != 3 || got["d1"] != got["d2"] || got["d1"] == got["d3"] {
		t.Errorf("tool messages = %q", got)
	}
	if !ans.ToolCalls[1].Duplicate || ans.ToolCalls[0].Duplicate {
		t.Errorf("duplicate flags: %+v", ans.ToolCalls)
	}
}

func TestPerRoundCap(t *testing.T) {
	c := &counter{name: "c"}
	h := newHarness(t, harnessConfig{tools: []Tool{c.tool()}, opts: Options{MaxToolCalls: 2}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "c", `{"n":1}`), call("2", "c", `{"n":2}`), call("3", "c", `{"n":3}`), call("4", "c", `{"n":1}`)}},
		fakellm.Turn{Text: "ok"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	if c.calls.Load() != 2 {
		t.Errorf("ran %d calls, want 2", c.calls.Load())
	}
	got := toolMessages(h.srv.Requests()[1])
	if !strings.HasPrefix(got["3"], "Error: not executed: at most 2 tool calls run per round.") {
		t.Errorf("capped call message %q", got["3"])
	}
	if got["4"] != got["1"] {
		t.Errorf("a duplicate of an executed call was not answered with its result: %q", got["4"])
	}
	if ans.ToolCalls[2].NotRun != "round cap" {
		t.Errorf("debug info %+v", ans.ToolCalls[2])
	}
}

func TestTakesControl(t *testing.T) {
	handoff := &funcTool{spec: ToolSpec{Name: "handoff"}, fn: func(_ context.Context, _ json.RawMessage, call *Call) (*Result, error) {
		call.ReportProgress(Progress{Progress: 1, Message: "working"})
		return &Result{Text: "the specialist's answer", References: []Reference{{Title: "Doc", URI: "https://example.test/doc"}}}, nil
	}}
	other := &counter{name: "other"}
	policies := map[string]ToolPolicy{"handoff": {TakesControl: true}}

	t.Run("alone", func(t *testing.T) {
		h := newHarness(t, harnessConfig{tools: []Tool{handoff, other.tool()}, policies: policies})
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("h", "handoff", `{}`)}})
		ans := h.mustAsk(t, &Request{Prompt: "x"})
		if ans.StoppedBy != StopToolControl || ans.Text != "the specialist's answer" || len(ans.References) != 1 || ans.References[0].Number != 1 {
			t.Errorf("answer %+v", ans)
		}
		var progressed bool
		for _, ev := range h.events {
			progressed = progressed || ev.Kind == EventToolProgress && ev.ToolCall.Progress.Message == "working"
		}
		if !progressed {
			t.Error("the tool's progress was not relayed")
		}
	})
	t.Run("with others", func(t *testing.T) {
		h := newHarness(t, harnessConfig{tools: []Tool{handoff, other.tool()}, policies: policies})
		h.srv.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("h", "handoff", `{}`), call("o", "other", `{}`)}},
			fakellm.Turn{Text: "fine"},
		)
		ans := h.mustAsk(t, &Request{Prompt: "x"})
		if ans.StoppedBy != StopAnswered || other.calls.Load() != 0 {
			t.Errorf("stopped by %s; other ran %d times", ans.StoppedBy, other.calls.Load())
		}
		for id, msg := range toolMessages(h.srv.Requests()[1]) {
			if !strings.Contains(msg, "handoff hands the conversation over and must be called alone") {
				t.Errorf("%s: message %q", id, msg)
			}
		}
	})
}

func TestToolTimeoutAndCancellation(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		var sawDeadline atomic.Bool
		slow := &funcTool{spec: ToolSpec{Name: "slow"}, fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
			<-ctx.Done()
			sawDeadline.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
			return nil, ctx.Err()
		}}
		h := newHarness(t, harnessConfig{tools: []Tool{slow}, opts: Options{ToolTimeout: 50 * time.Millisecond}})
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", "slow", `{}`)}}, fakellm.Turn{Text: "gave up"})
		ans := h.mustAsk(t, &Request{Prompt: "x"})
		if ans.Text != "gave up" || !sawDeadline.Load() {
			t.Errorf("answer %q, tool saw deadline: %v", ans.Text, sawDeadline.Load())
		}
		if got := toolMessages(h.srv.Requests()[1])["s"]; got != "Error: the tool did not finish within 50ms" {
			t.Errorf("message %q", got)
		}
	})
	t.Run("cancel while two slow tools run", func(t *testing.T) {
		started := make(chan struct{}, 2)
		var cancelled atomic.Int32
		slow := func(name string) Tool {
			return &funcTool{spec: ToolSpec{Name: name}, fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
				started <- struct{}{}
				<-ctx.Done()
				if errors.Is(ctx.Err(), context.Canceled) {
					cancelled.Add(1)
				}
				return nil, ctx.Err()
			}}
		}
		h := newHarness(t, harnessConfig{tools: []Tool{slow("s1"), slow("s2")}})
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "s1", `{}`), call("2", "s2", `{}`)}})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-started
			<-started
			cancel()
		}()
		ans, err := h.orch.Ask(ctx, &Request{Prompt: "x"}, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if ans == nil || ans.StoppedBy != StopCancelled {
			t.Errorf("answer = %+v, want one stopped by cancellation", ans)
		}
		if cancelled.Load() != 2 {
			t.Errorf("%d tools saw their context cancelled, want 2", cancelled.Load())
		}
		if h.srv.RequestCount() != 1 {
			t.Errorf("the model was called %d times after cancellation", h.srv.RequestCount()-1)
		}
	})
}

// approver answers approvals with a fixed decision and records what it was asked.
type approver struct {
	allow bool
	asked []string
}

func (a *approver) Approve(_ context.Context, req *ApprovalRequest) (bool, error) {
	a.asked = append(a.asked, req.Tool+" "+string(req.Arguments))
	return a.allow, nil
}
func (a *approver) Elicit(context.Context, *ElicitRequest) (*ElicitResult, error) {
	return &ElicitResult{Action: ElicitDecline}, nil
}

func TestApproval(t *testing.T) {
	tests := []struct {
		name        string
		interactor  *approver
		wantRuns    int32
		wantMessage string
		wantInfo    string
	}{
		{"refused", &approver{allow: false}, 0, "Error: the call was denied by the user", "denied"},
		{"approved", &approver{allow: true}, 1, `rm got {"q":"/tmp"}`, "approved"},
		{"nobody to ask", nil, 0, "Error: this tool requires the user's approval, and there is no way to ask", "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := &counter{name: "rm"}
			h := newHarness(t, harnessConfig{tools: []Tool{rm.tool()}, policies: map[string]ToolPolicy{"rm": {RequireApproval: true}}})
			h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("r", "rm", `{"q":"/tmp"}`)}}, fakellm.Turn{Text: "ok"})
			req := &Request{Prompt: "x"}
			if tt.interactor != nil {
				req.Interactor = tt.interactor
			}
			ans := h.mustAsk(t, req)
			if rm.calls.Load() != tt.wantRuns {
				t.Errorf("tool ran %d times, want %d", rm.calls.Load(), tt.wantRuns)
			}
			if got := toolMessages(h.srv.Requests()[1])["r"]; !strings.HasPrefix(got, tt.wantMessage) {
				t.Errorf("message %q, want prefix %q", got, tt.wantMessage)
			}
			if ans.ToolCalls[0].Approval != tt.wantInfo {
				t.Errorf("approval %q, want %q", ans.ToolCalls[0].Approval, tt.wantInfo)
			}
			if tt.interactor != nil && !slices.Equal(tt.interactor.asked, []string{`rm {"q":"/tmp"}`}) {
				t.Errorf("asked %q", tt.interactor.asked)
			}
		})
	}
}

func TestUsageLimits(t *testing.T) {
	c := &counter{name: "c"}
	tests := []struct {
		name   string
		limits Limits
		script []fakellm.Turn
		want   string
		runs   int32
	}{
		{"requests", Limits{Requests: 2}, []fakellm.Turn{
			{Text: "partial", ToolCalls: []fakellm.ToolCall{call("1", "c", `{"n":1}`)}},
			{ToolCalls: []fakellm.ToolCall{call("2", "c", `{"n":2}`)}},
		}, "partial\n\nThe run stopped: the limit of 2 model requests per run was reached.", 2},
		{"tokens", Limits{TotalTokens: 10}, []fakellm.Turn{
			{ToolCalls: []fakellm.ToolCall{call("1", "c", `{"n":1}`)}, Usage: &fakellm.Usage{PromptTokens: 8, CompletionTokens: 4, TotalTokens: 12}},
		}, "The run stopped: the limit of 10 tokens per run was reached (12 used).", 1},
		{"tool calls", Limits{ToolCalls: 2}, []fakellm.Turn{
			{ToolCalls: []fakellm.ToolCall{call("1", "c", `{"n":1}`), call("2", "c", `{"n":2}`), call("3", "c", `{"n":3}`)}},
		}, "The run stopped: the limit of 2 tool calls per run was reached.", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.calls.Store(0)
			h := newHarness(t, harnessConfig{tools: []Tool{c.tool()}, opts: Options{Limits: tt.limits}})
			h.srv.Enqueue(tt.script...)
			ans := h.mustAsk(t, &Request{Prompt: "x"})
			if ans.StoppedBy != StopUsageLimit || ans.Text != tt.want || c.calls.Load() != tt.runs {
				t.Errorf("answer %q (%s), %d runs; want %q, %d runs", ans.Text, ans.StoppedBy, c.calls.Load(), tt.want, tt.runs)
			}
		})
	}
}

func TestModelFailures(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.srv.Enqueue(fakellm.Turn{Status: 429, RetryAfter: 10 * time.Millisecond}, fakellm.Turn{Text: "ok"})
		if ans := h.mustAsk(t, &Request{Prompt: "x"}); ans.Text != "ok" || h.srv.RequestCount() != 2 {
			t.Errorf("answer %q after %d requests", ans.Text, h.srv.RequestCount())
		}
	})
	t.Run("hanging stream", func(t *testing.T) {
		h := newHarness(t, harnessConfig{idle: 100 * time.Millisecond})
		h.srv.Enqueue(fakellm.Turn{Text: "never finished", HangAfter: 2})
		ans, err := h.ask(t, &Request{Prompt: "x"})
		if err == nil || !strings.Contains(err.Error(), "idle") {
			t.Errorf("err = %v, want an idle-stream error", err)
		}
		if ans == nil || ans.StoppedBy != StopError || !strings.Contains(ans.Iterations[0].Note, "idle") {
			t.Errorf("partial answer = %+v, want one stopped by the error with it in the debug info", ans)
		}
	})
}

func TestConversationContinues(t *testing.T) {
	h := newHarness(t, harnessConfig{tools: []Tool{(&counter{name: "c"}).tool()}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "c", `{}`)}},
		fakellm.Turn{Text: "first answer"},
	)
	first := h.mustAsk(t, &Request{Prompt: "one"})
	h.srv.Enqueue(fakellm.Turn{Text: "second answer"})
	second := h.mustAsk(t, &Request{Prompt: "two", ConversationID: first.ConversationID})
	if second.ConversationID != first.ConversationID {
		t.Errorf("conversation id changed: %q -> %q", first.ConversationID, second.ConversationID)
	}
	var roles []string
	for _, m := range h.srv.Requests()[2].Messages {
		if m.Role == "tool" {
			m.Content = m.ToolOutput()
		}
		roles = append(roles, m.Role+":"+m.Content)
	}
	want := []string{"user:one", "assistant:", "tool:c got {}", "assistant:first answer", "user:two"}
	if !slices.Equal(roles[1:], want) {
		t.Errorf("messages of the follow-up:\n%q\nwant\n%q", roles[1:], want)
	}
	if _, err := h.ask(t, &Request{Prompt: "x", ConversationID: "nope"}); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("unknown conversation: err = %v", err)
	}
}

// A front-end whose callers choose conversation ids (A2A's contextId) starts a conversation under the caller's id,
// and the tools of its runs see that id.
func TestStartConversationWithCallersID(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	probe := &funcTool{spec: ToolSpec{Name: "probe", InputSchema: json.RawMessage(`{"type":"object"}`)},
		fn: func(_ context.Context, _ json.RawMessage, call *Call) (*Result, error) {
			mu.Lock()
			seen = append(seen, call.ConversationID)
			mu.Unlock()
			return &Result{Text: "ok"}, nil
		}}
	h := newHarness(t, harnessConfig{tools: []Tool{probe}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "probe", `{}`)}}, fakellm.Turn{Text: "one"})
	first := h.mustAsk(t, &Request{Prompt: "one", ConversationID: "ctx-from-caller", StartConversation: true})
	if first.ConversationID != "ctx-from-caller" {
		t.Fatalf("conversation id = %q, want the caller's", first.ConversationID)
	}
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("2", "probe", `{}`)}}, fakellm.Turn{Text: "two"})
	second := h.mustAsk(t, &Request{Prompt: "two", ConversationID: "ctx-from-caller", StartConversation: true})
	if second.ConversationID != "ctx-from-caller" {
		t.Errorf("second conversation id = %q", second.ConversationID)
	}
	if msgs := h.srv.Requests()[2].Messages; len(msgs) < 5 || msgs[1].Content != "one" {
		t.Errorf("the second run did not continue the first: %+v", msgs)
	}
	if !slices.Equal(seen, []string{"ctx-from-caller", "ctx-from-caller"}) {
		t.Errorf("tools saw conversation ids %q", seen)
	}
}

func TestEventsInOrder(t *testing.T) {
	h := newHarness(t, harnessConfig{tools: []Tool{(&counter{name: "c"}).tool()}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "c", `{}`)}},
		fakellm.Turn{Text: "the answer, streamed in pieces", ChunkSize: 3},
	)
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	var kinds []string
	var text strings.Builder
	for _, ev := range h.events {
		if ev.Kind == EventTextDelta {
			text.WriteString(ev.Text)
			if k := kinds[len(kinds)-1]; k == "text_delta" {
				continue
			}
		}
		kinds = append(kinds, string(ev.Kind))
	}
	want := []string{"iteration", "tool_start", "tool_end", "iteration", "text_delta", "answer"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if text.String() != ans.Text {
		t.Errorf("streamed %q, answer %q", text.String(), ans.Text)
	}
}

func TestCancelDuringModelStream(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.srv.Enqueue(fakellm.Turn{Text: "this stream stops half way", HangAfter: 3})
	ctx, cancel := context.WithCancel(t.Context())
	ans, err := h.orch.Ask(ctx, &Request{Prompt: "x"}, func(ev *Event) {
		if ev.Kind == EventTextDelta {
			cancel() // the model is still "generating"
		}
	})
	if !errors.Is(err, context.Canceled) || ans == nil || ans.StoppedBy != StopCancelled {
		t.Errorf("err = %v, answer %+v; want a cancelled run", err, ans)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	var cancelled atomic.Int32
	slow := func(name string) Tool {
		return &funcTool{spec: ToolSpec{Name: name}, fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
			<-ctx.Done()
			cancelled.Add(1)
			return nil, ctx.Err()
		}}
	}
	h := newHarness(t, harnessConfig{tools: []Tool{slow("s1"), slow("s2")}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "s1", `{}`), call("2", "s2", `{}`)}})
	var seen []EventKind
	for ev, err := range h.orch.Run(t.Context(), &Request{Prompt: "x"}) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev.Kind)
		if ev.Kind == EventToolStart && ev.ToolCall.Name == "s2" {
			break
		}
	}
	// Run returned: the run has ended, so both tools have already seen their cancellation.
	if cancelled.Load() != 2 {
		t.Errorf("%d tools cancelled when the consumer stopped, want 2 (events: %v)", cancelled.Load(), seen)
	}
}

func TestContextBudgetInTheLoop(t *testing.T) {
	big := &funcTool{spec: ToolSpec{Name: "big"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return &Result{Text: strings.Repeat("data ", 8000)}, nil // 40,000 characters, about 10,000 tokens
	}}
	h := newHarness(t, harnessConfig{tools: []Tool{big}, opts: Options{ContextTokens: 6000, MaxTokens: 500}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("b1", "big", `{}`)}},
		fakellm.Turn{Text: "first"},
	)
	first := h.mustAsk(t, &Request{Prompt: "first question"})
	sent := toolMessages(h.srv.Requests()[1])["b1"]
	if !strings.Contains(sent, "characters cut to fit the context budget") || len(sent) >= 40000 || len(sent) < 1000 {
		t.Errorf("tool result sent with %d characters; want it shortened and marked", len(sent))
	}
	if !first.ToolCalls[0].Truncated || first.Iterations[1].TruncatedResults != 1 {
		t.Errorf("debug info: call %+v, iteration %+v", first.ToolCalls[0], first.Iterations[1])
	}

	// The next run of the conversation drops the old turn, whose result alone is over the budget.
	h.srv.Enqueue(fakellm.Turn{Text: "second"})
	second := h.mustAsk(t, &Request{Prompt: "second question", ConversationID: first.ConversationID})
	msgs := h.srv.Requests()[2].Messages
	if second.Iterations[0].DroppedMessages != 4 || len(msgs) != 2 || msgs[1].Content != "second question" {
		t.Errorf("dropped %d messages; sent %d messages", second.Iterations[0].DroppedMessages, len(msgs))
	}
}

func TestInvoke(t *testing.T) {
	panics := &funcTool{spec: ToolSpec{Name: "panics"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) { panic("boom") }}
	slow := &funcTool{spec: ToolSpec{Name: "slow"}, fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	guarded := &funcTool{spec: ToolSpec{Name: "guarded"}}
	m := NewToolManager([]Toolset{&staticSet{name: "s", tools: []Tool{panics, slow, guarded}}}, &ToolManagerOptions{Policies: map[string]ToolPolicy{"guarded": {RequireApproval: true}}})
	tools, err := m.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Invoke(t.Context(), tools[0], nil, nil, 0); err == nil || err.Error() != "the tool crashed (panic: boom)" {
		t.Errorf("panic: err = %v", err)
	}
	if _, _, err := m.Invoke(t.Context(), tools[1], nil, nil, 20*time.Millisecond); err == nil || err.Error() != "the tool did not finish within 20ms" {
		t.Errorf("timeout: err = %v", err)
	}
	res, approval, err := m.Invoke(t.Context(), tools[2], json.RawMessage(`{}`), nil, 0)
	if err != nil || !res.IsError || approval != "unavailable" {
		t.Errorf("no approver: %+v %q %v", res, approval, err)
	}
	ok := &approver{allow: true}
	res, approval, err = m.Invoke(t.Context(), tools[2], json.RawMessage(`{}`), NewCall("1", "guarded", "s", nil, ok), 0)
	if err != nil || res.IsError || res.Text != "guarded ok" || approval != "approved" {
		t.Errorf("approved: %+v %q %v", res, approval, err)
	}
}
