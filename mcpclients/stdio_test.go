package mcpclients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/fakellm"
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
			result = m.Content
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
