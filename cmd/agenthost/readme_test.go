package main

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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// The README's shell examples (fenced sh and console blocks), each known by its first line. Every one is either
// run by TestReadme or listed in readmeNotRun with the reason; TestReadme fails on a block it does not know, so a
// new example must be classified.
const (
	readmeQuickStart   = `go run ./cmd/agenthost run "What time is it?"`
	readmeToolsCheck   = `agenthost tools     # the tools the agent offers`
	readmeOutputSchema = `agenthost run --output-schema answer.schema.json --json "Which French city has the best food?"`
	readmeImport       = `agenthost mcp import -print claude_desktop_config.json`
	readmeServeHTTP    = `export AGENTHOST_TOKEN=$(openssl rand -hex 32)    # agent.toml: [serve] auth_token_env = "AGENTHOST_TOKEN"`
	readmeServeA2A     = `agenthost serve --a2a                              # [serve] a2a, default 127.0.0.1:8766`
	readmeCurlA2A      = `curl -s http://127.0.0.1:8766/ -H "Authorization: Bearer $AGENTHOST_TOKEN" \`
)

// readmeNotRun are the examples that cannot run here, and why: the test never dials beyond loopback.
var readmeNotRun = map[string]string{
	`export OPENAI_API_KEY=sk-...`: "needs an OpenAI key and the network",
	`agenthost eval --concurrency 4 cases.jsonl        # a table, the failures of each failed case, a summary`: "its dataset asks a real model, and web_search the web; eval_test.go runs a dataset on the scripted model",
	`$ agenthost mcp import ~/Library/Application\ Support/Claude/claude_desktop_config.json`:                  "its mcp list starts npx and docker servers, which fetch packages and images; the sh example of mcp import runs",
	`$ agenthost mcp login linear`: "logs in to a hosted server through a browser",
	`$ agenthost state`:            "the ids are an example's; state_test.go runs the state commands",
	`createdb agenthost`:           "needs a PostgreSQL server at db.internal; store and durable run on pgtest clusters",
	`make test`:                    "is the whole test suite, this test included",
	`agenthost ui --open          # prints "agenthost: console at http://127.0.0.1:8767/" and opens it`: "opens a browser; ui_test.go runs agenthost ui",
}

// readmeBlock is one fenced block of README.md.
type readmeBlock struct {
	lang string // the fence's info string: sh, console, json, "" ...
	text string // the lines between the fences, each ending in a newline
	line int    // the line of the opening fence
}

// key is how the tests know a block: its first line.
func (b readmeBlock) key() string { return strings.SplitN(b.text, "\n", 2)[0] }

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), line: i + 1}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a fenced block is not closed", cur.line)
	}
	return blocks
}

// readmeEnv is the environment of the examples: the test's, without a developer's keys or token, the binary on
// PATH and the state under dir.
func readmeEnv(dir string, extra ...string) []string {
	env := slices.DeleteFunc(testEnv(), func(kv string) bool {
		return strings.HasPrefix(kv, "AGENTHOST_TOKEN=") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "XDG_STATE_HOME=")
	})
	env = append(env, "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	return append(env, extra...)
}

// runExample runs a block's text with sh -e in dir and returns its output; a status other than 0 fails the test.
func runExample(t *testing.T, dir, script string, env []string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), processLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's example\n%s\nfailed: %v\nstdout:\n%s\nstderr:\n%s", script, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// startExample starts one line of a block that serves, in dir, and waits until every address of addrs answers
// /livez. When the test ends the server is interrupted and must exit with status 0.
func startExample(t *testing.T, dir, line string, env []string, addrs ...string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	stderr := &testwait.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("interrupting %q: %v", line, err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%q exited with %v after SIGINT; stderr:\n%s", line, err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%q did not exit within 30s of SIGINT", line)
		}
	}
	t.Cleanup(stop)
	for _, addr := range addrs {
		testwait.Until(t, 30*time.Second, line+" to answer /livez at "+addr, func() bool {
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("%q exited before it served: %v\n%s", line, err, stderr.String())
			default:
			}
			resp, err := testHTTP.Get("http://" + addr + "/livez")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
}

// exampleLines are the lines of a block that run something: neither empty nor comments.
func exampleLines(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestReadme runs the README's shell examples that need no network, as written, with the binary on PATH: the
// quick start, tools and check, a structured answer, mcp import, and the servers with the curl call against them.
// Each must exit with status 0 and show what the README says it shows. The servers' addresses are the README's
// with other ports, so that an agenthost the developer is running does not fail the test.
func TestReadme(t *testing.T) {
	blocks := readmeBlocks(t)
	byKey := map[string]readmeBlock{}
	for _, b := range blocks {
		if b.lang != "sh" && b.lang != "console" {
			continue
		}
		if _, dup := byKey[b.key()]; dup {
			t.Errorf("README.md:%d: two shell examples begin with %q: the test tells them apart by their first line", b.line, b.key())
		}
		byKey[b.key()] = b
	}
	run := []string{readmeQuickStart, readmeToolsCheck, readmeOutputSchema, readmeImport, readmeServeHTTP, readmeServeA2A, readmeCurlA2A}
	for key, b := range byKey {
		if _, skipped := readmeNotRun[key]; !skipped && !slices.Contains(run, key) {
			t.Errorf("README.md:%d: a shell example this test does not know: run it here, or list it in readmeNotRun with the reason:\n%s", b.line, b.text)
		}
	}
	for _, key := range append(run, mapKeys(readmeNotRun)...) {
		if _, ok := byKey[key]; !ok {
			t.Errorf("the test knows a shell example the README no longer has: %q", key)
		}
	}
	if t.Failed() {
		return
	}

	t.Run("quick start", func(t *testing.T) {
		// As a new user does: in the clone, whose agent.toml is the reference, with no key.
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		stdout, stderr := runExample(t, root, byKey[readmeQuickStart].text, readmeEnv(t.TempDir()))
		shown := readmeOutputAfter(t, blocks, readmeQuickStart)
		if len(shown) != 3 {
			t.Fatalf("the quick start's output block has %d lines, want 3: %q", len(shown), shown)
		}
		if !slices.Contains(strings.Split(stderr, "\n"), shown[0]) {
			t.Errorf("stderr does not have the README's line %q:\n%s", shown[0], stderr)
		}
		// The time changes; the rest is as shown.
		answer := shown[1] + "\n" + shown[2][:strings.Index(shown[2], ": ")+2]
		if !strings.HasPrefix(stdout, answer) {
			t.Errorf("stdout does not begin as the README's output %q:\n%s", answer, stdout)
		}
	})

	t.Run("tools and check", func(t *testing.T) {
		dir := t.TempDir()
		reference, err := os.ReadFile("../../agent.toml")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "agent.toml", string(reference))
		stdout, _ := runExample(t, dir, byKey[readmeToolsCheck].text, readmeEnv(dir))
		for _, want := range []string{"current_time  builtin", "agent.toml: ok"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("tools and check printed no %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("structured answer", func(t *testing.T) {
		llm := fakellm.New()
		t.Cleanup(llm.Close)
		dir := t.TempDir()
		writeFile(t, dir, "agent.toml", fmt.Sprintf("[model]\nbase_url = %q\nmodel = \"m\"\napi_key_env = \"TEST_KEY\"\n", llm.URL))
		// The schema of the README's inline [agent.output.schema].
		writeFile(t, dir, "answer.schema.json", `{"type": "object", "required": ["city", "reason"],
			"properties": {"city": {"type": "string"}, "reason": {"type": "string"}}}`)
		llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "final_answer", Arguments: `{"city": "Lyon", "reason": "Its bouchons."}`}}})
		stdout, _ := runExample(t, dir, byKey[readmeOutputSchema].text, readmeEnv(dir, "TEST_KEY=sk-readme"))
		var ans struct {
			Output    map[string]string `json:"output"`
			StoppedBy string            `json:"stopped_by"`
		}
		if err := json.Unmarshal([]byte(stdout), &ans); err != nil {
			t.Fatalf("stdout is not the JSON answer: %v\n%s", err, stdout)
		}
		if ans.Output["city"] != "Lyon" || ans.Output["reason"] != "Its bouchons." {
			t.Errorf("output = %v (stopped by %q), want the value the model gave", ans.Output, ans.StoppedBy)
		}
	})

	t.Run("mcp import", func(t *testing.T) {
		dir := t.TempDir()
		desktop := readmeBlockAfter(t, blocks, "**Claude Desktop** (`claude_desktop_config.json`):")
		writeFile(t, dir, "claude_desktop_config.json", desktop)
		stdout, stderr := runExample(t, dir, byKey[readmeImport].text, readmeEnv(dir))
		for _, want := range []string{"[mcp.servers.agenthost]\n", `args = ["serve", "--config", "/home/me/agent.toml"]`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout has no %q:\n%s", want, stdout)
			}
		}
		if !strings.Contains(stderr, "env.OPENAI_API_KEY is copied as written") {
			t.Errorf("no note that the key is copied as written:\n%s", stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "agent.toml")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("-print wrote agent.toml (%v)", err)
		}
	})

	t.Run("serve", func(t *testing.T) {
		dir := t.TempDir()
		httpAddr, a2aAddr, otherAddr := freeAddr(t), freeAddr(t), freeAddr(t)
		ports := strings.NewReplacer("127.0.0.1:8765", httpAddr, "127.0.0.1:8766", a2aAddr, "127.0.0.1:9000", otherAddr)
		// What the HTTP section's comment says to put in agent.toml, with the defaults' addresses moved.
		writeFile(t, dir, "agent.toml", fmt.Sprintf("[serve]\nauth_token_env = \"AGENTHOST_TOKEN\"\nhttp = %q\na2a = %q\n", httpAddr, a2aAddr))

		setup := exampleLines(ports.Replace(byKey[readmeServeHTTP].text))
		if len(setup) != 2 || !strings.HasPrefix(setup[0], "export AGENTHOST_TOKEN=") {
			t.Fatalf("the HTTP section's example is no longer the token and the server: %q", setup)
		}
		token, _ := runExample(t, dir, setup[0]+"\nprintf %s \"$AGENTHOST_TOKEN\"", readmeEnv(dir))
		if len(token) != 64 {
			t.Fatalf("the token setup gave %q, want 64 hex digits", token)
		}
		env := readmeEnv(dir, "AGENTHOST_TOKEN="+token)

		t.Run("http", func(t *testing.T) {
			startExample(t, dir, setup[1], env, httpAddr)
			initialize := `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "readme", "version": "1"}}}`
			accept := map[string]string{"Accept": "application/json, text/event-stream"}
			if resp, body := authRequest(t, "http://"+httpAddr+"/mcp", "", initialize, accept); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("without the token: %d %s, want 401", resp.StatusCode, body)
			}
			if resp, body := authRequest(t, "http://"+httpAddr+"/mcp", token, initialize, accept); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
				t.Errorf("with the token: %d %s, want the server's initialize result", resp.StatusCode, body)
			}
		})

		t.Run("a2a and curl", func(t *testing.T) {
			lines := exampleLines(ports.Replace(byKey[readmeServeA2A].text))
			if len(lines) != 2 {
				t.Fatalf("the A2A section's example is no longer two servers: %q", lines)
			}
			t.Run("alone", func(t *testing.T) {
				startExample(t, dir, lines[0], env, a2aAddr)
				stdout, _ := runExample(t, dir, ports.Replace(byKey[readmeCurlA2A].text), env)
				var resp struct {
					Result struct {
						Task struct {
							Status struct {
								State string `json:"state"`
							} `json:"status"`
							Artifacts []struct {
								Parts []struct {
									Text string `json:"text"`
								} `json:"parts"`
							} `json:"artifacts"`
						} `json:"task"`
					} `json:"result"`
					Error json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal([]byte(stdout), &resp); err != nil {
					t.Fatalf("curl printed no JSON-RPC response: %v\n%s", err, stdout)
				}
				task := resp.Result.Task
				if resp.Error != nil || task.Status.State != "TASK_STATE_COMPLETED" || len(task.Artifacts) == 0 ||
					len(task.Artifacts[0].Parts) == 0 || !strings.Contains(task.Artifacts[0].Parts[0].Text, "current_time") {
					t.Errorf("curl: want a completed task whose answer tells the time:\n%s", stdout)
				}
			})
			t.Run("with MCP", func(t *testing.T) {
				startExample(t, dir, lines[1], env, httpAddr, otherAddr)
			})
		})
	})
}

// readmeOutputAfter returns the lines of the unlabelled block that follows the shell example key: its output.
func readmeOutputAfter(t *testing.T, blocks []readmeBlock, key string) []string {
	t.Helper()
	for i, b := range blocks {
		if (b.lang == "sh" || b.lang == "console") && b.key() == key && i+1 < len(blocks) && blocks[i+1].lang == "" {
			return strings.Split(strings.TrimSuffix(blocks[i+1].text, "\n"), "\n")
		}
	}
	t.Fatalf("no output block after the example %q", key)
	return nil
}

// readmeBlockAfter returns the text of the first fenced block after the line heading.
func readmeBlockAfter(t *testing.T, blocks []readmeBlock, heading string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(strings.Split(string(data), "\n"), heading)
	if at < 0 {
		t.Fatalf("README.md has no line %q", heading)
	}
	for _, b := range blocks {
		if b.line > at {
			return b.text
		}
	}
	t.Fatalf("no block after %q", heading)
	return ""
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
