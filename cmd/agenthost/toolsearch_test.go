package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestToolsSearch runs `agenthost tools` over a stdio MCP server (this test binary): the summary line says how many
// tools a run offers and whether tool search would be on under each mode and threshold, and --search ranks them, as
// a table and as JSON.
func TestToolsSearch(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	server := fmt.Sprintf("\n[mcp.servers.fixture]\ncommand = %q\nenv = { %s = \"1\" }\nprefix = \"fx\"\n", self, fixtureEnv)

	summaries := []struct {
		name, agent, want string
	}{
		{"auto under the default threshold", "", `tool search: off \(auto: \d+ tokens <= threshold 6,400\)`},
		{"auto over its threshold", "[agent.tool_search]\nthreshold = 10\n", `tool search: on \(auto: \d+ tokens > threshold 10\)`},
		{"default threshold of a small context", "[model]\ncontext_tokens = 1000\n", `tool search: on \(auto: \d+ tokens > threshold 50\)`},
		{"always", "[agent]\ntool_search = \"always\"\n", `tool search: on \(always\)`},
		{"never", "[agent.tool_search]\nmode = \"never\"\nthreshold = 10\n", `tool search: off \(never\)`},
	}
	for _, tc := range summaries {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, dir, "agent.toml", tc.agent+server)
			r := agenthost(t, dir, "", nil, "tools")
			// current_time and the fixture's four tools.
			if r.code != 0 || !strings.Contains(r.stdout, "fx_shout") || !matches(`(?m)^5 tools offered, estimated \d+ tokens; `+tc.want+`$`, r.stdout) {
				t.Errorf("tools: exit %d, want a summary matching %s:\n%s%s", r.code, tc.want, r.stdout, r.stderr)
			}
		})
	}

	// A disabled tool is not offered; an exclusive one is offered alone.
	writeFile(t, dir, "agent.toml", "[tools.fx_wait]\nenabled = false\n"+server)
	if r := agenthost(t, dir, "", nil, "tools"); !matches(`(?m)^4 tools offered, `, r.stdout) {
		t.Errorf("tools with one disabled: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, dir, "agent.toml", "[tools.fx_note]\nexclusive = true\n"+server)
	if r := agenthost(t, dir, "", nil, "tools"); !matches(`(?m)^1 tool offered, `, r.stdout) {
		t.Errorf("tools with an exclusive one: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	writeFile(t, dir, "agent.toml", server)
	r := agenthost(t, dir, "", nil, "tools", "--search", "upper-case text", "--limit", "2")
	if r.code != 0 || !matches(`(?m)^RANK\s+NAME\s+SOURCE\s+SCORE\s+DESCRIPTION\n1\s+fx_shout\s+mcp:fixture\s+[0-9.]+\s+Upper-cases text\.$`, r.stdout) ||
		strings.Count(strings.TrimSpace(r.stdout), "\n") > 2 || strings.Contains(r.stdout, "tool search:") {
		t.Errorf("tools --search: exit %d, want fx_shout first and at most 2 tools:\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = agenthost(t, dir, "", nil, "tools", "--json", "--search", "upper-case text")
	var hits []struct {
		Rank        int     `json:"rank"`
		Name        string  `json:"name"`
		Source      string  `json:"source"`
		Score       float64 `json:"score"`
		Description string  `json:"description"`
		InputSchema struct {
			Properties map[string]any `json:"properties"`
		} `json:"input_schema"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &hits); r.code != 0 || err != nil || len(hits) == 0 {
		t.Fatalf("tools --search --json: exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if h := hits[0]; h.Rank != 1 || h.Name != "fx_shout" || h.Source != "mcp:fixture" || h.Score <= 0 ||
		h.Description != "Upper-cases text." || h.InputSchema.Properties["text"] == nil {
		t.Errorf("best hit %+v", h)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Rank != i+1 || hits[i].Score > hits[i-1].Score {
			t.Errorf("hit %d %+v after %+v: not ranked best first", i, hits[i], hits[i-1])
		}
	}

	r = agenthost(t, dir, "", nil, "tools", "--search", "zzzz-nothing-like-it", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("tools --search with no match --json: exit %d, %q", r.code, r.stdout)
	}

	for _, args := range [][]string{{"--search", ""}, {"--search", "x", "--limit", "0"}, {"--json"}, {"--limit", "3"}, {"--search", "x", "--limit", "many"}} {
		if r := agenthost(t, dir, "", nil, append([]string{"tools"}, args...)...); r.code != 2 {
			t.Errorf("tools %q: exit %d, want 2:\n%s", args, r.code, r.stderr)
		}
	}
}

// matches reports whether s matches the regular expression pattern.
func matches(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
