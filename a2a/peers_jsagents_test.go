package a2a

// The client side of the package (peers as tools) against the real JS SDK agents of testdata/a2a. Every call goes
// through the whole loop: a host.Orchestrator whose model is llm/openai talking to a scripted fakellm server, and
// whose tools are the peers' Toolsets. The tests check what the model read (the tool messages fakellm recorded), the
// answer and its references, the tool calls' debug info and the progress events.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm/openai"
)

// peerSettle bounds every wait of these tests: a run, a resolution, a peer's stats. It is generous for a loaded
// machine and never a claim about how long anything takes.
const peerSettle = 30 * time.Second

// peerLoop is an orchestrator whose tools are the toolsets of connected peers and whose model is a fakellm server.
type peerLoop struct {
	llm   *fakellm.Server
	peers *Peers
	orch  *host.Orchestrator
}

// newPeerLoop connects cfgs with opts (nil: defaults) and builds the orchestrator over their toolsets.
func newPeerLoop(t *testing.T, opts *Options, cfgs ...PeerConfig) *peerLoop {
	t.Helper()
	ps, err := Connect(testwait.Context(t, peerSettle), cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return newPeerLoopOver(t, ps)
}

// newPeerLoopOver builds the orchestrator over the toolsets of ps.
func newPeerLoopOver(t *testing.T, ps *Peers) *peerLoop {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tm := host.NewToolManager(ps.Toolsets(), nil)
	return &peerLoop{llm: srv, peers: ps, orch: host.New(model, tm, &host.Options{ToolTimeout: peerSettle})}
}

// peerRun is what one run produced and what the model received during it.
type peerRun struct {
	answer   *host.Answer
	err      error
	events   []*host.Event
	requests []*fakellm.Request // the chat completions of this run
}

// run scripts the model with turns and runs req under ctx (nil: a bounded context of the test's), handing each
// event to onEvent (when not nil) on the run's goroutine. It checks that the script was used up exactly, and leaves
// the run's error to the caller.
func (h *peerLoop) run(t *testing.T, ctx context.Context, req *host.Request, onEvent func(*host.Event), turns ...fakellm.Turn) *peerRun {
	t.Helper()
	if ctx == nil {
		ctx = testwait.Context(t, peerSettle)
	}
	before := h.llm.RequestCount()
	unscripted := h.llm.Unscripted()
	h.llm.Enqueue(turns...)
	r := &peerRun{}
	r.answer, r.err = h.orch.Ask(ctx, req, func(ev *host.Event) {
		r.events = append(r.events, ev)
		if onEvent != nil {
			onEvent(ev)
		}
	})
	r.requests = h.llm.Requests()[before:]
	if n := h.llm.Unscripted() - unscripted; n > 0 {
		t.Fatalf("the model was called %d times more than scripted", n)
	}
	if n := h.llm.Pending(); n > 0 {
		t.Fatalf("%d scripted turns were not used", n)
	}
	return r
}

// ask is run for a run that must end with an answer.
func (h *peerLoop) ask(t *testing.T, req *host.Request, turns ...fakellm.Turn) *peerRun {
	t.Helper()
	r := h.run(t, nil, req, nil, turns...)
	if r.err != nil {
		t.Fatalf("run failed: %v", r.err)
	}
	if r.answer == nil || r.answer.StoppedBy != host.StopAnswered {
		t.Fatalf("run ended with %+v, want an answer", r.answer)
	}
	return r
}

// callPeer scripts a model turn that calls tool with {"message": msg} under call id id.
func callPeer(id, tool, msg string) fakellm.Turn {
	args, _ := json.Marshal(map[string]string{"message": msg}) // a string: cannot fail
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: id, Name: tool, Arguments: string(args)}}}
}

// say scripts a model turn that answers text.
func say(text string) fakellm.Turn { return fakellm.Turn{Text: text} }

// toolMessage returns what the model read as the result of call id: the tool message of the run's last request.
func (r *peerRun) toolMessage(t *testing.T, id string) string {
	t.Helper()
	if len(r.requests) == 0 {
		t.Fatalf("the run made no model request")
	}
	for _, m := range r.requests[len(r.requests)-1].Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.ToolOutput()
		}
	}
	t.Fatalf("the model received no tool message for call %s", id)
	return ""
}

// callInfo returns the debug info of call id.
func (r *peerRun) callInfo(t *testing.T, id string) host.ToolCallInfo {
	t.Helper()
	if r.answer != nil {
		for _, c := range r.answer.ToolCalls {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("no debug info for tool call %s", id)
	return host.ToolCallInfo{}
}

// toolEnd returns the tool_end event of call id.
func (r *peerRun) toolEnd(t *testing.T, id string) *host.ToolEvent {
	t.Helper()
	for _, ev := range r.events {
		if ev.Kind == host.EventToolEnd && ev.ToolCall.ID == id {
			return ev.ToolCall
		}
	}
	t.Fatalf("no tool_end event for call %s", id)
	return nil
}

// progress returns the progress messages relayed for call id, in order.
func (r *peerRun) progress(id string) []string {
	var out []string
	for _, ev := range r.events {
		if ev.Kind == host.EventToolProgress && ev.ToolCall.ID == id {
			out = append(out, ev.ToolCall.Progress.Message)
		}
	}
	return out
}

// wantContains fails the test unless s holds every one of subs.
func wantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it to contain %q", what, s, sub)
		}
	}
}

// agentStats is what a test agent's GET /stats says.
type agentStats struct {
	Cancels       int                `json:"cancels"`
	CanceledTasks int                `json:"canceledTasks"`
	Requests      int                `json:"requests"`
	LastHeaders   map[string]*string `json:"lastHeaders"`
}

func (s agentStats) header(name string) string {
	if v := s.LastHeaders[name]; v != nil {
		return *v
	}
	return "<absent>"
}

// statsOf fetches base's /stats.
func statsOf(t *testing.T, base string) agentStats {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t, peerSettle), http.MethodGet, base+"/stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("stats of %s: %v", base, err)
	}
	defer resp.Body.Close()
	var s agentStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("stats of %s: %v", base, err)
	}
	return s
}

// statusOf returns the status of the peer named name.
func statusOf(t *testing.T, ps *Peers, name string) PeerStatus {
	t.Helper()
	for _, st := range ps.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no peer %q in %+v", name, ps.Status())
	return PeerStatus{}
}

func TestPeerJSEchoMessage(t *testing.T) {
	base := peers.A2AAgent(t, "echo-agent")
	h := newPeerLoop(t, nil, PeerConfig{Name: "echo", URL: base, Required: true})
	if st := statusOf(t, h.peers, "echo"); st.State != StateReady || st.ProtocolVersion != "1.0" || st.Streaming || st.Agent != "echo" {
		t.Errorf("status = %+v, want ready, 1.0, not streaming, agent echo", st)
	}
	r := h.ask(t, &host.Request{Prompt: "say hello to echo"},
		callPeer("c1", "echo", "hello there"),
		say("The agent said hello there."))

	first := r.requests[0]
	if got := first.ToolNames(); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("the model was offered %v, want [echo]", got)
	}
	wantContains(t, "tool description", first.Tools[0].Function.Description, "echo: <your text>", "Echo: Repeats the text")
	if got := r.toolMessage(t, "c1"); got != "echo: hello there" {
		t.Errorf("the model read %q, want %q", got, "echo: hello there")
	}
	info := r.callInfo(t, "c1")
	if !info.OK || info.Source != "a2a:echo" || info.Debug["reply"] != "message" || info.Debug["protocol"] != "1.0" || info.Debug["context_id"] == "" {
		t.Errorf("tool call info = %+v", info)
	}
	if r.answer.Text != "The agent said hello there." || len(r.answer.References) != 0 {
		t.Errorf("answer = %q with references %+v", r.answer.Text, r.answer.References)
	}
}

func TestPeerJSTaskStreaming(t *testing.T) {
	base := peers.A2AAgent(t, "task-agent")
	h := newPeerLoop(t, nil, PeerConfig{Name: "task", URL: base, Required: true})
	if st := statusOf(t, h.peers, "task"); st.State != StateReady || st.ProtocolVersion != "1.0" || !st.Streaming || st.URL != base+"/" {
		t.Errorf("status = %+v, want ready, 1.0, streaming, at %s/", st, base)
	}
	wantRef := host.NumberedReference{Number: 1, Title: "Doc about hello", URI: "https://example.com/docs/hello"}

	first := h.ask(t, &host.Request{Prompt: "shout hello world"},
		callPeer("t1", "task", "hello world"),
		say("It shouted [source 1]."))
	msg := first.toolMessage(t, "t1")
	wantContains(t, "tool message", msg,
		"TURN 1: HELLO WORLD (done)",
		"[resource link: Doc about hello https://example.com/docs/hello]",
		`"source":1`, `"uri":"https://example.com/docs/hello"`, `"title":"Doc about hello"`)
	if strings.HasPrefix(msg, "Error") {
		t.Errorf("tool message is an error: %q", msg)
	}
	if !slices.Equal(first.answer.References, []host.NumberedReference{wantRef}) {
		t.Errorf("answer references = %+v, want [%+v]", first.answer.References, wantRef)
	}
	wantContains(t, "answer", first.answer.Text, "It shouted [1].", "https://example.com/docs/hello")
	info := first.callInfo(t, "t1")
	if !info.OK || info.References != 1 || info.Debug["state"] != "completed" || info.Debug["protocol"] != "1.0" || info.Debug["task_id"] == "" {
		t.Errorf("tool call info = %+v", info)
	}
	progress := first.progress("t1")
	if !slices.Contains(progress, "working: working on it") || !slices.Contains(progress, "completed") {
		t.Errorf("progress = %q, want the WORKING status message and completed", progress)
	}
	ctx1 := info.Debug["context_id"]

	// The same conversation keeps the peer's context: the agent counts a second turn.
	second := h.ask(t, &host.Request{Prompt: "again", ConversationID: first.answer.ConversationID},
		callPeer("t2", "task", "again please"),
		say("Done again."))
	wantContains(t, "tool message of the second run", second.toolMessage(t, "t2"), "TURN 2: AGAIN PLEASE (done)")
	if got := second.callInfo(t, "t2").Debug["context_id"]; got != ctx1 {
		t.Errorf("second run's peer context = %v, want %v", got, ctx1)
	}
	if second.answer.ConversationID != first.answer.ConversationID {
		t.Errorf("conversation %q, want %q", second.answer.ConversationID, first.answer.ConversationID)
	}

	// A new conversation starts a new peer context.
	third := h.ask(t, &host.Request{Prompt: "new"},
		callPeer("t3", "task", "fresh start"),
		say("Fresh."))
	wantContains(t, "tool message of a new conversation", third.toolMessage(t, "t3"), "TURN 1: FRESH START (done)")
	if got := third.callInfo(t, "t3").Debug["context_id"]; got == ctx1 || got == "" {
		t.Errorf("new conversation's peer context = %v, want a new one (not %v)", got, ctx1)
	}
}

func TestPeerJSV03Agent(t *testing.T) {
	base := peers.A2AAgent(t, "v03-agent")
	h := newPeerLoop(t, nil, PeerConfig{Name: "v03", URL: base, Required: true})
	if st := statusOf(t, h.peers, "v03"); st.State != StateReady || st.ProtocolVersion != "0.3" || !st.Streaming || st.Agent != "v03" {
		t.Errorf("status = %+v, want ready, 0.3, streaming, agent v03", st)
	}
	first := h.ask(t, &host.Request{Prompt: "shout at v03"},
		callPeer("v1", "v03", "legacy call"),
		say("v0.3 answered [source 1]."))
	msg := first.toolMessage(t, "v1")
	wantContains(t, "tool message", msg, "V03 TURN 1: LEGACY CALL", `"uri":"https://example.com/v03/legacy"`, `"title":"V03 doc"`)
	want := []host.NumberedReference{{Number: 1, Title: "V03 doc", URI: "https://example.com/v03/legacy"}}
	if !slices.Equal(first.answer.References, want) {
		t.Errorf("answer references = %+v, want %+v", first.answer.References, want)
	}
	info := first.callInfo(t, "v1")
	if !info.OK || info.Debug["protocol"] != "0.3" || info.Debug["state"] != "completed" {
		t.Errorf("tool call info = %+v", info)
	}
	if p := first.progress("v1"); !slices.Contains(p, "working: working on it") {
		t.Errorf("progress = %q, want the working status message", p)
	}
	second := h.ask(t, &host.Request{Prompt: "again", ConversationID: first.answer.ConversationID},
		callPeer("v2", "v03", "second"),
		say("ok"))
	wantContains(t, "tool message of the second run", second.toolMessage(t, "v2"), "V03 TURN 2: SECOND")
}

func TestPeerJSCompatVersions(t *testing.T) {
	base := peers.A2AAgent(t, "task-agent", "COMPAT=1")
	h := newPeerLoop(t, nil,
		PeerConfig{Name: "task10", URL: base, Required: true},
		PeerConfig{Name: "task03", URL: base, Required: true, ProtocolVersion: "0.3"})
	if st := statusOf(t, h.peers, "task10"); st.ProtocolVersion != "1.0" || st.State != StateReady {
		t.Errorf("unpinned peer status = %+v, want ready in 1.0", st)
	}
	if st := statusOf(t, h.peers, "task03"); st.ProtocolVersion != "0.3" || st.State != StateReady {
		t.Errorf("pinned peer status = %+v, want ready in 0.3", st)
	}
	for _, c := range []struct{ tool, version string }{{"task10", "1.0"}, {"task03", "0.3"}} {
		r := h.ask(t, &host.Request{Prompt: "shout via " + c.tool},
			callPeer("k", c.tool, "compat "+c.version),
			say("ok [source 1]"))
		wantContains(t, c.tool+" tool message", r.toolMessage(t, "k"), "TURN 1: COMPAT "+c.version+" (done)")
		want := []host.NumberedReference{{Number: 1, Title: "Doc about compat", URI: "https://example.com/docs/compat"}}
		if !slices.Equal(r.answer.References, want) {
			t.Errorf("%s: references = %+v, want %+v", c.tool, r.answer.References, want)
		}
		if got := r.callInfo(t, "k").Debug["protocol"]; got != c.version {
			t.Errorf("%s: debug protocol = %v, want %s", c.tool, got, c.version)
		}
		if got := statsOf(t, base).header("A2A-Version"); got != c.version {
			t.Errorf("%s: the agent last saw A2A-Version %q, want %q", c.tool, got, c.version)
		}
	}
}

func TestPeerJSPureV03(t *testing.T) {
	base := peers.A2AAgent(t, "pure-v03-agent")
	h := newPeerLoop(t, nil, PeerConfig{Name: "pure", URL: base, Required: true})
	if st := statusOf(t, h.peers, "pure"); st.ProtocolVersion != "0.3" || st.Streaming || st.Agent != "pure-v03" {
		t.Errorf("status = %+v, want 0.3, not streaming, agent pure-v03", st)
	}
	// The agent answers -32602 unless blocking:true was sent: a completed result proves it was.
	r := h.ask(t, &host.Request{Prompt: "purify"},
		callPeer("p1", "pure", "héllo"),
		say("Pure."))
	msg := r.toolMessage(t, "p1")
	wantContains(t, "tool message", msg, "PURE: héllo", `{"length":5}`)
	if strings.HasPrefix(msg, "Error") {
		t.Errorf("tool message is an error: %q", msg)
	}
	info := r.callInfo(t, "p1")
	if !info.OK || info.Debug["protocol"] != "0.3" || info.Debug["state"] != "completed" {
		t.Errorf("tool call info = %+v", info)
	}
	if got := statsOf(t, base).header("A2A-Version"); got != "0.3" {
		t.Errorf("the agent saw A2A-Version %q, want 0.3", got)
	}
}

func TestPeerJSFailingAgent(t *testing.T) {
	base := peers.A2AAgent(t, "failing-agent")
	h := newPeerLoop(t, nil,
		PeerConfig{Name: "failing", URL: base, Required: true},
		PeerConfig{Name: "failing_fast", URL: base, Required: true, Timeout: time.Second})

	for _, c := range []struct {
		mode, state string
		want        []string
	}{
		{"fail", "failed", []string{`The agent "failing" failed the task: fail requested`}},
		{"reject", "rejected", []string{`The agent "failing" rejected the task: reject requested`}},
		{"throw", "failed", []string{"Agent execution error: boom"}},
		{"rpc", "", []string{"-32004", "rpc failure requested"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := h.ask(t, &host.Request{Prompt: "make it " + c.mode},
				callPeer("f", "failing", c.mode),
				say("It did not work."))
			msg := r.toolMessage(t, "f")
			if !strings.HasPrefix(msg, "Error: ") {
				t.Errorf("the model read %q, want an error", msg)
			}
			wantContains(t, "tool message", msg, c.want...)
			info := r.callInfo(t, "f")
			if info.OK || info.Error == "" {
				t.Errorf("tool call info = %+v, want not OK with an error", info)
			}
			if end := r.toolEnd(t, "f"); end.Result == nil || !end.Result.IsError {
				t.Errorf("tool_end result = %+v, want an error result", end.Result)
			}
			if c.state != "" && info.Debug["state"] != c.state {
				t.Errorf("debug state = %v, want %s", info.Debug["state"], c.state)
			}
		})
	}

	t.Run("input", func(t *testing.T) {
		first := h.ask(t, &host.Request{Prompt: "weather?"},
			callPeer("i1", "failing", "input"),
			say("Which city?"))
		msg := first.toolMessage(t, "i1")
		wantContains(t, "tool message", msg, `The agent "failing" needs more input`, "Which city?")
		if strings.HasPrefix(msg, "Error") {
			t.Errorf("an input request is not an error: %q", msg)
		}
		info := first.callInfo(t, "i1")
		if !info.OK || info.Debug["state"] != "input-required" {
			t.Errorf("tool call info = %+v", info)
		}
		second := h.ask(t, &host.Request{Prompt: "Paris", ConversationID: first.answer.ConversationID},
			callPeer("i2", "failing", "Paris"),
			say("Sunny in Paris."))
		wantContains(t, "tool message of the answer", second.toolMessage(t, "i2"), "weather in Paris: sunny")
		info2 := second.callInfo(t, "i2")
		if !info2.OK || info2.Debug["state"] != "completed" || info2.Debug["task_id"] != info.Debug["task_id"] {
			t.Errorf("the answer's tool call info = %+v, want the same task (%v) completed", info2, info.Debug["task_id"])
		}
	})

	t.Run("auth", func(t *testing.T) {
		r := h.ask(t, &host.Request{Prompt: "secret?"},
			callPeer("a1", "failing", "auth"),
			say("Please sign in."))
		msg := r.toolMessage(t, "a1")
		wantContains(t, "tool message", msg, `The agent "failing" needs authentication`, "sign in first")
		info := r.callInfo(t, "a1")
		if !info.OK || info.Debug["state"] != "auth-required" {
			t.Errorf("tool call info = %+v", info)
		}
		// The SDK keeps the stream of an AUTH_REQUIRED task open: the call above ended on the state, not at EOF.
		next := h.ask(t, &host.Request{Prompt: "here is my token", ConversationID: r.answer.ConversationID},
			callPeer("a2", "failing", "token-123"),
			say("Signed in."))
		wantContains(t, "tool message of the answer", next.toolMessage(t, "a2"), "signed in: token-123")
		if info2 := next.callInfo(t, "a2"); info2.Debug["state"] != "completed" || info2.Debug["task_id"] != info.Debug["task_id"] {
			t.Errorf("the answer's tool call info = %+v, want the same task (%v) completed", info2, info.Debug["task_id"])
		}
	})

	t.Run("hang-timeout", func(t *testing.T) {
		before := statsOf(t, base)
		r := h.ask(t, &host.Request{Prompt: "wait"},
			callPeer("h1", "failing_fast", "hang"),
			say("It took too long."))
		msg := r.toolMessage(t, "h1")
		wantContains(t, "tool message", msg, `Error: the A2A agent "failing_fast" did not finish the task within 1s; it was cancelled`)
		if info := r.callInfo(t, "h1"); info.OK {
			t.Errorf("tool call info = %+v, want not OK", info)
		}
		if p := r.progress("h1"); !slices.Contains(p, "working: still working") {
			t.Errorf("progress = %q, want the WORKING status", p)
		}
		testwait.Until(t, peerSettle, "the agent saw the cancel", func() bool {
			s := statsOf(t, base)
			return s.Cancels > before.Cancels && s.CanceledTasks > before.CanceledTasks
		})
	})

	t.Run("hang-run-cancelled", func(t *testing.T) {
		before := statsOf(t, base)
		ctx, cancel := context.WithCancel(testwait.Context(t, peerSettle))
		defer cancel()
		r := h.run(t, ctx, &host.Request{Prompt: "wait forever"}, func(ev *host.Event) {
			if ev.Kind == host.EventToolProgress && strings.Contains(ev.ToolCall.Progress.Message, "still working") {
				cancel()
			}
		}, callPeer("h2", "failing", "hang"))
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("run error = %v, want context.Canceled", r.err)
		}
		if r.answer == nil || r.answer.StoppedBy != host.StopCancelled {
			t.Fatalf("answer = %+v, want one stopped by cancellation", r.answer)
		}
		// The call returned with the run's cancellation, rather than being abandoned after the loop's grace period.
		if info := r.callInfo(t, "h2"); info.OK || info.Error != context.Canceled.Error() {
			t.Errorf("tool call info = %+v, want the call ended by the cancellation", info)
		}
		testwait.Until(t, peerSettle, "the agent saw the cancel", func() bool {
			s := statsOf(t, base)
			return s.Cancels > before.Cancels && s.CanceledTasks > before.CanceledTasks
		})
	})
}

func TestPeerJSHeaders(t *testing.T) {
	base := peers.A2AAgent(t, "echo-agent", "TOKEN=s3cret")
	h := newPeerLoop(t, nil,
		PeerConfig{Name: "authed", URL: base, Required: true, Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		PeerConfig{Name: "anon", URL: base, Required: true}) // the card is public: it resolves
	r := h.ask(t, &host.Request{Prompt: "both"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "ok", Name: "authed", Arguments: `{"message":"with token"}`},
			{ID: "no", Name: "anon", Arguments: `{"message":"without token"}`},
		}},
		say("One of them worked."))
	if got := r.toolMessage(t, "ok"); got != "echo: with token" {
		t.Errorf("with the header the model read %q", got)
	}
	msg := r.toolMessage(t, "no")
	wantContains(t, "tool message without the header", msg, "Error: ", "HTTP 401")
	if strings.Contains(msg, "s3cret") {
		t.Errorf("the token leaked into a tool message: %q", msg)
	}
	if info := r.callInfo(t, "no"); info.OK {
		t.Errorf("tool call info = %+v, want not OK", info)
	}
	if info := r.callInfo(t, "ok"); !info.OK {
		t.Errorf("tool call info = %+v, want OK", info)
	}
}

func TestPeerJSStartup(t *testing.T) {
	t.Run("required-down", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String()
		l.Close()
		_, err = Connect(testwait.Context(t, peerSettle), []PeerConfig{
			{Name: "down", URL: down, Required: true},
			{Name: "later", URL: down},
		}, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
		if err == nil {
			t.Fatal("Connect succeeded with a required peer down")
		}
		wantContains(t, "Connect error", err.Error(), `required peer "down"`)
		if strings.Contains(err.Error(), `"later"`) {
			t.Errorf("Connect error %q names the optional peer", err)
		}
	})

	t.Run("optional-joins-later", func(t *testing.T) {
		base := peers.A2AAgent(t, "task-agent")
		target, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		var up atomic.Bool
		proxy := httputil.NewSingleHostReverseProxy(target)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !up.Load() {
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)

		h := newPeerLoop(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond},
			PeerConfig{Name: "task", URL: front.URL})
		peer := h.peers.Toolsets()[0]
		if tools, _ := peer.Tools(t.Context()); len(tools) != 0 {
			t.Fatalf("a peer not resolved offers %d tools", len(tools))
		}
		if st := statusOf(t, h.peers, "task"); st.State != StateRetrying || !strings.Contains(st.Error, "503") {
			t.Errorf("status = %+v, want retrying after a 503", st)
		}
		before := h.ask(t, &host.Request{Prompt: "anyone?"}, say("Nobody is here."))
		if got := before.requests[0].ToolNames(); len(got) != 0 {
			t.Errorf("before the peer joined the model was offered %v", got)
		}

		up.Store(true)
		testwait.Until(t, peerSettle, "the peer joined", func() bool {
			tools, _ := peer.Tools(t.Context())
			return len(tools) == 1 && tools[0].Spec().Name == "task"
		})
		if st := statusOf(t, h.peers, "task"); st.State != StateReady || st.Error != "" {
			t.Errorf("status = %+v, want ready", st)
		}
		after := h.ask(t, &host.Request{Prompt: "now?"},
			callPeer("j", "task", "joined"),
			say("It joined."))
		if got := after.requests[0].ToolNames(); !slices.Equal(got, []string{"task"}) {
			t.Errorf("after the peer joined the model was offered %v, want [task]", got)
		}
		wantContains(t, "tool message", after.toolMessage(t, "j"), "TURN 1: JOINED (done)")
	})
}
