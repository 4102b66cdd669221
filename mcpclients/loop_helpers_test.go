package mcpclients_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/mcpclients"
)

// The helpers of the tests against the real npm peers: each test drives the whole loop, a host.Orchestrator whose
// model is llm/openai talking to a scripted fakellm server and whose tools are the toolsets of an mcpclients.Client
// connected to real MCP servers. The same model answers the servers' sampling requests, so they reach the fakellm
// server as chat completions too.

// settle bounds every wait for state that changes asynchronously: a tool list refreshed after list_changed, a
// server restarted, a port opened. It is generous because Node starts slowly on a loaded machine; it is never a claim
// about how long anything takes.
const settle = 30 * time.Second

// loopHarness is an orchestrator over the toolsets of a Client, with its model served by a fakellm server.
type loopHarness struct {
	llm    *fakellm.Server
	client *mcpclients.Client
	orch   *host.Orchestrator
}

// newLoopHarness connects cfgs (every one required) and builds the orchestrator over their toolsets. The model
// also answers sampling requests. opts may be nil; its Logger and Sampler are set here.
func newLoopHarness(t *testing.T, opts *mcpclients.Options, cfgs ...mcpclients.ServerConfig) *loopHarness {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var o mcpclients.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = testLogger(t)
	o.Sampler = model
	for i := range cfgs {
		cfgs[i].Required = true
	}
	c, err := mcpclients.Connect(t.Context(), cfgs, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tm := host.NewToolManager(c.Toolsets(), nil)
	return &loopHarness{llm: srv, client: c, orch: host.New(model, tm, &host.Options{Logger: o.Logger, ToolTimeout: settle})}
}

// loopRun is what one run produced, and what the model received during it.
type loopRun struct {
	answer *host.Answer
	events []*host.Event
	// requests are the chat completions the fakellm server received during the run, sampling requests included.
	requests []*fakellm.Request
}

// ask scripts the model with turns, runs prompt to its answer and checks that the script was used up exactly.
// onEvent, when not nil, sees each event as it happens, on the run's goroutine.
func (h *loopHarness) ask(t *testing.T, prompt string, interactor host.Interactor, onEvent func(*host.Event), turns ...fakellm.Turn) *loopRun {
	t.Helper()
	before, unscripted := h.llm.RequestCount(), h.llm.Unscripted()
	h.llm.Enqueue(turns...)
	run := &loopRun{}
	ans, err := h.orch.Ask(t.Context(), &host.Request{Prompt: prompt, Interactor: interactor}, func(ev *host.Event) {
		run.events = append(run.events, ev)
		if onEvent != nil {
			onEvent(ev)
		}
	})
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	run.answer = ans
	run.requests = h.llm.Requests()[before:]
	if n := h.llm.Unscripted() - unscripted; n > 0 {
		t.Fatalf("the model was called %d times more than scripted", n)
	}
	if n := h.llm.Pending(); n > 0 {
		t.Fatalf("%d scripted turns were not used", n)
	}
	return run
}

// toolMessage returns the content of the tool message for call id in the last request of the run: what the model
// read as the call's result.
func (r *loopRun) toolMessage(t *testing.T, id string) string {
	t.Helper()
	msg := toolMessageIn(r.requests[len(r.requests)-1], id)
	if msg == "" { // the loop never sends an empty tool message
		t.Fatalf("the model received no tool message for call %s", id)
	}
	return msg
}

// toolMessageIn returns the content of the tool message for call id in req, or "" when there is none.
func toolMessageIn(req *fakellm.Request, id string) string {
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.ToolOutput()
		}
	}
	return ""
}

// toolEnd returns the tool_end event of call id.
func (r *loopRun) toolEnd(t *testing.T, id string) *host.ToolEvent {
	t.Helper()
	for _, ev := range r.events {
		if ev.Kind == host.EventToolEnd && ev.ToolCall.ID == id {
			return ev.ToolCall
		}
	}
	t.Fatalf("no tool_end event for call %s", id)
	return nil
}

// progress returns the progress relayed for call id, in order.
func (r *loopRun) progress(id string) []host.Progress {
	var out []host.Progress
	for _, ev := range r.events {
		if ev.Kind == host.EventToolProgress && ev.ToolCall.ID == id {
			out = append(out, *ev.ToolCall.Progress)
		}
	}
	return out
}

func toolCall(id, name, args string) fakellm.ToolCall {
	return fakellm.ToolCall{ID: id, Name: name, Arguments: args}
}

// callTurn is a model turn that makes one tool call.
func callTurn(id, name, args string) fakellm.Turn {
	return fakellm.Turn{ToolCalls: []fakellm.ToolCall{toolCall(id, name, args)}}
}

// toolNames returns the final names of a toolset's current tools.
func toolNames(t *testing.T, set host.Toolset) []string {
	t.Helper()
	tools, err := set.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Spec().Name
	}
	return names
}

// waitForTools polls set until it lists every name: some servers register tools only after the session is
// initialised and announce them with list_changed.
func waitForTools(t *testing.T, set host.Toolset, names ...string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%s lists %v", set.Name(), names), func() bool {
		have := toolNames(t, set)
		for _, n := range names {
			if !slices.Contains(have, n) {
				return false
			}
		}
		return true
	})
}

// waitUntil polls cond until it holds, failing the test after settle.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, settle, what, cond)
}

// everythingStdio is server-everything over stdio, its tools prefixed "ev", allowed to sample.
func everythingStdio(t *testing.T) mcpclients.ServerConfig {
	return mcpclients.ServerConfig{
		Name:          "everything",
		Transport:     mcpclients.TransportStdio,
		Command:       peers.Node(t),
		Args:          []string{peers.Bin(t, "mcp-server-everything"), "stdio"},
		Prefix:        "ev",
		AllowSampling: true,
	}
}

// everythingHTTP starts server-everything over streamable HTTP as a child of the test, waits until it answers and
// returns its config. The server is killed when the test ends. It listens on every interface; only 127.0.0.1 is
// used.
func everythingHTTP(t *testing.T) mcpclients.ServerConfig {
	t.Helper()
	port := freePort(t)
	cmd := peers.Command(t, "mcp-server-everything", "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout = nil // its log; nothing a test needs
	// It is killed by the cleanup below, which runs after the client's Close, rather than when t.Context() ends,
	// which is before: the client then closes its session against a live server, as it would in production.
	cmd.Cancel = func() error { return nil }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url := "http://127.0.0.1:" + port + "/mcp"
	deadline := time.Now().Add(settle)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("server-everything over HTTP exited before it answered: %v", err)
		default:
		}
		if answers(t.Context(), url) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything never answered on %s", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return mcpclients.ServerConfig{
		Name:          "everything",
		Transport:     mcpclients.TransportHTTP,
		URL:           url,
		Prefix:        "ev",
		AllowSampling: true,
	}
}

// answers reports whether an HTTP server answers at url, whatever the status.
func answers(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// freePort returns a TCP port that was free on loopback a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// childProcesses returns the live (not zombie) children of this process whose command line satisfies match. It
// reads /proc, so it finds nothing where there is none; callers that need a result fail then.
func childProcesses(match func(args []string) bool) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		// After the command, in parentheses and holding anything, come the state and the parent's pid.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(data[i+1:])
		if len(fields) < 2 || string(fields[1]) != self || string(fields[0]) == "Z" {
			continue
		}
		dir := filepath.Dir(path)
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if !match(args) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// testLogger logs through t.Log and drops what comes after the test: a child's last stderr lines may arrive while
// the client is being closed in the test's cleanup.
func testLogger(t *testing.T) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(w.close) // registered before the client's Close, so it runs after it
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testLogWriter struct {
	t      *testing.T
	mu     sync.Mutex
	closed bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
