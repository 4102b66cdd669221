package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// The protocol versions a caller may speak: the last one where the server sends requests to the client during a
// call, and the first one with multi round-trip requests instead.
const classicProtocol = "2025-11-25"

var protocols = []string{classicProtocol, roundTripsSince}

func forEachProtocol(t *testing.T, test func(t *testing.T, version string)) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { test(t, version) })
	}
}

// connectAt connects a go-sdk client to s over in-memory transports, asking for protocol version.
func connectAt(t *testing.T, s *Server, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(t.Context(), stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("protocol %s, want %s", got, version)
	}
	return cs
}

// manualClient connects a client on protocol 2026-07-28 that answers no input requests itself: its calls return
// them, for the test to answer.
func manualClient(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	return connectAt(t, s, roundTripsSince, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { panic("asked directly") },
	})
}

func toolMessage(st *setup) string {
	var got string
	for _, m := range st.llm.LastRequest().Messages {
		if m.Role == "tool" {
			got = m.ToolOutput()
		}
	}
	return got
}

// bounded returns a context for a call that should end on its own, so that one that hangs fails its test.
func bounded(t *testing.T) context.Context { return testwait.Context(t, time.Minute) }

// eventually waits for state that settles asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what, cond)
}

// TestRoundTripsOnTheWire follows one call of a caller on 2026-07-28 round by round: the approval comes back as an
// input request, a retry that does not belong to the call is refused without disturbing it, and the retry with the
// answer gets the final result. Progress goes on across the rounds.
func TestRoundTripsOnTheWire(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	var mu sync.Mutex
	var progress []float64
	cs := connectAt(t, st.server, roundTripsSince, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { panic("asked directly") },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
	})
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{"path":"/tmp/x"}`})}, fakellm.Turn{Text: "ok"})
	args := map[string]any{"prompt": "clean up"}
	params := &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(bounded(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.InputRequests) != 1 {
		t.Fatalf("first round: %+v, want one input request", res)
	}
	var key string
	var ask *mcp.ElicitParams
	for k, r := range res.InputRequests {
		key, ask = k, r.(*mcp.ElicitParams)
	}
	if !strings.Contains(ask.Message, "delete (test) with these arguments:") {
		t.Errorf("asked %q", ask.Message)
	}

	approve := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	for _, bad := range []struct {
		name  string
		state string
		args  map[string]any
	}{
		{"unknown state", "nope", args},
		{"other arguments", res.RequestState, map[string]any{"prompt": "something else"}},
	} {
		retry := &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: bad.args, RequestState: bad.state, InputResponses: approve}
		res, err := cs.CallTool(bounded(t), retry)
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no longer waiting") {
			t.Errorf("%s: %+v, %v", bad.name, res, err)
		}
	}

	retry := &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: args, RequestState: res.RequestState, InputResponses: approve}
	retry.SetProgressToken("p1")
	res, err = cs.CallTool(bounded(t), retry)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("second round: %+v, %v", res, err)
	}
	if out := structured(t, res); out.Answer != "ok" || out.StoppedBy != host.StopAnswered {
		t.Errorf("answer %+v", out)
	}
	if got := toolMessage(st); got != "deleted" {
		t.Errorf("tool result %q", got)
	}
	if n := st.server.rounds.waiting(); n != 0 {
		t.Errorf("%d calls still held", n)
	}
	// The retry of a finished call finds nothing.
	res, err = cs.CallTool(bounded(t), retry)
	if err != nil || !res.IsError {
		t.Errorf("retry after the end: %+v, %v", res, err)
	}
	// iteration 1, calling delete, delete done, iteration 2. The client hands notifications to their handler on a
	// goroutine of their own, so the last ones may still be on their way when the result is in.
	eventually(t, "four progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= 4
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Errorf("progress not increasing across rounds: %v", progress)
		}
	}
}

// TestRoundTripCallerNeverComesBack checks that a call whose caller does not come back with the answer is cancelled
// after the input timeout, and that nothing of it is left running.
func TestRoundTripCallerNeverComesBack(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	st.server.rounds.timeout = time.Millisecond
	cs := manualClient(t, st.server)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})}, fakellm.Turn{Text: "ok"})
	params := &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "clean up"}}
	res, err := cs.CallTool(bounded(t), params)
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first round: %+v, %v", res, err)
	}
	eventually(t, "the waiting call was dropped", func() bool { return st.server.rounds.waiting() == 0 })

	closed := make(chan struct{})
	go func() {
		st.server.Close() // waits for the runs
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the expired run is still running")
	}
	if n := st.llm.RequestCount(); n != 1 {
		t.Errorf("the model was called %d times, want once: the run went on", n)
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	params.RequestState = res.RequestState
	params.InputResponses = mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	res, err = cs.CallTool(bounded(t), params)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no longer waiting") {
		t.Errorf("late answer: %+v, %v", res, err)
	}
}

// TestRoundTripCancellation checks that a caller on 2026-07-28 that cancels a later round cancels the run.
func TestRoundTripCancellation(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	cs := connectAt(t, st.server, roundTripsSince, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	st.llm.Enqueue(
		fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})},
		fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "s", Name: "slow", Arguments: `{}`})},
	)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-st.started
		cancel()
	}()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "clean up slowly"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	select {
	case err := <-st.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool in the run never saw the caller's cancellation")
	}
	eventually(t, "the cancelled call was dropped", func() bool { return st.server.rounds.waiting() == 0 })
}

// TestRoundTripLimit checks that the calls held between rounds are bounded.
func TestRoundTripLimit(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
	st.server.rounds.max = 1
	cs := manualClient(t, st.server)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})})
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "one"}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "two"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "too many calls") {
		t.Errorf("second call: %+v, %v", res, err)
	}
	closed := make(chan struct{})
	go func() {
		st.server.Close() // cancels the first
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the held call")
	}
	if n := st.server.rounds.waiting(); n != 0 {
		t.Errorf("%d calls held after Close", n)
	}
}

// TestRoundTripsOverHTTP checks an approval over streamable HTTP with a client that asks for the latest protocol:
// a stateless server speaks 2026-07-28 and serves each round on a session of its own; a stateful one makes the
// client fall back to the protocol before, where the server asks within the call.
func TestRoundTripsOverHTTP(t *testing.T) {
	for _, tt := range []struct {
		stateless bool
		protocol  string
	}{
		{true, roundTripsSince},
		{false, classicProtocol},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			st := newSetup(t, map[string]host.ToolPolicy{"delete": {RequireApproval: true}})
			ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Stateless: tt.stateless, Token: "t"}))
			defer ts.Close()
			transport := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"t"}}}
			var asked int
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			}).Connect(t.Context(), transport, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tt.protocol {
				t.Fatalf("protocol %s, want %s", got, tt.protocol)
			}
			st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{}`})}, fakellm.Turn{Text: "ok"})
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "clean up"}})
			if err != nil || res.IsError || structured(t, res).Answer != "ok" {
				t.Fatalf("call: %+v, %v", res, err)
			}
			if got := toolMessage(st); got != "deleted" || asked != 1 {
				t.Errorf("tool result %q, asked %d times", got, asked)
			}
		})
	}
}
