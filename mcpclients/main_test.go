package mcpclients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv makes the test binary run as one of the stdio servers below instead of the tests: the binary
// re-executes itself as a real child process.
const serverEnv = "MCPCLIENTS_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(serverEnv) {
	case "":
		code := m.Run()
		if code == 0 {
			code = checkNoServerGoroutines()
		}
		os.Exit(code)
	case "mcp-go":
		os.Exit(serveMCPGo())
	case "family":
		os.Exit(serveFamily())
	case "crashy":
		os.Exit(serveCrashy())
	case "env":
		os.Exit(serveEnv())
	case "dies":
		os.Exit(serveDies())
	default:
		fmt.Fprintln(os.Stderr, "unknown test server", os.Getenv(serverEnv))
		os.Exit(2)
	}
}

// selfServer returns the configuration of a stdio server that is this test binary running as the named server.
func selfServer(t *testing.T, name, server string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Prefix: name, Transport: TransportStdio, Command: exe, Env: map[string]string{serverEnv: server}}
}

// serveMCPGo is a server written with another SDK, github.com/mark3labs/mcp-go.
func serveMCPGo() int {
	s := mcpgoserver.NewMCPServer("mcp-go-fixture", "1.0.0", mcpgoserver.WithToolCapabilities(true), mcpgoserver.WithInstructions("Numbers only."))
	s.AddTool(mcpgo.NewTool("add",
		mcpgo.WithDescription("Adds two numbers."),
		mcpgo.WithNumber("a", mcpgo.Required()),
		mcpgo.WithNumber("b", mcpgo.Required()),
	), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		a, err := req.RequireFloat("a")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		b, err := req.RequireFloat("b")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		return mcpgo.NewToolResultText(strconv.FormatFloat(a+b, 'f', -1, 64)), nil
	})
	if err := mcpgoserver.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveFamily is a stdio server that starts a process of its own (as servers run through npx do) and talks on
// stderr: shutdown must stop both, and the stderr lines must reach the log.
func serveFamily() int {
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "family server starting")
	srv := mcp.NewServer(&mcp.Implementation{Name: "family", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pids", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %d", os.Getpid(), sleeper.Process.Pid)}}}, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveEnv is a stdio server whose tool "environ" answers with the process's environment, one variable a line.
func serveEnv() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "environ", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// crashyDirEnv names the directory through which the crashy server and its test share what outlives a process.
const crashyDirEnv = "MCPCLIENTS_CRASHY_DIR"

// serveCrashy is a stdio server for tests that kill it. Each start is logged in starts.log, and it exits at once
// while a file named down exists. Each call of its hanging tools is logged as the server's pid in <tool>.log; the
// first call of each hangs (so that the test can kill the server under it), the next ones answer.
func serveCrashy() int {
	dir := os.Getenv(crashyDirEnv)
	appendLine := func(name string) int {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, os.Getpid()); err != nil {
			panic(err)
		}
		data, err := os.ReadFile(f.Name())
		if err != nil {
			panic(err)
		}
		return strings.Count(string(data), "\n")
	}
	appendLine("starts.log")
	if _, err := os.Stat(filepath.Join(dir, "down")); err == nil {
		return 1
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "1"}, nil)
	object := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "pid", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
	})
	for name, annotations := range map[string]*mcp.ToolAnnotations{"charge": nil, "upsert": {IdempotentHint: true}, "notify": nil} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: object, Annotations: annotations}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if appendLine(name+".log") == 1 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
		})
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// checkNoServerGoroutines fails the run when a goroutine of this package's servers (a supervisor, a session's
// waiter) outlives the tests: every test closes what it connected, and Close must stop them all.
func checkNoServerGoroutines() int {
	var leaked []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		leaked = leaked[:0]
		buf := make([]byte, 8<<20)
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "agenthost/mcpclients.(*Server)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			break
		}
	}
	fmt.Fprintf(os.Stderr, "%d goroutines of MCP servers outlived the tests (a test did not close its Client, or Close left them):\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
	return 1
}

// serveDies is a server that cannot start: it says why on stderr, the last line unfinished, and exits before it
// answers, as `docker run` does without its daemon.
func serveDies() int {
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(os.Stderr, "starting, step %d\n", i)
	}
	fmt.Fprintf(os.Stderr, "see https://user:hunter2@example.com/help?token=abc\n")
	fmt.Fprint(os.Stderr, "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
	return 125
}
