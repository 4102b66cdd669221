package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
)

// binary is the agenthost binary built once for the tests that run it as a child process.
var binary string

// fixtureEnv makes the test binary run as a small stdio MCP server instead of the tests, for configurations that
// name it as a server.
const fixtureEnv = "AGENTHOST_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fixtureEnv) != "" {
		os.Exit(serveFixture())
	}
	dir, err := os.MkdirTemp("", "agenthost-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every run of the binary keeps its state under the test's directory, never in the user's.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	binary = filepath.Join(dir, "agenthost")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	build := exec.Command("go", "build", "-o", binary, ".") // as the README's go build does
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building agenthost:", err)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.StopStarted()
	os.RemoveAll(dir)
	os.Exit(code)
}

// processLimit bounds each run of the binary, so that one that hangs fails its test instead of the whole package.
// It is generous: it is never a claim about how long a run takes.
const processLimit = 2 * time.Minute

// testHTTP is the tests' HTTP client: a server that accepts and never answers fails the test instead of hanging it.
var testHTTP = &http.Client{Timeout: time.Minute}

type result struct {
	stdout, stderr string
	code           int
}

// agenthost runs the binary in dir with stdin and extra environment variables; the environment is otherwise the
// test's own without any API key, so a developer's key never reaches a test.
func agenthost(t *testing.T, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), processLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agenthost %q did not finish within %v; stderr:\n%s", args, processLimit, errOut.String())
	}
	code := 0
	if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running agenthost: %v", err)
	}
	return result{out.String(), errOut.String(), code}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunWithTheTestModel(t *testing.T) {
	dir := t.TempDir()
	r := agenthost(t, dir, "", nil, "run", "--model", "test", "What time is it?")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "- current_time: ") || !strings.HasSuffix(r.stdout, "\n") {
		t.Errorf("stdout = %q, want the test model's summary of current_time", r.stdout)
	}
	if strings.Contains(r.stderr, "offline test model") {
		t.Errorf("the notice was printed although -model test was asked for: %q", r.stderr)
	}

	// With no configuration and no key, the defaults apply and say so on stderr, never on stdout.
	r = agenthost(t, dir, "What day is it?", nil, "run")
	if r.code != 0 || !strings.Contains(r.stdout, "current_time") {
		t.Fatalf("prompt on stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "using the offline test model (set OPENAI_API_KEY") || strings.Contains(r.stdout, "offline") {
		t.Errorf("notice: stderr %q, stdout %q", r.stderr, r.stdout)
	}
}

func TestRunJSON(t *testing.T) {
	r := agenthost(t, t.TempDir(), "", nil, "run", "--json", "--model", "test", "--tool", "current_time", "time?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatalf("stdout is not an Answer: %v\n%s", err, r.stdout)
	}
	if ans.StoppedBy != host.StopAnswered || ans.ConversationID == "" || len(ans.ToolCalls) != 1 || ans.ToolCalls[0].Name != "current_time" || ans.Iterations[0].Mode != "forced" {
		t.Errorf("answer = %+v", ans)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.toml", "[agent]\nname = \"x\"\nmax_iterations = 500\n\n[model]\nprovder = \"openai\"\n")
	sampling := writeFile(t, dir, "sampling.toml", "[model]\nprovider = \"sampling\"\n")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no command", nil, 2, []string{"Usage:"}},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{"bad flag", []string{"run", "--nope", "x"}, 2, []string{"flag provided but not defined: -nope"}},
		{"no prompt", []string{"run", "--model", "test"}, 2, []string{"no prompt"}},
		{"config errors with lines", []string{"check", "--config", bad}, 2, []string{"bad.toml:3: agent.max_iterations: must be between 1 and 100 (got 500)", `bad.toml:6: model.provder: unknown key`}},
		{"missing explicit config", []string{"check", "--config", filepath.Join(dir, "none.toml")}, 2, []string{"none.toml"}},
		{"unknown tool", []string{"run", "--model", "test", "--tool", "nope", "x"}, 2, []string{`tool_choices: unknown tool "nope"; available tools: current_time`}},
		{"bad log level", []string{"tools", "--log-level", "loud"}, 2, []string{"-log-level"}},
		{"sampling outside serve", []string{"run", "--config", sampling, "x"}, 2, []string{`model provider "sampling" runs the loop on the calling MCP client's model: it works only with agenthost serve`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := agenthost(t, dir, "", nil, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestToolsCheckVersion(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "agent.toml", `
[builtin]
tools = ["current_time"]

[tools.current_time]
require_approval = true
forced = true

[tools.not_a_tool]
enabled = false
`)
	r := agenthost(t, dir, "", nil, "tools")
	if r.code != 0 || !strings.Contains(r.stdout, "current_time  builtin  forced,require_approval  Returns the current date") {
		t.Errorf("tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "check", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "agent.toml: ok (model provider test, 1 tool)") || !strings.Contains(r.stderr, `[tools."not_a_tool"] matches no tool`) {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agenthost ") {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
	// The repository's own example configuration is valid.
	r = agenthost(t, dir, "", nil, "check", "--config", filepath.Join("..", "..", "agent.toml"))
	if abs, _ := filepath.Abs(filepath.Join("..", "..", "agent.toml")); r.code != 0 {
		r = agenthost(t, dir, "", nil, "check", "--config", abs)
	}
	if r.code != 0 {
		t.Errorf("check of the example agent.toml: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunOverTheOpenAIWire runs the binary against the scripted OpenAI-compatible server: the configuration's
// base_url and key variable reach the model API, the tool runs, and the answer streams to stdout with its sources.
func TestRunOverTheOpenAIWire(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`}}},
		fakellm.Turn{Text: "It is evening in Tokyo.", ChunkSize: 4},
	)
	dir := t.TempDir()
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "openai"
model = "fake-model"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0
`, srv.URL))
	r := agenthost(t, dir, "", []string{"TEST_KEY=sk-from-env"}, "run", "What time is it in Tokyo?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != "It is evening in Tokyo.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer sk-from-env" || reqs[0].Model != "fake-model" {
		t.Fatalf("%d requests; first: auth %q model %q", len(reqs), reqs[0].Header.Get("Authorization"), reqs[0].Model)
	}
	var toolMsg string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolMsg = m.ToolOutput()
		}
	}
	if !strings.Contains(toolMsg, "(Asia/Tokyo, ") {
		t.Errorf("tool result sent to the model: %q", toolMsg)
	}

	// A model that keeps failing fails the run with exit code 1 and the provider's message.
	srv.Enqueue(fakellm.Turn{Status: 500, ErrorMessage: "the model is overloaded"})
	r = agenthost(t, dir, "", []string{"TEST_KEY=k"}, "run", "x")
	if r.code != 1 || !strings.Contains(r.stderr, "the model is overloaded") || r.stdout != "" {
		t.Errorf("failing model: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// With --json, the partial answer says why the run stopped.
	srv.Enqueue(fakellm.Turn{Status: 500, ErrorMessage: "the model is overloaded"})
	r = agenthost(t, dir, "", []string{"TEST_KEY=k"}, "run", "--json", "x")
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 1 || err != nil || ans.StoppedBy != host.StopError || !strings.Contains(ans.Iterations[0].Note, "overloaded") {
		t.Errorf("failing model, --json: exit %d, answer %+v (%v)", r.code, ans, err)
	}
}

func TestRunScripted(t *testing.T) {
	config, err := filepath.Abs(filepath.Join("..", "..", "testdata", "scripted", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	r := agenthost(t, t.TempDir(), "", nil, "run", "--json", "--config", config, "What time is it in Paris?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Text != "It is the time current_time gave for Paris." || len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK {
		t.Errorf("answer = %+v", ans)
	}
}

func TestRunDisable(t *testing.T) {
	r := agenthost(t, t.TempDir(), "", nil, "run", "--json", "--model", "test", "--disable", "current_time", "time?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.ToolCalls) != 0 || ans.Iterations[0].ToolsOffered != 0 {
		t.Errorf("a disabled tool was offered or called: %+v", ans)
	}
}

// TestInterrupt sends SIGINT to a run whose model stream hangs: the run is cancelled, the model connection closed,
// and the process exits with code 1.
func TestInterrupt(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.Enqueue(fakellm.Turn{Text: "never finished", HangAfter: 1})
	dir := t.TempDir()
	writeFile(t, dir, "agent.toml", fmt.Sprintf("[model]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = %q\n", srv.URL))
	cmd := exec.CommandContext(t.Context(), binary, "run", "x")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(processLimit)
	for srv.RequestCount() == 0 {
		select {
		case err := <-exited:
			t.Fatalf("agenthost exited before calling the model: %v; stderr: %s", err, stderr.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited // stderr is complete only then
			t.Fatalf("agenthost never called the model; stderr: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-deadline:
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("agenthost did not exit after SIGINT; stderr: %s", stderr.String())
	}
	if exitErr, ok := errors.AsType[*exec.ExitError](err); !ok || exitErr.ExitCode() != 1 {
		t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "run cancelled") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// serveFixture is a stdio MCP server with four tools: shout upper-cases its text; cite returns a text and a
// resource link to fixtureDocURI (titled with its optional title argument); wait blocks until its call is
// cancelled, recording that in a file (see waitTool); note appends its text to a file, so that a test can count its
// calls across processes.
func serveFixture() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "Upper-cases text."}, func(_ context.Context, _ *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(args.Text)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "cite", Description: "Returns a document with its link."}, func(_ context.Context, _ *mcp.CallToolRequest, args struct {
		Title string `json:"title,omitempty"` // the link's title; "The test document" when empty
	}) (*mcp.CallToolResult, any, error) {
		title := cmp.Or(args.Title, "The test document")
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "The document says hello."},
			&mcp.ResourceLink{URI: fixtureDocURI, Name: "doc", Title: title},
		}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Waits until cancelled."}, waitTool)
	mcp.AddTool(srv, &mcp.Tool{Name: "note", Description: "Appends text to a file."}, func(_ context.Context, _ *mcp.CallToolRequest, args struct {
		File string `json:"file"`
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		f, err := os.OpenFile(args.File, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, err
		}
		_, err = fmt.Fprintln(f, args.Text)
		if err = errors.Join(err, f.Close()); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted " + args.Text}}}, nil, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fixtureDocURI is the link the fixture's cite tool returns.
const fixtureDocURI = "https://example.test/doc"

// waitTool blocks until its call is cancelled. It appends "waiting" to the file its arguments name, and sends the
// progress message "waiting" when the call has a progress token; once cancelled, it appends "cancelled" when its
// client still answers a ping (the call was cancelled, the connection is alive), else "closed: <error>". It gives up
// after a minute, so that a fixture whose call is never cancelled does not outlive the test by much.
func waitTool(ctx context.Context, req *mcp.CallToolRequest, args struct {
	File string `json:"file"`
}) (*mcp.CallToolResult, any, error) {
	record := func(line string) error {
		f, err := os.OpenFile(args.File, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, line)
		return errors.Join(err, f.Close())
	}
	if err := record("waiting"); err != nil {
		return nil, nil, err
	}
	if token := req.Params.GetProgressToken(); token != nil {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "waiting"}); err != nil {
			return nil, nil, err
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		return nil, nil, errors.Join(record("not cancelled"), errors.New("wait: not cancelled within a minute"))
	}
	ping, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := req.Session.Ping(ping, nil); err != nil {
		return nil, nil, errors.Join(record("closed: "+err.Error()), ctx.Err())
	}
	return nil, nil, errors.Join(record("cancelled"), ctx.Err())
}

// TestMCPServers runs check, tools and run with a configuration naming a stdio MCP server (this test binary) and one
// that cannot be reached.
func TestMCPServers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "script.jsonl", `{"tool_calls": [{"name": "fx_shout", "arguments": {"text": "hello"}}]}
{"text": "It shouted."}
`)
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "scripted"
script = "script.jsonl"

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"

[mcp.servers.gone]
command = %q
connect_timeout = "5s"
`, self, fixtureEnv, filepath.Join(dir, "no-such-program")))

	r := agenthost(t, dir, "", nil, "check")
	if r.code != 1 || !strings.Contains(r.stderr, "MCP servers not reachable: gone") {
		t.Errorf("check: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"SERVER   TRANSPORT  STATUS", "fixture  stdio      connected", "gone     stdio      failed", "no-such-program"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}

	r = agenthost(t, dir, "", nil, "tools")
	if r.code != 0 || !strings.Contains(r.stdout, "fx_shout      mcp:fixture  -      Upper-cases text.") {
		t.Errorf("tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = agenthost(t, dir, "", nil, "run", "--json", "shout hello")
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
		t.Fatalf("run: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if ans.Text != "It shouted." || len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "mcp:fixture" {
		t.Errorf("answer %+v", ans)
	}

	// A required server that cannot be reached stops start-up.
	writeFile(t, dir, "agent.toml", fmt.Sprintf("[mcp.servers.gone]\ncommand = %q\nrequired = true\n", filepath.Join(dir, "no-such-program")))
	r = agenthost(t, dir, "", nil, "run", "--model", "test", "x")
	if r.code == 0 || !strings.Contains(r.stderr, `required server "gone"`) {
		t.Errorf("required server: exit %d, stderr %q", r.code, r.stderr)
	}
}
