package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// catalogue is a set of tools for tool search: a clock (pinned by the tests that want it), the weather, mail and
// files; each counts its calls.
type catalogue struct{ calls map[string]*atomic.Int32 }

func newCatalogue() (*catalogue, []Tool) {
	c := &catalogue{calls: map[string]*atomic.Int32{}}
	var tools []Tool
	for _, s := range []ToolSpec{
		{Name: "clock", Description: "Tells the time.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "weather_get", Description: "Gets the current weather in a city.", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"units":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "mail_send", Description: "Sends an email.", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"to":{"type":"array","items":{"type":"string"}},"body":{"type":"string"}},"required":["to","body"]}`)},
		{Name: "files_read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	} {
		n := &atomic.Int32{}
		c.calls[s.Name] = n
		tools = append(tools, &funcTool{spec: s, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
			n.Add(1)
			return &Result{Text: s.Name + " done"}, nil
		}})
	}
	return c, tools
}

func pin(b bool) *bool { return &b }

func alwaysSearch(policies map[string]ToolPolicy) harnessConfig {
	_, tools := newCatalogue()
	return harnessConfig{tools: tools, policies: policies, opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}}
}

func TestToolSearchLoadsThenCalls(t *testing.T) {
	cat, tools := newCatalogue()
	h := newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{"clock": {Pinned: pin(true)}},
		opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", SearchToolName, `{"query":"weather city"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("w", "weather_get", `{"city":"Paris"}`)}},
		fakellm.Turn{Text: "Sunny."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Weather in Paris?"})
	reqs := h.srv.Requests()
	if got := reqs[0].ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName}) {
		t.Errorf("first request offers %v, want the pinned clock and search_tools", got)
	}
	if sys := reqs[0].Messages[0].Content; !strings.Contains(sys, "3 more, from test") || !strings.Contains(sys, SearchToolName) {
		t.Errorf("the system prompt does not say what search_tools finds:\n%s", sys)
	}
	if got := reqs[1].ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName, "weather_get"}) {
		t.Errorf("after the search, the request offers %v: want the loaded tool appended, the rest unchanged", got)
	}
	msg := toolMessages(reqs[1])["s"]
	if !strings.Contains(msg, "weather_get: Gets the current weather in a city.") || !strings.Contains(msg, `city: string (required), units: "c"|"f"`) {
		t.Errorf("search result = %q, want the tool, its description and its parameters", msg)
	}
	if cat.calls["weather_get"].Load() != 1 || ans.Text != "Sunny." {
		t.Errorf("weather_get ran %d times; answer %q", cat.calls["weather_get"].Load(), ans.Text)
	}
	it := ans.Iterations[0]
	if !it.ToolSearch || it.ToolsDeferred != 3 || !slices.Equal(it.ToolsLoaded, []string{"weather_get"}) || it.ToolsOffered != 2 {
		t.Errorf("iteration 0 debug = %+v", it)
	}
	if it := ans.Iterations[1]; it.ToolsDeferred != 2 || it.ToolsLoaded != nil {
		t.Errorf("iteration 1 debug = %+v", it)
	}
	if d := ans.ToolCalls[0].Debug; d["query"] != "weather city" || fmt.Sprint(d["loaded"]) != "[weather_get]" {
		t.Errorf("search_tools debug = %+v", d)
	}

	// A continued conversation offers the loaded tool from its first request, and keeps it in the store.
	h.srv.Enqueue(fakellm.Turn{Text: "Still sunny."})
	h.mustAsk(t, &Request{Prompt: "And now?", ConversationID: ans.ConversationID})
	if got := h.srv.LastRequest().ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName, "weather_get"}) {
		t.Errorf("the continued conversation offers %v", got)
	}
	conv, err := h.orch.Conversations().Load(t.Context(), ans.ConversationID)
	if err != nil || !slices.Equal(conv.Tools, []string{"weather_get"}) {
		t.Errorf("the conversation's tools = %q, %v", conv.Tools, err)
	}
	// A tool the caller disabled is not offered, though loaded.
	h.srv.Enqueue(fakellm.Turn{Text: "ok"})
	h.mustAsk(t, &Request{Prompt: "x", ConversationID: ans.ConversationID, Selection: Selection{DisabledTools: []string{"weather_get"}}})
	if got := h.srv.LastRequest().ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName}) {
		t.Errorf("with weather_get disabled, the continued conversation offers %v", got)
	}
}

func TestToolSearchByNames(t *testing.T) {
	cfg := alwaysSearch(map[string]ToolPolicy{"clock": {Pinned: pin(true)}, "files_read": {Disabled: true}})
	h := newHarness(t, cfg)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", SearchToolName, `{"names":["mail_send","files_read","nope","clock"]}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("q", SearchToolName, `{"query":"read a file weather","max_results":20}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("bad", SearchToolName, `{"max_results":3}`), call("big", SearchToolName, `{"query":"x","max_results":21}`),
			call("many", SearchToolName, `{"names":[`+strings.Repeat(`"a",`, MaxSearchResults)+`"a"]}`)}},
		fakellm.Turn{Text: "ok"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	reqs := h.srv.Requests()
	msg := toolMessages(reqs[1])["s"]
	if !strings.Contains(msg, "- mail_send: Sends an email.") || !strings.Contains(msg, "to: array of string (required)") ||
		!strings.Contains(msg, "Not found (unknown, or not available to you): files_read, nope.") || !strings.Contains(msg, "Already offered (call them directly): clock.") {
		t.Errorf("names result = %q", msg)
	}
	if got := reqs[1].ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName, "mail_send"}) {
		t.Errorf("after loading by name, the request offers %v", got)
	}
	// A disabled tool is never found: the query matches it, but only weather_get is loaded.
	if got := reqs[2].ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName, "mail_send", "weather_get"}) {
		t.Errorf("after the query, the request offers %v", got)
	}
	got := toolMessages(reqs[3])
	if !strings.HasPrefix(got["bad"], "Error: search_tools needs a query or names") || !strings.HasPrefix(got["big"], "Error: max_results must be between 1 and 20") ||
		!strings.HasPrefix(got["many"], "Error: at most 20 names at a time (got 21)") {
		t.Errorf("invalid searches: %q", got)
	}
	if n := ans.Iterations[0].ToolsDeferred; n != 2 {
		t.Errorf("deferred = %d, want 2 (the disabled tool is not among them)", n)
	}
}

func TestToolSearchCallOfToolNotLoaded(t *testing.T) {
	cfg := alwaysSearch(nil)
	h := newHarness(t, cfg)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("w1", "weather_get", `{"city":"Oslo"}`), call("f", "no_such_tool", `{}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("w2", "weather_get", `{"city":"Oslo"}`)}},
		fakellm.Turn{Text: "Cold."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Oslo?"})
	reqs := h.srv.Requests()
	got := toolMessages(reqs[1])
	if got["w1"] != "Error: weather_get was not loaded yet, so this call did not run. It is loaded now: call it again in your next turn." {
		t.Errorf("not-loaded message = %q", got["w1"])
	}
	if !strings.HasPrefix(got["f"], `Error: unknown tool "no_such_tool"`) {
		t.Errorf("unknown tool message = %q", got["f"])
	}
	if names := reqs[1].ToolNames(); !slices.Equal(names, []string{SearchToolName, "weather_get"}) {
		t.Errorf("after the call, the request offers %v", names)
	}
	if toolMessages(reqs[2])["w2"] != "weather_get done" {
		t.Errorf("second call = %q", toolMessages(reqs[2])["w2"])
	}
	if ans.ToolCalls[0].NotRun != "not loaded" || !slices.Equal(ans.Iterations[0].ToolsLoaded, []string{"weather_get"}) {
		t.Errorf("debug: %+v, %+v", ans.ToolCalls[0], ans.Iterations[0])
	}
}

func TestToolSearchModes(t *testing.T) {
	_, tools := newCatalogue()
	all := []string{"clock", "weather_get", "mail_send", "files_read"}
	managed := make([]*ManagedTool, len(tools))
	for i, tl := range tools {
		managed[i] = &ManagedTool{Spec: tl.Spec()}
	}
	estimate := EstimateToolTokens(managed)
	tests := []struct {
		name     string
		search   ToolSearchOptions
		policies map[string]ToolPolicy
		sel      Selection
		want     []string
		why      string // SearchDecision's
	}{
		{"never", ToolSearchOptions{Mode: ToolSearchNever}, nil, Selection{}, all, "never"},
		{"auto by default with few tools", ToolSearchOptions{}, nil, Selection{}, all, "auto"},
		{"auto at the threshold", ToolSearchOptions{Threshold: estimate}, nil, Selection{}, all, "auto"},
		{"auto above the threshold", ToolSearchOptions{Threshold: estimate - 1}, nil, Selection{}, []string{SearchToolName}, "auto"},
		{"always", ToolSearchOptions{Mode: ToolSearchAlways}, nil, Selection{}, []string{SearchToolName}, "always"},
		{"tool_choices", ToolSearchOptions{Mode: ToolSearchAlways}, nil, Selection{ToolChoices: []string{"clock"}}, nil, "tools chosen"},
		{"exclusive", ToolSearchOptions{Mode: ToolSearchAlways}, map[string]ToolPolicy{"mail_send": {Exclusive: true}}, Selection{}, []string{"mail_send"}, "exclusive tool"},
		{"nothing to defer", ToolSearchOptions{Mode: ToolSearchAlways}, map[string]ToolPolicy{"clock": {Pinned: pin(true)}}, Selection{DisabledTools: []string{"weather_get", "mail_send", "files_read"}}, []string{"clock"}, "every tool pinned"},
		{"caller's disabled tools not counted", ToolSearchOptions{Threshold: estimate - 1}, nil, Selection{DisabledTools: []string{"mail_send"}}, []string{"clock", "weather_get", "files_read"}, "auto"},
		{"pinned", ToolSearchOptions{Mode: ToolSearchAlways}, map[string]ToolPolicy{
			"files_read": {Pinned: pin(true)}, "clock": {TakesControl: true}, "mail_send": {TakesControl: true, Pinned: pin(false)},
		}, Selection{}, []string{"clock", "files_read", SearchToolName}, "always"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{tools: tools, policies: tt.policies, opts: Options{ToolSearch: tt.search}})
			if len(tt.sel.ToolChoices) > 0 {
				h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c", "clock", `{}`)}})
			}
			h.srv.Enqueue(fakellm.Turn{Text: "ok"})
			ans := h.mustAsk(t, &Request{Prompt: "x", Selection: tt.sel})
			first := h.srv.Requests()[0]
			want := tt.want
			if want == nil {
				want = tt.sel.ToolChoices
			}
			if got := first.ToolNames(); !slices.Equal(got, want) {
				t.Errorf("first request offers %v, want %v", got, want)
			}
			on := slices.Contains(want, SearchToolName)
			if ans.Iterations[0].ToolSearch != on || strings.Contains(first.Messages[0].Content, "More tools are available") != on {
				t.Errorf("search on = %v, system prompt:\n%s; want %v", ans.Iterations[0].ToolSearch, first.Messages[0].Content, on)
			}
			all, _ := h.orch.Tools().Tools(t.Context())
			if d := h.orch.SearchDecision(all, tt.sel); d.On != on || d.Why != tt.why {
				t.Errorf("SearchDecision = %+v, want on %v because %q", d, on, tt.why)
			}
		})
	}
}

// A forced tool stays offered with search on, even unpinned: the run calls it first.
func TestToolSearchForcedToolStaysOffered(t *testing.T) {
	cfg := alwaysSearch(map[string]ToolPolicy{"clock": {Forced: true, Pinned: pin(false)}})
	h := newHarness(t, cfg)
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c", "clock", `{}`)}}, fakellm.Turn{Text: "ok"})
	h.mustAsk(t, &Request{Prompt: "x"})
	first := h.srv.Requests()[0]
	if got := first.ToolNames(); !slices.Equal(got, []string{"clock", SearchToolName}) || first.ForcedTool() != "clock" {
		t.Errorf("first request offers %v, forcing %q", got, first.ForcedTool())
	}
}

func TestToolSearchLoadedToolStillAsksApproval(t *testing.T) {
	cat, tools := newCatalogue()
	h := newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{"mail_send": {RequireApproval: true}},
		opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", SearchToolName, `{"query":"email"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("m", "mail_send", `{"to":["a@b"],"body":"hi"}`)}},
		fakellm.Turn{Text: "Not sent."},
	)
	a := &approver{allow: false}
	ans := h.mustAsk(t, &Request{Prompt: "mail", Interactor: a})
	if !slices.Equal(a.asked, []string{`mail_send {"to":["a@b"],"body":"hi"}`}) || cat.calls["mail_send"].Load() != 0 {
		t.Errorf("asked %q; mail_send ran %d times", a.asked, cat.calls["mail_send"].Load())
	}
	if ans.ToolCalls[1].Approval != "denied" {
		t.Errorf("debug %+v", ans.ToolCalls[1])
	}
}

func TestToolSearchPerRoundCap(t *testing.T) {
	_, tools := newCatalogue()
	h := newHarness(t, harnessConfig{tools: tools, opts: Options{MaxToolCalls: 1, ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("a", SearchToolName, `{"names":["clock"]}`), call("b", SearchToolName, `{"names":["mail_send"]}`)}},
		fakellm.Turn{Text: "ok"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	if got := h.srv.Requests()[1].ToolNames(); !slices.Equal(got, []string{SearchToolName, "clock"}) {
		t.Errorf("after a capped round, the request offers %v: only the search that ran loads", got)
	}
	if ans.ToolCalls[1].NotRun != "round cap" || !slices.Equal(ans.Iterations[0].ToolsLoaded, []string{"clock"}) {
		t.Errorf("debug: %+v, %+v", ans.ToolCalls[1], ans.Iterations[0])
	}
}

func TestParamSummary(t *testing.T) {
	for _, tt := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"units":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]}`, `city: string (required), units: "c"|"f"`},
		{`{"type":"object","properties":{"b":{"type":["integer","null"]},"a":{}}}`, `a: any, b: integer|null`},
		{`{"type":"object"}`, ``},
		{`not json`, ``},
	} {
		if got := paramSummary(json.RawMessage(tt.schema)); got != tt.want {
			t.Errorf("paramSummary(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

// With an output tool, final_answer comes after search_tools and before the loaded tools.
func TestToolSearchWithOutputTool(t *testing.T) {
	_, tools := newCatalogue()
	h := newHarness(t, harnessConfig{tools: tools, opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways},
		OutputSchema: json.RawMessage(citySchema), CompileSchema: compileKeys}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", SearchToolName, `{"names":["weather_get"]}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("f", OutputToolName, `{"city":"Paris","why":"sunny"}`)}},
	)
	h.mustAsk(t, &Request{Prompt: "x"})
	reqs := h.srv.Requests()
	if got := reqs[0].ToolNames(); !slices.Equal(got, []string{SearchToolName, OutputToolName}) {
		t.Errorf("first request offers %v", got)
	}
	if got := reqs[1].ToolNames(); !slices.Equal(got, []string{SearchToolName, OutputToolName, "weather_get"}) {
		t.Errorf("second request offers %v", got)
	}
}

// While a source fails to list, every Tools call merges the list anew: a search still finds the deferred tools,
// and the index is built once, not per search.
func TestToolSearchWithAFailingSource(t *testing.T) {
	cfg := alwaysSearch(nil)
	cfg.sets = []Toolset{&staticSet{name: "broken", err: errors.New("down")}}
	h := newHarness(t, cfg)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s", SearchToolName, `{"query":"weather city"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("w", "weather_get", `{"city":"Paris"}`)}},
		fakellm.Turn{Text: "Sunny."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Weather in Paris?"})
	if got := h.srv.Requests()[1].ToolNames(); !slices.Contains(got, "weather_get") {
		t.Errorf("after the search, the request offers %v; search result %q", got, toolMessages(h.srv.Requests()[1])["s"])
	}
	if ans.Text != "Sunny." {
		t.Errorf("answer %q", ans.Text)
	}
	m := h.orch.Tools()
	first, _ := m.Tools(t.Context())
	if _, err := m.Search(t.Context(), "weather", nil); err != nil {
		t.Fatal(err)
	}
	ix := m.search.cur
	again, _ := m.Tools(t.Context())
	if &again[0] == &first[0] {
		t.Fatal("the list was not merged anew: the test does not test what it should")
	}
	hits, err := m.Search(t.Context(), "weather", nil)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search = %v, %v", hits, err)
	}
	if m.search.cur != ix {
		t.Error("the index was built again for a list merged anew with the same tools")
	}
	if slices.Contains(ix.list, hits[0].Tool) {
		t.Error("the hits are tools of the list the index was built from, not of the list the search was made over")
	}
}

// A tool of a source named search_tools keeps search off: the model would see two tools of one name.
func TestToolSearchNameTaken(t *testing.T) {
	cfg := alwaysSearch(nil)
	cfg.sets = []Toolset{&staticSet{name: "other", tools: named(SearchToolName)}}
	h := newHarness(t, cfg)
	h.srv.Enqueue(fakellm.Turn{Text: "ok"})
	h.mustAsk(t, &Request{Prompt: "x"})
	got := h.srv.Requests()[0].ToolNames()
	if n := slices.Index(got, SearchToolName); n < 0 || slices.Index(got[n+1:], SearchToolName) >= 0 || len(got) != 5 {
		t.Errorf("first request offers %v, want every tool once, the source's search_tools among them", got)
	}
	all, _ := h.orch.Tools().Tools(t.Context())
	if d := h.orch.SearchDecision(all, Selection{}); d.On || d.Why != "a tool is named search_tools" {
		t.Errorf("SearchDecision = %+v", d)
	}

	// With search on all the same (a recorded decision), the source's tool, pinned, is not offered beside it.
	cfg.policies = map[string]ToolPolicy{SearchToolName: {Pinned: pin(true)}}
	h = newHarness(t, cfg)
	h.srv.Enqueue(fakellm.Turn{Text: "ok"})
	h.mustAsk(t, &Request{Prompt: "x", Steps: replayedDecision{on: true}})
	if got := h.srv.Requests()[0].ToolNames(); !slices.Equal(got, []string{SearchToolName}) {
		t.Errorf("with search on, the first request offers %v, want search_tools once", got)
	}
}

// A takes_control tool that is not loaded yet does not run, so the calls beside it do.
func TestToolSearchDeferredTakerLeavesTheRoundAlone(t *testing.T) {
	cat, tools := newCatalogue()
	h := newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{
		"mail_send": {TakesControl: true, Pinned: pin(false)}, "clock": {Pinned: pin(true)},
	}, opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("m", "mail_send", `{}`), call("c", "clock", `{}`)}},
		fakellm.Turn{Text: "ok"},
	)
	h.mustAsk(t, &Request{Prompt: "x"})
	got := toolMessages(h.srv.Requests()[1])
	if !strings.Contains(got["m"], "was not loaded yet") || cat.calls["clock"].Load() != 1 {
		t.Errorf("mail_send: %q; clock ran %d times, want once", got["m"], cat.calls["clock"].Load())
	}

	// And the other way round: a pinned takes_control tool beside a call of a tool not loaded yet runs, and hands over.
	cat, tools = newCatalogue()
	h = newHarness(t, harnessConfig{tools: tools, policies: map[string]ToolPolicy{"clock": {TakesControl: true}},
		opts: Options{ToolSearch: ToolSearchOptions{Mode: ToolSearchAlways}}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c", "clock", `{}`), call("f", "files_read", `{}`)}})
	ans := h.mustAsk(t, &Request{Prompt: "x"})
	if cat.calls["clock"].Load() != 1 || ans.StoppedBy != StopToolControl {
		t.Errorf("clock ran %d times, the run stopped by %q; want clock to run and take control", cat.calls["clock"].Load(), ans.StoppedBy)
	}
}

// replayedDecision is a StepRunner that answers the tool search decision as a run recorded it before a crash.
type replayedDecision struct {
	DirectSteps
	on bool
}

func (r replayedDecision) Step(ctx context.Context, name string, do func(context.Context) ([]byte, error)) ([]byte, error) {
	if name == "tool search decision" {
		return json.Marshal(r.on)
	}
	return r.DirectSteps.Step(ctx, name, do)
}

// A resumed run keeps the recorded decision, whatever the tools would decide now.
func TestToolSearchDecisionIsAStep(t *testing.T) {
	h := newHarness(t, alwaysSearch(nil))
	h.srv.Enqueue(fakellm.Turn{Text: "ok"})
	ans := h.mustAsk(t, &Request{Prompt: "x", Steps: replayedDecision{on: false}})
	if got := h.srv.Requests()[0].ToolNames(); slices.Contains(got, SearchToolName) || len(got) != 4 || ans.Iterations[0].ToolSearch {
		t.Errorf("resumed with search recorded off, the first request offers %v", got)
	}

	_, tools := newCatalogue() // auto, far below the threshold: the tools would decide off
	h = newHarness(t, harnessConfig{tools: tools})
	h.srv.Enqueue(fakellm.Turn{Text: "ok"})
	ans = h.mustAsk(t, &Request{Prompt: "x", Steps: replayedDecision{on: true}})
	if got := h.srv.Requests()[0].ToolNames(); !slices.Equal(got, []string{SearchToolName}) || !ans.Iterations[0].ToolSearch {
		t.Errorf("resumed with search recorded on, the first request offers %v", got)
	}
}
