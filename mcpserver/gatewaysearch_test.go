package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// newSearchGateway returns a Server in gateway mode's search form over src, closed at the end of the test.
func newSearchGateway(t *testing.T, src host.Toolset, policies map[string]host.ToolPolicy) *Server {
	t.Helper()
	tm := host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{Policies: policies})
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsSearch, ToolsPollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func schemaTool(name, desc, schema string) *gwTool {
	return &gwTool{spec: host.ToolSpec{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}, fn: func(_ context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
		return &host.Result{Text: name + " ran with " + string(args), Structured: json.RawMessage(`{"tool":"` + name + `"}`)}, nil
	}}
}

// searchFixture is a source of tools for the search form: most unpinned, some pinned by policy, one disabled.
func searchFixture() (*gwToolset, map[string]host.ToolPolicy) {
	src := &gwToolset{}
	src.set(
		schemaTool("create_invoice", "Creates an invoice for a customer.", `{"type":"object","properties":{"customer":{"type":"string","description":"Who is billed."}},"required":["customer"]}`),
		schemaTool("get_weather", "Gets the weather forecast for a city.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		schemaTool("send_message", "Sends a chat message to a channel.", `{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}}}`),
		schemaTool("always_here", "A tool pinned by policy.", `{"type":"object"}`),
		schemaTool("forced_one", "A forced tool: pinned by default.", `{"type":"object"}`),
		schemaTool("forced_unpinned", "A forced tool unpinned by policy: still pinned, as in a run.", `{"type":"object"}`),
		schemaTool("pinned_off", "A pinned tool that is disabled.", `{"type":"object"}`),
		schemaTool("drop_database", "Drops the database, after approval.", `{"type":"object"}`),
		schemaTool("secret_weather", "Gets the weather too, but is disabled.", `{"type":"object"}`),
	)
	return src, map[string]host.ToolPolicy{
		"always_here":     {Pinned: ptr(true)},
		"forced_one":      {Forced: true},
		"forced_unpinned": {Forced: true, Pinned: ptr(false)},
		"pinned_off":      {Pinned: ptr(true), Disabled: true},
		"drop_database":   {RequireApproval: true},
		"secret_weather":  {Disabled: true},
	}
}

func TestGatewaySearchList(t *testing.T) {
	src, policies := searchFixture()
	cs := gwConnect(t, newSearchGateway(t, src, policies), nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var agent *mcp.Tool
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "ask_agenthost" {
			agent = tool
		}
	}
	slices.Sort(names)
	if want := []string{"always_here", "ask_agenthost", "call_tool", "forced_one", "forced_unpinned", "search_tools"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if d := agent.Description; !strings.Contains(d, "always_here, forced_one, forced_unpinned, and the tools search_tools finds") || strings.Contains(d, "get_weather") {
		t.Errorf("agent tool description %q", d)
	}
	if schema, _ := json.Marshal(agent.InputSchema); strings.Contains(string(schema), "enum") {
		t.Errorf("the agent tool's choices are limited to an enum: %s", agent.InputSchema)
	}
}

func TestGatewaySearchTools(t *testing.T) {
	src, policies := searchFixture()
	cs := gwConnect(t, newSearchGateway(t, src, policies), nil)
	search := func(args string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "search_tools", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := search(`{"query":"weather forecast","max_results":3}`)
	if res.IsError {
		t.Fatalf("search failed: %s", callText(t, res))
	}
	var out searchOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) == 0 || out.Tools[0].Name != "get_weather" || out.Tools[0].Source != "mcp:up" || out.Tools[0].Description != "Gets the weather forecast for a city." {
		t.Fatalf("structured result %s", b)
	}
	if !jsonEqual(t, out.Tools[0].InputSchema, `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`) {
		t.Errorf("schema %s", out.Tools[0].InputSchema)
	}
	for _, f := range out.Tools {
		if f.Name == "secret_weather" {
			t.Error("a disabled tool was found")
		}
	}
	text := callText(t, res)
	if !strings.Contains(text, "get_weather (from mcp:up): Gets the weather forecast for a city.") || !strings.Contains(text, `"required":["city"]`) {
		t.Errorf("text %q", text)
	}

	res = search(`{"names":["send_message","secret_weather","nope"]}`)
	b, _ = json.Marshal(res.StructuredContent)
	if !jsonEqual(t, res.StructuredContent, `{"tools":[{"name":"send_message","source":"mcp:up","description":"Sends a chat message to a channel.",`+
		`"inputSchema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}}}}],"unknown":["secret_weather","nope"]}`) {
		t.Errorf("by names: %s", b)
	}
	if text := callText(t, res); !strings.Contains(text, "No enabled tool is named secret_weather, nope.") {
		t.Errorf("by names: text %q", text)
	}

	if res := search(`{}`); !res.IsError || !strings.Contains(callText(t, res), "give a query") {
		t.Errorf("empty search: %+v", res)
	}
	for _, bad := range []string{`{"query":"weather","max_results":0}`, `{"query":"weather","max_results":21}`} {
		if res := search(bad); !res.IsError || !strings.Contains(callText(t, res), "max_results must be between 1 and 20") {
			t.Errorf("search %s: %+v", bad, res)
		}
	}
	many, _ := json.Marshal(map[string]any{"names": strings.Split(strings.Repeat("x,", maxSearchResults)+"x", ",")})
	if res := search(string(many)); !res.IsError || !strings.Contains(callText(t, res), fmt.Sprintf("at most %d names", maxSearchResults)) {
		t.Errorf("too many names: %+v", res)
	}
}

func TestGatewaySearchCallTool(t *testing.T) {
	src, policies := searchFixture()
	src.set(append(src.tools, &gwTool{spec: host.ToolSpec{Name: "fails", Description: "Fails."}, fn: func(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
		return &host.Result{Text: "it broke", IsError: true}, nil
	}})...)
	cs := gwConnect(t, newSearchGateway(t, src, policies), nil)
	for _, c := range []struct {
		args, text, structured string
		isError                bool
	}{
		{`{"name":"get_weather","arguments":{"city":"Oslo"}}`, `get_weather ran with {"city":"Oslo"}`, `{"tool":"get_weather"}`, false},
		{`{"name":"always_here"}`, `always_here ran with {}`, `{"tool":"always_here"}`, false},
		{`{"name":"fails"}`, "it broke", "", true},
		{`{"name":"nope","arguments":{}}`, "call_tool: no tool is named nope; search_tools finds the tools by what they do", "", true},
		{`{"name":"secret_weather"}`, "call_tool: the tool secret_weather is disabled", "", true},
		{`{"name":"ask_agenthost","arguments":{"prompt":"hi"}}`, "call_tool: call the agent tool ask_agenthost directly", "", true},
		{`{"name":"call_tool"}`, "call_tool: call call_tool directly", "", true},
		{`{}`, "call_tool: give the name of the tool to call", "", true},
		{`{"name":"get_weather","arguments":[1]}`, "the arguments of get_weather must be a JSON object", "", true},
	} {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "call_tool", Arguments: json.RawMessage(c.args)})
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if got := callText(t, res); got != c.text || res.IsError != c.isError {
			t.Errorf("call_tool %s = %q (error %v), want %q (error %v)", c.args, got, res.IsError, c.text, c.isError)
		}
		if c.structured != "" && !jsonEqual(t, res.StructuredContent, c.structured) {
			t.Errorf("call_tool %s: structured %v", c.args, res.StructuredContent)
		}
	}
}

// TestGatewaySearchApproval: a tool that requires approval asks for it through call_tool as through a direct call,
// within the call on older protocols and through input requests (a retry of call_tool) on 2026-07-28.
func TestGatewaySearchApproval(t *testing.T) {
	for _, c := range []struct {
		name, action, want string
	}{
		{"approved", "accept", "drop_database ran with {}"},
		{"denied", "decline", "the call was denied by the user"},
	} {
		forEachProtocol(t, func(t *testing.T, version string) {
			t.Run(c.name, func(t *testing.T) {
				src, policies := searchFixture()
				s := newSearchGateway(t, src, policies)
				asked := 0
				cs := connectAt(t, s, version, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					res := &mcp.ElicitResult{Action: c.action}
					if c.action == "accept" {
						res.Content = map[string]any{"approve": true}
					}
					return res, nil
				}})
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "call_tool", Arguments: json.RawMessage(`{"name":"drop_database"}`)})
				if err != nil {
					t.Fatal(err)
				}
				if text := callText(t, res); !strings.Contains(text, c.want) || asked != 1 {
					t.Errorf("result %q after %d questions, want %q after one", text, asked, c.want)
				}
				if n := s.rounds.waiting(); n != 0 {
					t.Errorf("%d calls still held after the result", n)
				}
			})
		})
	}
}

func TestGatewaySearchProgressAndCancellation(t *testing.T) {
	cancelled := make(chan error, 1)
	src := &gwToolset{}
	src.set(&gwTool{spec: host.ToolSpec{Name: "slow", Description: "Waits."}, fn: func(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
		call.ReportProgress(host.Progress{Progress: 1, Total: 10, Message: "started"})
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}})
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs := gwConnect(t, newSearchGateway(t, src, nil), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "call_tool", Arguments: json.RawMessage(`{"name":"slow"}`)}
		params.SetProgressToken("tok-9")
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	wait := bounded(t)
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-9" || p.Progress != 1 || p.Total != 10 || p.Message != "started" {
			t.Errorf("progress %+v", *p)
		}
	case <-wait.Done():
		t.Fatal("no progress came")
	}
	cancel()
	expectCancelled(t, wait, cancelled, done)
}

// TestGatewaySearchFollowsChanges: a new unpinned tool changes nothing offered (so no list_changed is owed), yet is
// found and called at once; a new pinned tool is offered, and the clients are told.
func TestGatewaySearchFollowsChanges(t *testing.T) {
	src := &notifyingToolset{}
	src.set(textTool("a", "A"))
	changed := make(chan struct{}, 10)
	s, err := New(t.Context(), host.New(testmodel.New(), host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{
		Policies: map[string]host.ToolPolicy{"pinned_b": {Pinned: ptr(true)}},
	}), nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsSearch, ToolsPollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := gwConnect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	want := []string{"ask_agenthost", "call_tool", "search_tools"}
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	agentBefore := s.agentTools

	src.set(textTool("a", "A"), textTool("new_unpinned", "fresh"))
	tools, err := s.orch.Tools().Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.gateway.sync(tools) // as the watcher does on the notification; syncing twice is harmless
	s.gateway.mu.Lock()
	exported, agentAfter := len(s.gateway.exported), s.agentTools
	s.gateway.mu.Unlock()
	if exported != 0 || !slices.Equal(agentBefore, agentAfter) {
		t.Errorf("an unpinned tool changed what is offered: %d exported, agent tool names %v", exported, agentAfter)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "call_tool", Arguments: json.RawMessage(`{"name":"new_unpinned"}`)})
	if err != nil || callText(t, res) != "fresh" {
		t.Errorf("call of the new tool: %v, %v", res, err)
	}

	src.set(textTool("a", "A"), textTool("new_unpinned", "fresh"), textTool("pinned_b", "B"))
	want = []string{"ask_agenthost", "call_tool", "pinned_b", "search_tools"}
	wait := bounded(t)
	for got := []string(nil); !slices.Equal(got, want); got = toolNames(t, cs) {
		select {
		case <-changed:
		case <-wait.Done():
			t.Fatalf("no notifications/tools/list_changed that brings the tools %v (last %v)", want, got)
		}
	}
}

func TestGatewayToolsOption(t *testing.T) {
	tm := host.NewToolManager(nil, nil)
	_, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: "some"})
	if err == nil || !strings.Contains(err.Error(), `gateway tools "some"`) {
		t.Errorf("New with gateway tools %q: %v", "some", err)
	}
	for _, name := range []string{host.SearchToolName, CallToolName} {
		_, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsSearch, ToolName: name})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the agent tool cannot be named %q", name)) {
			t.Errorf("New with the agent tool named %q: %v", name, err)
		}
	}
	// Without gateway mode the search form offers nothing more than the agent tool.
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{GatewayTools: GatewayToolsSearch})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := toolNames(t, gwConnect(t, s, nil)); !slices.Equal(got, []string{"ask_agenthost"}) {
		t.Errorf("tools %v", got)
	}
}
