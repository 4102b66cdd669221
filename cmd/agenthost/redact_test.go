package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// plantedSecrets are written into the configuration's URLs (userinfo and query), headers, arguments and environment;
// no output of agenthost may hold one.
var plantedSecrets = []string{
	"planted-user", "planted-url-pass", "planted-query-token", "planted-header-token", "planted-header-key",
	"planted-arg-key", "planted-arg-token", "planted-arg-pass", "planted-arg-query", "planted-env-value",
	"planted-peer-user", "planted-peer-pass", "planted-peer-query", "planted-peer-header", "planted-500-query",
	"planted-401-query", "planted-live-query", "planted-live-pass",
}

// TestNoSecretPrinted runs every command and endpoint that prints the state of servers and peers (check, mcp list,
// mcp auth, tools, the log of run and serve, the /healthz of serve --http and --a2a, and the tool error the model
// reads when a server goes away during a call) against servers that fail: a closed port, one that answers 500, one
// that answers 401, a stdio command that does not exist, a peer on a closed port, and a server that breaks the
// connection of its tool call. Secrets are planted in their URLs, headers, arguments and environment; none may come
// out.
func TestNoSecretPrinted(t *testing.T) {
	closed := closedPort(t)
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", code)
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	live := brokenOnCall(t)
	llm := fakellm.New()
	llm.SetModels("fake-model") // check lists the models: it sends no request of the script's
	t.Cleanup(llm.Close)

	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "openai"
model = "fake-model"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[state]
path = "state.db"

[mcp.servers.down]
url = "http://planted-user:planted-url-pass@%s/mcp?token=planted-query-token&mode=x"
headers = { Authorization = "Bearer planted-header-token", X-Api-Key = "planted-header-key" }
connect_timeout = "5s"

[mcp.servers.err500]
url = "http://%s/mcp?apikey=planted-500-query"

[mcp.servers.err401]
url = "http://%s/mcp?apikey=planted-401-query"
headers = { Authorization = "Bearer planted-header-token" }

[mcp.servers.nostdio]
command = %q
args = ["--api-key=planted-arg-key", "--token", "planted-arg-token", "https://u:planted-arg-pass@example.com/?k=planted-arg-query"]
env = { SECRET_ENV = "planted-env-value" }

[mcp.servers.live]
url = "http://planted-user:planted-live-pass@%s/mcp?token=planted-live-query"
reconnect_wait = "1s"

[a2a.peers.peer]
url = "http://planted-peer-user:planted-peer-pass@%s/?apikey=planted-peer-query"
headers = { Authorization = "Bearer planted-peer-header" }
`, llm.URL, closed, status(http.StatusInternalServerError), status(http.StatusUnauthorized), "no-such-agenthost-server", live, closed))

	var outputs []string
	for _, args := range [][]string{
		{"check", "--log-level", "debug"},
		{"mcp", "list", "--log-level", "debug"},
		{"mcp", "auth"},
		{"tools", "--log-level", "debug"},
	} {
		r := agenthost(t, dir, "", []string{"TEST_KEY=k"}, args...)
		outputs = append(outputs, fmt.Sprintf("agenthost %s (exit %d):\n%s%s", args, r.code, r.stdout, r.stderr))
	}
	if !strings.Contains(outputs[0], "down") || !strings.Contains(outputs[0], "token=REDACTED") {
		t.Errorf("check does not show the failed server's redacted URL:\n%s", outputs[0])
	}
	if !strings.Contains(outputs[1], "no-such-agenthost-server --api-key=REDACTED --token REDACTED") {
		t.Errorf("mcp list does not show the masked arguments:\n%s", outputs[1])
	}

	// The model calls the live server's tool; its connection breaks during the call, and the model reads why.
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "live_echo", Arguments: `{}`}}},
		fakellm.Turn{Text: "done"},
	)
	r := agenthost(t, dir, "", []string{"TEST_KEY=k"}, "run", "--log-level", "debug", "echo")
	outputs = append(outputs, fmt.Sprintf("agenthost run (exit %d):\n%s%s", r.code, r.stdout, r.stderr))
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2:\n%s", len(reqs), strings.Join(outputs, "\n"))
	}
	var toolResult string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolResult = m.Content
		}
	}
	if !strings.Contains(toolResult, `MCP server "live" went away during the call`) || !strings.Contains(toolResult, "token=REDACTED") {
		t.Errorf("the tool error the model read: %q", toolResult)
	}
	for _, req := range reqs {
		outputs = append(outputs, "model request:\n"+string(req.Body))
	}

	url, log := serveChild(t, []string{"TEST_KEY=k"}, servingLine, "serve", "--log-level", "debug", "--config", config, "--http", "127.0.0.1:0")
	resp, err := testHTTP.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(health), `"name":"down"`) || !strings.Contains(string(health), "REDACTED") {
		t.Errorf("/healthz does not report the failed server: %s", health)
	}
	outputs = append(outputs, "/healthz:\n"+string(health), "serve's log:\n"+log.String())

	// The A2A listener's /healthz reports the peers too.
	a2a := startServeA2A(t, []string{"TEST_KEY=k"}, "serve", "--log-level", "debug", "--config", config, "--a2a", "127.0.0.1:0")
	resp, err = testHTTP.Get(a2a.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	health, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(health), `"name":"peer"`) || !strings.Contains(string(health), `"name":"down"`) {
		t.Errorf("the A2A /healthz does not report the servers and peers: %s", health)
	}
	outputs = append(outputs, "A2A /healthz:\n"+string(health))

	all := strings.Join(outputs, "\n")
	for _, secret := range plantedSecrets {
		if strings.Contains(all, secret) {
			t.Errorf("%q was printed", secret)
		}
	}
	if t.Failed() {
		t.Logf("everything printed:\n%s", all)
	}
}

// closedPort returns an address on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// brokenOnCall serves an MCP server with one tool, echo, over streamable HTTP, and breaks the connection of every
// tools/call request: the client sees its request fail, with the URL it was sent to in the error.
func brokenOnCall(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return strings.TrimPrefix(hs.URL, "http://")
}
