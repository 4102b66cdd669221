package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// memCalls is a CallStore in memory, as a database shared by processes would be.
type memCalls struct {
	mu      sync.Mutex
	calls   map[string]SharedCall
	signals []host.RunSignal
}

func newMemCalls() *memCalls { return &memCalls{calls: map[string]SharedCall{}} }

func (m *memCalls) SaveCall(_ context.Context, c *SharedCall) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[c.ID] = *c
	return nil
}

func (m *memCalls) LoadCall(_ context.Context, id string) (*SharedCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[id]
	if !ok {
		return nil, nil
	}
	return &c, nil
}

func (m *memCalls) DeleteCall(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.calls, id)
	m.signals = slices.DeleteFunc(m.signals, func(s host.RunSignal) bool { return s.Target == id })
	return nil
}

func (m *memCalls) Signal(_ context.Context, id, kind string, body json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.signals = append(m.signals, host.RunSignal{Target: id, Kind: kind, Body: body})
	return nil
}

func (m *memCalls) TakeSignals(_ context.Context, ids []string) ([]host.RunSignal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []host.RunSignal
	m.signals = slices.DeleteFunc(m.signals, func(s host.RunSignal) bool {
		if slices.Contains(ids, s.Target) {
			out = append(out, s)
			return true
		}
		return false
	})
	return out, nil
}

func (m *memCalls) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// replicas returns two servers of st's orchestrator that share calls through one store, as two processes on one
// database do, and a manual client (protocol 2026-07-28) of each.
func replicas(t *testing.T, st *setup) (store *memCalls, a, b *Server, ca, cb *mcp.ClientSession) {
	t.Helper()
	store = newMemCalls()
	open := func(instance string) *Server {
		s, err := New(t.Context(), st.orch, &Options{Name: "helper bot", Calls: store, Instance: instance, ProgressInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b = open("a"), open("b")
	return store, a, b, manualClient(t, a), manualClient(t, b)
}

// startAsking starts a call of the agent tool with args through cs, which must come back with one question, and
// returns the result and the question's key.
func startAsking(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := onlyQuestion(t, res)
	return res, key
}

// onlyQuestion returns the key and the message of the one elicitation res asks.
func onlyQuestion(t *testing.T, res *mcp.CallToolResult) (string, string) {
	t.Helper()
	if !res.NeedsInput() || res.RequestState == "" || len(res.InputRequests) != 1 {
		t.Fatalf("%+v, want one input request", res)
	}
	for k, r := range res.InputRequests {
		return k, r.(*mcp.ElicitParams).Message
	}
	return "", ""
}

func approveKey(key string) mcp.InputResponseMap {
	return mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
}

// A call started on A is answered through B, asks again, is answered through A, and ends through A; the next
// questions and the result come back through whichever process the retry reached.
func TestSharedRounds(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	store, a, _, ca, cb := replicas(t, st)
	st.llm.Enqueue(
		fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d1", Name: "delete", Arguments: `{"path":"/tmp/one"}`})},
		fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d2", Name: "delete", Arguments: `{"path":"/tmp/two"}`})},
		fakellm.Turn{Text: "both gone"},
	)
	args := map[string]any{"prompt": "clean up"}
	res, key := startAsking(t, ca, args)
	_, msg := onlyQuestion(t, res)
	if !strings.Contains(msg, "/tmp/one") {
		t.Errorf("first question %q", msg)
	}
	state := res.RequestState

	// Through B: the answer reaches the run on A, whose next question comes back through B.
	res, err := cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: state, InputResponses: approveKey(key)})
	if err != nil {
		t.Fatal(err)
	}
	key, msg = onlyQuestion(t, res)
	if !strings.Contains(msg, "/tmp/two") || res.RequestState != state {
		t.Errorf("second question %q, state %q (want %q)", msg, res.RequestState, state)
	}
	if n := a.rounds.waiting(); n != 1 {
		t.Errorf("A holds %d calls, want the one it runs", n)
	}

	// Through A again, which runs the call: the result.
	res, err = ca.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: state, InputResponses: approveKey(key)})
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("last round: %+v, %v", res, err)
	}
	if out := structured(t, res); out.Answer != "both gone" {
		t.Errorf("answer %+v", out)
	}
	if n := store.len(); n != 0 {
		t.Errorf("%d calls left in the store", n)
	}
	res, err = cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: state, InputResponses: approveKey(key)})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no longer waiting") {
		t.Errorf("a retry after the end, through B: %+v, %v", res, err)
	}
}

// The last round served through B brings the result back through B, and the call is then gone from the store.
func TestSharedRoundsResultElsewhere(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	store, a, b, ca, cb := replicas(t, st)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})}, fakellm.Turn{Text: "gone"})
	args := map[string]any{"prompt": "clean up"}
	res, key := startAsking(t, ca, args)
	// Other arguments under the same state are refused, and leave the call waiting.
	bad, err := cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "other"}, RequestState: res.RequestState, InputResponses: approveKey(key)})
	if err != nil || !bad.IsError {
		t.Errorf("other arguments through B: %+v, %v", bad, err)
	}
	res, err = cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: res.RequestState, InputResponses: approveKey(key)})
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("through B: %+v, %v", res, err)
	}
	if out := structured(t, res); out.Answer != "gone" || out.StoppedBy != host.StopAnswered {
		t.Errorf("answer %+v", out)
	}
	if got := toolMessage(st); got != "deleted" {
		t.Errorf("tool result %q", got)
	}
	if store.len() != 0 || a.rounds.waiting() != 0 || b.rounds.waiting() != 0 {
		t.Errorf("left: %d in the store, %d on A, %d on B", store.len(), a.rounds.waiting(), b.rounds.waiting())
	}
}

// A retry through B that its caller cancels cancels the run on A.
func TestSharedRoundCancelled(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"slow": {RequireApproval: true}})
	_, a, _, ca, cb := replicas(t, st)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "s", Name: "slow", Arguments: `{}`})}, fakellm.Turn{Text: "never"})
	args := map[string]any{"prompt": "take your time"}
	res, key := startAsking(t, ca, args)
	ctx, cancel := context.WithCancel(bounded(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cb.CallTool(ctx, &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: res.RequestState, InputResponses: approveKey(key)})
		errc <- err
	}()
	select {
	case <-st.started:
	case <-time.After(time.Minute):
		t.Fatal("the approved tool never started on A")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled retry returned no error")
	}
	select {
	case err := <-st.cancelled:
		if err == nil {
			t.Error("the tool ended without an error")
		}
	case <-time.After(time.Minute):
		t.Fatal("the run on A was not cancelled")
	}
	eventually(t, "A dropped the call", func() bool { return a.rounds.waiting() == 0 })
}

// A retry of a call whose process stopped without a word gets an error once the answers have waited ownerWait, and
// the call is forgotten.
func TestSharedRoundOwnerGone(t *testing.T) {
	st := newSetup(t, nil)
	store, _, _, _, cb := replicas(t, st)
	defer func(d time.Duration) { ownerWait = d }(ownerWait)
	ownerWait = 300 * time.Millisecond
	args := json.RawMessage(`{"prompt":"hi"}`)
	now := time.Now()
	store.SaveCall(t.Context(), &SharedCall{ID: "ghost-call", Owner: "ghost", Tool: "ask_helper_bot", Args: args, Round: 1, State: callWaiting,
		Outcome: json.RawMessage(`{"content":[]}`), Updated: now, Expires: now.Add(time.Hour)})
	res, err := cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: "ghost-call", InputResponses: approveKey("q1")})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "did not take the answers") {
		t.Errorf("%+v, %v", res, err)
	}
	if store.len() != 0 {
		t.Error("the call of the stopped process is still in the store")
	}
}

// Closing a process forgets the calls that wait for their callers: a retry elsewhere is told so at once.
func TestSharedCallsForgottenOnClose(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	store, a, _, ca, cb := replicas(t, st)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})}, fakellm.Turn{Text: "gone"})
	args := map[string]any{"prompt": "clean up"}
	res, key := startAsking(t, ca, args)
	if store.len() != 1 {
		t.Fatalf("%d calls in the store, want 1", store.len())
	}
	a.Close()
	if store.len() != 0 {
		t.Errorf("%d calls in the store after A closed", store.len())
	}
	res, err := cb.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: res.RequestState, InputResponses: approveKey(key)})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "has stopped since") {
		t.Errorf("%+v, %v", res, err)
	}
}
