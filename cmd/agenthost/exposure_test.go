package main

import (
	"io"
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
