package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// runInProcess runs the command line in this process, as main does, and returns what it wrote.
func runInProcess(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut strings.Builder
	code := run(t.Context(), args, &stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	return result{out.String(), errOut.String(), code}
}

// TestHelp: the top-level help names every command and sub-command, and every one of them prints its own usage
// for -h, on stdout with exit code 0, never the flag package's "Usage of NAME:".
func TestHelp(t *testing.T) {
	top := runInProcess(t, "help")
	if top.code != 0 || !strings.HasPrefix(top.stdout, "agenthost runs an LLM agent") {
		t.Fatalf("help: exit %d\n%s%s", top.code, top.stdout, top.stderr)
	}
	for _, flag := range []string{"-h", "--help"} {
		if r := runInProcess(t, flag); r.code != 0 || r.stdout != top.stdout {
			t.Errorf("agenthost %s: exit %d, not the help:\n%s", flag, r.code, r.stdout)
		}
	}
	subs := map[string][]string{
		"state": {"conversations", "tasks", "calls", "show", "delete"},
		"mcp":   {"list", "add", "import", "login", "logout", "auth"},
	}
	var lines [][]string
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^  agenthost ` + c.name + `\b`).MatchString(top.stdout) {
			t.Errorf("the help does not show agenthost %s:\n%s", c.name, top.stdout)
		}
		if c.run == nil {
			continue
		}
		lines = append(lines, []string{c.name, "-h"}, []string{"help", c.name})
		for _, sub := range subs[c.name] {
			if !regexp.MustCompile(`(?m)^      ` + sub + `\b`).MatchString(top.stdout) {
				t.Errorf("the help does not show %s %s:\n%s", c.name, sub, top.stdout)
			}
			lines = append(lines, []string{c.name, sub, "-h"}, []string{c.name, "--config", "x.toml", sub, "--help"})
		}
	}
	for _, want := range []string{"--http [ADDR]", "--a2a [ADDR]", "-- ends them"} {
		if !strings.Contains(top.stdout, want) {
			t.Errorf("the help does not say %q", want)
		}
	}
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runInProcess(t, args...)
			name := args[0]
			if name == "help" {
				name = args[1]
			}
			if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: agenthost "+name) || strings.Contains(r.stdout, "Usage of") || r.stderr != "" {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestFlagsAnywhere: every command takes its flags before and after its arguments, "--" ends them, and a bool flag
// does not take the word after it.
func TestFlagsAnywhere(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.SetModels("fake-model") // check lists it
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "a", llm.URL, `"current_time"`, "")
	env := []string{"TEST_KEY=sk"}
	other := t.TempDir() // no agent.toml here: the flags must be read for the configuration to be found

	// prompts are the user messages of the model requests after the first from.
	prompts := func(from int) []string {
		var out []string
		for _, req := range llm.Requests()[from:] {
			for _, m := range req.Messages {
				if m.Role == "user" {
					out = append(out, m.Content)
				}
			}
		}
		return out
	}

	t.Run("run", func(t *testing.T) {
		from := len(llm.Requests())
		llm.Enqueue(fakellm.Turn{Text: "Paris."})
		r := agenthost(t, other, "", env, "run", "What is the capital of France?", "--json", "--config", cfg)
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil || ans.Text != "Paris." {
			t.Fatalf("exit %d, stdout not the JSON answer (%v):\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if got := prompts(from); len(got) != 1 || got[0] != "What is the capital of France?" {
			t.Errorf("the model was asked %q", got)
		}
	})
	t.Run("run --", func(t *testing.T) {
		from := len(llm.Requests())
		llm.Enqueue(fakellm.Turn{Text: "A flag."})
		r := agenthost(t, other, "", env, "run", "--config", cfg, "what", "is", "--", "--json")
		if r.code != 0 || r.stdout != "A flag.\n" {
			t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if got := prompts(from); len(got) != 1 || got[0] != "what is --json" {
			t.Errorf("the model was asked %q", got)
		}
	})
	t.Run("bool flag before the prompt", func(t *testing.T) {
		from := len(llm.Requests())
		llm.Enqueue(fakellm.Turn{Text: "Yes."})
		r := agenthost(t, other, "", env, "run", "--json", "Is it?", "--config="+cfg)
		if r.code != 0 || !strings.Contains(r.stdout, `"answer": "Yes."`) {
			t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if got := prompts(from); len(got) != 1 || got[0] != "Is it?" {
			t.Errorf("the model was asked %q", got)
		}
	})
	t.Run("tools", func(t *testing.T) {
		r := agenthost(t, other, "", env, "tools", "--config", cfg, "--log-level", "error")
		if r.code != 0 || !strings.Contains(r.stdout, "fx_cite") {
			t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = agenthost(t, other, "", env, "tools", cfg)
		if r.code != 2 || !strings.Contains(r.stderr, "tools takes no arguments") {
			t.Errorf("tools with an argument: exit %d:\n%s", r.code, r.stderr)
		}
	})
	t.Run("check", func(t *testing.T) {
		r := agenthost(t, other, "", env, "check", "--log-level", "error", "--config", cfg)
		if r.code != 0 || !strings.Contains(r.stdout, "a.toml: ok") {
			t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("eval", func(t *testing.T) {
		llm.Enqueue(fakellm.Turn{Text: "Paris."})
		data := writeFile(t, dir, "data.jsonl", `{"name": "capital", "prompt": "Capital of France?", "expect": {"contains": ["Paris"]}}`+"\n")
		r := agenthost(t, other, "", env, "eval", data, "--json", "--config", cfg, "--concurrency", "1")
		var report evals.Report
		if err := json.Unmarshal([]byte(r.stdout), &report); r.code != 0 || err != nil || report.Passed != 1 {
			t.Errorf("exit %d, report %+v (%v):\n%s%s", r.code, report, err, r.stdout, r.stderr)
		}
	})
	t.Run("state", func(t *testing.T) {
		llm.Enqueue(fakellm.Turn{Text: "Kept."})
		r := agenthost(t, dir, "", env, "run", "Keep this.", "--json", "--config", cfg)
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
			t.Fatalf("run: exit %d (%v):\n%s", r.code, err, r.stderr)
		}
		// The state's path is relative to the configuration's folder, not the working directory.
		r = agenthost(t, other, "", env, "state", "show", ans.ConversationID, "--json", "--config", cfg)
		if r.code != 0 || !strings.Contains(r.stdout, `"Keep this."`) {
			t.Errorf("state show ID --json --config: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = agenthost(t, other, "", env, "state", "--config", cfg, "conversations", "-n", "5")
		if r.code != 0 || !strings.Contains(r.stdout, ans.ConversationID) {
			t.Errorf("state --config FILE conversations -n 5: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = agenthost(t, other, "", env, "state", "-n", "5", "--config", cfg)
		if r.code != 0 || !strings.Contains(r.stdout, ans.ConversationID) {
			t.Errorf("state -n 5 --config FILE: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		file := writeFile(t, dir, "claude_desktop_config.json", `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "server-memory"]}}}`)
		r := agenthost(t, other, "", nil, "mcp", "import", file, "--print")
		if r.code != 0 || !strings.Contains(r.stdout, "[mcp.servers.memory]") {
			t.Errorf("mcp import FILE --print: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(other, "agent.toml")); err == nil {
			t.Errorf("--print wrote agent.toml")
		}
		// The flags of add end at the server's command: what follows is the command's, flags included.
		added := filepath.Join(other, "added.toml")
		r = agenthost(t, other, "", nil, "mcp", "add", "memory", "--config", added, "npx", "-y", "server-memory", "--print")
		if r.code != 0 || !strings.Contains(readFile(t, added), `args = ["-y", "server-memory", "--print"]`) {
			t.Errorf("mcp add NAME --config FILE COMMAND ARGS: exit %d:\n%s%s", r.code, r.stderr, readFile(t, added))
		}
		r = agenthost(t, other, "", nil, "mcp", "--config", added, "list", "--log-level", "error")
		if r.code != 1 || !strings.Contains(r.stdout, "memory") || !strings.Contains(r.stderr, "MCP servers not reachable: memory") { // server-memory is not installed
			t.Errorf("mcp --config FILE list: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = agenthost(t, other, "", nil, "mcp", "logout", "--config", added, "memory")
		if r.code != 0 || r.stdout != "memory had no login.\n" {
			t.Errorf("mcp logout --config FILE NAME: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestVersionEverywhere builds the binary with a version, as a release build does: `agenthost version`, the MCP
// server's serverInfo and the A2A card all report it. serve's optional addresses take their values wherever the
// flags stand.
func TestVersionEverywhere(t *testing.T) {
	const v = "v7.7.7-test"
	bin := filepath.Join(t.TempDir(), "agenthost")
	build := exec.CommandContext(t.Context(), "go", "build", "-ldflags", "-X main.version="+v, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").Output()
	if err != nil || string(out) != "agenthost "+v+"\n" {
		t.Errorf("agenthost version: %q (%v)", out, err)
	}

	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "a", llm.URL, "", "")
	ctx, cancel := context.WithTimeout(t.Context(), processLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--http", "127.0.0.1:0", "--a2a", "127.0.0.1:0", "--config", cfg)
	cmd.Env = append(testEnv(), "TEST_KEY=sk")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	var mcpURL, cardURL string
	sc := bufio.NewScanner(stderr)
	for (mcpURL == "" || cardURL == "") && sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			mcpURL = m[1]
		}
		if m := a2aServing.FindStringSubmatch(sc.Text()); m != nil {
			cardURL = m[2] + "/.well-known/agent-card.json"
		}
	}
	if mcpURL == "" || cardURL == "" {
		t.Fatalf("serve did not say where it serves MCP and A2A (%v)", sc.Err())
	}
	go func() {
		for sc.Scan() { // the rest of stderr, so that the server never blocks on it
		}
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "version-test", Version: "1"}, nil)
	session, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: testHTTP}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if got := session.InitializeResult().ServerInfo.Version; got != v {
		t.Errorf("serverInfo.version = %q, want %q", got, v)
	}

	resp, err := testHTTP.Get(cardURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); resp.StatusCode != http.StatusOK || err != nil || card.Version != v {
		t.Errorf("card: status %d, version %q (%v), want %q", resp.StatusCode, card.Version, err, v)
	}
}

// TestFlagEdges: a flag that needs a value and ends the line says so (it used to take the "--" placed before the
// arguments as its value); a negative number among the prompt's words is a word of the prompt; an unknown flag says
// where an argument that begins with - goes.
func TestFlagEdges(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "hi", "-model"}, 2, "flag needs an argument: -model"},
		{[]string{"run", "hi", "--config"}, 2, "flag needs an argument: -config"},
		{[]string{"state", "prune", "-older-than"}, 2, "flag needs an argument: -older-than"},
		{[]string{"run", "hi", "--nope"}, 2, "an argument that begins with - goes after --"},
	} {
		if r := runInProcess(t, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("agenthost %q: exit %d, want %d with %q:\n%s", tc.args, r.code, tc.code, tc.want, r.stderr)
		}
	}
	if err := os.WriteFile("agent.toml", []byte("[builtin]\ntools = []\n\n[state]\nbackend = \"memory\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runInProcess(t, "run", "--model", "test", "what", "is", "3", "-2")
	if r.code != 0 || !strings.Contains(r.stdout, `You asked: "what is 3 -2"`) {
		t.Errorf("a negative number in the prompt: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
