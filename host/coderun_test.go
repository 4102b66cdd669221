package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
)

// scriptRunner is a CodeRunner for tests, whose code is a JSON script instead of JavaScript:
// {"groups": [[{"tool": "a", "args": {...}}, ...], ...]}. The groups run in turn, the calls of a group concurrently
// (as with Promise.all); the result is every call's outcome, as JSON, in script order: the structured content when
// the tool gave one, else its text, or the error the script saw.
type scriptRunner struct {
	mu        sync.Mutex
	described [][]string // the tools of each Describe
}

type scriptCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

type scriptOutcome struct {
	Tool  string          `json:"tool"`
	Value json.RawMessage `json:"value,omitempty"`
	Text  string          `json:"text,omitempty"`
	Error string          `json:"error,omitempty"`
}

func (s *scriptRunner) Describe(tools []*ManagedTool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Spec.Name
	}
	s.mu.Lock()
	s.described = append(s.described, names)
	s.mu.Unlock()
	return "Write a script. Tools: " + strings.Join(names, ", ")
}

func (s *scriptRunner) Run(ctx context.Context, code string, tools ToolCaller) (*Result, error) {
	var script struct {
		Groups [][]scriptCall `json:"groups"`
	}
	if err := json.Unmarshal([]byte(code), &script); err != nil {
		return &Result{Text: "SyntaxError: " + err.Error(), IsError: true}, nil
	}
	var out []scriptOutcome
	for _, g := range script.Groups {
		outcomes := make([]scriptOutcome, len(g))
		var wg sync.WaitGroup
		for i, c := range g {
			// Started in the script's order on this goroutine, awaited concurrently, as codemode does.
			wait := tools.StartTool(ctx, c.Tool, c.Args)
			wg.Go(func() {
				o := scriptOutcome{Tool: c.Tool}
				res, err := wait()
				switch {
				case err != nil:
					o.Error = err.Error()
				case res.IsError:
					o.Error = res.Text
				case len(res.Structured) > 0:
					o.Value = res.Structured
				default:
					o.Text = res.Text
				}
				outcomes[i] = o
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, outcomes...)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &Result{Text: string(b)}, nil
}

// script is the code of a scriptRunner script with these groups.
func script(groups ...[]scriptCall) string {
	b, _ := json.Marshal(map[string]any{"groups": groups})
	return string(b)
}

func sc(tool, args string) scriptCall { return scriptCall{Tool: tool, Args: json.RawMessage(args)} }

// codeCall is the model's call of run_code with code.
func codeCall(id, code string) fakellm.ToolCall {
	args, _ := json.Marshal(map[string]string{"code": code})
	return call(id, CodeToolName, string(args))
}

// outcomes reads a run_code tool message written by scriptRunner.
func outcomes(t *testing.T, msg string) []scriptOutcome {
	t.Helper()
	text, _, _ := strings.Cut(msg, "\n\nSources (cite as [source N]):")
	var out []scriptOutcome
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("run_code's message %q: %v", msg, err)
	}
	return out
}

// codeTools are tools for scripts: weather (structured), news (text with a reference), strict (its argument
// required), and the tools that policies keep from scripts. Each counts its calls.
type codeTools struct {
	calls map[string]*atomic.Int32
	// meet, when set, makes weather and news each wait until the other started: they can only finish when they
	// run concurrently.
	meet *sync.WaitGroup
	met  atomic.Int32
}

func newCodeTools() (*codeTools, []Tool) {
	c := &codeTools{calls: map[string]*atomic.Int32{}}
	count := func(name string) {
		n := c.calls[name]
		n.Add(1)
	}
	for _, n := range []string{"weather", "news", "strict", "secret", "guarded", "handoff"} {
		c.calls[n] = &atomic.Int32{}
	}
	rendezvous := func(ctx context.Context) error {
		if c.meet == nil || c.met.Add(1) > 2 {
			return nil
		}
		c.meet.Done()
		done := make(chan struct{})
		go func() { c.meet.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return errors.New("the other call never started")
		}
	}
	object := json.RawMessage(`{"type":"object"}`)
	tools := []Tool{
		&funcTool{spec: ToolSpec{Name: "weather", Description: "Weather in a city.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			fn: func(ctx context.Context, args json.RawMessage, _ *Call) (*Result, error) {
				count("weather")
				if err := rendezvous(ctx); err != nil {
					return nil, err
				}
				return &Result{Text: "20 degrees", Structured: json.RawMessage(`{"temp":20}`)}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "news", Description: "News about a topic.", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			fn: func(ctx context.Context, args json.RawMessage, call *Call) (*Result, error) {
				count("news")
				call.ReportProgress(Progress{Message: "reading"})
				if err := rendezvous(ctx); err != nil {
					return nil, err
				}
				return &Result{Text: "news of " + string(args), References: []Reference{{Title: "Go 1.24", URI: "https://go.dev/blog/go1.24", Content: "Go 1.24 is out."}}}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "strict", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
			fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
				count("strict")
				return &Result{Text: "ok"}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "secret", InputSchema: object},
			fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
				count("secret")
				return &Result{Text: "ok"}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "guarded", InputSchema: object},
			fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
				count("guarded")
				return &Result{Text: "guarded ran"}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "handoff", InputSchema: object},
			fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
				count("handoff")
				return &Result{Text: "over"}, nil
			}},
	}
	return c, tools
}

var codePolicies = map[string]ToolPolicy{"secret": {Disabled: true}, "guarded": {RequireApproval: true}, "handoff": {TakesControl: true}}

func codeHarness(t *testing.T, runner *scriptRunner, opts Options) (*harness, *codeTools) {
	t.Helper()
	ct, tools := newCodeTools()
	if opts.CodeMode.Runner == nil {
		opts.CodeMode.Runner = runner
	}
	return newHarness(t, harnessConfig{tools: tools, policies: codePolicies, opts: opts}), ct
}

func TestCodeModeOffered(t *testing.T) {
	tests := []struct {
		name      string
		opts      CodeModeOptions
		sel       Selection
		extra     []Tool // a second source
		policies  map[string]ToolPolicy
		wantTools []string
		wantDecl  []string // nil: run_code is not ours
	}{
		{name: "every tool a script may call", wantTools: []string{"weather", "news", "strict", "guarded", "handoff", CodeToolName},
			wantDecl: []string{"weather", "news", "strict", "guarded"}},
		{name: "the configured tools", opts: CodeModeOptions{Tools: []string{"news", "secret", "handoff"}},
			wantTools: []string{"weather", "news", "strict", "guarded", "handoff", CodeToolName}, wantDecl: []string{"news"}},
		{name: "the caller's selection", sel: Selection{DisabledTools: []string{"weather", "strict"}},
			wantTools: []string{"news", "guarded", "handoff", CodeToolName}, wantDecl: []string{"news", "guarded"}},
		{name: "a source's run_code keeps code mode off", extra: named(CodeToolName),
			wantTools: []string{"weather", "news", "strict", "guarded", "handoff", CodeToolName}},
		{name: "no tool to call", sel: Selection{ToolChoices: []string{"handoff"}}, wantTools: []string{"handoff"}},
		{name: "an exclusive tool keeps code mode off", policies: map[string]ToolPolicy{"news": {Exclusive: true}}, wantTools: []string{"news"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runner := &scriptRunner{}
			_, tools := newCodeTools()
			policies := codePolicies
			if tt.policies != nil {
				policies = tt.policies
			}
			h := newHarness(t, harnessConfig{tools: tools, policies: policies, sets: []Toolset{&staticSet{name: "other", tools: tt.extra}},
				opts: Options{CodeMode: CodeModeOptions{Runner: runner, Tools: tt.opts.Tools}}})
			turns := []fakellm.Turn{{Text: "hi"}}
			if len(tt.sel.ToolChoices) > 0 {
				turns = []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{call("h", "handoff", `{}`)}}}
			}
			h.srv.Enqueue(turns...)
			h.mustAsk(t, &Request{Prompt: "x", Selection: tt.sel})
			first := h.srv.Requests()[0]
			if got := first.ToolNames(); !slices.Equal(got, tt.wantTools) {
				t.Errorf("offered %v, want %v", got, tt.wantTools)
			}
			desc := ""
			for _, tool := range first.Tools {
				if tool.Function.Name == CodeToolName {
					desc = tool.Function.Description
				}
			}
			if tt.wantDecl == nil {
				if len(runner.described) > 0 {
					t.Errorf("run_code was described with %v", runner.described)
				}
				return
			}
			if want := "Write a script. Tools: " + strings.Join(tt.wantDecl, ", "); desc != want {
				t.Errorf("run_code's description = %q, want %q", desc, want)
			}
		})
	}
}

func TestCodeModeCalls(t *testing.T) {
	runner := &scriptRunner{}
	h, ct := codeHarness(t, runner, Options{ToolTimeout: time.Minute})
	ct.meet = &sync.WaitGroup{}
	ct.meet.Add(2)
	code := script(
		[]scriptCall{sc("weather", `{"city":"Paris"}`), sc("news", `{"q":"go"}`), sc("weather", `{ "city" : "Paris" }`)},
		[]scriptCall{sc("strict", `{"n":"one"}`), sc("secret", `{}`), sc("handoff", `{}`), sc("nope", `{}`), sc(CodeToolName, `{}`)},
	)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", code)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c2", script([]scriptCall{sc("news", `{"q":"after"}`)}))}},
		fakellm.Turn{Text: "done"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "go"})
	reqs := h.srv.Requests()
	got := outcomes(t, toolMessages(reqs[1])["c1"])
	want := []scriptOutcome{
		{Tool: "weather", Value: json.RawMessage(`{"temp":20}`)},
		{Tool: "news", Text: `news of {"q":"go"}`},
		{Tool: "weather", Value: json.RawMessage(`{"temp":20}`)},
		{Tool: "strict", Error: "the arguments of strict do not match its schema: n: expected integer, got string"},
		{Tool: "secret", Error: `tool "secret" is disabled by the configuration`},
		{Tool: "handoff", Error: "handoff hands the conversation over, so it cannot be called from code: call it directly"},
		{Tool: "nope", Error: `unknown tool "nope"`},
		{Tool: CodeToolName, Error: "run_code cannot be called from code"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the script saw\n%+v\nwant\n%+v", got, want)
	}
	// weather and news met, so they ran concurrently; the identical weather call ran once.
	for name, n := range map[string]int32{"weather": 1, "news": 2, "strict": 0, "secret": 0, "handoff": 0} {
		if got := ct.calls[name].Load(); got != n {
			t.Errorf("%s ran %d times, want %d", name, got, n)
		}
	}
	if got := outcomes(t, toolMessages(reqs[2])["c2"]); len(got) != 1 || got[0].Text != `news of {"q":"after"}` {
		t.Errorf("the second script saw %+v", got)
	}

	// Run_code's call, then its script's in the order the script made them, numbered in that order even within a
	// group of concurrent calls.
	type row struct {
		Name, Parent, NotRun string
		OK, Duplicate        bool
	}
	var rows []row
	var ids []string
	for _, c := range ans.ToolCalls {
		rows = append(rows, row{c.Name, c.Parent, c.NotRun, c.OK, c.Duplicate})
		ids = append(ids, c.ID)
	}
	wantRows := []row{
		{CodeToolName, "", "", true, false},
		{"weather", "c1", "", true, false},
		{"news", "c1", "", true, false},
		{"weather", "c1", "", true, true},
		{"strict", "c1", "the arguments of strict do not match its schema: n: expected integer, got string", false, false},
		{"secret", "c1", `tool "secret" is disabled by the configuration`, false, false},
		{"handoff", "c1", "handoff hands the conversation over, so it cannot be called from code: call it directly", false, false},
		{"nope", "c1", `unknown tool "nope"`, false, false},
		{CodeToolName, "c1", "run_code cannot be called from code", false, false},
		{CodeToolName, "", "", true, false},
		{"news", "c2", "", true, false},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("tool calls:\n%+v\nwant\n%+v", rows, wantRows)
	}
	if want := []string{"c1", "c1/1", "c1/2", "c1/3", "c1/4", "c1/5", "c1/6", "c1/7", "c1/8", "c2", "c2/1"}; !slices.Equal(ids, want) {
		t.Errorf("tool call ids %q, want %q", ids, want)
	}
	if c := ans.ToolCalls[1]; c.Source != "test" || c.Iteration != 0 || c.Bytes == 0 {
		t.Errorf("the nested call's info = %+v", c)
	}
	if c := ans.ToolCalls[0]; c.Source != CodeToolSource || c.References != 1 {
		t.Errorf("run_code's info = %+v, want source %q and the reference of news", c, CodeToolSource)
	}

	// The nested calls are events of the run, naming their parent; the end of run_code comes after them.
	var seen []string
	progress := 0
	for _, ev := range h.events {
		if ev.Kind == EventToolProgress && ev.ToolCall.Name == "news" && ev.ToolCall.Parent != "" && ev.ToolCall.Progress.Message == "reading" {
			progress++
		}
		if ev.ToolCall != nil && ev.Kind != EventToolProgress && ev.Iteration == 0 {
			seen = append(seen, fmt.Sprintf("%s %s %s", ev.Kind, ev.ToolCall.ID, ev.ToolCall.Parent))
		}
	}
	if len(seen) != 6 || seen[0] != "tool_start c1 " || seen[5] != "tool_end c1 " || !strings.HasSuffix(seen[1], " c1") || !strings.HasSuffix(seen[4], " c1") {
		t.Errorf("events: %q", seen)
	}
	if progress != 2 {
		t.Errorf("%d progress events of news from the scripts, want 2", progress)
	}
}

func TestCodeModeApproval(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprint("allow ", allow), func(t *testing.T) {
			h, ct := codeHarness(t, &scriptRunner{}, Options{})
			h.srv.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("guarded", `{"x":1}`)}))}},
				fakellm.Turn{Text: "done"},
			)
			ia := &approver{allow: allow}
			ans := h.mustAsk(t, &Request{Prompt: "go", Interactor: ia})
			if !slices.Equal(ia.asked, []string{`guarded {"x":1}`}) {
				t.Errorf("asked %q", ia.asked)
			}
			got := outcomes(t, toolMessages(h.srv.LastRequest())["c1"])
			nested := ans.ToolCalls[1]
			if allow {
				if got[0].Text != "guarded ran" || ct.calls["guarded"].Load() != 1 || nested.Approval != "approved" || !nested.OK {
					t.Errorf("approved: the script saw %+v; the tool ran %d times; info %+v", got, ct.calls["guarded"].Load(), nested)
				}
				return
			}
			if got[0].Error != errApprovalDenied.Error() || ct.calls["guarded"].Load() != 0 || nested.Approval != "denied" || nested.NotRun != "approval denied" {
				t.Errorf("denied: the script saw %+v; the tool ran %d times; info %+v", got, ct.calls["guarded"].Load(), nested)
			}
		})
	}
}

// What a script read is numbered in the run's sources, after the sources of earlier calls, and the answer cites it.
func TestCodeModeReferences(t *testing.T) {
	h, _ := codeHarness(t, &scriptRunner{}, Options{})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("n0", "news", `{"q":"first"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("news", `{"q":"go"}`), sc("weather", `{"city":"Rome"}`)}))}},
		fakellm.Turn{Text: "Go 1.24 is out [source 2]."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "news?"})
	msg := toolMessages(h.srv.LastRequest())["c1"]
	if !strings.Contains(msg, `Sources (cite as [source N]):`+"\n"+`[{"source":2,"title":"Go 1.24","uri":"https://go.dev/blog/go1.24","content":"Go 1.24 is out."}]`) {
		t.Errorf("run_code's message does not number what the script read as source 2:\n%s", msg)
	}
	want := []NumberedReference{{Number: 1, Title: "Go 1.24", URI: "https://go.dev/blog/go1.24"}}
	if !reflect.DeepEqual(ans.References, want) || !strings.HasPrefix(ans.Text, "Go 1.24 is out [1].") {
		t.Errorf("answer %q with %+v", ans.Text, ans.References)
	}
}

// Cancelling the run cancels the calls the script is making.
func TestCodeModeCancel(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	slow := &funcTool{spec: ToolSpec{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		fn: func(ctx context.Context, _ json.RawMessage, _ *Call) (*Result, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}}
	h := newHarness(t, harnessConfig{tools: []Tool{slow}, opts: Options{CodeMode: CodeModeOptions{Runner: &scriptRunner{}}}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("slow", `{}`)}))}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	ans, err := h.orch.Ask(ctx, &Request{Prompt: "go"}, nil)
	if !errors.Is(err, context.Canceled) || ans == nil || ans.StoppedBy != StopCancelled {
		t.Fatalf("run ended with %v, %+v", err, ans)
	}
	select {
	case <-cancelled:
	default:
		t.Error("the script's call did not see its context end")
	}
	if h.srv.RequestCount() != 1 {
		t.Errorf("the model was called %d times", h.srv.RequestCount())
	}
}

// The calls of a script count toward Limits.ToolCalls, beside run_code's own; the per-round cap does not apply.
func TestCodeModeToolCallLimit(t *testing.T) {
	h, ct := codeHarness(t, &scriptRunner{}, Options{MaxToolCalls: 1, Limits: Limits{ToolCalls: 3}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script(
		[]scriptCall{sc("weather", `{"city":"Oslo"}`)}, []scriptCall{sc("news", `{}`)}, []scriptCall{sc("news", `{"q":"more"}`)}))}})
	ans := h.mustAsk(t, &Request{Prompt: "go"})
	got := outcomes(t, savedToolMessage(t, h, "c1"))
	if got[1].Text == "" || got[2].Error != "not executed: the run reached its limit of 3 tool calls" {
		t.Errorf("the script saw %+v", got)
	}
	if ct.calls["news"].Load() != 1 || ans.StoppedBy != StopUsageLimit {
		t.Errorf("news ran %d times; the run stopped by %s", ct.calls["news"].Load(), ans.StoppedBy)
	}
	if c := ans.ToolCalls[3]; c.NotRun != "tool call limit" || c.Parent != "c1" {
		t.Errorf("the refused call's info = %+v", c)
	}
}

// savedToolMessage returns the tool message of call id in the conversation h's first run saved.
func savedToolMessage(t *testing.T, h *harness, id string) string {
	t.Helper()
	conv, err := h.orch.Conversations().Load(t.Context(), "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range conv.Messages {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool message of %s was saved", id)
	return ""
}

// toolObserver records the tool calls it observes, and marks the context of each with its call id.
type toolObserver struct {
	mu    sync.Mutex
	calls []string
}

type observedCallKey struct{}

func (o *toolObserver) StartRun(ctx context.Context, _ *RunStart) (context.Context, func(*Answer, error)) {
	return ctx, func(*Answer, error) {}
}

func (o *toolObserver) StartModelCall(ctx context.Context, _ *ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

func (o *toolObserver) StartToolCall(ctx context.Context, c *ToolCallStart) (context.Context, func(*Result, error)) {
	under, _ := ctx.Value(observedCallKey{}).(string)
	o.mu.Lock()
	o.calls = append(o.calls, fmt.Sprintf("%s %s parent=%q under=%q", c.Tool, c.CallID, c.ParentCallID, under))
	o.mu.Unlock()
	return context.WithValue(ctx, observedCallKey{}, c.CallID), func(*Result, error) {}
}

// A call from a script is observed under run_code's call, as its child.
func TestCodeModeSpans(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", IdleTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, tools := newCodeTools()
	obs := &toolObserver{}
	tm := NewToolManager([]Toolset{&staticSet{name: "test", tools: tools}}, &ToolManagerOptions{Observer: obs})
	orch := New(model, tm, &Options{CodeMode: CodeModeOptions{Runner: &scriptRunner{}}})
	srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("weather", `{"city":"Oslo"}`)})), call("w", "weather", `{"city":"Rome"}`)}},
		fakellm.Turn{Text: "done"},
	)
	if _, err := orch.Ask(t.Context(), &Request{Prompt: "go"}, nil); err != nil {
		t.Fatal(err)
	}
	slices.Sort(obs.calls)
	want := []string{`run_code c1 parent="" under=""`, `weather c1/1 parent="c1" under="c1"`, `weather w parent="" under=""`}
	if !slices.Equal(obs.calls, want) {
		t.Errorf("observed %q, want %q", obs.calls, want)
	}
}

// With tool search on, run_code declares the offered tools, says that search_tools finds the others, and a script
// may call a tool not loaded yet.
func TestCodeModeWithToolSearch(t *testing.T) {
	cat, tools := newCatalogue()
	runner := &scriptRunner{}
	h := newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{"clock": {Pinned: pin(true)}},
		opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}, CodeMode: CodeModeOptions{Runner: runner}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("weather_get", `{"city":"Paris"}`)}))}},
		fakellm.Turn{Text: "Sunny."},
	)
	h.mustAsk(t, &Request{Prompt: "Weather in Paris?"})
	first := h.srv.Requests()[0]
	if got := first.ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName, CodeToolName}) {
		t.Errorf("offered %v", got)
	}
	desc := first.Tools[2].Function.Description
	if !strings.HasPrefix(desc, "Write a script. Tools: clock\n\n") || !strings.Contains(desc, SearchToolName+" finds them") {
		t.Errorf("run_code's description = %q", desc)
	}
	if got := outcomes(t, toolMessages(h.srv.LastRequest())["c1"]); len(got) != 1 || got[0].Text != "weather_get done" || cat.calls["weather_get"].Load() != 1 {
		t.Errorf("the script saw %+v", got)
	}
}

// The calls of a script are steps: a run resumed mid-script runs the script again, and the calls recorded before
// the crash are not made again.
func TestCodeModeResume(t *testing.T) {
	turns := []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("weather", `{"city":"Oslo"}`)}, []scriptCall{sc("news", `{"q":"go"}`)}))}},
		{Text: "done"},
	}
	newOrch := func(t *testing.T) (*Orchestrator, *codeTools, *fakellm.Server, ConversationStore) {
		srv := fakellm.New()
		t.Cleanup(srv.Close)
		model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		ct, tools := newCodeTools()
		store := NewMemoryStore(nil)
		return New(model, NewToolManager([]Toolset{&staticSet{name: "test", tools: tools}}, nil), &Options{Conversations: store,
			CodeMode: CodeModeOptions{Runner: &scriptRunner{}}}), ct, srv, store
	}
	ask := func(t *testing.T, orch *Orchestrator, steps StepRunner) (*Answer, error) {
		return orch.Ask(t.Context(), &Request{Prompt: "go", ConversationID: "conv", StartConversation: true, Steps: steps}, nil)
	}
	whole := &journal{crashAt: -1}
	orch, _, srv, _ := newOrch(t)
	srv.Enqueue(turns...)
	want, err := ask(t, orch, whole)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{
		"load conversation",
		"tool search decision",
		"iteration 0: model call",
		"iteration 0: code call weather (c1/1)",
		"iteration 0: code call news (c1/2)",
		"iteration 1: model call",
		"save conversation",
	}
	if !slices.Equal(whole.started, wantNames) {
		t.Fatalf("steps:\n%s", strings.Join(whole.started, "\n"))
	}
	// The process dies after the script's first call.
	first := &journal{crashAt: 4}
	orch1, _, srv1, _ := newOrch(t)
	srv1.Enqueue(turns[0])
	if _, err := ask(t, orch1, first); !errors.Is(err, errCrash) {
		t.Fatalf("the crashed run ended with %v", err)
	}
	resumed := &journal{entries: first.recorded(t, 4), replay: 4, crashAt: -1}
	orch2, ct2, srv2, _ := newOrch(t)
	srv2.Enqueue(turns[1])
	got, err := ask(t, orch2, resumed)
	if err != nil {
		t.Fatal(err)
	}
	if ct2.calls["weather"].Load() != 0 || ct2.calls["news"].Load() != 1 {
		t.Errorf("the resumed run called weather %d and news %d times, want 0 and 1", ct2.calls["weather"].Load(), ct2.calls["news"].Load())
	}
	if got.Text != want.Text || !slices.Equal(resumed.started, wantNames) {
		t.Errorf("resumed: %q, steps %q", got.Text, resumed.started)
	}
}

// chainTools is one tool, echo, for scripts whose concurrent calls must finish in reverse order: echo {"n": k,
// "after": m} returns {"n": k, "tag": tag} once the call with n = m has finished. It counts its calls by n and
// records the order in which they finished.
type chainTools struct {
	tag      string
	mu       sync.Mutex
	finished map[int]chan struct{}
	order    []int
	calls    map[int]int
}

func newChainTools(tag string) *chainTools {
	return &chainTools{tag: tag, finished: map[int]chan struct{}{}, calls: map[int]int{}}
}

func (c *chainTools) done(n int) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished[n] == nil {
		c.finished[n] = make(chan struct{})
	}
	return c.finished[n]
}

func (c *chainTools) tool() Tool {
	return &funcTool{spec: ToolSpec{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"after":{"type":"integer"}},"required":["n"]}`)},
		fn: func(ctx context.Context, args json.RawMessage, _ *Call) (*Result, error) {
			var in struct{ N, After int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.calls[in.N]++
			c.mu.Unlock()
			if in.After != 0 {
				select {
				case <-c.done(in.After):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			c.mu.Lock()
			c.order = append(c.order, in.N)
			c.mu.Unlock()
			close(c.done(in.N))
			return &Result{Structured: json.RawMessage(fmt.Sprintf(`{"n":%d,"tag":%q}`, in.N, c.tag))}, nil
		}}
}

// reversed is a group of three concurrent echo calls that finish in reverse order: 3, then 2, then 1.
var reversed = []scriptCall{sc("echo", `{"n":1,"after":2}`), sc("echo", `{"n":2,"after":3}`), sc("echo", `{"n":3}`)}

// orderedSteps runs steps at once, as DirectSteps, and records the order in which they were started and whether Go
// was ever entered while another Go was under way (a durable engine's step counter does not allow it).
type orderedSteps struct {
	DirectSteps
	hold       time.Duration // how long each start takes, to widen the window where a second one could come in
	mu         sync.Mutex
	entering   sync.Mutex
	started    []string
	concurrent atomic.Bool
}

func (s *orderedSteps) Step(ctx context.Context, name string, do func(context.Context) ([]byte, error)) ([]byte, error) {
	return s.Go(ctx, name, do)()
}

func (s *orderedSteps) Go(ctx context.Context, name string, do func(context.Context) ([]byte, error)) func() ([]byte, error) {
	if !s.entering.TryLock() {
		s.concurrent.Store(true)
		s.entering.Lock()
	}
	defer s.entering.Unlock()
	time.Sleep(s.hold)
	s.mu.Lock()
	s.started = append(s.started, name)
	s.mu.Unlock()
	return s.DirectSteps.Go(ctx, name, do)
}

// The calls of a script are numbered, and their steps started, in the script's order, even when they run
// concurrently and finish in reverse order.
func TestCodeModeScriptOrder(t *testing.T) {
	chain := newChainTools("")
	h := newHarness(t, harnessConfig{tools: []Tool{chain.tool()}, opts: Options{CodeMode: CodeModeOptions{Runner: &scriptRunner{}}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("c1", script(reversed, []scriptCall{sc("echo", `{"n":4}`)}))}},
		fakellm.Turn{Text: "done"},
	)
	steps := &orderedSteps{}
	ans := h.mustAsk(t, &Request{Prompt: "go", Steps: steps})
	if !slices.Equal(chain.order, []int{3, 2, 1, 4}) {
		t.Fatalf("the calls finished in the order %v, want 3, 2, 1, 4", chain.order)
	}
	var code []string
	for _, name := range steps.started {
		if strings.Contains(name, "code call") {
			code = append(code, name)
		}
	}
	want := []string{"iteration 0: code call echo (c1/1)", "iteration 0: code call echo (c1/2)", "iteration 0: code call echo (c1/3)", "iteration 0: code call echo (c1/4)"}
	if !slices.Equal(code, want) {
		t.Errorf("code call steps started %q, want %q", code, want)
	}
	if steps.concurrent.Load() {
		t.Error("steps were started from several goroutines at once")
	}
	// Each id is the call the script made in that place: its arguments and its outcome.
	for _, ev := range h.events {
		if ev.ToolCall == nil || ev.ToolCall.Parent != "c1" || ev.Kind == EventToolProgress {
			continue
		}
		n := strings.TrimPrefix(ev.ToolCall.ID, "c1/")
		if !strings.HasPrefix(string(ev.ToolCall.Arguments), `{"n":`+n) {
			t.Errorf("%s of %s has the arguments %s", ev.Kind, ev.ToolCall.ID, ev.ToolCall.Arguments)
		}
		if ev.Kind == EventToolEnd && !strings.HasPrefix(string(ev.ToolCall.Result.Structured), `{"n":`+n+`,`) {
			t.Errorf("the end of %s has the result %s", ev.ToolCall.ID, ev.ToolCall.Result.Structured)
		}
	}
	var ids []string
	for _, c := range ans.ToolCalls {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"c1", "c1/1", "c1/2", "c1/3", "c1/4"}) {
		t.Errorf("tool call ids %q", ids)
	}
	got := outcomes(t, toolMessages(h.srv.LastRequest())["c1"])
	for i, o := range got {
		if want := fmt.Sprintf(`{"n":%d,"tag":""}`, i+1); string(o.Value) != want {
			t.Errorf("the script's call %d saw %s, want %s", i+1, o.Value, want)
		}
	}
}

// A run resumed in a script whose concurrent calls finished in reverse order hands each call its own recorded
// outcome.
func TestCodeModeResumeConcurrent(t *testing.T) {
	turns := []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{codeCall("c1", script(reversed, []scriptCall{sc("echo", `{"n":4}`)}))}},
		{Text: "done"},
	}
	newOrch := func(t *testing.T, tag string) (*Orchestrator, *chainTools, *fakellm.Server) {
		srv := fakellm.New()
		t.Cleanup(srv.Close)
		model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		chain := newChainTools(tag)
		return New(model, NewToolManager([]Toolset{&staticSet{name: "test", tools: []Tool{chain.tool()}}}, nil), &Options{Conversations: NewMemoryStore(nil),
			CodeMode: CodeModeOptions{Runner: &scriptRunner{}}}), chain, srv
	}
	ask := func(t *testing.T, orch *Orchestrator, steps StepRunner) (*Answer, error) {
		return orch.Ask(t.Context(), &Request{Prompt: "go", ConversationID: "conv", StartConversation: true, Steps: steps}, nil)
	}
	wantNames := []string{
		"load conversation",
		"tool search decision",
		"iteration 0: model call",
		"iteration 0: code call echo (c1/1)",
		"iteration 0: code call echo (c1/2)",
		"iteration 0: code call echo (c1/3)",
		"iteration 0: code call echo (c1/4)",
		"iteration 1: model call",
		"save conversation",
	}
	// The process dies after the concurrent calls, which finished in reverse order.
	first := &journal{crashAt: 6, overlap: true}
	orch1, chain1, srv1 := newOrch(t, "first")
	srv1.Enqueue(turns[0])
	if _, err := ask(t, orch1, first); !errors.Is(err, errCrash) {
		t.Fatalf("the crashed run ended with %v", err)
	}
	if !slices.Equal(chain1.order, []int{3, 2, 1}) {
		t.Fatalf("the calls finished in the order %v, want 3, 2, 1", chain1.order)
	}
	resumed := &journal{entries: first.recorded(t, 6), replay: 6, crashAt: -1, overlap: true}
	orch2, chain2, srv2 := newOrch(t, "resumed")
	srv2.Enqueue(turns[1])
	if _, err := ask(t, orch2, resumed); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resumed.started, wantNames) {
		t.Errorf("resumed steps:\n%s", strings.Join(resumed.started, "\n"))
	}
	if want := map[int]int{4: 1}; !maps.Equal(chain2.calls, want) {
		t.Errorf("the resumed run made the calls %v, want %v", chain2.calls, want)
	}
	got := outcomes(t, toolMessages(srv2.LastRequest())["c1"])
	want := []string{`{"n":1,"tag":"first"}`, `{"n":2,"tag":"first"}`, `{"n":3,"tag":"first"}`, `{"n":4,"tag":"resumed"}`}
	if len(got) != len(want) {
		t.Fatalf("the resumed script saw %+v", got)
	}
	for i, o := range got {
		if string(o.Value) != want[i] {
			t.Errorf("the resumed script's call %d saw %s, want %s", i+1, o.Value, want[i])
		}
	}
}

// A sub-agent called from a script adds its usage to the run's.
func TestCodeModeSubAgentUsage(t *testing.T) {
	h := newAgentHarness(t, []Tool{search()}, nil)
	h.orch = New(h.model("parent-model"), h.tm, &Options{Instructions: "You are the parent.", CodeMode: CodeModeOptions{Runner: &scriptRunner{}}})
	h.addAgent("researcher", []string{"search"}, fakellm.Turn{Text: "It is so."})
	h.parent = []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{codeCall("c1", script([]scriptCall{sc("researcher", `{"task":"research it"}`)}))}},
		{Text: "done"},
	}
	ans, err := h.ask(t.Context(), &Request{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(t, toolMessages(h.requests("parent-model")[1])["c1"]); len(got) != 1 || got[0].Text != "It is so." {
		t.Errorf("the script saw %+v", got)
	}
	if ans.Usage.Requests != 3 {
		t.Errorf("usage counts %d requests, want 3 (2 of the parent, 1 of the sub-agent)", ans.Usage.Requests)
	}
}

// Two scripts in one round start their steps one at a time, never from two goroutines at once.
func TestCodeModeTwoScriptsStartStepsOneAtATime(t *testing.T) {
	h := newHarness(t, harnessConfig{tools: []Tool{described("ping", "Answers.")}, opts: Options{CodeMode: CodeModeOptions{Runner: &scriptRunner{}}}})
	group := func(from int) []scriptCall {
		var calls []scriptCall
		for i := range 20 {
			calls = append(calls, sc("ping", fmt.Sprintf(`{"i":%d}`, from+i)))
		}
		return calls
	}
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{codeCall("a", script(group(0))), codeCall("b", script(group(100)))}},
		fakellm.Turn{Text: "done"},
	)
	steps := &orderedSteps{hold: time.Millisecond}
	ans := h.mustAsk(t, &Request{Prompt: "go", Steps: steps})
	if n := len(ans.ToolCalls); n != 42 {
		t.Errorf("%d tool calls, want 2 scripts of 20 calls each", n)
	}
	if steps.concurrent.Load() {
		t.Error("steps were started from several goroutines at once")
	}
}
