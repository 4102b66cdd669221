package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestA2ACardToolNames: the agent card, served to anyone without a token, does not name the agent's tools unless
// [serve] card_lists_tools asks for it.
func TestA2ACardToolNames(t *testing.T) {
	for _, list := range []bool{false, true} {
		dir := t.TempDir()
		config := filepath.Join(dir, "agent.toml")
		extra := ""
		if list {
			extra = "card_lists_tools = true\n"
		}
		writeFile(t, dir, "agent.toml", `
[model]
provider = "test"

[builtin]
tools = ["current_time", "calculate"]

[serve]
`+extra)
		srv := startServeA2A(t, nil, "serve", "--config", config, "--a2a", "127.0.0.1:0")
		resp, err := testHTTP.Get(srv.base + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(raw), `"skills"`) {
			t.Fatalf("card: HTTP %d, %v\n%s", resp.StatusCode, err, raw)
		}
		for _, name := range []string{"current_time", "calculate"} {
			if got := strings.Contains(string(raw), name); got != list {
				t.Errorf("card_lists_tools %v: the card names %s: %v\n%s", list, name, got, raw)
			}
		}
	}
}

// TestCheckWarnsOfWebAndWrites: check warns when a tool that reads the web is enabled with MCP tools that may write
// and run without approval, naming them, and not once those ask for approval or are marked read-only.
func TestCheckWarnsOfWebAndWrites(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(builtins, policies string) string {
		return fmt.Sprintf(`
[model]
provider = "test"

[builtin]
tools = [%s]

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"
include = ["note", "shout"]
%s`, builtins, self, fixtureEnv, policies)
	}
	const warning = "tools that read the web (fetch_url) are enabled with tools that may write and run without approval (fx_note, fx_shout)"
	tests := []struct {
		name, builtins, policies string
		warn                     bool
	}{
		{"fetch_url with writes", `"fetch_url"`, "", true},
		{"no web", `"current_time"`, "", false},
		{"writes need approval", `"fetch_url"`, "[tools.\"fx_note\"]\nrequire_approval = true\n[tools.\"fx_shout\"]\nread_only = true\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, dir, "agent.toml", config(tt.builtins, tt.policies))
			r := agenthost(t, dir, "", nil, "check")
			if r.code != 0 {
				t.Fatalf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got := strings.Contains(r.stderr, warning); got != tt.warn {
				t.Errorf("warned %v, want %v:\n%s", got, tt.warn, r.stderr)
			}
		})
	}
}
