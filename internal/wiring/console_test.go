package wiring

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// consoleGet reads a JSON answer of the console at base.
func consoleGet(t *testing.T, base, path string, v any) int {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// TestServeUI serves the app over MCP (HTTP) and the console from one process, with its state in a real SQLite
// file: a run asked for over MCP is listed by the console with origin "mcp", its conversation is listed, shown and
// deleted through the console.
func TestServeUI(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "agent.toml"), []byte(`[agent]
name = "consoled"

[model]
provider = "test"

[state]
path = "`+filepath.Join(dir, "state.db")+`"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(string) string { return "" }, Version: "test", RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	got, stop := serving(t, app, &ServeOptions{HTTP: "127.0.0.1:0", UI: "127.0.0.1:0"})
	ui, mcpEnd := got["ui"], got["mcp"]
	if ui == nil || mcpEnd == nil || ui.URL != "http://"+ui.Addr.String()+"/" {
		t.Fatalf("endpoints %+v", got)
	}
	var session struct {
		Agent    map[string]string `json:"agent"`
		Features map[string]bool   `json:"features"`
	}
	if code := consoleGet(t, ui.URL, "api/session", &session); code != http.StatusOK || session.Agent["name"] != "consoled" ||
		session.Agent["version"] != "test" || !session.Features["state"] || !session.Features["tasks"] || session.Features["evals"] {
		t.Fatalf("session %d %+v", code, session)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpEnd.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpEnd.Tool, Arguments: map[string]any{"prompt": "hello over MCP"}})
	if err != nil || res.IsError {
		t.Fatalf("calling the agent: %v %+v", err, res)
	}
	cs.Close()

	var runs struct {
		Runs []struct {
			ID, Origin, Status string
		} `json:"runs"`
	}
	testwait.Until(t, 10*time.Second, "the MCP run to be listed as ended", func() bool {
		consoleGet(t, ui.URL, "api/runs", &runs)
		return len(runs.Runs) == 1 && runs.Runs[0].Status != "running"
	})
	if runs.Runs[0].Origin != "mcp" {
		t.Errorf("runs %+v", runs.Runs)
	}
	var convs struct {
		Conversations []struct {
			ID, Title string
			Messages  int
		} `json:"conversations"`
	}
	if code := consoleGet(t, ui.URL, "api/conversations", &convs); code != http.StatusOK || len(convs.Conversations) != 1 ||
		convs.Conversations[0].Title != "hello over MCP" || convs.Conversations[0].Messages < 2 {
		t.Fatalf("conversations %d %+v", code, convs)
	}
	id := convs.Conversations[0].ID
	var conv struct {
		ID       string
		Messages []struct{ Role, Content string }
	}
	if code := consoleGet(t, ui.URL, "api/conversations/"+id, &conv); code != http.StatusOK || conv.ID != id || conv.Messages[0].Content != "hello over MCP" {
		t.Fatalf("conversation %d %+v", code, conv)
	}
	var sess struct{ CSRF string }
	consoleGet(t, ui.URL, "api/session", &sess)
	req, _ := http.NewRequestWithContext(t.Context(), "DELETE", ui.URL+"api/conversations/"+id, nil)
	req.Header.Set("X-CSRF-Token", sess.CSRF)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if code := consoleGet(t, ui.URL, "api/conversations/"+id, nil); code != http.StatusNotFound {
		t.Errorf("the deleted conversation: %d", code)
	}
	if n, err := app.State().Conversations(t.Context(), 0); err != nil || len(n) != 0 {
		t.Errorf("the database still has %d conversations (%v)", len(n), err)
	}

	stop()
}

// TestServeUIRefusals: the console is not served beyond loopback without a token, nor by an app that does not
// record its runs.
func TestServeUIRefusals(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.StateMemory
	app, err := Build(t.Context(), cfg, &Options{Model: "test", Getenv: func(string) string { return "" }, RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	err = app.Serve(t.Context(), &ServeOptions{UI: "0.0.0.0:0", UIOnly: true})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "beyond loopback") {
		t.Errorf("Serve --ui 0.0.0.0:0 without a token: %v", err)
	}
	plain, err := Build(t.Context(), cfg, &Options{Model: "test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Serve(t.Context(), &ServeOptions{UI: "127.0.0.1:0", UIOnly: true}); err == nil || !strings.Contains(err.Error(), "RecordRuns") {
		t.Errorf("Serve --ui of an app that does not record runs: %v", err)
	}
}

// TestLoginCommand: the command the console shows for a server that needs a login names the configuration when it
// is not the default.
func TestLoginCommand(t *testing.T) {
	if got := LoginCommand("agent.toml", "docs"); got != "agenthost mcp login docs" {
		t.Errorf("%q", got)
	}
	if got := LoginCommand("/etc/agents/x.toml", "docs"); got != "agenthost mcp login docs -config /etc/agents/x.toml" {
		t.Errorf("%q", got)
	}
	// A relative path is printed absolute: the command is run from anywhere.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := LoginCommand("conf/x.toml", "docs"), "agenthost mcp login docs -config "+filepath.Join(wd, "conf", "x.toml"); got != want {
		t.Errorf("LoginCommand(conf/x.toml) = %s, want %s", got, want)
	}
	// A path a shell would split or expand is quoted.
	for path, want := range map[string]string{
		"/home/me/My Agents/agent.toml": `agenthost mcp login docs -config '/home/me/My Agents/agent.toml'`,
		"/tmp/$(rm -rf ~).toml":         `agenthost mcp login docs -config '/tmp/$(rm -rf ~).toml'`,
		"/tmp/it's.toml":                `agenthost mcp login docs -config '/tmp/it'\''s.toml'`,
	} {
		if got := LoginCommand(path, "docs"); got != want {
			t.Errorf("LoginCommand(%q) = %s, want %s", path, got, want)
		}
	}
}

// TestServeStdioAndUI: serve --ui with MCP over stdio serves both, and stdin closing ends serving, the console
// with it, without an error.
func TestServeStdioAndUI(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.StateMemory
	app, err := Build(t.Context(), cfg, &Options{Model: "test", Getenv: func(string) string { return "" }, RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	endpoints := make(chan *Endpoint, 1)
	served := make(chan error, 1)
	go func() {
		served <- app.Serve(t.Context(), &ServeOptions{UI: "127.0.0.1:0", Stdin: inR, Stdout: outW, Listening: func(e *Endpoint) { endpoints <- e }})
	}()
	var ui *Endpoint
	select {
	case ui = <-endpoints:
	case err := <-served:
		t.Fatalf("Serve returned before it listened: %v", err)
	}
	if code := consoleGet(t, ui.URL, "api/session", nil); code != http.StatusOK {
		t.Fatalf("GET /api/session: %d", code)
	}
	inW.Close()
	testwait.Within(t, 30*time.Second, "Serve to return once stdin closed", func() {
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if _, err := http.Get(ui.URL + "api/session"); err == nil {
		t.Error("the console is still served after stdio ended")
	}
}

// TestServerStatesRedactURLs: the console's server states show an MCP server's URL without the secrets in it
// (userinfo, query values), as every other printer of servers' state does.
func TestServerStatesRedactURLs(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"DOCS_KEY": "sk-live-SECRET"}
	cfg, err := config.Parse(filepath.Join(dir, "agent.toml"), []byte(`[model]
provider = "test"

[mcp.servers.docs]
url = "http://bob:hunter2@127.0.0.1:1/mcp?api_key=${DOCS_KEY}"
connect_timeout = "1s"
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cfg.State.Backend = config.StateMemory
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return env[k] }, RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	states := app.serverStates()
	b, _ := json.Marshal(states)
	for _, secret := range []string{"hunter2", "sk-live-SECRET"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the console's server states carry %q: %s", secret, b)
		}
	}
	if len(states) != 1 || !strings.Contains(states[0].URL, "127.0.0.1:1/mcp") || !strings.Contains(states[0].URL, "api_key=") {
		t.Errorf("the URL shown is not the server's, redacted: %+v", states)
	}
}
