package mcpserver

import (
	"context"
	"encoding/json"
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
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// tool is a host tool whose behaviour is a function.
type tool struct {
	spec host.ToolSpec
	fn   func(ctx context.Context, args json.RawMessage) (*host.Result, error)
}

func (t *tool) Spec() host.ToolSpec { return t.spec }
func (t *tool) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	return t.fn(ctx, args)
}

type toolset []host.Tool

func (toolset) Name() string                                 { return "test" }
func (s toolset) Tools(context.Context) ([]host.Tool, error) { return s, nil }

// setup is an agent server over a fakellm model with two tools: lookup (returns a reference) and slow (waits for
// cancellation, reporting it on cancelled).
type setup struct {
	llm       *fakellm.Server
	orch      *host.Orchestrator
	server    *Server
	cancelled chan error
	started   chan struct{}
}

func newSetup(t *testing.T, policies map[string]host.ToolPolicy) *setup {
	t.Helper()
	st := &setup{llm: fakellm.New(), cancelled: make(chan error, 1), started: make(chan struct{}, 1)}
	t.Cleanup(st.llm.Close)
	model, err := openai.New(&openai.Options{BaseURL: st.llm.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tools := toolset{
		&tool{spec: host.ToolSpec{Name: "lookup", Description: "Looks things up."}, fn: func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "found it", References: []host.Reference{{Title: "Spec", URI: "https://example.test/spec"}}}, nil
		}},
		&tool{spec: host.ToolSpec{Name: "slow"}, fn: func(ctx context.Context, _ json.RawMessage) (*host.Result, error) {
			st.started <- struct{}{}
			<-ctx.Done()
			st.cancelled <- ctx.Err()
			return nil, ctx.Err()
		}},
		&tool{spec: host.ToolSpec{Name: "delete"}, fn: func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "deleted"}, nil
		}},
	}
	orch := host.New(model, host.NewToolManager([]host.Toolset{tools}, &host.ToolManagerOptions{Policies: policies}), nil)
	st.orch = orch
	st.server, err = New(t.Context(), orch, &Options{Name: "helper bot", Description: "Answers questions.", ProgressInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// connect connects a go-sdk client over in-memory transports, on the protocol version before multi round-trip
// requests.
func (st *setup) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectAt(t, st.server, classicProtocol, opts)
}

func call(tc fakellm.ToolCall) []fakellm.ToolCall { return []fakellm.ToolCall{tc} }

// agentOutput reads the agent tool's structured content back, its text and iterations as plain values.
type agentOutput struct {
	host.AnswerSummary
	Answer     string `json:"answer"`
	Iterations int    `json:"iterations"`
}

func structured(t *testing.T, res *mcp.CallToolResult) agentOutput {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out agentOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

func TestAgentTool(t *testing.T) {
	st := newSetup(t, nil)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	cs := st.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params)
		mu.Unlock()
	}})

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 {
		t.Fatalf("tools %v", tools.Tools)
	}
	agent := tools.Tools[0]
	if agent.Name != "ask_helper_bot" || agent.Description != "Answers questions. It can use: lookup, slow, delete." {
		t.Errorf("tool %q: %q", agent.Name, agent.Description)
	}
	schema, _ := json.Marshal(agent.InputSchema)
	for _, want := range []string{`"required":["prompt"]`, `"enum":["lookup","slow","delete"]`, `"conversation_id"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("input schema lacks %s: %s", want, schema)
		}
	}
	if agent.OutputSchema == nil {
		t.Error("no output schema")
	}

	st.llm.Enqueue(
		fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "1", Name: "lookup", Arguments: `{}`})},
		fakellm.Turn{Text: "The answer is in the spec [source 1].", ChunkSize: 4},
	)
	params := &mcp.CallToolParams{Name: agent.Name, Arguments: map[string]any{"prompt": "Where is it?"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(bounded(t), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	want := "The answer is in the spec [1].\n\nSources:\n[1] Spec — https://example.test/spec"
	if text := res.Content[0].(*mcp.TextContent).Text; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	if len(res.Content) != 2 {
		t.Fatalf("content %v, want the text and one resource link", res.Content)
	}
	if link, ok := res.Content[1].(*mcp.ResourceLink); !ok || link.URI != "https://example.test/spec" || link.Name != "Spec" {
		t.Errorf("resource link %+v", res.Content[1])
	}
	out := structured(t, res)
	if out.Answer != want || out.StoppedBy != host.StopAnswered || out.Iterations != 2 || out.ConversationID == "" ||
		len(out.References) != 1 || out.References[0].URI != "https://example.test/spec" ||
		len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "lookup" || !out.ToolCalls[0].OK || out.Usage.Requests != 2 {
		t.Errorf("structured %+v", out)
	}

	// Progress: strictly increasing, naming the tool and its source, and carrying the streamed answer. The client
	// handles notifications on a goroutine of their own, so the last ones may come after the result: wait for the
	// streamed text to be complete (bounded), then check everything.
	streamedText := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for i, p := range progress {
			if i >= 4 {
				b.WriteString(p.Message)
			}
		}
		return b.String()
	}
	for deadline := time.Now().Add(10 * time.Second); streamedText() != want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var messages []string
	for i, p := range progress {
		if p.ProgressToken != "p1" || i > 0 && p.Progress <= progress[i-1].Progress {
			t.Errorf("progress %d: %+v", i, p)
		}
		messages = append(messages, p.Message)
	}
	steps := strings.Join(messages[:min(4, len(messages))], "|")
	if steps != "iteration 1|calling lookup (test)|lookup (test) done|iteration 2" {
		t.Errorf("progress steps %q", steps)
	}
	// After the last iteration's step, the streamed answer, in batches that add up to it.
	if streamed := strings.Join(messages[min(4, len(messages)):], ""); streamed != want {
		t.Errorf("streamed answer %q, want %q", streamed, want)
	}

	// The conversation goes on with its id; an unknown id is an error result.
	st.llm.Enqueue(fakellm.Turn{Text: "Still the spec."})
	res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: agent.Name, Arguments: map[string]any{"prompt": "Sure?", "conversation_id": out.ConversationID}})
	if err != nil || res.IsError || structured(t, res).ConversationID != out.ConversationID {
		t.Fatalf("follow-up: %+v, %v", res, err)
	}
	if msgs := st.llm.LastRequest().Messages; len(msgs) != 6 || msgs[1].Content != "Where is it?" {
		t.Errorf("the follow-up's model request has %d messages", len(msgs))
	}
}

func TestAgentToolBadInput(t *testing.T) {
	st := newSetup(t, map[string]host.ToolPolicy{"delete": {Disabled: true}})
	cs := st.connect(t, nil)
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "prompt is required"},
		{map[string]any{"prompt": "x", "tool_choices": []string{"nope"}}, `tool_choices: unknown tool "nope"; available tools: lookup, slow`},
		{map[string]any{"prompt": "x", "disabled_tools": []string{"delete"}}, `disabled_tools: tool "delete" is disabled`},
		{map[string]any{"prompt": "x", "conversation_id": "nope"}, `unknown conversation id "nope"`},
	} {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: tt.args})
		if err != nil {
			// The SDK may reject input that breaks the schema before our handler sees it; that is an error too.
			if !strings.Contains(err.Error(), "nope") && !strings.Contains(err.Error(), "prompt") && !strings.Contains(err.Error(), "delete") {
				t.Errorf("%v: %v", tt.args, err)
			}
			continue
		}
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tt.want) {
			t.Errorf("%v: %+v, want an error result with %q", tt.args, res.Content, tt.want)
		}
	}
	if st.llm.RequestCount() != 0 {
		t.Errorf("the model was called for bad input")
	}
}

func TestAgentToolCancellation(t *testing.T) {
	st := newSetup(t, nil)
	cs := st.connect(t, nil)
	st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "1", Name: "slow", Arguments: `{}`})})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-st.started
		cancel() // the client sends notifications/cancelled
	}()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "take your time"}})
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
}

func TestApprovalThroughElicitation(t *testing.T) {
	policies := map[string]host.ToolPolicy{"delete": {RequireApproval: true}}
	for _, tt := range []struct {
		name   string
		answer *mcp.ElicitResult // nil: the client does not support elicitation
		want   string
	}{
		{"approved", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, "deleted"},
		{"denied", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, "Error: the call was denied by the user"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, "Error: the call was denied by the user"},
		{"no elicitation", nil, "Error: this tool requires the user's approval, and there is no way to ask"},
	} {
		for _, version := range protocols {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				st := newSetup(t, policies)
				var asked []string
				opts := &mcp.ClientOptions{}
				if tt.answer != nil {
					opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = append(asked, req.Params.Message)
						return tt.answer, nil
					}
				}
				cs := connectAt(t, st.server, version, opts)
				st.llm.Enqueue(fakellm.Turn{ToolCalls: call(fakellm.ToolCall{ID: "d", Name: "delete", Arguments: `{"path":"/tmp/x"}`})}, fakellm.Turn{Text: "ok"})
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "clean up"}})
				if err != nil || res.IsError {
					t.Fatalf("call: %+v, %v", res, err)
				}
				var got string
				for _, m := range st.llm.LastRequest().Messages {
					if m.Role == "tool" {
						got = m.ToolOutput()
					}
				}
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("tool result %q, want %q", got, tt.want)
				}
				if tt.answer != nil && (len(asked) != 1 || !strings.Contains(asked[0], `delete (test) with these arguments:`) || !strings.Contains(asked[0], `{"path":"/tmp/x"}`)) {
					t.Errorf("asked %q", asked)
				}
				if n := st.server.rounds.waiting(); n != 0 {
					t.Errorf("%d calls still held after the answer", n)
				}
			})
		}
	}
}

func TestHTTPGuard(t *testing.T) {
	st := newSetup(t, nil)
	ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Token: "s3cret", AllowedOrigins: []string{"https://app.example.com"}, MaxBodyBytes: 2048,
		Health: func() any { return []string{"fine"} }}))
	defer ts.Close()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(body string, header map[string]string) int {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		name   string
		body   string
		header map[string]string
		want   int
	}{
		{"no token", initialize, nil, 401},
		{"wrong token", initialize, map[string]string{"Authorization": "Bearer nope"}, 401},
		{"right token", initialize, map[string]string{"Authorization": "Bearer s3cret"}, 200},
		{"foreign Host", initialize, map[string]string{"Authorization": "Bearer s3cret", "Host": "evil.example.com"}, 403},
		{"foreign Origin", initialize, map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example.com"}, 403},
		{"allowed Origin", initialize, map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://app.example.com"}, 200},
		{"loopback Origin", initialize, map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:3000"}, 200},
		{"body too large", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 4096) + `"}}`, map[string]string{"Authorization": "Bearer s3cret"}, 413},
	} {
		if got := post(tt.body, tt.header); got != tt.want && !(tt.want == 413 && got >= 400 && got < 500) {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}

	req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if health["status"] != "ok" || health["tool"] != "ask_helper_bot" {
		t.Errorf("healthz %v", health)
	}
}

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPStatefulAndStateless(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		st := newSetup(t, nil)
		ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Stateless: stateless, Token: "t"}))
		transport := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"t"}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("stateless=%v: %v", stateless, err)
		}
		st.llm.Enqueue(fakellm.Turn{Text: "hi"})
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "hello"}})
		if err != nil || res.IsError || structured(t, res).Answer != "hi" {
			t.Errorf("stateless=%v: %+v, %v", stateless, res, err)
		}
		cs.Close()
		ts.Close()
	}
}

// TestAgentToolFollowsTheToolList checks that when the merged list changes, the agent tool's description and enums
// follow, and clients are told the tool list changed.
func TestAgentToolFollowsTheToolList(t *testing.T) {
	named := func(name string) host.Tool {
		return &tool{spec: host.ToolSpec{Name: name}, fn: func(context.Context, json.RawMessage) (*host.Result, error) { return &host.Result{}, nil }}
	}
	set := &gwToolset{tools: []host.Tool{named("alpha")}}
	orch := host.New(testmodel.New(), host.NewToolManager([]host.Toolset{set}, nil), nil)
	s, err := New(t.Context(), orch, &Options{Name: "geo", ToolsPollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	changed := make(chan struct{}, 1)
	cs := connectTo(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	description := func() string {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tools[0].Description
	}
	if d := description(); !strings.HasSuffix(d, "It can use: alpha.") {
		t.Fatalf("description %q", d)
	}
	set.set(named("alpha"), named("beta"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the tool list changed")
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(res.Tools[0].InputSchema)
	if !strings.HasSuffix(res.Tools[0].Description, "It can use: alpha, beta.") || !strings.Contains(string(schema), `"enum":["alpha","beta"]`) {
		t.Errorf("after the change: %q, %s", res.Tools[0].Description, schema)
	}
}
