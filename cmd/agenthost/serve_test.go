package main

// The tests of `agenthost serve` with real MCP clients: the official TypeScript SDK (testdata/clients/mcp-client.mjs)
// and the inspector CLI, over stdio as Claude Desktop starts the server and over streamable HTTP; and another
// agenthost, which uses this one as an MCP server. Every process is a child of the test; the model is a fakellm
// server, reached over loopback, and the tools are this test binary's fixture server (serveFixture).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// serveConfig writes an agent.toml in dir for an agent named name whose model is srv and whose one MCP server is
// the fixture, with prefix fx; extra is appended. The API key comes from TEST_KEY, which the clients must pass.
func serveConfig(t *testing.T, dir, name string, srv *fakellm.Server, extra string) string {
	t.Helper()
	return agentConfig(t, dir, name, srv.URL, "", extra)
}

// agentConfig writes an agent.toml in dir for an agent named name whose model is at modelURL, whose built-in tools
// are builtins (a TOML list's items, "" for none) and whose one MCP server is the fixture, with prefix fx; extra is
// appended. The API key comes from TEST_KEY.
func agentConfig(t *testing.T, dir, name, modelURL, builtins, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name+".toml", fmt.Sprintf(`
[agent]
name = %q

[model]
provider = "openai"
model = "fake-model"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[builtin]
tools = [%s]

[state]
path = "%s-state.db"

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"
%s`, name, modelURL, builtins, name, self, fixtureEnv, extra))
}

// clientOutput is what mcp-client.mjs prints.
type clientOutput struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	} `json:"tools"`
	Calls  []clientCall `json:"calls"`
	Cancel *struct {
		Progress   []progressNote  `json:"progress"`
		Error      string          `json:"error"`
		Result     json.RawMessage `json:"result"`
		Awaited    string          `json:"awaited"`
		ToolsAfter []string        `json:"tools_after"`
	} `json:"cancel"`
	Error *struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"error"`
	// Prompts and Prompt are what the prompts action listed and got.
	Prompts []struct {
		Name      string `json:"name"`
		Arguments []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"arguments"`
	} `json:"prompts"`
	Prompt *struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	} `json:"prompt"`
	Completion *struct {
		Values []string `json:"values"`
	} `json:"completion"`
	// Resources, ResourceTemplates and Reads are what the resources action listed and read.
	Resources []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
	} `json:"resources"`
	ResourceTemplates []struct {
		URITemplate string `json:"uriTemplate"`
	} `json:"resource_templates"`
	Reads []struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     string `json:"blob"`
		} `json:"contents"`
	} `json:"reads"`
	// OAuth is what the client's OAuth support did: the flows it ran, whether it registered a client, the
	// authorization URL it opened and the scope of the token it got.
	OAuth *struct {
		Flows            []string `json:"flows"`
		Registered       bool     `json:"registered"`
		AuthorizationURL string   `json:"authorization_url"`
		Scope            string   `json:"scope"`
	} `json:"oauth"`
	// ProtocolErrors are the problems the SDK reported besides the calls' own errors, other than progress for a call
	// that had ended (in the call's progress, marked late) and responses to cancelled calls (LateResponses).
	ProtocolErrors []string `json:"protocol_errors"`
	// LateResponses are responses to calls the client had cancelled. The spec says a server should not send them,
	// but the Go SDK always does, and a server built on it cannot hold them back.
	LateResponses []json.RawMessage `json:"late_responses"`
}

type clientCall struct {
	Result   toolResult     `json:"result"`
	Progress []progressNote `json:"progress"`
}

// toolResult is a CallToolResult of the agent tool, as a client decodes it.
type toolResult struct {
	Content []struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		URI   string `json:"uri"`
		Name  string `json:"name"`
		Title string `json:"title"`
	} `json:"content"`
	StructuredContent *agentResult `json:"structuredContent"`
	IsError           bool         `json:"isError"`
}

// agentResult is the agent tool's structured content.
type agentResult struct {
	Answer         string                   `json:"answer"`
	Output         json.RawMessage          `json:"output"`
	Checks         []host.CheckResult       `json:"checks"`
	References     []host.NumberedReference `json:"references"`
	ConversationID string                   `json:"conversation_id"`
	StoppedBy      string                   `json:"stopped_by"`
	Iterations     int                      `json:"iterations"`
	Usage          struct {
		Requests    int   `json:"requests"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
	ToolCalls []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	} `json:"tool_calls"`
}

type progressNote struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
	// Late marks a notification the SDK handled after its call had ended: one that came just before the call's
	// result (the SDK handles notifications a tick later than responses), or one sent after the call was cancelled.
	Late bool `json:"late"`
}

// tsClient runs testdata/clients/mcp-client.mjs with args and decodes what it prints. A client that fails prints
// its error in the output; wantOK says whether the test expects that.
func tsClient(t *testing.T, wantOK bool, args ...string) clientOutput {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "clients", "mcp-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	peers.Dir(t) // fails the test with the way to install the SDK when it is missing
	cmd := exec.CommandContext(t.Context(), peers.Node(t), append([]string{script}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = testEnv()
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out clientOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("mcp-client %s: %v (%v)\nstdout: %s\nstderr: %s", args, err, runErr, stdout.String(), stderr.String())
	}
	if ok := runErr == nil && out.Error == nil; ok != wantOK {
		t.Fatalf("mcp-client %s: exit %v, error %+v\nstderr: %s", args, runErr, out.Error, stderr.String())
	}
	if wantOK && len(out.ProtocolErrors) > 0 {
		t.Errorf("the client saw protocol errors: %q", out.ProtocolErrors)
	}
	for _, r := range out.LateResponses {
		t.Logf("response to a cancelled call (sent by the Go SDK, see go-sdk issue 1235): %s", r)
	}
	return out
}

// testEnv is the test's environment without a model API key, so that a developer's key never reaches a test.
func testEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENAI_API_KEY=") || strings.HasPrefix(kv, "OTEL_")
	})
}

// stdioArgs are mcp-client.mjs's arguments to start `agenthost serve --config config` over stdio as Claude Desktop
// does: the command, its arguments and the environment of the server's entry (the client adds only its few default
// variables, such as PATH and HOME).
func stdioArgs(config string, env ...string) []string {
	args := []string{"--command", binary}
	for _, a := range []string{"serve", "--config", config} {
		args = append(args, "--arg="+a) // "=": a value that starts with a dash is not an option of the client's
	}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	return args
}

// servingLine is what `agenthost serve --http` writes to stderr once it listens.
var servingLine = regexp.MustCompile(`serving MCP at (http://\S+)`)

// startServeHTTP starts `agenthost serve --config config --http 127.0.0.1:0` with env added to the test's
// environment, and returns the MCP endpoint's URL from the line the server writes once it listens. When the test
// ends, the server is interrupted and must exit with code 0; its stderr is logged if the test failed.
func startServeHTTP(t *testing.T, config string, env ...string) string {
	t.Helper()
	return startServe(t, env, "serve", "--log-level", "info", "--config", config, "--http", "127.0.0.1:0")
}

// startServe starts the binary with args, which must make it serve HTTP, and returns the URL it serves at.
func startServe(t *testing.T, env []string, args ...string) string {
	t.Helper()
	url, _ := serveChild(t, env, servingLine, args...)
	return url
}

// serveChild starts the binary with args, with env added to the test's environment, and waits until its stderr
// matches re; it returns the first submatch and the stderr collected. When the test ends, the server is interrupted
// and must exit with code 0; its stderr is logged if the test failed.
func serveChild(t *testing.T, env []string, re *regexp.Regexp, args ...string) (string, *watchedLog) {
	t.Helper()
	const limit = 30 * time.Second
	cmd := exec.Command(binary, args...)
	cmd.Env = append(testEnv(), env...)
	stderr := &watchedLog{found: make(chan string, 1), re: re}
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	served := false
	t.Cleanup(func() {
		if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("interrupting agenthost serve: %v", err)
		}
		select {
		case <-exited:
			if served && exitErr != nil {
				t.Errorf("agenthost serve exited with %v after SIGINT", exitErr)
			}
		case <-time.After(limit):
			cmd.Process.Kill()
			<-exited
			t.Errorf("agenthost serve did not exit within %v of SIGINT", limit)
		}
		if t.Failed() {
			t.Logf("agenthost %s stderr:\n%s", args, stderr.String())
		}
	})
	select {
	case match := <-stderr.found:
		served = true
		return match, stderr
	case <-exited:
		t.Fatalf("agenthost %s exited before it served: %v\n%s", args, exitErr, stderr.String())
	case <-time.After(limit):
		t.Fatalf("agenthost %s did not say where it serves within %v", args, limit)
	}
	return "", nil
}

// watchedLog collects a process's stderr and sends the first submatch of re, once, on found.
type watchedLog struct {
	re    *regexp.Regexp
	found chan string

	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
}

func (w *watchedLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := w.re.FindSubmatch(w.buf.Bytes()); m != nil {
			w.found <- string(m[1])
			w.sent = true
		}
	}
	return len(p), nil
}

func (w *watchedLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServeTypeScriptClient drives `agenthost serve` with the official TypeScript SDK over stdio and HTTP: it lists
// the agent tool, calls it with a progress token, continues the conversation, and cancels a call whose tool blocks.
func TestServeTypeScriptClient(t *testing.T) {
	tests := []struct {
		name string
		// connect returns mcp-client.mjs's connection arguments for the configuration.
		connect func(t *testing.T, config string) []string
	}{
		{"stdio", func(_ *testing.T, config string) []string { return stdioArgs(config, "TEST_KEY=sk-desktop") }},
		{"http", func(t *testing.T, config string) []string {
			return []string{"--url", startServeHTTP(t, config, "TEST_KEY=sk-desktop")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := fakellm.New()
			t.Cleanup(llm.Close)
			dir := t.TempDir()
			config := serveConfig(t, dir, "helper", llm, "")
			connect := tt.connect(t, config)

			t.Run("ask and continue", func(t *testing.T) {
				llm.Enqueue(
					fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
					fakellm.Turn{Text: "The fixture shouted HELLO.", ChunkSize: 5},
					fakellm.Turn{Text: "You asked me to shout hello."},
				)
				first := llm.RequestCount()
				out := tsClient(t, true, append(connect, "--action", "ask", "--tool", "ask_helper",
					"--prompt", "Shout hello.", "--prompt", "What did I ask you?")...)

				if out.Server.Name != "helper" {
					t.Errorf("server name %q, want the agent's name", out.Server.Name)
				}
				if len(out.Tools) != 1 || out.Tools[0].Name != "ask_helper" {
					t.Fatalf("tools = %+v, want only ask_helper", out.Tools)
				}
				tool := out.Tools[0]
				if !strings.Contains(tool.Description, "fx_shout") || len(tool.OutputSchema) == 0 || !strings.Contains(string(tool.InputSchema), `"prompt"`) {
					t.Errorf("ask_helper: description %q, input schema %s, output schema %s", tool.Description, tool.InputSchema, tool.OutputSchema)
				}
				if len(out.Calls) != 2 {
					t.Fatalf("%d calls, want 2", len(out.Calls))
				}

				call := out.Calls[0]
				got := call.Result.StructuredContent
				if got == nil || call.Result.IsError {
					t.Fatalf("first call: %+v", call.Result)
				}
				if got.Answer != "The fixture shouted HELLO." || got.StoppedBy != "answered" || got.Iterations != 2 || got.ConversationID == "" ||
					got.Usage.Requests != 2 || len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "fx_shout" || !got.ToolCalls[0].OK {
					t.Errorf("first call's structured content = %+v", got)
				}
				if len(call.Result.Content) == 0 || call.Result.Content[0].Type != "text" || call.Result.Content[0].Text != got.Answer {
					t.Errorf("first call's content = %+v, want the answer as text", call.Result.Content)
				}
				checkProgress(t, call.Progress, "iteration 1", "calling fx_shout (mcp:fixture)", "fx_shout (mcp:fixture) done", "iteration 2", "HELLO")

				second := out.Calls[1].Result.StructuredContent
				if second == nil || second.Answer != "You asked me to shout hello." || second.ConversationID != got.ConversationID {
					t.Errorf("second call's structured content = %+v, want the conversation %q continued", second, got.ConversationID)
				}
				reqs := llm.Requests()[first:]
				if len(reqs) != 3 {
					t.Fatalf("%d model requests, want 3", len(reqs))
				}
				if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer sk-desktop" {
					t.Errorf("model request authorization %q: the key from the client's environment did not reach the model", auth)
				}
				// The model's request for the second prompt carries the first exchange, tool call and result included.
				checkMessages(t, reqs[2].Messages, "user:Shout hello.", "assistant:call fx_shout", "tool:HELLO",
					"assistant:The fixture shouted HELLO.", "user:What did I ask you?")
			})

			t.Run("cancel", func(t *testing.T) {
				marker := filepath.Join(dir, "wait-"+tt.name)
				args, _ := json.Marshal(map[string]string{"file": marker})
				llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "w1", Name: "fx_wait", Arguments: string(args)}}})
				before := llm.RequestCount()
				out := tsClient(t, true, append(connect, "--action", "cancel", "--tool", "ask_helper", "--prompt", "Wait.",
					"--cancel-on", "waiting", "--await-file", marker, "--await-text", "cancelled")...)
				c := out.Cancel
				if c == nil || c.Result != nil || c.Error == "" {
					t.Fatalf("cancelled call: %+v, want it aborted", c)
				}
				if c.Awaited != "waiting\ncancelled\n" {
					t.Errorf("the fixture's wait tool recorded %q, want its call cancelled while its connection was alive", c.Awaited)
				}
				checkProgress(t, c.Progress, "calling fx_wait (mcp:fixture)", "fx_wait (mcp:fixture): waiting")
				checkNoProgressAfterCancel(t, c.Progress)
				if !slices.Equal(c.ToolsAfter, []string{"ask_helper"}) {
					t.Errorf("tools after the cancellation = %v", c.ToolsAfter)
				}
				if n := llm.RequestCount() - before; n != 1 {
					t.Errorf("%d model requests, want 1: a cancelled run must not call the model again", n)
				}
			})
			if llm.Unscripted() != 0 || llm.Pending() != 0 {
				t.Errorf("model script: %d unscripted requests, %d turns unused", llm.Unscripted(), llm.Pending())
			}
		})
	}
}

// checkProgress checks that progress values strictly increase and that messages containing want appear in order.
func checkProgress(t *testing.T, notes []progressNote, want ...string) {
	t.Helper()
	var msgs []string
	for i, n := range notes {
		if i > 0 && n.Progress <= notes[i-1].Progress {
			t.Errorf("progress %v after %v: progress must increase", n.Progress, notes[i-1].Progress)
		}
		msgs = append(msgs, n.Message)
	}
	i := 0
	for _, m := range msgs {
		if i < len(want) && strings.Contains(m, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("progress messages %q lack %q (in this order: %q)", msgs, want[i], want)
	}
}

// checkNoProgressAfterCancel checks that no progress notification came after the client cancelled the call, when
// the server knew that the notification's token was no longer in use. The test's calls are cancelled when they
// wait, with nothing else to report, so any notification after the cancellation was sent after it was received.
func checkNoProgressAfterCancel(t *testing.T, notes []progressNote) {
	t.Helper()
	for _, n := range notes {
		if n.Late {
			t.Errorf("progress %v %q came after the call was cancelled", n.Progress, n.Message)
		}
	}
}

// TestServeRestartKeepsConversation restarts `agenthost serve` between two calls of the TypeScript SDK client over
// stdio, as Claude Desktop restarts its servers: the second process continues the first one's conversation, which
// the model's request shows.
func TestServeRestartKeepsConversation(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := serveConfig(t, t.TempDir(), "helper", llm, "")
	connect := stdioArgs(config, "TEST_KEY=sk-desktop")
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
		fakellm.Turn{Text: "The fixture shouted HELLO."},
		fakellm.Turn{Text: "You asked me to shout hello."},
	)
	first := tsClient(t, true, append(connect, "--action", "ask", "--tool", "ask_helper", "--prompt", "Shout hello.")...)
	id := first.Calls[0].Result.StructuredContent.ConversationID
	if id == "" {
		t.Fatalf("first call: %+v", first.Calls[0].Result)
	}
	second := tsClient(t, true, append(connect, "--action", "ask", "--tool", "ask_helper", "--conversation", id, "--prompt", "What did I ask you?")...)
	got := second.Calls[0].Result.StructuredContent
	if got == nil || got.ConversationID != id || got.Answer != "You asked me to shout hello." {
		t.Fatalf("the call after the restart: %+v, want conversation %q continued", second.Calls[0].Result, id)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	checkMessages(t, reqs[2].Messages, "user:Shout hello.", "assistant:call fx_shout", "tool:HELLO",
		"assistant:The fixture shouted HELLO.", "user:What did I ask you?")
}

// checkMessages checks that a model request's messages are want, each written "role:content", or "role:call NAME"
// for an assistant message that calls the tool NAME.
func checkMessages(t *testing.T, msgs []fakellm.Message, want ...string) {
	t.Helper()
	var got []string
	for _, m := range msgs {
		switch {
		case m.Role == "system":
			continue
		case len(m.ToolCalls) > 0:
			got = append(got, m.Role+":call "+m.ToolCalls[0].Function.Name)
		case m.Role == "tool":
			got = append(got, m.Role+":"+m.ToolOutput())
		default:
			got = append(got, m.Role+":"+m.Content)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("model request messages:\n%q\nwant:\n%q", got, want)
	}
}

// TestServeInspectorCLI lists and calls the agent tool with the MCP inspector CLI, over stdio (started from a
// Claude Desktop style mcpServers file) and over HTTP.
func TestServeInspectorCLI(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	config := serveConfig(t, dir, "helper", llm, "")
	servers, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"helper": map[string]any{
		"command": binary,
		"args":    []string{"serve", "--config", config},
		"env":     map[string]string{"TEST_KEY": "sk-inspector"},
	}}})
	desktop := writeFile(t, dir, "claude_desktop_config.json", string(servers))
	url := startServeHTTP(t, config, "TEST_KEY=sk-inspector")

	tests := []struct {
		name   string
		target []string
	}{
		{"stdio", []string{"--config", desktop, "--server", "helper"}},
		{"http", []string{url}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			inspector(t, &list, append(tt.target, "--method", "tools/list")...)
			if len(list.Tools) != 1 || list.Tools[0].Name != "ask_helper" {
				t.Errorf("tools/list = %+v, want only ask_helper", list)
			}

			llm.Enqueue(fakellm.Turn{Text: "Answered over " + tt.name + "."})
			var res toolResult
			inspector(t, &res, append(tt.target, "--method", "tools/call", "--tool-name", "ask_helper", "--tool-arg", "prompt=Say where you are.")...)
			if res.IsError || res.StructuredContent == nil || res.StructuredContent.Answer != "Answered over "+tt.name+"." ||
				len(res.Content) == 0 || res.Content[0].Text != res.StructuredContent.Answer {
				t.Errorf("tools/call = %+v", res)
			}
			last := llm.LastRequest()
			if last == nil || last.Header.Get("Authorization") != "Bearer sk-inspector" {
				t.Fatalf("the model was not called with the configured key")
			}
			checkMessages(t, last.Messages, "user:Say where you are.")
		})
	}
}

// inspector runs mcp-inspector-cli --cli with args and decodes its JSON output into v.
func inspector(t *testing.T, v any, args ...string) {
	t.Helper()
	cmd := peers.Command(t, "mcp-inspector-cli", append([]string{"--cli"}, args...)...)
	cmd.Env = testEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-inspector-cli %s: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("mcp-inspector-cli %s: %v\n%s", args, err, out)
	}
}

// TestServeHTTPAuth checks the HTTP edge with a bearer token: the TypeScript client is refused without the token
// or with a wrong one and served with the right one, and a request from a foreign Origin is forbidden whatever its
// token.
func TestServeHTTPAuth(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := serveConfig(t, t.TempDir(), "helper", llm, `
[serve]
auth_token_env = "SERVE_TOKEN"
allowed_origins = ["https://app.example.test"]
`)
	url := startServeHTTP(t, config, "TEST_KEY=k", "SERVE_TOKEN=the-right-token")

	t.Run("client", func(t *testing.T) {
		tests := []struct {
			name    string
			headers []string
			wantOK  bool
		}{
			{"no token", nil, false},
			{"wrong token", []string{"Authorization: Bearer the-wrong-token"}, false},
			{"not a bearer token", []string{"Authorization: Basic dGhlLXJpZ2h0LXRva2Vu"}, false},
			{"right token", []string{"Authorization: Bearer the-right-token"}, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := []string{"--url", url, "--action", "ask", "--prompt", "Hi."}
				for _, h := range tt.headers {
					args = append(args, "--header", h)
				}
				if tt.wantOK {
					llm.Enqueue(fakellm.Turn{Text: "Hello."})
				}
				out := tsClient(t, tt.wantOK, args...)
				if !tt.wantOK {
					if code := fmt.Sprint(out.Error.Code); code != "401" {
						t.Errorf("error %q with code %s, want HTTP 401", out.Error.Message, code)
					}
					return
				}
				if len(out.Calls) != 1 || out.Calls[0].Result.StructuredContent == nil || out.Calls[0].Result.StructuredContent.Answer != "Hello." {
					t.Errorf("calls = %+v", out.Calls)
				}
			})
		}
	})

	t.Run("origin", func(t *testing.T) {
		tests := []struct {
			origin string
			want   int
		}{
			{"http://evil.example.com", http.StatusForbidden},
			{"https://app.example.test.evil.example.com", http.StatusForbidden},
			{"null", http.StatusForbidden},
			{"https://app.example.test", http.StatusOK},
			{"http://localhost:3000", http.StatusOK},
			{"", http.StatusOK},
		}
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"origin-test","version":"1"}}}`
		for _, tt := range tests {
			t.Run(tt.origin, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initialize))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer the-right-token")
				if tt.origin != "" {
					req.Header.Set("Origin", tt.origin)
				}
				resp, err := testHTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("Origin %q: status %d, want %d", tt.origin, resp.StatusCode, tt.want)
				}
			})
		}
	})
}

// TestServeChained runs agenthost A with agenthost B as one of its MCP servers over stdio, each with its own model.
// A's model calls B's agent tool; B's model calls its fixture's cite tool; the document B cites reaches A's answer
// as a reference of A's own. Then cancelling A's run from a client cancels B's run, and B's tool call with it.
// chainedConfig writes the config of agenthost A, whose one MCP server is agenthost B, served over stdio with config
// configB.
func chainedConfig(t *testing.T, dir string, llmA *fakellm.Server, configB string) string {
	t.Helper()
	return writeFile(t, dir, "a.toml", fmt.Sprintf(`
[agent]
name = "a"

[model]
provider = "openai"
model = "fake-a"
base_url = %q
api_key_env = ""
max_retries = 0

[builtin]
tools = []

[state]
path = "a-state.db"

[mcp.servers.b]
command = %q
args = ["serve", "--config", %q]
env = { TEST_KEY = "sk-b" }
required = true
`, llmA.URL, binary, configB))
}

// TestServeChainedApproval chains a go-sdk client, agenthost A and agenthost B, all on protocol 2026-07-28, where a
// server may not send requests to its client during a call and asks through input requests instead. B's tool
// requires approval: B asks A, which asks its own caller, and the answer travels back the same way.
func TestServeChainedApproval(t *testing.T) {
	llmA, llmB := fakellm.New(), fakellm.New()
	t.Cleanup(llmA.Close)
	t.Cleanup(llmB.Close)
	dir := t.TempDir()
	configB := serveConfig(t, dir, "b", llmB, `
[tools."fx_shout"]
require_approval = true
`)
	configA := chainedConfig(t, dir, llmA, configB)

	var mu sync.Mutex
	var asked []string
	approve := true
	client := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
		},
	})
	session, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(binary, "serve", "--config", configA)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	if v := session.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("protocol %s: this test is about 2026-07-28 and later", v)
	}

	for _, tt := range []struct {
		name    string
		approve bool
		want    string // in the text of the tool result B's model read
	}{
		{"approved", true, "HELLO"},
		{"denied", false, "denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked, approve = nil, tt.approve
			mu.Unlock()
			beforeB := len(llmB.Requests())
			llmA.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "b_ask_b", Arguments: `{"prompt":"Shout hello."}`}}},
				fakellm.Turn{Text: "B is done."},
			)
			llmB.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b1", Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
				fakellm.Turn{Text: "Shouted."},
			)
			ctx, cancel := context.WithTimeout(t.Context(), processLimit)
			defer cancel()
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_a", Arguments: map[string]any{"prompt": "Have B shout hello."}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("error result: %+v", res.Content)
			}
			mu.Lock()
			gotAsked := slices.Clone(asked)
			mu.Unlock()
			if len(gotAsked) != 1 || !strings.Contains(gotAsked[0], "fx_shout") || !strings.Contains(gotAsked[0], `"hello"`) {
				t.Errorf("the caller was asked %q, want one approval of fx_shout with its arguments", gotAsked)
			}
			reqs := llmB.Requests()[beforeB:]
			if len(reqs) != 2 {
				t.Fatalf("%d requests to B's model, want 2", len(reqs))
			}
			toolMsg := reqs[1].Messages[len(reqs[1].Messages)-1]
			if toolMsg.Role != "tool" || !strings.Contains(toolMsg.Content, tt.want) {
				t.Errorf("B's model read the tool result %q, want it to contain %q", toolMsg.Content, tt.want)
			}
		})
	}
	if llmA.Unscripted() != 0 || llmB.Unscripted() != 0 || llmA.Pending() != 0 || llmB.Pending() != 0 {
		t.Errorf("model scripts: A %d unscripted, %d unused; B %d unscripted, %d unused",
			llmA.Unscripted(), llmA.Pending(), llmB.Unscripted(), llmB.Pending())
	}
}

func TestServeChained(t *testing.T) {
	llmA, llmB := fakellm.New(), fakellm.New()
	t.Cleanup(llmA.Close)
	t.Cleanup(llmB.Close)
	dir := t.TempDir()
	configB := serveConfig(t, dir, "b", llmB, "")
	configA := chainedConfig(t, dir, llmA, configB)

	t.Run("references", func(t *testing.T) {
		llmA.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "b_ask_b", Arguments: `{"prompt":"Find the document."}`}}},
			fakellm.Turn{Text: "B found that the document says hello [source 1]."},
		)
		llmB.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b1", Name: "fx_cite", Arguments: `{}`}}},
			fakellm.Turn{Text: "The document says hello [source 1]."},
		)
		r := agenthost(t, dir, "", nil, "run", "--json", "--config", configA, "What does the document say?")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		want := []host.NumberedReference{{Number: 1, Title: "The test document", URI: fixtureDocURI}}
		if !slices.Equal(ans.References, want) || !strings.Contains(ans.Text, fixtureDocURI) {
			t.Errorf("A's answer %q with references %+v, want B's reference %+v", ans.Text, ans.References, want)
		}
		if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].Name != "b_ask_b" || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "mcp:b" {
			t.Errorf("A's tool calls = %+v", ans.ToolCalls)
		}
		// A's model saw B's answer and B's document as a numbered source.
		reqs := llmA.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests to A's model, want 2", len(reqs))
		}
		toolMsg := reqs[1].Messages[len(reqs[1].Messages)-1]
		if toolMsg.Role != "tool" || !strings.Contains(toolMsg.Content, "The document says hello") || !strings.Contains(toolMsg.Content, `"uri":"`+fixtureDocURI+`"`) {
			t.Errorf("B's result as A's model read it: %q", toolMsg.Content)
		}
		if auth := llmB.LastRequest().Header.Get("Authorization"); auth != "Bearer sk-b" {
			t.Errorf("B's model request authorization %q, want B's own key", auth)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		marker := filepath.Join(dir, "wait-chained")
		args, _ := json.Marshal(map[string]string{"file": marker})
		llmA.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a2", Name: "b_ask_b", Arguments: `{"prompt":"Wait."}`}}})
		llmB.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b2", Name: "fx_wait", Arguments: string(args)}}})
		beforeA, beforeB := llmA.RequestCount(), llmB.RequestCount()
		out := tsClient(t, true, append(stdioArgs(configA), "--action", "cancel", "--tool", "ask_a", "--prompt", "Make B wait.",
			"--cancel-on", "waiting", "--await-file", marker, "--await-text", "cancelled")...)
		c := out.Cancel
		if c == nil || c.Result != nil || c.Error == "" {
			t.Fatalf("cancelled call: %+v, want it aborted", c)
		}
		// B's progress reached A's client through A: the fixture's "waiting" went fixture → B → A → client.
		checkProgress(t, c.Progress, "calling b_ask_b (mcp:b)", "b_ask_b (mcp:b): fx_wait (mcp:fixture): waiting")
		checkNoProgressAfterCancel(t, c.Progress)
		if c.Awaited != "waiting\ncancelled\n" {
			t.Errorf("B's fixture recorded %q, want its call cancelled while B was alive", c.Awaited)
		}
		if a, b := llmA.RequestCount()-beforeA, llmB.RequestCount()-beforeB; a != 1 || b != 1 {
			t.Errorf("model requests after the cancellation: A %d, B %d, want 1 each", a, b)
		}
	})
	for name, llm := range map[string]*fakellm.Server{"A": llmA, "B": llmB} {
		if llm.Unscripted() != 0 || llm.Pending() != 0 {
			t.Errorf("%s's model script: %d unscripted requests, %d turns unused", name, llm.Unscripted(), llm.Pending())
		}
	}
}

// TestServeHTTPArguments starts `agenthost serve` with the listen address and the other flags in every order its
// usage allows ("agenthost serve --http [ADDR] [flags]"), and checks that it serves.
func TestServeHTTPArguments(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := serveConfig(t, t.TempDir(), "helper", llm, "")
	tests := []struct {
		name string
		args []string
	}{
		{"flags then address", []string{"serve", "--config", config, "--http", "127.0.0.1:0"}},
		{"address joined to the flag", []string{"serve", "--http=127.0.0.1:0", "--config", config}},
		{"address then flags", []string{"serve", "--http", "127.0.0.1:0", "--config", config}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := startServe(t, []string{"TEST_KEY=k"}, tt.args...)
			resp, err := testHTTP.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var health struct {
				Status string `json:"status"`
				Tool   string `json:"tool"`
			}
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || health.Status != "ok" || health.Tool != "ask_helper" {
				t.Errorf("GET /healthz: %d %+v (%v)", resp.StatusCode, health, err)
			}
		})
	}
}
