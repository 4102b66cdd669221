package mcpclients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// TestCrossSDKThroughTheLoop calls a server written with mark3labs/mcp-go, a real child process over stdio, through
// the whole loop: the scripted model calls its tool, and the tool's result reaches the model.
func TestCrossSDKThroughTheLoop(t *testing.T) {
	cfg := selfServer(t, "calc", "mcp-go")
	cfg.UseInstructions = true
	c, err := Connect(t.Context(), []ServerConfig{cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	llm := fakellm.New()
	defer llm.Close()
	model, err := openai.New(&openai.Options{BaseURL: llm.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	orch := host.New(model, host.NewToolManager(c.Toolsets(), nil), nil)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "1", Name: "calc_add", Arguments: `{"a": 2, "b": 3.5}`}}},
		fakellm.Turn{Text: "2 + 3.5 = 5.5"},
	)
	ans, err := orch.Ask(t.Context(), &host.Request{Prompt: "What is 2 + 3.5?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "2 + 3.5 = 5.5" || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "mcp:calc" {
		t.Errorf("answer %q, calls %+v", ans.Text, ans.ToolCalls)
	}
	reqs := llm.Requests()
	var offered string
	for _, tool := range reqs[0].Tools {
		if tool.Function.Name == "calc_add" {
			offered = string(tool.Function.Parameters)
		}
	}
	if !strings.Contains(offered, `"required":["a","b"]`) || !strings.Contains(offered, `"a":{"type":"number"}`) {
		t.Errorf("the schema offered to the model: %s", offered)
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "Instructions from mcp:calc:\nNumbers only.") {
		t.Errorf("system prompt without the server's instructions: %q", reqs[0].Messages[0].Content)
	}
	var result string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			result = m.ToolOutput()
		}
	}
	if result != "5.5" {
		t.Errorf("tool result sent to the model: %q", result)
	}
}

// logBuffer is a slog handler target that tests can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestStdioStderrAndNoOrphans checks that a stdio server's stderr reaches the log tagged with the server's name,
// and that Close stops the server and the process it started itself.
func TestStdioStderrAndNoOrphans(t *testing.T) {
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	c, err := Connect(t.Context(), []ServerConfig{selfServer(t, "fam", "family")}, &Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	res, err := findTool(t, c.Toolsets()[0], "fam_pids").Call(bounded(t), json.RawMessage(`{}`), nil)
	if err != nil || res.IsError {
		t.Fatalf("pids: %+v, %v", res, err)
	}
	var server, sleeper int
	if _, err := fmt.Sscanf(res.Text, "%d %d", &server, &sleeper); err != nil {
		t.Fatalf("pids %q: %v", res.Text, err)
	}
	eventually(t, "the server's stderr line is logged", func() bool {
		return strings.Contains(logs.String(), `msg="family server starting" server=fam stream=stderr`)
	})
	if !alive(server) || !alive(sleeper) {
		t.Fatalf("processes not running before Close: server %v, its child %v", alive(server), alive(sleeper))
	}
	c.Close()
	eventually(t, "the server and its own child are gone", func() bool { return !alive(server) && !alive(sleeper) })
}

// alive reports whether pid is a running process (a zombie waiting to be reaped is not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// TestStdioServerKilled kills a real stdio server with SIGKILL. A call in flight is made again on the restarted
// server when the tool is annotated idempotent or named in RetryOnDisconnect, and the model is told that any other
// may or may not have taken effect. A call made while the server is down waits for it and succeeds once it is back,
// or fails saying so when it does not come back within ReconnectWait.
func TestStdioServerKilled(t *testing.T) {
	start := func(t *testing.T, reconnectWait time.Duration) (*Client, string) {
		dir := t.TempDir()
		cfg := selfServer(t, "crashy", "crashy")
		cfg.Env[crashyDirEnv] = dir
		cfg.RetryOnDisconnect = []string{"notify"}
		cfg.ReconnectWait = reconnectWait
		c, err := Connect(t.Context(), []ServerConfig{cfg}, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, dir
	}
	logged := func(t *testing.T, dir, name string) []int {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		var pids []int
		for f := range strings.FieldsSeq(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		return pids
	}
	kill := func(t *testing.T, pid int) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	call := func(tl host.Tool) <-chan *host.Result {
		done := make(chan *host.Result, 1)
		go func() {
			res, err := tl.Call(bounded(t), json.RawMessage(`{}`), nil)
			if err != nil {
				res = &host.Result{Text: "Go error: " + err.Error(), IsError: true}
			}
			done <- res
		}()
		return done
	}
	// goDown kills the server and keeps it from starting again until the returned function is called.
	goDown := func(t *testing.T, c *Client, dir string) (up func()) {
		t.Helper()
		down := filepath.Join(dir, "down")
		if err := os.WriteFile(down, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := findTool(t, c.Toolsets()[0], "crashy_pid").Call(bounded(t), json.RawMessage(`{}`), nil)
		if err != nil || res.IsError {
			t.Fatalf("pid: %+v, %v", res, err)
		}
		pid, _ := strconv.Atoi(res.Text)
		kill(t, pid)
		eventually(t, "the server is reconnecting", func() bool { return c.Status()[0].State == StateReconnecting })
		return func() {
			if err := os.Remove(down); err != nil {
				t.Fatal(err)
			}
		}
	}

	c, dir := start(t, 0) // the default ReconnectWait, 10s
	for _, tc := range []struct {
		tool  string
		calls int // the calls the server saw
		want  string
	}{
		{"upsert", 2, "upsert done"},
		{"notify", 2, "notify done"},
		{"charge", 1, `MCP server "crashy" went away during the call`},
	} {
		t.Run("in flight/"+tc.tool, func(t *testing.T) {
			done := call(findTool(t, c.Toolsets()[0], "crashy_"+tc.tool))
			eventually(t, "the call reaches the server", func() bool { return len(logged(t, dir, tc.tool+".log")) == 1 })
			kill(t, logged(t, dir, tc.tool+".log")[0])
			res := <-done
			if !strings.Contains(res.Text, tc.want) || res.IsError != (tc.calls == 1) {
				t.Errorf("result %+v, want %q", res, tc.want)
			}
			if tc.calls == 1 && !strings.Contains(res.Text, "may or may not have taken effect") {
				t.Errorf("the model is not told the call may have taken effect: %q", res.Text)
			}
			if pids := logged(t, dir, tc.tool+".log"); len(pids) != tc.calls || (tc.calls == 2 && pids[0] == pids[1]) {
				t.Errorf("the calls the servers saw, by pid: %v, want %d", pids, tc.calls)
			}
			eventually(t, "the server is back", func() bool { return c.Status()[0].State == StateConnected })
		})
	}

	t.Run("made while down", func(t *testing.T) {
		up := goDown(t, c, dir)
		starts := len(logged(t, dir, "starts.log"))
		done := call(findTool(t, c.Toolsets()[0], "crashy_pid"))
		eventually(t, "the server fails to start while the call waits", func() bool { return len(logged(t, dir, "starts.log")) > starts+1 })
		up()
		if res := <-done; res.IsError {
			t.Errorf("the call made while the server was down: %+v", res)
		}
	})

	t.Run("not back in time", func(t *testing.T) {
		c, dir := start(t, 300*time.Millisecond)
		defer goDown(t, c, dir)()
		res := <-call(findTool(t, c.Toolsets()[0], "crashy_pid"))
		if !res.IsError || !strings.Contains(res.Text, `MCP server "crashy" is down`) || !strings.Contains(res.Text, "did not come back within") {
			t.Errorf("result %+v", res)
		}
	})
}
