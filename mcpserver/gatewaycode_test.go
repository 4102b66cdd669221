package mcpserver

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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// scriptRunner is a host.CodeRunner for the gateway's tests. Its code is a JSON script: groups of calls, the calls of
// a group made at once and the groups one after the other, then the value to return or the error to throw. A call
// that fails throws, as a rejected promise does in a real script.
type scriptRunner struct{}

var _ host.CodeRunner = scriptRunner{}

type script struct {
	Groups [][]struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	} `json:"groups"`
	Throw string `json:"throw"` // the script fails with this, after its calls
	Break bool   `json:"break"` // the runner cannot run the script: a Go error
}

// Describe names the tools it declares, so that a test sees which they are.
func (scriptRunner) Describe(tools []*host.ManagedTool) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Spec.Name)
	}
	return "Runs a script. Declared: " + strings.Join(names, ", ") + "."
}

// Run returns the texts of the calls, each group's on a line, and as structured content the list of every call's
// structured content (or text).
func (scriptRunner) Run(ctx context.Context, code string, tools host.ToolCaller) (*host.Result, error) {
	var s script
	if err := json.Unmarshal([]byte(code), &s); err != nil {
		return &host.Result{Text: "SyntaxError: " + err.Error(), IsError: true}, nil
	}
	if s.Break {
		return nil, errors.New("the sandbox broke")
	}
	var lines []string
	var values []json.RawMessage
	for _, group := range s.Groups {
		results := make([]*host.Result, len(group))
		errs := make([]error, len(group))
		var wg sync.WaitGroup
		for i, c := range group {
			wait := tools.StartTool(ctx, c.Tool, c.Args) // in the script's order, awaited together
			wg.Go(func() { results[i], errs[i] = wait() })
		}
		wg.Wait()
		var texts []string
		for i, res := range results {
			if errs[i] != nil {
				return &host.Result{Text: fmt.Sprintf("Error: %v", errs[i]), IsError: true}, nil
			}
			texts = append(texts, res.Text)
			v := res.Structured
			if len(v) == 0 {
				v, _ = json.Marshal(res.Text)
			}
			values = append(values, v)
		}
		lines = append(lines, strings.Join(texts, " | "))
	}
	if s.Throw != "" {
		return &host.Result{Text: "Error: " + s.Throw + "\n" + strings.Join(lines, "\n"), IsError: true}, nil
	}
	structured, _ := json.Marshal(values)
	return &host.Result{Text: strings.Join(lines, "\n"), Structured: structured}, nil
}

// newCodeGateway returns a Server in gateway mode's code form over src, closed at the end of the test.
func newCodeGateway(t *testing.T, src host.Toolset, policies map[string]host.ToolPolicy) *Server {
	t.Helper()
	tm := host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{Policies: policies})
	s, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsCode, CodeRunner: scriptRunner{}, ToolsPollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// codeFixture is the search form's fixture and a tool that takes control, pinned as such tools are by default.
func codeFixture() (*gwToolset, map[string]host.ToolPolicy) {
	src, policies := searchFixture()
	src.set(append(src.tools, schemaTool("hand_over", "Hands the conversation over to a person.", `{"type":"object"}`))...)
	policies["hand_over"] = host.ToolPolicy{TakesControl: true}
	return src, policies
}

func runCode(t *testing.T, cs *mcp.ClientSession, code string) *mcp.CallToolResult {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: host.CodeToolName, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGatewayCodeList(t *testing.T) {
	src, policies := codeFixture()
	cs := gwConnect(t, newCodeGateway(t, src, policies), nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	slices.Sort(names)
	if want := []string{"always_here", "ask_agenthost", "forced_one", "forced_unpinned", "hand_over", "run_code", "search_tools"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	// Declared: the pinned tools a script may call (not the disabled one, nor the one that takes control), then the
	// way to the others.
	code := byName["run_code"]
	want := "Runs a script. Declared: always_here, forced_one, forced_unpinned.\n\n" +
		"The code may also call tools not declared here: search_tools finds them and says what they take; call them by name."
	if code.Description != want {
		t.Errorf("run_code's description %q, want %q", code.Description, want)
	}
	if !jsonEqual(t, code.InputSchema, string(codeInput)) {
		t.Errorf("run_code's input schema %v", code.InputSchema)
	}
	if d := byName["search_tools"].Description; !strings.Contains(d, "call them from the code of run_code") || strings.Contains(d, "call_tool") {
		t.Errorf("search_tools' description %q", d)
	}
	if d := byName["ask_agenthost"].Description; !strings.Contains(d, "and the tools search_tools finds") || strings.Contains(d, "get_weather") {
		t.Errorf("agent tool description %q", d)
	}
}

// TestGatewayCodeSearch: search_tools says to call what it finds from run_code, and finds only what a script may
// call.
func TestGatewayCodeSearch(t *testing.T) {
	src, policies := codeFixture()
	cs := gwConnect(t, newCodeGateway(t, src, policies), nil)
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "search_tools", Arguments: json.RawMessage(`{"query":"weather forecast"}`)})
	if err != nil {
		t.Fatal(err)
	}
	text := callText(t, res)
	if !strings.HasPrefix(text, "Call these from the code of run_code, as tools.<name>(arguments):") || !strings.Contains(text, "get_weather (from mcp:up)") {
		t.Errorf("search text %q", text)
	}
	res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "search_tools", Arguments: json.RawMessage(`{"names":["hand_over","get_weather"],"query":"hand the conversation over to a person"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var out searchOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range out.Tools {
		if f.Name == "hand_over" {
			t.Errorf("search found a tool that takes control, which a script cannot call: %s", b)
		}
	}
	if !slices.Equal(out.Unknown, []string{"hand_over"}) || len(out.Tools) == 0 || out.Tools[0].Name != "get_weather" {
		t.Errorf("search by names %s", b)
	}
}

// TestGatewayCodeCalls: a script calls two tools at once, then a third once both have returned; the result is the
// script's text and structured value. Calls the script may not make fail in it, and a failed script is an error.
func TestGatewayCodeCalls(t *testing.T) {
	src, policies := codeFixture()
	var mu sync.Mutex
	var events []string
	log := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	// first and second each wait for the other to have started: made one after the other, they never return.
	started := map[string]chan struct{}{"first": make(chan struct{}), "second": make(chan struct{})}
	meeting := func(name, other string) *gwTool {
		return &gwTool{spec: host.ToolSpec{Name: name, Description: "Meets " + other + "."}, fn: func(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
			log("start " + name)
			close(started[name])
			select {
			case <-started[other]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			log("end " + name)
			return &host.Result{Text: name + " met " + other, Structured: json.RawMessage(`{"met":"` + other + `"}`)}, nil
		}}
	}
	after := &gwTool{spec: host.ToolSpec{Name: "after", Description: "Comes after."}, fn: func(_ context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
		log("after " + string(args))
		return &host.Result{Text: "after ran"}, nil
	}}
	src.set(append(src.tools, meeting("first", "second"), meeting("second", "first"), after)...)
	cs := gwConnect(t, newCodeGateway(t, src, policies), nil)

	res := runCode(t, cs, `{"groups":[[{"tool":"first"},{"tool":"second","args":{}}],[{"tool":"after","args":{"n":1}}]]}`)
	if res.IsError {
		t.Fatalf("the script failed: %s", callText(t, res))
	}
	if text := callText(t, res); text != "first met second | second met first\nafter ran" {
		t.Errorf("text %q", text)
	}
	if !jsonEqual(t, res.StructuredContent, `[{"met":"second"},{"met":"first"},"after ran"]`) {
		t.Errorf("structured %v", res.StructuredContent)
	}
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	if len(got) != 5 || got[4] != `after {"n":1}` {
		t.Errorf("events %v: want both meetings, then after", got)
	}

	for _, c := range []struct{ name, code, want string }{
		{"unknown", `{"groups":[[{"tool":"nope"}]]}`, `Error: unknown tool "nope"; search_tools finds the tools by what they do`},
		{"disabled", `{"groups":[[{"tool":"secret_weather"}]]}`, `Error: tool "secret_weather" is disabled by the configuration`},
		{"takes control", `{"groups":[[{"tool":"hand_over"}]]}`, `Error: hand_over hands the conversation over, so it cannot be called from code`},
		{"the agent tool", `{"groups":[[{"tool":"ask_agenthost","args":{"prompt":"hi"}}]]}`, `Error: ask_agenthost cannot be called from code`},
		{"run_code", `{"groups":[[{"tool":"run_code","args":{"code":"{}"}}]]}`, `Error: run_code cannot be called from code`},
		{"search_tools", `{"groups":[[{"tool":"search_tools","args":{"query":"x"}}]]}`, `Error: search_tools cannot be called from code`},
		{"arguments not an object", `{"groups":[[{"tool":"get_weather","args":[1]}]]}`, `Error: the arguments of get_weather must be a JSON object`},
		{"script error", `{"groups":[[{"tool":"always_here"}]],"throw":"boom"}`, "Error: boom\nalways_here ran with {}"},
		{"syntax error", `{`, "SyntaxError: unexpected end of JSON input"},
		{"runner broke", `{"break":true}`, "run_code: the sandbox broke"},
	} {
		res := runCode(t, cs, c.code)
		if text := callText(t, res); !res.IsError || text != c.want {
			t.Errorf("%s: %q (error %v), want %q as an error", c.name, text, res.IsError, c.want)
		}
		if res.StructuredContent != nil {
			t.Errorf("%s: structured content %v from a failed script", c.name, res.StructuredContent)
		}
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: host.CodeToolName, Arguments: json.RawMessage(`{"code":"  "}`)})
	if err != nil || !res.IsError || callText(t, res) != "run_code: give the code to run" {
		t.Errorf("no code: %v, %v", res, err)
	}
}

// TestGatewayCodeApproval: a tool that requires approval asks the caller through elicitation from a script as from a
// direct call, within the call on older protocols and through input requests on 2026-07-28; a refusal fails the call
// in the script, and the tool does not run.
func TestGatewayCodeApproval(t *testing.T) {
	for _, c := range []struct {
		name, action, want string
		isError            bool
	}{
		{"approved", "accept", "drop_database ran with {} | always_here ran with {}", false},
		{"denied", "decline", "Error: the call was denied by the user", true},
	} {
		forEachProtocol(t, func(t *testing.T, version string) {
			t.Run(c.name, func(t *testing.T) {
				src, policies := codeFixture()
				s := newCodeGateway(t, src, policies)
				var asked []string
				cs := connectAt(t, s, version, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					res := &mcp.ElicitResult{Action: c.action}
					if c.action == "accept" {
						res.Content = map[string]any{"approve": true}
					}
					return res, nil
				}})
				res := runCode(t, cs, `{"groups":[[{"tool":"drop_database"},{"tool":"always_here"}]]}`)
				if text := callText(t, res); !strings.HasPrefix(text, c.want) || res.IsError != c.isError {
					t.Errorf("result %q (error %v), want %q (error %v)", text, res.IsError, c.want, c.isError)
				}
				if len(asked) != 1 || !strings.Contains(asked[0], "The agent wants to call drop_database (mcp:up)") {
					t.Errorf("questions %q, want one about drop_database", asked)
				}
				if n := s.rounds.waiting(); n != 0 {
					t.Errorf("%d calls still held after the result", n)
				}
			})
		})
	}
}

// TestGatewayCodeNoApprover: without elicitation nobody can approve, and the call is refused in the script.
func TestGatewayCodeNoApprover(t *testing.T) {
	src, policies := codeFixture()
	cs := gwConnect(t, newCodeGateway(t, src, policies), nil)
	res := runCode(t, cs, `{"groups":[[{"tool":"drop_database"}]]}`)
	if text := callText(t, res); !res.IsError || !strings.Contains(text, "approval") {
		t.Errorf("result %q (error %v), want a refusal", text, res.IsError)
	}
}

// TestGatewayCodeProgressAndCancellation: the progress of a script's calls goes to run_code's progress token, and
// cancelling run_code cancels every call the script is making.
func TestGatewayCodeProgressAndCancellation(t *testing.T) {
	cancelled := make(chan error, 2)
	slow := func(name string, at float64) *gwTool {
		return &gwTool{spec: host.ToolSpec{Name: name, Description: "Waits."}, fn: func(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
			call.ReportProgress(host.Progress{Progress: at, Total: 10, Message: name + " started"})
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		}}
	}
	src := &gwToolset{}
	src.set(slow("slow_a", 1), slow("slow_b", 2))
	var mu sync.Mutex
	var messages []string
	both := make(chan struct{})
	cs := gwConnect(t, newCodeGateway(t, src, nil), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken != "tok-7" {
			t.Errorf("progress with token %v", req.Params.ProgressToken)
		}
		mu.Lock()
		defer mu.Unlock()
		messages = append(messages, req.Params.Message)
		if len(messages) == 2 {
			close(both)
		}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: host.CodeToolName, Arguments: json.RawMessage(`{"code":"{\"groups\":[[{\"tool\":\"slow_a\"},{\"tool\":\"slow_b\"}]]}"}`)}
		params.SetProgressToken("tok-7")
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	wait := bounded(t)
	select {
	case <-both:
	case <-wait.Done():
		t.Fatal("the progress of both calls did not come")
	}
	mu.Lock()
	got := slices.Sorted(slices.Values(messages))
	mu.Unlock()
	if !slices.Equal(got, []string{"slow_a started", "slow_b started"}) {
		t.Errorf("progress messages %v", got)
	}
	cancel()
	expectCancelled(t, wait, cancelled, done)
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the other call's context ended with %v", err)
		}
	case <-wait.Done():
		t.Fatal("the other call was not cancelled")
	}
}

// TestGatewayCodeFollowsChanges: run_code's declarations follow the merged list, and the clients are told.
func TestGatewayCodeFollowsChanges(t *testing.T) {
	src := &notifyingToolset{}
	src.set(textTool("a", "A"))
	changed := make(chan struct{}, 10)
	s, err := New(t.Context(), host.New(testmodel.New(), host.NewToolManager([]host.Toolset{src}, &host.ToolManagerOptions{
		Policies: map[string]host.ToolPolicy{"pinned_b": {Pinned: ptr(true)}},
	}), nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsCode, CodeRunner: scriptRunner{}, ToolsPollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := gwConnect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	codeDescription := func() string {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == host.CodeToolName {
				return tool.Description
			}
		}
		t.Fatal("run_code is not offered")
		return ""
	}
	if d := codeDescription(); !strings.HasPrefix(d, "Runs a script. Declared: .\n\nThe code may also call tools not declared here") {
		t.Errorf("description %q", d)
	}
	src.set(textTool("a", "A"), textTool("pinned_b", "B"))
	want := "Runs a script. Declared: pinned_b."
	wait := bounded(t)
	for d := ""; !strings.HasPrefix(d, want); d = codeDescription() {
		select {
		case <-changed:
		case <-wait.Done():
			t.Fatalf("no notifications/tools/list_changed that brings the description %q (last %q)", want, d)
		}
	}
	if res := runCode(t, cs, `{"groups":[[{"tool":"pinned_b"},{"tool":"a"}]]}`); callText(t, res) != "B | A" {
		t.Errorf("result %q", callText(t, res))
	}
}

func TestGatewayCodeOptions(t *testing.T) {
	tm := host.NewToolManager(nil, nil)
	_, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsCode})
	if err == nil || !strings.Contains(err.Error(), `gateway tools "code": no code runner`) {
		t.Errorf("New without a code runner: %v", err)
	}
	for _, name := range []string{host.SearchToolName, host.CodeToolName} {
		_, err := New(t.Context(), host.New(testmodel.New(), tm, nil), &Options{ExposeTools: true, GatewayTools: GatewayToolsCode, CodeRunner: scriptRunner{}, ToolName: name})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the agent tool cannot be named %q", name)) {
			t.Errorf("New with the agent tool named %q: %v", name, err)
		}
	}
}
