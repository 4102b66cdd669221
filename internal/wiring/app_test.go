package wiring

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/mcpserver"
)

// buildServer builds the MCP test server conformanceserver, a real child process for the app to start.
func buildServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conformanceserver")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", path, "github.com/agenthost/agenthost/internal/testkit/testservers/conformanceserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// children returns the pids of this process's children that run exe.
func children(t *testing.T, exe string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses: state, ppid, ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.HasPrefix(string(cmdline), exe+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// TestBuildServe builds the product from a configuration with a tool policy and an MCP server (a child process),
// serves it over HTTP on a free loopback port, and drives it with the MCP SDK's client: the tools it offers are the
// agent's and, in gateway mode, the server's that the policy leaves enabled, and a call reaches the server. Closing
// the app leaves no child process and no goroutine behind.
func TestBuildServe(t *testing.T) {
	server := buildServer(t)
	before := runtime.NumGoroutine()
	cfg, err := config.Parse("agent.toml", []byte(`[agent]
name = "wired"

[model]
provider = "test"

[builtin]
tools = ["current_time"]

[state]
backend = "memory"

[serve]
expose_tools = true

[mcp.servers.conf]
command = "`+server+`"

[tools.conf_test_error_handling]
enabled = false
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(string) string { return "" }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if got := children(t, server); len(got) != 1 {
		t.Fatalf("%d children run the MCP server, want 1", len(got))
	}

	e, cancel, served := serveHTTP(t, app)
	defer cancel()
	if e.Front != "mcp" || e.URL != "http://"+e.Addr.String()+"/mcp" || e.Tool == "" {
		t.Fatalf("endpoint %+v", e)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{e.Tool, "current_time", "conf_test_simple_text"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %q: %s missing", names, want)
		}
	}
	if slices.Contains(names, "conf_test_error_handling") {
		t.Errorf("tools %q: conf_test_error_handling offered, though its policy disables it", names)
	}
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "conf_test_simple_text", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text, ok := res.Content[0].(*mcp.TextContent); res.IsError || !ok || text.Text == "" {
		t.Fatalf("conf_test_simple_text: %+v", res)
	}
	session.Close()

	cancel()
	testwait.Within(t, 30*time.Second, "Serve to return", func() {
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	app.Close()
	if got := children(t, server); len(got) != 0 {
		t.Errorf("children %v still run the MCP server after Close", got)
	}
	testwait.Until(t, 10*time.Second, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestConfigErrors: the errors that are the configuration's or the address's wrap ErrConfig, which agenthost maps to
// its usage exit code.
func TestConfigErrors(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Provider, cfg.Model.Model = config.ProviderOpenAI, ""
	cfg.State.Backend = config.StateMemory
	_, err := Build(t.Context(), cfg, &Options{Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "model.model: a model name is required") {
		t.Errorf("Build without a model name: %v, want ErrConfig", err)
	}

	cfg = config.Default()
	cfg.Builtin.Tools = []string{}
	cfg.State.Backend = config.StateMemory
	app, err := Build(t.Context(), cfg, &Options{Model: "test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = app.Serve(t.Context(), &ServeOptions{HTTP: taken.Addr().String(), Listening: func(*Endpoint) { t.Error("announced on an address in use") }})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "serve --http "+taken.Addr().String()) {
		t.Errorf("Serve on an address in use: %v, want ErrConfig", err)
	}
}

// TestGatewayCode: [serve] gateway_tools = "code" serves run_code on the sandbox with [code_mode]'s bounds, and a
// program an MCP client sends calls the agent's tools through the gateway.
func TestGatewayCode(t *testing.T) {
	cfg, err := config.Parse("agent.toml", []byte(`[model]
provider = "test"

[builtin]
tools = ["calculate", "current_time"]

[state]
backend = "memory"

[code_mode]
max_tool_calls = 3

[serve]
expose_tools = true
gateway_tools = "code"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if o := ServerOptions(cfg, "v", mcpserver.SamplingAuto, nil); o.GatewayTools != mcpserver.GatewayToolsCode || o.CodeRunner == nil {
		t.Fatalf("ServerOptions: gateway tools %q, code runner %v", o.GatewayTools, o.CodeRunner)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(string) string { return "" }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	e, cancel, served := serveHTTP(t, app)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	list, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{e.Tool, "run_code", "search_tools"}; !slices.Equal(names, want) {
		t.Errorf("tools/list offers %v, want %v", names, want)
	}
	code := `const r = await Promise.all([tools.calculate({expression: "6*7"}), tools.calculate({expression: "1+1"})]);
return r.map(x => x.result);`
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, `["42","2"]`) {
		t.Errorf("run_code: isError %v, %q", res.IsError, text)
	}
	// [code_mode] max_tool_calls bounds the gateway's programs too.
	code = `for (let i = 0; i < 4; i++) await tools.calculate({expression: String(i)}); return "done";`
	res, err = session.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "at most 3 tool calls per script") {
		t.Errorf("a program past max_tool_calls: isError %v, %q", res.IsError, text)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// serveHTTP serves app over MCP on a free loopback port and returns its endpoint once it listens, the function
// that stops it, and the channel that gets Serve's outcome.
func serveHTTP(t *testing.T, app *App) (*Endpoint, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	endpoints := make(chan *Endpoint, 2)
	served := make(chan error, 1)
	go func() {
		served <- app.Serve(ctx, &ServeOptions{HTTP: "127.0.0.1:0", Listening: func(e *Endpoint) { endpoints <- e }})
	}()
	select {
	case e := <-endpoints:
		return e, cancel, served
	case err := <-served:
		cancel()
		t.Fatalf("Serve returned before it listened: %v", err)
		return nil, nil, nil
	}
}
