package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// consoleLine is what `agenthost ui` and `serve --ui` write to stderr once the console listens.
var consoleLine = regexp.MustCompile(`agenthost: console at (http://\S+/)`)

const uiConfig = `
[agent]
name = "console-agent"
description = "answers in the console"

[model]
provider = "test"

[state]
backend = "memory"
`

// getSession reads the console's GET /api/session at base.
func getSession(t *testing.T, base string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + "api/session")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /api/session: %v", err)
	}
	return resp.StatusCode, body
}

// TestUIServesTheConsole: `agenthost ui` prints the console's URL, which carries no token, serves the session there,
// and stops with exit code 0 on SIGINT (checked by serveChild's cleanup).
func TestUIServesTheConsole(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", uiConfig)
	base, _ := serveChild(t, nil, consoleLine, "ui", "--config", config, "--addr", "127.0.0.1:0")
	if strings.Contains(base, "token") || strings.Contains(base, "?") {
		t.Errorf("the console's URL %q carries more than the address", base)
	}
	status, body := getSession(t, base)
	if status != http.StatusOK {
		t.Fatalf("GET /api/session: %d %v", status, body)
	}
	agent, _ := body["agent"].(map[string]any)
	if body["auth"] != "none" || agent["name"] != "console-agent" || body["csrf"] == "" {
		t.Errorf("session %v", body)
	}
}

// TestUIWithToken: with [serve] auth_token_env the console asks for a login, and the URL printed holds no token.
func TestUIWithToken(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", uiConfig+"\n[serve]\nauth_token_env = \"UI_TEST_TOKEN\"\n")
	base, log := serveChild(t, []string{"UI_TEST_TOKEN=s3cret-console-token"}, consoleLine, "ui", "--config", config, "--addr", "127.0.0.1:0")
	status, body := getSession(t, base)
	if status != http.StatusOK || body["login"] != "token" || len(body) != 1 {
		t.Errorf("GET /api/session without a login: %d %v", status, body)
	}
	if strings.Contains(log.String(), "s3cret-console-token") {
		t.Errorf("the token was written to stderr:\n%s", log.String())
	}
}

// TestUIRefusesBeyondLoopbackWithoutToken: a console that anyone on the network could reach without a token is not
// served.
func TestUIRefusesBeyondLoopbackWithoutToken(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", uiConfig)
	r := agenthost(t, dir, "", nil, "ui", "--config", config, "--addr", "0.0.0.0:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "beyond loopback") {
		t.Fatalf("ui --addr 0.0.0.0:0 exited %d:\n%s", r.code, r.stderr)
	}
}

// TestServeUI: `agenthost serve --http --ui` serves MCP and the console from one process.
func TestServeUI(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", uiConfig)
	base, log := serveChild(t, nil, consoleLine, "serve", "--config", config, "--http", "127.0.0.1:0", "--ui", "127.0.0.1:0")
	if status, body := getSession(t, base); status != http.StatusOK {
		t.Fatalf("GET /api/session: %d %v", status, body)
	}
	if !servingLine.MatchString(log.String()) {
		t.Errorf("serve --http --ui did not serve MCP:\n%s", log.String())
	}
}

// TestUIUsage: the command is in the help, with its flags.
func TestUIUsage(t *testing.T) {
	r := agenthost(t, t.TempDir(), "", nil, "help")
	if !strings.Contains(r.stdout, "agenthost ui [--addr ADDR] [--open]") || !strings.Contains(r.stdout, "agenthost serve --ui [ADDR]") {
		t.Errorf("help lacks the console:\n%s", r.stdout)
	}
	r = agenthost(t, t.TempDir(), "", nil, "ui", "-h")
	if r.code != 0 || !strings.Contains(r.stdout, "-addr") || !strings.Contains(r.stdout, "-open") {
		t.Errorf("ui -h exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
