package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// startKillable starts `agenthost args...` and waits until its stderr matches serving, whose first group it
// returns (the URL it serves at) with the process; the test kills it.
func startKillable(t *testing.T, env []string, serving *regexp.Regexp, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(testEnv(), env...)
	stderr := &watchedLog{found: make(chan string, 1), re: serving}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("agenthost %s stderr:\n%s", args, stderr.String())
		}
	})
	select {
	case url := <-stderr.found:
		return cmd, url
	case <-time.After(30 * time.Second):
		t.Fatalf("agenthost %s did not serve within 30s:\n%s", args, stderr.String())
	}
	return nil, ""
}

// killDuringRun starts `agenthost serve --a2a` on config, sends it a task whose run makes the model calls of turns,
// and kills it (SIGKILL: no chance to save anything) during the next model call, which hangs. The state then holds
// the task's durable run, left unfinished after its last finished step. It returns the task.
func killDuringRun(t *testing.T, llm *fakellm.Server, config string, env []string, text string, turns ...fakellm.Turn) a2aTask {
	t.Helper()
	llm.Enqueue(append(turns, fakellm.Turn{HangAfter: fakellm.Immediately})...)
	first, base := startKillable(t, env, regexp.MustCompile(`serving A2A at \S+ \(card (http://[^/\s]+)/`),
		"serve", "--config", config, "--a2a", "127.0.0.1:0")
	tk := a2aOK[a2aOut](t, base, "send", map[string]any{"text": text, "returnImmediately": true}).task(t)
	testwait.Until(t, a2aWait, "the model call the process dies in", func() bool { return llm.RequestCount() == len(turns)+1 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	return tk
}

// TestA2ADurableTaskAfterKill kills `agenthost serve --a2a` with SIGKILL while a task's run waits for its third
// model call, after two model calls and a tool call finished, and starts it again on the same state: the task's
// run resumes from its last finished step. The model is asked only the call that had not finished, the MCP
// server's tool is not called again, and the task ends COMPLETED with its answer, as if nothing had happened.
func TestA2ADurableTaskAfterKill(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	config := a2aConfig(t, dir, "phoenix", llm.URL, "")
	args := []string{"serve", "--config", config, "--a2a", "127.0.0.1:0"}
	env := []string{"TEST_KEY=sk-a2a"}
	tk := killDuringRun(t, llm, config, env, "Note it, then shout.", noteThenShout(notes)...)

	llm.Enqueue(fakellm.Turn{Text: "Noted and shouted: HELLO."})
	srv := startServeA2A(t, env, args...)
	var got a2aTask
	testwait.Until(t, a2aWait, "the task completes", func() bool {
		got = a2aOK[a2aTask](t, srv.base, "get", map[string]any{"id": tk.ID})
		return got.Status.State == "TASK_STATE_COMPLETED"
	})
	if text, _ := a2aAnswerOf(t, got); text != "Noted and shouted: HELLO." {
		t.Errorf("answer %q", text)
	}
	if n := llm.RequestCount(); n != 4 {
		t.Errorf("%d model requests in all, want 4: after the restart, only the call that had not finished", n)
	}
	b, err := os.ReadFile(notes)
	if err != nil || string(b) != "first\n" {
		t.Errorf("the note tool's calls: %q (%v), want it called once", b, err)
	}
	// The resumed run's last request carries the steps of the first process: both tool results.
	var results []string
	for _, m := range llm.Requests()[3].Messages {
		if m.Role == "tool" {
			results = append(results, m.ToolOutput())
		}
	}
	if got := strings.Join(results, "|"); got != "noted first|HELLO" {
		t.Errorf("the resumed model call's tool results: %q", got)
	}
	// The context continues in the new process with the whole exchange.
	llm.Enqueue(fakellm.Turn{Text: "You asked me to note and shout."})
	next := a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "What did I ask?", "contextId": tk.ContextID}).task(t)
	if next.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("the next task: %+v", next)
	}
	if msgs := a2aMessages(llm.Requests()[4].Messages); len(msgs) < 7 {
		t.Errorf("the next request lacks the resumed exchange: %q", msgs)
	}
}

// TestMCPDurableRunAfterKill does the same to `agenthost serve --http` with durable_runs = "all": the caller of the
// agent tool is gone with the process, but the run resumes when agenthost starts again, and its conversation gets
// the whole exchange, the finished steps not repeated.
func TestMCPDurableRunAfterKill(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	config := serveConfig(t, dir, "phoenix", llm, "")
	b, _ := os.ReadFile(config)
	// The [state] table serveConfig writes gets durable_runs too.
	if err := os.WriteFile(config, []byte(strings.Replace(string(b), "[state]\n", "[state]\ndurable_runs = \"all\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_KEY=sk-mcp"}
	args := []string{"serve", "--config", config, "--http", "127.0.0.1:0"}
	noteArgs, _ := json.Marshal(map[string]string{"file": notes, "text": "first"})
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_note", Arguments: string(noteArgs)}}},
		fakellm.Turn{HangAfter: fakellm.Immediately},
	)
	first, url := startKillable(t, env, servingLine, args...)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "durable-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	go session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_phoenix", Arguments: map[string]any{"prompt": "Note it."}})
	testwait.Until(t, a2aWait, "the second model call", func() bool { return llm.RequestCount() == 2 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	llm.Enqueue(fakellm.Turn{Text: "Noted."})
	startKillable(t, env, servingLine, args...)
	testwait.Until(t, a2aWait, "the resumed run asks the model", func() bool { return llm.RequestCount() == 3 })
	var conv struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	testwait.Until(t, a2aWait, "the conversation is saved", func() bool {
		r := agenthost(t, dir, "", nil, "state", "-config", config)
		id, _, _ := strings.Cut(r.stdout[strings.Index(r.stdout, "\n")+1:], " ")
		if r.code != 0 || id == "" {
			return false
		}
		r = agenthost(t, dir, "", nil, "state", "show", "-json", "-config", config, id)
		return json.Unmarshal([]byte(r.stdout), &conv) == nil && len(conv.Messages) == 4
	})
	if last := conv.Messages[3]; last.Role != "assistant" || last.Content != "Noted." {
		t.Errorf("the conversation ends with %+v", last)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "first\n" {
		t.Errorf("the note tool's calls: %q (%v), want it called once", b, err)
	}
}

// TestA2AOrphanedTaskAfterKill kills `agenthost serve --a2a` in the middle of a task whose run is not durable
// (durable_runs = "none"): when it starts again, the task, which nothing will run any more, is FAILED with a message
// saying why, instead of WORKING for ever.
func TestA2AOrphanedTaskAfterKill(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	config := a2aConfig(t, dir, "mortal", llm.URL, "")
	b, _ := os.ReadFile(config)
	if err := os.WriteFile(config, []byte(strings.Replace(string(b), "[state]\n", "[state]\ndurable_runs = \"none\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--config", config, "--a2a", "127.0.0.1:0"}
	env := []string{"TEST_KEY=sk-a2a"}
	llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	first, base := startKillable(t, env, regexp.MustCompile(`serving A2A at \S+ \(card (http://[^/\s]+)/`), args...)
	tk := a2aOK[a2aOut](t, base, "send", map[string]any{"text": "Take your time.", "returnImmediately": true}).task(t)
	testwait.Until(t, a2aWait, "the model is asked", func() bool { return llm.RequestCount() == 1 })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	srv := startServeA2A(t, env, args...)
	got := a2aOK[a2aTask](t, srv.base, "get", map[string]any{"id": tk.ID})
	if got.Status.State != "TASK_STATE_FAILED" || !strings.Contains(got.Status.messageText(), "stopped before it finished") {
		t.Errorf("the task after the restart: %s %q", got.Status.State, got.Status.messageText())
	}
	if n := llm.RequestCount(); n != 1 {
		t.Errorf("%d model requests, want 1: nothing resumed the run", n)
	}
}

// noteThenShout are the model's first two turns of a run that notes "first" in the file notes, then shouts "hello",
// with the fixture's tools.
func noteThenShout(notes string) []fakellm.Turn {
	noteArgs, _ := json.Marshal(map[string]string{"file": notes, "text": "first"})
	return []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_note", Arguments: string(noteArgs)}}},
		{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
	}
}

// startStdio starts `agenthost args...` serving MCP over stdio (args must not serve HTTP or A2A) at -log-level info,
// with its stdin a pipe the test holds open, and waits until it says it serves. Closing the pipe ends it.
func startStdio(t *testing.T, env []string, args ...string) (*exec.Cmd, io.WriteCloser, *watchedLog) {
	t.Helper()
	cmd := exec.Command(binary, append(args, "-log-level", "info")...)
	cmd.Env = append(testEnv(), env...)
	stderr := &watchedLog{found: make(chan string, 1), re: regexp.MustCompile(`(serving MCP over stdio)`)}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("agenthost %s stderr:\n%s", args, stderr.String())
		}
	})
	select {
	case <-stderr.found:
	case <-time.After(30 * time.Second):
		t.Fatalf("agenthost %s did not serve within 30s:\n%s", args, stderr.String())
	}
	return cmd, stdin, stderr
}

// sqliteTables returns the names of the tables in the SQLite file at path.
func sqliteTables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return queryStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
}

// queryStrings returns the one column of text that query selects from db, in the order of its rows.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStdioServeStartsNoIdleEngine: with durable_runs = "tasks" (the default) only A2A tasks are durable, so
// `agenthost serve` over stdio makes no run durable. On a state file that holds no run to resume it creates no
// durable run engine, which would only hold DBOS's connections and goroutines (about 5 MiB) for nothing: DBOS's
// tables, which its engine creates when it starts, are not there, and agenthost's own are.
func TestStdioServeStartsNoIdleEngine(t *testing.T) {
	dir := t.TempDir()
	config := a2aConfig(t, dir, "quiet", "http://127.0.0.1:1/v1", "")
	cmd, stdin, stderr := startStdio(t, []string{"TEST_KEY=sk-quiet"}, "serve", "--config", config)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve ended with %v:\n%s", err, stderr.String())
	}
	tables := sqliteTables(t, filepath.Join(dir, "quiet-state.db"))
	if !slices.Contains(tables, "agenthost_schema") || slices.Contains(tables, "workflow_status") {
		t.Errorf("tables %q: want agenthost's and none of DBOS's", tables)
	}
}

// TestStdioServeResumesRunLeftBehind kills `agenthost serve --a2a` during a durable task's run, as
// TestA2ADurableTaskAfterKill does, then starts `agenthost serve` over stdio on the same state. Nothing it serves
// makes runs durable, but the state file holds a run to resume: it starts the engine all the same, and the run
// resumes from its last finished step.
func TestStdioServeResumesRunLeftBehind(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	config := a2aConfig(t, dir, "phoenix", llm.URL, "")
	env := []string{"TEST_KEY=sk-a2a"}
	killDuringRun(t, llm, config, env, "Note it, then shout.", noteThenShout(notes)...)

	llm.Enqueue(fakellm.Turn{Text: "Noted and shouted: HELLO."})
	startStdio(t, env, "serve", "--config", config)
	testwait.Until(t, a2aWait, "the resumed model call", func() bool { return llm.RequestCount() == 4 })
	var results []string
	for _, m := range llm.Requests()[3].Messages {
		if m.Role == "tool" {
			results = append(results, m.ToolOutput())
		}
	}
	if got := strings.Join(results, "|"); got != "noted first|HELLO" {
		t.Errorf("the resumed model call's tool results: %q, want both finished steps", got)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "first\n" {
		t.Errorf("the note tool's calls: %q (%v), want it called once", b, err)
	}
}
