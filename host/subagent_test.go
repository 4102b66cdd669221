package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// agentHarness is a parent orchestrator on model "parent-model" with the tools of base, and the sub-agents added by
// addAgent on "sub-model", all served by one fakellm server whose responder routes on the request's model.
type agentHarness struct {
	t      *testing.T
	srv    *fakellm.Server
	tm     *ToolManager
	agents *SubAgents
	orch   *Orchestrator

	mu     sync.Mutex
	parent []fakellm.Turn
	sub    map[string][]fakellm.Turn // by the sub-agent's instructions, which open its system prompt
	events []*Event
}

func newAgentHarness(t *testing.T, tools []Tool, policies map[string]ToolPolicy) *agentHarness {
	t.Helper()
	h := &agentHarness{t: t, srv: fakellm.New(), agents: &SubAgents{}, sub: map[string][]fakellm.Turn{}}
	t.Cleanup(h.srv.Close)
	h.srv.SetResponder(h.respond)
	h.tm = NewToolManager([]Toolset{&staticSet{name: "test", tools: tools}, h.agents}, &ToolManagerOptions{Policies: policies})
	h.orch = New(h.model("parent-model"), h.tm, &Options{Instructions: "You are the parent."})
	return h
}

func (h *agentHarness) model(name string) *openai.Model {
	m, err := openai.New(&openai.Options{BaseURL: h.srv.URL, APIKey: "sk-test", Model: name, IdleTimeout: 30 * time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// addAgent adds a sub-agent whose model answers with script, in order.
func (h *agentHarness) addAgent(name string, tools []string, script ...fakellm.Turn) {
	instructions := "You are " + name + "."
	h.mu.Lock()
	h.sub[instructions] = script
	h.mu.Unlock()
	h.agents.Add(name, "Delegate to "+name+".", New(h.model("sub-model"), h.tm.Restrict(tools), &Options{Instructions: instructions}))
}

func (h *agentHarness) respond(req *fakellm.Request) fakellm.Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := func(q *[]fakellm.Turn) fakellm.Turn {
		if len(*q) == 0 {
			return fakellm.Turn{Status: 500, ErrorMessage: "unscripted " + req.Model + " call"}
		}
		t := (*q)[0]
		*q = (*q)[1:]
		return t
	}
	if req.Model == "parent-model" {
		return next(&h.parent)
	}
	system := req.Messages[0].Content
	for instr := range h.sub {
		if strings.HasPrefix(system, instr) {
			q := h.sub[instr]
			t := next(&q)
			h.sub[instr] = q
			return t
		}
	}
	return fakellm.Turn{Status: 500, ErrorMessage: "no script for " + system}
}

func (h *agentHarness) ask(ctx context.Context, req *Request) (*Answer, error) {
	return h.orch.Ask(ctx, req, func(ev *Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	})
}

// requests returns the recorded requests made with model.
func (h *agentHarness) requests(model string) []*fakellm.Request {
	var out []*fakellm.Request
	for _, r := range h.srv.Requests() {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

// search returns a tool that answers with the given references.
func search(refs ...Reference) Tool {
	return &funcTool{spec: ToolSpec{Name: "search", Description: "finds documents", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
			return &Result{Text: "found", References: refs}, nil
		}}
}

func TestSubAgentReferencesProgressAndUsage(t *testing.T) {
	a := Reference{Title: "A", URI: "https://a.example", Content: "about a"}
	b := Reference{Title: "B", URI: "https://b.example", Content: "about b"}
	c := Reference{Title: "C", URI: "https://c.example", Content: "about c"}
	var searches []string
	var mu sync.Mutex
	tool := &funcTool{spec: ToolSpec{Name: "search", Description: "finds documents", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		fn: func(_ context.Context, args json.RawMessage, call *Call) (*Result, error) {
			mu.Lock()
			searches = append(searches, string(args))
			mu.Unlock()
			call.ReportProgress(Progress{Message: "searching"})
			if strings.Contains(string(args), "parent") {
				return &Result{Text: "found", References: []Reference{c}}, nil
			}
			return &Result{Text: "found", References: []Reference{a, b}}, nil
		}}
	h := newAgentHarness(t, []Tool{tool}, nil)
	h.addAgent("researcher", []string{"search"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s1", "search", `{"q":"sub"}`)}},
		// The sub-agent cites its sources 2 (B) then 1 (A): its answer numbers them 1 (B) and 2 (A).
		fakellm.Turn{Text: "B says so [source 2]. A agrees [source 1]."},
	)
	h.parent = []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{call("p1", "search", `{"q":"parent"}`)}},
		{ToolCalls: []fakellm.ToolCall{call("p2", "researcher", `{"task":"research it"}`)}},
		{Text: "Summary: A [source 3], B [source 2], C [source 1]."},
	}
	ans, err := h.ask(t.Context(), &Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}

	// The parent read the sub-agent's answer with its citations renumbered: C is 1, then B 2 and A 3.
	parentReqs := h.requests("parent-model")
	if len(parentReqs) != 3 {
		t.Fatalf("%d parent requests, want 3", len(parentReqs))
	}
	msg := toolMessages(parentReqs[2])["p2"]
	if !strings.HasPrefix(msg, "B says so [source 2]. A agrees [source 3].") {
		t.Errorf("tool message of the sub-agent:\n%s", msg)
	}
	if !strings.Contains(msg, `{"source":2,"title":"B","uri":"https://b.example","content":"about b"}`) ||
		!strings.Contains(msg, `{"source":3,"title":"A","uri":"https://a.example","content":"about a"}`) {
		t.Errorf("the sub-agent's sources are not numbered in the parent:\n%s", msg)
	}
	// The sub-agent saw only the tool it may use.
	for _, r := range h.requests("sub-model") {
		if names := r.ToolNames(); len(names) > 0 && !slices.Equal(names, []string{"search"}) {
			t.Errorf("sub-agent offered %v", names)
		}
	}

	wantRefs := []NumberedReference{{1, "A", "https://a.example"}, {2, "B", "https://b.example"}, {3, "C", "https://c.example"}}
	if !slices.Equal(ans.References, wantRefs) {
		t.Errorf("references %+v, want %+v", ans.References, wantRefs)
	}
	if !strings.HasPrefix(ans.Text, "Summary: A [1], B [2], C [3].") {
		t.Errorf("answer %q", ans.Text)
	}
	if ans.Usage.Requests != 5 {
		t.Errorf("usage counts %d requests, want 5 (3 of the parent, 2 of the sub-agent)", ans.Usage.Requests)
	}

	var progress []string
	for _, ev := range h.events {
		if ev.Kind == EventToolProgress && ev.ToolCall.Name == "researcher" {
			progress = append(progress, ev.ToolCall.Progress.Message)
		}
	}
	// The event names the call, researcher: the message does not name it again.
	want := []string{"calling search", "search: searching"}
	if !slices.Equal(progress, want) {
		t.Errorf("progress of the researcher call %q, want %q", progress, want)
	}
	if len(searches) != 2 {
		t.Errorf("search ran %d times, want 2", len(searches))
	}
	debug := ans.ToolCalls[1].Debug
	if debug["agent"] != "researcher" || debug["stopped_by"] != "answered" {
		t.Errorf("debug of the sub-agent call %v", debug)
	}
}

func TestSubAgentTakesControl(t *testing.T) {
	h := newAgentHarness(t, []Tool{search(Reference{Title: "A", URI: "https://a.example"}, Reference{Title: "B", URI: "https://b.example"})},
		map[string]ToolPolicy{"researcher": {TakesControl: true}})
	h.addAgent("researcher", []string{"search"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s1", "search", `{}`)}},
		fakellm.Turn{Text: "Deep answer [source 2], see also [source 1]."},
	)
	h.parent = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("p1", "researcher", `{"task":"dig"}`)}}}
	ans, err := h.ask(t.Context(), &Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.StoppedBy != StopToolControl {
		t.Errorf("stopped by %s", ans.StoppedBy)
	}
	want := "Deep answer [1], see also [2].\n\nSources:\n[1] B — https://b.example\n[2] A — https://a.example"
	if ans.Text != want {
		t.Errorf("answer\n%q\nwant\n%q", ans.Text, want)
	}
	if len(ans.References) != 2 || ans.References[0].Title != "B" {
		t.Errorf("references %+v", ans.References)
	}
	var streamed strings.Builder
	for _, ev := range h.events {
		if ev.Kind == EventTextDelta {
			streamed.WriteString(ev.Text)
		}
	}
	if streamed.String() != ans.Text {
		t.Errorf("text deltas add up to %q, not the answer", streamed.String())
	}
}

func TestSubAgentCancellation(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	block := &funcTool{spec: ToolSpec{Name: "block", Description: "waits"}, fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	h := newAgentHarness(t, []Tool{block}, nil)
	h.addAgent("worker", []string{"block"}, fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("b1", "block", `{}`)}})
	h.parent = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("p1", "worker", `{"task":"wait"}`)}}}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-started:
			cancel()
		case <-time.After(time.Minute):
		}
	}()
	done := make(chan error, 1)
	go func() {
		ans, err := h.ask(ctx, &Request{Prompt: "go"})
		if err == nil {
			err = fmt.Errorf("no error, answer %+v", ans)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run error %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end after cancellation")
	}
	select {
	case <-cancelled:
	default:
		t.Error("the sub-agent's tool did not see the cancellation")
	}
}

func TestSubAgentApprovalGoesToParentCaller(t *testing.T) {
	rm := &counter{name: "rm"}
	h := newAgentHarness(t, []Tool{rm.tool()}, map[string]ToolPolicy{"rm": {RequireApproval: true}})
	h.addAgent("cleaner", []string{"rm"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("r1", "rm", `{"q":"/tmp/x"}`)}},
		fakellm.Turn{Text: "removed"},
	)
	h.parent = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("p1", "cleaner", `{"task":"clean"}`)}}, {Text: "done"}}
	ia := &approver{allow: true}
	ans, err := h.ask(t.Context(), &Request{Prompt: "go", Interactor: ia})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ia.asked, []string{`rm {"q":"/tmp/x"}`}) || rm.calls.Load() != 1 {
		t.Errorf("asked %q, rm ran %d times", ia.asked, rm.calls.Load())
	}
	if ans.Text != "done" {
		t.Errorf("answer %q", ans.Text)
	}
}

func TestSubAgentDepthAndBadInput(t *testing.T) {
	h := newAgentHarness(t, nil, nil)
	// "deep" may call itself (a configuration forbids that; the depth bound holds anyway): it keeps calling until a
	// call is refused, then answers with what the refusal said.
	h.agents.Add("deep", "recurses", New(h.model("sub-model"), h.tm.Restrict([]string{"deep"}), &Options{Instructions: "You are deep."}))
	h.srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Turn{Text: "passed up: " + last.ToolOutput()}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("d", "deep", `{"task":"again"}`)}}
	})
	ans, err := h.ask(t.Context(), &Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	// The parent (depth 0) runs deep at depth 1 ... deep at depth MaxAgentDepth is refused.
	if n := len(h.requests("sub-model")); n != 2*MaxAgentDepth {
		t.Errorf("%d sub-agent model calls, want %d", n, 2*MaxAgentDepth)
	}
	msg := toolMessages(h.requests("parent-model")[1])["d"]
	if !strings.Contains(msg, fmt.Sprintf("sub-agents are nested %d deep, the limit", MaxAgentDepth)) {
		t.Errorf("the refusal did not travel up: %q", msg)
	}
	if want := strings.Repeat("passed up: ", MaxAgentDepth+1) + "Error: deep cannot run"; !strings.HasPrefix(ans.Text, want) {
		t.Errorf("answer %q, want prefix %q", ans.Text, want)
	}

	res, err := (&subAgent{name: "x"}).Call(t.Context(), json.RawMessage(`{"task":"  "}`), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text, `{"task":`) {
		t.Errorf("empty task: %+v, %v", res, err)
	}
}

// TestSubAgentAnswerNotChecked: the evaluation checks run on the answer the caller gets, not on a sub-agent's
// answer inside the run, even when the sub-agent's options name checks: its model is not asked to grade.
func TestSubAgentAnswerNotChecked(t *testing.T) {
	h := newAgentHarness(t, []Tool{search(Reference{Title: "A", URI: "https://a.example", Content: "about a"})}, nil)
	h.orch = New(h.model("parent-model"), h.tm, &Options{Instructions: "You are the parent.", Checks: []string{CheckComplete}})
	h.mu.Lock()
	h.sub["You are helper."] = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("s1", "search", `{"q":"a"}`)}}, {Text: "A it is [source 1]."}}
	h.mu.Unlock()
	h.agents.Add("helper", "Delegate to helper.", New(h.model("sub-model"), h.tm.Restrict([]string{"search"}),
		&Options{Instructions: "You are helper.", Checks: []string{CheckGrounded, CheckComplete}}))
	h.parent = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("p1", "helper", `{"task":"do it"}`)}}, {Text: "It is A [source 1]."}}
	var checks int
	ans, err := h.orch.Ask(t.Context(), &Request{Prompt: "go"}, func(ev *Event) {
		if ev.Kind == EventCheck {
			checks++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if checks != 1 || len(ans.Checks) != 1 || !ans.Checks[0].Passed {
		t.Errorf("%d check events, answer checks %+v; want the parent's complete check alone", checks, ans.Checks)
	}
	if n := len(h.requests("sub-model")); n != 2 {
		t.Errorf("the sub-agent's model was asked %d times, want 2 (no grading)", n)
	}
}

// TestCheckTakesControlAnswer: when a sub-agent takes control, the checks read its answer, with its citations in the
// run's source numbers.
func TestCheckTakesControlAnswer(t *testing.T) {
	h := newAgentHarness(t, []Tool{search(Reference{Title: "A", URI: "https://a.example", Content: "about a"})}, map[string]ToolPolicy{"helper": {TakesControl: true}})
	h.orch = New(h.model("parent-model"), h.tm, &Options{Instructions: "You are the parent.", Checks: []string{CheckCitations}})
	h.mu.Lock()
	h.sub["You are helper."] = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("s1", "search", `{"q":"a"}`)}}, {Text: "A it is [source 1]."}}
	h.mu.Unlock()
	h.agents.Add("helper", "Delegate to helper.", New(h.model("sub-model"), h.tm.Restrict([]string{"search"}), &Options{Instructions: "You are helper."}))
	h.parent = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("p1", "helper", `{"task":"do it"}`)}}}
	ans, err := h.orch.Ask(t.Context(), &Request{Prompt: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.StoppedBy != StopToolControl || len(ans.Checks) != 1 || !ans.Checks[0].Passed {
		t.Errorf("stopped by %s, checks %+v", ans.StoppedBy, ans.Checks)
	}
}
