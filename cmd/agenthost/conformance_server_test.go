package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// The official MCP conformance suite, in its server mode, run against `agenthost serve --http` in gateway mode with
// internal/testkit/testservers/conformanceserver behind it: its tools, prompts, completions, resources, log messages
// and sampling pass through (see BENCHMARKS.md). The suite is also run against the fixture directly, so that a failure
// through the gateway shows as the gateway's and not the fixture's.

// Outcomes of a scenario, from the statuses of its checks in checks.json.
const (
	conformancePass = "pass" // a SUCCESS, no FAILURE and no WARNING
	conformanceFail = "fail" // a FAILURE
	conformanceWarn = "warn" // a WARNING and no FAILURE
	conformanceInfo = "info" // only INFO checks
)

// conformanceGatewayPasses are the scenarios that pass through the gateway.
var conformanceGatewayPasses = []string{
	"server-initialize",
	"logging-set-level", // the go-sdk server answers logging/setLevel itself
	"ping",
	"tools-list",
	"tools-call-simple-text",
	"tools-call-image",
	"tools-call-audio",
	"tools-call-embedded-resource",
	"tools-call-mixed-content",
	"tools-call-error",
	"tools-call-with-progress",
	"tools-call-with-logging", // the upstream server's log messages, relayed to the caller of the call
	"tools-call-sampling",     // with sampling = "caller", the upstream server samples with the caller's model
	"tools-call-elicitation",
	"json-schema-2020-12",
	"elicitation-sep1034-defaults",
	"elicitation-sep1330-enums",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
	// The upstream server's prompts, offered under their own names (the fixture has no prefix).
	"prompts-list",
	"prompts-get-simple",
	"prompts-get-with-args",
	"prompts-get-embedded-resource",
	"prompts-get-with-image",
	"completion-complete", // a prompt's argument, completed by the upstream server
	// The upstream server's resources and templates, read from it, and subscriptions passed on.
	"resources-list",
	"resources-read-text",
	"resources-read-binary",
	"resources-templates-read",
	"resources-subscribe",
	"resources-unsubscribe",
}

// conformanceGatewayFails are the scenarios that cannot pass through the gateway, with the reason: none now but
// conformanceSSEPolling, which fails without the gateway too.
var conformanceGatewayFails = map[string]string{}

// conformanceSSEPolling warns with and without the gateway: the test_reconnection tool it calls is one that no
// server here offers, and the go-sdk's streamable HTTP server sends neither a priming event nor a retry field on a
// POST stream of protocol version 2025-03-26.
const conformanceSSEPolling = "server-sse-polling"

// conformanceFixtureTools are the fixture's tools, which the gateway must offer under the same names.
var conformanceFixtureTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
	"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
	"json_schema_2020_12_tool",
}

func TestConformanceServer(t *testing.T) {
	dir := t.TempDir()
	fixture := filepath.Join(dir, "conformanceserver")
	build := exec.Command("go", "build", "-o", fixture, "github.com/agenthost/agenthost/internal/testkit/testservers/conformanceserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fixture: %v\n%s", err, out)
	}

	t.Run("fixture", func(t *testing.T) {
		url := conformanceStart(t, exec.CommandContext(t.Context(), fixture, "-http", "127.0.0.1:0"), "conformanceserver")
		got := conformanceRun(t, url)
		for scenario := range conformanceGatewayWant() {
			want := conformancePass
			if scenario == conformanceSSEPolling {
				want = conformanceWarn
			}
			if outcome := got[scenario]; outcome != want {
				t.Errorf("%s: %q, want %s", scenario, outcome, want)
			}
		}
	})

	t.Run("gateway", func(t *testing.T) {
		config := writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "test"

[serve]
expose_tools = true

[mcp.servers.c]
command = %q
prefix = ""
required = true
sampling = "caller"
`, fixture))
		cmd := exec.CommandContext(t.Context(), binary, "serve", "--config", config, "--http=127.0.0.1:0")
		cmd.Dir = dir
		url := conformanceStart(t, cmd, "agenthost")
		got := conformanceRun(t, url)

		want := conformanceGatewayWant()
		for scenario, outcome := range got {
			switch w, ok := want[scenario]; {
			case !ok:
				t.Errorf("%s: %s, and the test does not know this scenario: add it to the expected lists and to BENCHMARKS.md", scenario, outcome)
			case outcome != w && w == conformanceFail:
				t.Errorf("%s: %s, expected to fail (%s): update the expected lists and BENCHMARKS.md", scenario, outcome, conformanceGatewayFails[scenario])
			case outcome != w:
				t.Errorf("%s: %s, want %s", scenario, outcome, w)
			}
		}
		for scenario := range want {
			if _, ok := got[scenario]; !ok {
				t.Errorf("%s: the suite did not run it", scenario)
			}
		}
	})
}

// conformanceGatewayWant is the expected outcome of every scenario through the gateway.
func conformanceGatewayWant() map[string]string {
	want := map[string]string{conformanceSSEPolling: conformanceWarn}
	for _, s := range conformanceGatewayPasses {
		want[s] = conformancePass
	}
	for s := range conformanceGatewayFails {
		want[s] = conformanceFail
	}
	return want
}

// conformanceStart starts cmd, an MCP server over HTTP that prints "serving MCP at http://..." on stderr, and returns
// that URL. The server is interrupted when the test ends, and its stderr goes to the test log.
func conformanceStart(t *testing.T, cmd *exec.Cmd, name string) string {
	t.Helper()
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	log := &conformanceLog{t: t, name: name, url: make(chan string, 1)}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // it also waits for stderr to be copied, so nothing is logged after the test
		close(exited)
	}()
	t.Cleanup(func() { <-exited }) // t.Context() has ended: the server was interrupted
	select {
	case url := <-log.url:
		return url
	case <-exited:
		t.Fatalf("%s exited before serving", name)
	case <-time.After(time.Minute): // a bound for any machine, so that a server that never serves fails the test
		t.Fatalf("%s never said where it serves", name)
	}
	return ""
}

// conformanceLog logs a server's stderr line by line and sends the URL of its "serving MCP at" line on url.
type conformanceLog struct {
	t       *testing.T
	name    string
	url     chan string
	partial []byte
}

func (l *conformanceLog) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		line, rest, ok := bytes.Cut(l.partial, []byte{'\n'})
		if !ok {
			return len(p), nil
		}
		l.partial = rest
		if m := conformanceServing.FindSubmatch(line); m != nil {
			select {
			case l.url <- string(m[1]):
			default:
			}
		}
		l.t.Logf("%s: %s", l.name, line)
	}
}

var conformanceServing = regexp.MustCompile(`serving MCP at (http://\S+)`)

// conformanceRun runs every scenario of the suite's server mode against url and returns each one's outcome, read
// from its checks.json (the suite's own summary counts a scenario as passed when its checks fail softly).
func conformanceRun(t *testing.T, url string) map[string]string {
	t.Helper()
	out := t.TempDir()
	cmd := peers.Command22(t, "conformance", "server", "--suite", "all", "--url", url, "-o", out)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run() // it exits non-zero when a scenario fails: the checks say which
	entries, _ := os.ReadDir(out)
	if len(entries) == 0 {
		t.Fatalf("the suite wrote no results (%v):\n%s", err, stdout.String())
	}
	got := map[string]string{}
	for _, e := range entries {
		m := conformanceResultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		got[m[1]] = conformanceOutcome(checks)
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				t.Logf("%s: %s %s: %s", m[1], c.ID, c.Status, c.ErrorMessage)
			}
		}
		if m[1] == "tools-list" {
			conformanceCheckToolList(t, checks)
		}
	}
	return got
}

// conformanceResultDir is a scenario's result directory, "server-<scenario>-<timestamp>".
var conformanceResultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

func conformanceOutcome(checks []conformanceCheck) string {
	statuses := map[string]bool{}
	for _, c := range checks {
		statuses[c.Status] = true
	}
	switch {
	case statuses["FAILURE"]:
		return conformanceFail
	case statuses["WARNING"]:
		return conformanceWarn
	case statuses["SUCCESS"]:
		return conformancePass
	}
	return conformanceInfo
}

// conformanceCheckToolList checks that every fixture tool was listed under its own name, so that no tool scenario
// passes on a "tool not found" answer.
func conformanceCheckToolList(t *testing.T, checks []conformanceCheck) {
	t.Helper()
	for _, c := range checks {
		if c.ID != "tools-list" {
			continue
		}
		var details struct {
			Tools []string `json:"tools"`
		}
		if err := json.Unmarshal(c.Details, &details); err != nil {
			t.Fatalf("tools-list details: %v", err)
		}
		for _, name := range conformanceFixtureTools {
			if !slices.Contains(details.Tools, name) {
				t.Errorf("tools/list lacks %s: %s", name, strings.Join(details.Tools, ", "))
			}
		}
		return
	}
	t.Error("tools-list has no tools-list check")
}
