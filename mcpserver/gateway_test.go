package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// gwTool is a host tool whose behaviour is a function that gets the call, for progress and questions.
type gwTool struct {
	spec host.ToolSpec
	fn   func(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error)
}

func (t *gwTool) Spec() host.ToolSpec { return t.spec }
func (t *gwTool) Call(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
	return t.fn(ctx, args, call)
}

// gwToolset is a source whose list the test changes; like an MCP server's, a changed list is a new slice.
type gwToolset struct {
	mu    sync.Mutex
	tools []host.Tool
}

func (s *gwToolset) Name() string { return "mcp:up" }
func (s *gwToolset) Tools(context.Context) ([]host.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}
func (s *gwToolset) set(tools ...host.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = tools
}

func textTool(name, text string) *gwTool {
	return &gwTool{spec: host.ToolSpec{Name: name, Description: "Returns " + text + "."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
		return &host.Result{Text: text}, nil
	}}
}

// newGateway returns a Server in gateway mode over src, closed at the end of the test.
func newGateway(t *testing.T, src host.Toolset, policies map[string]host.ToolPolicy, poll time.Duration) *Server {
	t.Helper()
	tm := host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{Policies: policies})
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, ToolsPollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// gwConnect connects a go-sdk client to s over in-memory transports, at the protocol version the suite speaks.
func gwConnect(t *testing.T, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return (&setup{server: s}).connect(t, opts)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestGatewayOffersEnabledTools(t *testing.T) {
	search := &gwTool{spec: host.ToolSpec{
		Name: "search", Title: "Search", Description: "Searches the docs.",
		InputSchema:  json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"q":{"type":"string"}},"properties":{"query":{"$ref":"#/$defs/q"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"integer"}}}`),
		Annotations:  &host.ToolAnnotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
	}}
	src := &gwToolset{}
	src.set(
		search,
		textTool("plain", "plain"), // no input schema: an object schema is offered
		textTool("off", "nothing"), // disabled by policy
		&gwTool{spec: host.ToolSpec{Name: "listy", Description: "Not an object.", InputSchema: json.RawMessage(`{"type":"array"}`)}},
		textTool("ask_agenthost", "a clash"), // the agent tool's name
	)
	policies := map[string]host.ToolPolicy{"off": {Disabled: true}}

	tests := []struct {
		name   string
		expose bool
		want   []string
	}{
		{"agent tool only", false, []string{"ask_agenthost"}},
		{"gateway", true, []string{"ask_agenthost", "plain", "search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{Policies: policies})
			s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: tt.expose})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cs := gwConnect(t, s, nil)
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			var names []string
			for _, tool := range res.Tools {
				byName[tool.Name] = tool
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Fatalf("tools %v, want %v", names, tt.want)
			}
			if agent := byName["ask_agenthost"]; agent == nil || agent.Description == "Returns a clash." {
				t.Errorf("the agent tool was replaced: %+v", agent)
			}
			if !tt.expose {
				return
			}
			got := byName["search"]
			if got.Title != "Search" || got.Description != "Searches the docs." {
				t.Errorf("search: title %q, description %q", got.Title, got.Description)
			}
			if !jsonEqual(t, got.InputSchema, string(search.spec.InputSchema)) {
				t.Errorf("input schema %v, want %s", got.InputSchema, search.spec.InputSchema)
			}
			if !jsonEqual(t, got.OutputSchema, string(search.spec.OutputSchema)) {
				t.Errorf("output schema %v, want %s", got.OutputSchema, search.spec.OutputSchema)
			}
			if !jsonEqual(t, got.Annotations, `{"readOnlyHint":true,"idempotentHint":false,"destructiveHint":false,"openWorldHint":true}`) {
				t.Errorf("annotations %+v", got.Annotations)
			}
			if !jsonEqual(t, byName["plain"].InputSchema, `{"type":"object"}`) {
				t.Errorf("plain's input schema %v", byName["plain"].InputSchema)
			}
		})
	}
}

func TestGatewayForwardsCalls(t *testing.T) {
	var gotArgs json.RawMessage
	var gotCall *host.Call
	src := &gwToolset{}
	src.set(
		&gwTool{spec: host.ToolSpec{Name: "echo", Description: "Echoes."}, fn: func(_ context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
			gotArgs, gotCall = args, call
			return &host.Result{Text: "got " + string(args), Structured: json.RawMessage(`{"ok":true}`)}, nil
		}},
		&gwTool{spec: host.ToolSpec{Name: "fail", Description: "Fails."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
			return &host.Result{Text: "it broke", IsError: true}, nil
		}},
		&gwTool{spec: host.ToolSpec{Name: "broken", Description: "Cannot be reached."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
			return nil, errors.New("connection refused")
		}},
	)
	cs := gwConnect(t, newGateway(t, src, nil, 0), nil)

	tests := []struct {
		tool      string
		args      any
		wantText  string
		wantError bool
	}{
		{"echo", map[string]any{"x": 1}, `got {"x":1}`, false},
		{"echo", nil, `got {}`, false},
		{"fail", nil, "it broke", true},
		{"broken", nil, "connection refused", true},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: %v", tt.tool, err)
		}
		if text := callText(t, res); text != tt.wantText || res.IsError != tt.wantError {
			t.Errorf("%s(%v) = %q (error %v), want %q (error %v)", tt.tool, tt.args, text, res.IsError, tt.wantText, tt.wantError)
		}
	}
	if string(gotArgs) != `{}` || gotCall == nil || gotCall.Tool != "echo" || gotCall.Source != "mcp:up" || gotCall.ID == "" {
		t.Errorf("the tool got args %s and call %+v", gotArgs, gotCall)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, res.StructuredContent, `{"ok":true}`) {
		t.Errorf("structured content %v", res.StructuredContent)
	}
}

func TestGatewayProgressAndCancellation(t *testing.T) {
	cancelled := make(chan error, 1)
	src := &gwToolset{}
	src.set(&gwTool{spec: host.ToolSpec{Name: "slow", Description: "Waits."}, fn: func(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
		call.ReportProgress(host.Progress{Progress: 0, Total: 100, Message: "started"})
		call.ReportProgress(host.Progress{Progress: 0, Total: 100, Message: "again"}) // not increasing: sent as 1
		call.ReportProgress(host.Progress{Progress: 50, Total: 100})
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}})
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs := gwConnect(t, newGateway(t, src, nil, 0), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params
	}})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow"}
		params.SetProgressToken("tok-1")
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	// A bound generous enough for any machine, so that what never comes fails the test rather than hangs it.
	wait, cancelWait := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelWait()
	want := []mcp.ProgressNotificationParams{
		{ProgressToken: "tok-1", Progress: 0, Total: 100, Message: "started"},
		{ProgressToken: "tok-1", Progress: 1, Total: 100, Message: "again"},
		{ProgressToken: "tok-1", Progress: 50, Total: 100},
	}
	for i, w := range want {
		select {
		case p := <-progress:
			if p.ProgressToken != w.ProgressToken || p.Progress != w.Progress || p.Total != w.Total || p.Message != w.Message {
				t.Errorf("progress %d = %+v, want %+v", i, *p, w)
			}
		case <-wait.Done():
			t.Fatalf("progress %d never came", i)
		}
	}
	cancel()
	expectCancelled(t, wait, cancelled, done)
}

func TestGatewayApprovalAndElicitation(t *testing.T) {
	ran := make(chan struct{}, 10)
	src := &gwToolset{}
	src.set(
		&gwTool{spec: host.ToolSpec{Name: "delete", Description: "Deletes."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
			ran <- struct{}{}
			return &host.Result{Text: "deleted"}, nil
		}},
		&gwTool{spec: host.ToolSpec{Name: "ask", Description: "Asks the user."}, fn: func(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
			ia := call.Interactor()
			if ia == nil {
				return &host.Result{Text: "nobody to ask", IsError: true}, nil
			}
			res, err := ia.Elicit(ctx, &host.ElicitRequest{Message: "Your name?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			if err != nil {
				return nil, err
			}
			return &host.Result{Text: string(res.Action) + " " + res.Content["name"].(string)}, nil
		}},
	)
	policies := map[string]host.ToolPolicy{"delete": {RequireApproval: true}}

	tests := []struct {
		name    string
		answer  func(*mcp.ElicitParams) *mcp.ElicitResult // nil: the client does not support elicitation
		tool    string
		want    string
		wantRan bool
	}{
		{"approved", func(*mcp.ElicitParams) *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
		}, "delete", "deleted", true},
		{"denied", func(*mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }, "delete", "the call was denied by the user", false},
		{"nobody to ask", nil, "delete", "requires the user's approval", false},
		{"elicitation forwarded", func(p *mcp.ElicitParams) *mcp.ElicitResult {
			if !strings.HasPrefix(p.Message, "Your name?") {
				return &mcp.ElicitResult{Action: "decline"}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
		}, "ask", "accept Ada", false},
	}
	for _, tt := range tests {
		for _, version := range protocols {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				var opts mcp.ClientOptions
				if tt.answer != nil {
					opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return tt.answer(req.Params), nil
					}
				}
				s := newGateway(t, src, policies, 0)
				cs := connectAt(t, s, version, &opts)
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tt.tool})
				if err != nil {
					t.Fatal(err)
				}
				if text := callText(t, res); !strings.Contains(text, tt.want) {
					t.Errorf("result %q, want it to contain %q", text, tt.want)
				}
				select {
				case <-ran:
					if !tt.wantRan {
						t.Error("the tool ran without approval")
					}
				default:
					if tt.wantRan {
						t.Error("the approved tool did not run")
					}
				}
				if n := s.rounds.waiting(); n != 0 {
					t.Errorf("%d calls still held after the result", n)
				}
			})
		}
	}
}

// notifyingToolset is a gwToolset that says when its list changes, as an MCP server's does.
type notifyingToolset struct {
	gwToolset
	signal host.Signal
}

func (s *notifyingToolset) Changed() <-chan struct{} { return s.signal.Changed() }
func (s *notifyingToolset) set(tools ...host.Tool) {
	s.gwToolset.set(tools...)
	s.signal.Notify()
}

// TestGatewayPushesNotifiedChanges: when every source says when its list changes, the gateway does not poll (the
// interval here is an hour) and still passes a change on at once.
func TestGatewayPushesNotifiedChanges(t *testing.T) {
	src := &notifyingToolset{}
	src.set(textTool("a", "A"))
	changed := make(chan struct{}, 10)
	s := newGateway(t, src, nil, time.Hour)
	cs := gwConnect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if got, want := toolNames(t, cs), []string{"a", "ask_agenthost"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for i, next := range []string{"b", "c"} {
		src.set(textTool(next, strings.ToUpper(next)))
		want := []string{"ask_agenthost", next}
		deadline := time.After(30 * time.Second) // generous for any machine; an hour's poll would never make it
		for got := []string(nil); !slices.Equal(got, want); got = toolNames(t, cs) {
			select {
			case <-changed: // the SDK may send one notification per tool removed or added
			case <-deadline:
				t.Fatalf("change %d: no notifications/tools/list_changed that brings the tools %v (last %v)", i, want, got)
			}
		}
	}
}

func TestGatewayFollowsListChanges(t *testing.T) {
	src := &gwToolset{}
	src.set(textTool("a", "A"), textTool("b", "B"))
	changed := make(chan struct{}, 10)
	s := newGateway(t, src, map[string]host.ToolPolicy{"c": {Disabled: true}}, 5*time.Millisecond)
	cs := gwConnect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if got, want := toolNames(t, cs), []string{"a", "ask_agenthost", "b"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}

	// b goes, c (disabled) and d come, a's description changes.
	a2 := textTool("a", "A2")
	src.set(a2, textTool("c", "C"), textTool("d", "D"))
	want := []string{"a", "ask_agenthost", "d"}
	// A bound generous enough for any machine, so that a missing change fails rather than hangs.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/tools/list_changed that brings the tools %v", want)
		}
		// The SDK may send one notification per change: wait for the list that has them all.
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var aDesc string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Name == "a" {
				aDesc = tool.Description
			}
		}
		slices.Sort(names)
		if slices.Equal(names, want) && aDesc == a2.spec.Description {
			break
		}
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "a"})
	if err != nil || callText(t, res) != "A2" {
		t.Errorf("call of the new a: %v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // Close is idempotent
		t.Fatal(err)
	}
}

// A tool that left the merged list since the last sync is refused, not called.
func TestGatewayToolGoneBeforeSync(t *testing.T) {
	src := &gwToolset{}
	src.set(textTool("a", "A"))
	cs := gwConnect(t, newGateway(t, src, nil, time.Hour), nil)
	src.set()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(callText(t, res), "no longer available") {
		t.Errorf("result %+v", res)
	}
}

func TestCallToolResult(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	tests := []struct {
		name string
		res  *host.Result
		want string // the MCP result as JSON
	}{
		{"text", &host.Result{Text: "hello"}, `{"content":[{"type":"text","text":"hello"}]}`},
		{"nil", nil, `{"content":[]}`},
		{"error", &host.Result{Text: "bad", IsError: true}, `{"content":[{"type":"text","text":"bad"}],"isError":true}`},
		{"structured only", &host.Result{Structured: json.RawMessage(`{"n":1}`)},
			`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`},
		{"structured and text", &host.Result{Text: "one", Structured: json.RawMessage(`{"n":1}`)},
			`{"content":[{"type":"text","text":"one"}],"structuredContent":{"n":1}}`},
		{"image, placeholder taken out", &host.Result{Text: "[image: image/png, 4 bytes]", Media: []host.Media{{Type: "image", MIMEType: "image/png", Data: png}}},
			`{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw=="}]}`},
		{"mixed", &host.Result{
			Text:       "Look:\n[image: image/png, 4 bytes]\n[audio: audio/wav, 4 bytes]",
			Media:      []host.Media{{Type: "image", MIMEType: "image/png", Data: png}, {Type: "audio", MIMEType: "audio/wav", Data: png}},
			References: []host.Reference{{Title: "test://doc", URI: "test://doc", Content: `{"a":1}`}},
		}, `{"content":[{"type":"text","text":"Look:"},{"type":"image","mimeType":"image/png","data":"iVBORw=="},
			{"type":"audio","mimeType":"audio/wav","data":"iVBORw=="},
			{"type":"resource","resource":{"uri":"test://doc","mimeType":"text/plain","text":"{\"a\":1}"}}]}`},
		{"resource link", &host.Result{
			Text:       "See\n[resource link: spec.md file:///spec.md]",
			References: []host.Reference{{Title: "The spec", URI: "file:///spec.md", Content: "The protocol's spec."}},
		}, `{"content":[{"type":"text","text":"See"},
			{"type":"resource_link","uri":"file:///spec.md","name":"spec.md","title":"The spec","description":"The protocol's spec."}]}`},
		{"reference without content or URI", &host.Result{
			Text:       "Found",
			References: []host.Reference{{Title: "Home", URI: "https://example.test/"}, {Title: "Note", Content: "from memory"}},
		}, `{"content":[{"type":"text","text":"Found\nNote\nfrom memory"},{"type":"resource_link","uri":"https://example.test/","name":"Home"}]}`},
		{"blob reference", &host.Result{References: []host.Reference{{Title: "test://b", URI: "test://b", Content: "[blob: image/png, 9 bytes]"}}},
			`{"content":[{"type":"resource_link","uri":"test://b","name":"test://b","description":"[blob: image/png, 9 bytes]"}]}`},
		{"a text line like a placeholder stays without its medium", &host.Result{Text: "[image: image/png, 4 bytes]"},
			`{"content":[{"type":"text","text":"[image: image/png, 4 bytes]"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callToolResult(tt.res)
			if !jsonEqual(t, got, tt.want) {
				b, _ := json.Marshal(got)
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// fakePrompts is a PromptSource whose prompts the test changes.
type fakePrompts struct {
	prefix string
	mu     sync.Mutex
	list   []*mcp.Prompt
	signal host.Signal
	got    []*mcp.GetPromptParams
}

func (f *fakePrompts) Prefix() string { return f.prefix }
func (f *fakePrompts) Prompts() []*mcp.Prompt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list
}
func (f *fakePrompts) PromptsChanged() <-chan struct{} { return f.signal.Changed() }
func (f *fakePrompts) set(list ...*mcp.Prompt) {
	f.mu.Lock()
	f.list = list
	f.mu.Unlock()
	f.signal.Notify()
}
func (f *fakePrompts) Complete(_ context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{p.Ref.Name + ":" + p.Argument.Name + "=" + p.Argument.Value + "…"}}}, nil
}
func (f *fakePrompts) GetPrompt(_ context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	f.mu.Lock()
	f.got = append(f.got, p)
	f.mu.Unlock()
	if p.Name == "broken" {
		return nil, errors.New("the upstream server failed")
	}
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: p.Name + ":" + p.Arguments["topic"]}}}}, nil
}

// TestGatewayPrompts: the upstream servers' prompts are offered under their prefixed names, got from their server
// by their own names with their arguments, and follow the servers' changes.
func TestGatewayPrompts(t *testing.T) {
	fs := &fakePrompts{prefix: "fs"}
	fs.set(&mcp.Prompt{Name: "summarize", Description: "Summarizes.", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		&mcp.Prompt{Name: "broken"})
	bare := &fakePrompts{}
	bare.set(&mcp.Prompt{Name: "fs_summarize"}, &mcp.Prompt{Name: "plain"}) // fs_summarize is taken by fs's
	tm := host.NewToolManager(nil, nil)
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, Prompts: []PromptSource{fs, bare}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	changed := make(chan struct{}, 10)
	cs := gwConnect(t, s, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		changed <- struct{}{}
	}})
	if cs.InitializeResult().Capabilities.Prompts == nil {
		t.Fatal("the gateway does not declare prompts")
	}
	names := func() []string {
		res, err := cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Prompts {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(), []string{"fs_broken", "fs_summarize", "plain"}; !slices.Equal(got, want) {
		t.Fatalf("prompts %v, want %v", got, want)
	}
	res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "fs_summarize", Arguments: map[string]string{"topic": "MCP"}})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "summarize:MCP" {
		t.Fatalf("get fs_summarize: %+v, %v", res, err)
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "fs_broken"}); err == nil || !strings.Contains(err.Error(), "the upstream server failed") {
		t.Errorf("get fs_broken: %v, want the upstream server's error", err)
	}

	comp, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fs_summarize"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "MC"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"summarize:topic=MC…"}) {
		t.Errorf("complete fs_summarize's topic: %+v, %v", comp, err)
	}
	for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "nope"}, {Type: "ref/resource", URI: "file:///x"}} {
		if _, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "a"}}); err == nil {
			t.Errorf("complete %+v: no error", ref)
		}
	}

	bare.set(&mcp.Prompt{Name: "other"})
	want := []string{"fs_broken", "fs_summarize", "other"}
	deadline := time.After(30 * time.Second)
	for got := names(); !slices.Equal(got, want); got = names() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no notifications/prompts/list_changed that brings %v (last %v)", want, got)
		}
	}
}

// TestGatewayLogRelay: a caller's logging/setLevel is passed on to LogLevel, and the log messages of a forwarded
// call's server reach that caller at its level, before the result.
func TestGatewayLogRelay(t *testing.T) {
	logs := &gwTool{spec: host.ToolSpec{Name: "logs", Description: "Logs."}, fn: func(_ context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
		for _, l := range []string{"info", "error"} {
			call.ReportLog(host.LogMessage{Level: l, Logger: "up", Data: json.RawMessage(`"at ` + l + `"`)})
		}
		return &host.Result{Text: "logged"}, nil
	}}
	src := &gwToolset{}
	src.set(logs)
	levels := make(chan string, 1)
	tm := host.NewToolManager([]host.Toolset{src}, nil)
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true,
		LogLevel: func(_ context.Context, level string) { levels <- level }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var mu sync.Mutex
	var got []string
	cs := gwConnect(t, s, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		mu.Lock()
		got = append(got, string(req.Params.Level)+" "+req.Params.Logger+" "+fmt.Sprint(req.Params.Data))
		mu.Unlock()
	}})
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if l := <-levels; l != "warning" {
		t.Errorf("LogLevel told %q", l)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "logs"})
	if err != nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	want := []string{"error up at error"}
	deadline := time.Now().Add(30 * time.Second) // the SDK hands notifications to the handler on a goroutine of its own
	for {
		mu.Lock()
		done := slices.Equal(got, want)
		snapshot := slices.Clone(got)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log messages %q, want %q", snapshot, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeResources is a ResourceSource whose resources the test changes.
type fakeResources struct {
	name      string
	mu        sync.Mutex
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	signal    host.Signal
	updated   func(string)
	subs      []string
}

func (f *fakeResources) Name() string { return "mcp:" + f.name }
func (f *fakeResources) Resources() ([]*mcp.Resource, []*mcp.ResourceTemplate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resources, f.templates
}
func (f *fakeResources) ResourcesChanged() <-chan struct{} { return f.signal.Changed() }
func (f *fakeResources) ReadResource(_ context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: p.URI, MIMEType: "text/plain", Text: f.name + " has " + p.URI}}}, nil
}
func (f *fakeResources) Subscribe(_ context.Context, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "+"+uri)
	return nil
}
func (f *fakeResources) Unsubscribe(_ context.Context, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "-"+uri)
	return nil
}
func (f *fakeResources) OnResourceUpdated(fn func(string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updated = fn
}
func (f *fakeResources) Complete(_ context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{f.name + ":" + p.Ref.URI + ":" + p.Argument.Value}}}, nil
}
func (f *fakeResources) subscriptions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.subs)
}

// TestGatewayResources: the upstream servers' resources are offered under their URIs, a URI an earlier server has
// under its rewritten one, both read from their servers; templates are offered; subscriptions of several callers
// reach the server once, and its updates reach the subscribers.
func TestGatewayResources(t *testing.T) {
	a := &fakeResources{name: "a", resources: []*mcp.Resource{{URI: "file:///notes.md", Name: "notes"}},
		templates: []*mcp.ResourceTemplate{{URITemplate: "db://rows/{id}", Name: "row"}}}
	b := &fakeResources{name: "b", resources: []*mcp.Resource{{URI: "file:///notes.md", Name: "other notes"}, {URI: "mem://x", Name: "x"}}}
	tm := host.NewToolManager(nil, nil)
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, Resources: []ResourceSource{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	updates := make(chan string, 10)
	opts := &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updates <- req.Params.URI
	}}
	cs, cs2 := gwConnect(t, s, opts), gwConnect(t, s, opts)

	res, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	rewritten := "agenthost://b/file:%2F%2F%2Fnotes.md"
	if want := []string{rewritten, "file:///notes.md", "mem://x"}; !slices.Equal(uris, want) {
		t.Fatalf("resources %v, want %v", uris, want)
	}
	for uri, want := range map[string]string{"file:///notes.md": "a has file:///notes.md", rewritten: "b has file:///notes.md",
		"db://rows/7": "a has db://rows/7"} {
		got, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != want || got.Contents[0].URI != uri {
			t.Errorf("read %s: %+v, %v; want %q under the URI asked for", uri, got, err, want)
		}
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "file:///nothing"}); err == nil {
		t.Error("an unknown resource was read")
	}
	comp, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "db://rows/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"a:db://rows/{id}:4"}) {
		t.Errorf("complete a template's argument: %+v, %v", comp, err)
	}
	if _, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "db://nope/{x}"},
		Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil {
		t.Error("an unknown template was completed")
	}

	// Two callers subscribe: the server is asked once, and told to stop once both have unsubscribed.
	for _, c := range []*mcp.ClientSession{cs, cs2} {
		if err := c.Subscribe(t.Context(), &mcp.SubscribeParams{URI: rewritten}); err != nil {
			t.Fatal(err)
		}
	}
	a.mu.Lock()
	a.updated("file:///notes.md") // a's own resource: nobody subscribed to it
	a.mu.Unlock()
	b.mu.Lock()
	b.updated("file:///notes.md") // b's, offered under the rewritten URI
	b.mu.Unlock()
	for range 2 {
		select {
		case uri := <-updates:
			if uri != rewritten {
				t.Errorf("resources/updated for %s, want only %s", uri, rewritten)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a subscriber was not told of the update")
		}
	}
	select {
	case uri := <-updates:
		t.Errorf("a third resources/updated, for %s", uri)
	case <-time.After(50 * time.Millisecond):
	}
	for _, c := range []*mcp.ClientSession{cs, cs2} {
		if err := c.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: rewritten}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.subscriptions(), []string{"+file:///notes.md", "-file:///notes.md"}; !slices.Equal(got, want) {
		t.Errorf("b's subscriptions %q, want %q", got, want)
	}
	if got := a.subscriptions(); len(got) != 0 {
		t.Errorf("a's subscriptions %q, want none", got)
	}
}

// TestGatewayOriginalResult: an MCP server's result, kept in host.Result.Original, reaches the caller unchanged.
func TestGatewayOriginalResult(t *testing.T) {
	orig := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "first"},
		&mcp.TextContent{Text: "second"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc", MIMEType: "application/json", Text: strings.Repeat(`{"a":1}`, 1000)}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
	}}
	tool := &gwTool{spec: host.ToolSpec{Name: "orig", Description: "Returns an MCP result."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
		return &host.Result{Text: "first\nsecond\n[what the model reads]", Original: orig}, nil
	}}
	src := &gwToolset{}
	src.set(tool)
	s := newGateway(t, src, nil, time.Hour)
	cs := gwConnect(t, s, nil)
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "orig"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Content)
	want, _ := json.Marshal(orig.Content)
	if string(got) != string(want) {
		t.Errorf("content %s\nwant %s", got, want)
	}
}

// expectCancelled waits, until wait ends, for a cancelled gateway call to end: the tool's context with
// context.Canceled (on cancelled), and the client's call with an error (on done).
func expectCancelled(t *testing.T, wait context.Context, cancelled, done <-chan error) {
	t.Helper()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool's context ended with %v", err)
		}
	case <-wait.Done():
		t.Fatal("the tool was not cancelled")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the cancelled call returned no error")
		}
	case <-wait.Done():
		t.Fatal("the cancelled call never returned")
	}
}
