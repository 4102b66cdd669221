package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// loudLine is a log line above DEBUG and INFO: what a graceful stop must not write.
var loudLine = regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`)

// quietConfig writes a configuration on the offline test model whose runs are all durable, so that every serve
// starts the durable run engine (DBOS, whose queue runner is polling when it is stopped).
func quietConfig(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, "quiet.toml", `
[agent]
name = "quiet"

[model]
provider = "test"

[state]
path = "quiet-state.db"
durable_runs = "all"
`)
}

// TestServeStdioShutdownIsQuiet: `agenthost serve` over stdio whose client closes stdin at once, as Claude Desktop
// does when it restarts its servers, stops without a line at WARN or ERROR, with the durable run engine started and
// stopped each time (DBOS's queue runner is in the middle of its first poll when it is stopped). It is run a few
// times, as the stop races with that poll.
func TestServeStdioShutdownIsQuiet(t *testing.T) {
	dir := t.TempDir()
	config := quietConfig(t, dir)
	for range 5 {
		r := agenthost(t, dir, "", nil, "serve", "--config", config, "-log-level", "info")
		if r.code != 0 {
			t.Fatalf("serve exited %d:\n%s", r.code, r.stderr)
		}
		if loudLine.MatchString(r.stderr) {
			t.Fatalf("serve logged at WARN or ERROR when its client closed stdin:\n%s", r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "quiet-state.db")); err != nil {
		t.Fatalf("no state file: %v", err)
	}
}

// TestServeStopsQuietlyOnSignal stops `agenthost serve` over stdio (its client still connected), `agenthost serve
// --a2a` and `agenthost serve --http --a2a`, all running the durable run engine, with SIGINT and SIGTERM: each exits 0 and logs nothing at WARN
// or ERROR.
func TestServeStopsQuietlyOnSignal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		serving *regexp.Regexp
		sig     os.Signal
	}{
		{"stdio SIGINT", nil, regexp.MustCompile(`(serving MCP over stdio)`), os.Interrupt},
		{"stdio SIGTERM", nil, regexp.MustCompile(`(serving MCP over stdio)`), syscall.SIGTERM},
		{"a2a SIGTERM", []string{"--a2a", "127.0.0.1:0"}, regexp.MustCompile(`(serving A2A at)`), syscall.SIGTERM},
		{"a2a SIGINT", []string{"--a2a", "127.0.0.1:0"}, regexp.MustCompile(`(serving A2A at)`), os.Interrupt},
		{"http and a2a SIGTERM", []string{"--http", "127.0.0.1:0", "--a2a", "127.0.0.1:0"}, regexp.MustCompile(`(serving A2A at)`), syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"serve", "--config", quietConfig(t, dir), "-log-level", "info"}, tc.args...)
			cmd := exec.Command(binary, args...)
			cmd.Env = testEnv()
			cmd.WaitDelay = 10 * time.Second
			stdin, err := cmd.StdinPipe() // held open: the stdio client stays
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stderr := &watchedLog{found: make(chan string, 1), re: tc.serving}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer cmd.Process.Kill()
			select {
			case <-stderr.found:
			case err := <-exited:
				t.Fatalf("serve exited (%v) before serving:\n%s", err, stderr.String())
			case <-time.After(processLimit):
				t.Fatalf("serve did not serve within %v:\n%s", processLimit, stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("serve exited with %v after %v:\n%s", err, tc.sig, stderr.String())
				}
			case <-time.After(processLimit):
				t.Fatalf("serve did not exit within %v of %v:\n%s", processLimit, tc.sig, stderr.String())
			}
			if loudLine.MatchString(stderr.String()) {
				t.Errorf("serve logged at WARN or ERROR when stopped by %v:\n%s", tc.sig, stderr.String())
			}
		})
	}
}

// TestStdioServeResumingStopsQuietly: `agenthost serve` over stdio on a state file that holds a run left unfinished
// (killed `agenthost serve --a2a`) starts the durable run engine for it, resumes the run to its end, and stops without
// a line at WARN or ERROR when its client closes stdin.
func TestStdioServeResumingStopsQuietly(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	config := a2aConfig(t, dir, "resumer", llm.URL, "")
	env := []string{"TEST_KEY=sk-a2a"}
	killDuringRun(t, llm, config, env, "Shout.",
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_shout", Arguments: `{"text":"hello"}`}}})

	llm.Enqueue(fakellm.Turn{Text: "Shouted: HELLO."})
	cmd, stdin, stderr := startStdio(t, env, "serve", "--config", config)
	testwait.Until(t, a2aWait, "the resumed model call", func() bool { return llm.RequestCount() == 3 })
	// The run saves its conversation and records its end right after that call, while this process reads the file.
	testwait.Until(t, a2aWait, "the resumed run to end", func() bool {
		found, err := unfinishedRuns(filepath.Join(dir, "resumer-state.db"))
		return err == nil && !found
	})
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v:\n%s", err, stderr.String())
	}
	if loudLine.MatchString(stderr.String()) {
		t.Errorf("serve logged at WARN or ERROR:\n%s", stderr.String())
	}
}

// unfinishedRuns says whether the SQLite state file at path holds a durable run that is not over.
func unfinishedRuns(path string) (bool, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM workflow_status WHERE status IN ('PENDING', 'ENQUEUED')`).Scan(&n)
	return n > 0, err
}
