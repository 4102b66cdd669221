package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/mcpclients"
)

// TestMCPImportAddList imports Claude Desktop's and VS Code's configurations into an agent.toml with comments, adds
// a server by hand, and lists them all with their states.
func TestMCPImportAddList(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	original := `# My agent. Every comment here must survive.
[model]
provider = "test"   # offline

[mcp.servers.fixture]   # the first server
command = "` + self + `"
env = { ` + fixtureEnv + ` = "1" }
# prefix = "fx"   (kept as a comment)

# The serve table comes next.
[serve]
http = "127.0.0.1:8765"
`
	config := writeFile(t, dir, "agent.toml", original)
	claude, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fixture": map[string]any{"command": "something-else"}, // taken: reported, never overwritten
		"second":  map[string]any{"command": self, "env": map[string]string{fixtureEnv: "1", "API_KEY": "sk-literal"}},
		"broken":  map[string]any{"command": filepath.Join(dir, "no-such-server")},
	}})
	writeFile(t, dir, "claude_desktop_config.json", string(claude))
	writeFile(t, dir, "mcp.json", `{
  // VS Code's form, with an input and an environment variable
  "inputs": [{"type": "promptString", "id": "api-token", "description": "The API token", "password": true}],
  "servers": {
    "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${input:api-token}"}},
  }
}`)

	// --print shows the tables and leaves the file alone.
	r := agenthost(t, dir, "", nil, "mcp", "import", "claude_desktop_config.json", "-print")
	if r.code != 1 || !strings.Contains(r.stdout, "[mcp.servers.second]\ncommand = ") || strings.Contains(r.stdout, "something-else") {
		t.Fatalf("import -print: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(config); string(data) != original {
		t.Fatalf("import -print changed the file:\n%s", data)
	}

	r = agenthost(t, dir, "", nil, "mcp", "import", "claude_desktop_config.json")
	if r.code != 1 || !strings.Contains(r.stderr, "fixture: agent.toml has [mcp.servers.fixture] already: left as it is") ||
		!strings.Contains(r.stderr, "not added, as agent.toml has servers of these names: fixture") ||
		!strings.Contains(r.stderr, "second: env.API_KEY is copied as written") ||
		!strings.Contains(r.stdout, "Added second to agent.toml (stdio: ") || !strings.Contains(r.stdout, "Added broken") {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", []string{"API_TOKEN="}, "mcp", "import", "mcp.json")
	if r.code != 0 || !strings.Contains(r.stdout, "Added remote to agent.toml (http: http://127.0.0.1:9/mcp)") ||
		!strings.Contains(r.stderr, `${API_TOKEN} is what VS Code asked for as "The API token"`) {
		t.Fatalf("import mcp.json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "mcp", "add", "third", "-env", fixtureEnv+"=1", "--", self, "-unused-flag")
	if r.code != 0 || !strings.Contains(r.stdout, "Added third to agent.toml (stdio: ") {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range [][]string{
		{"mcp", "add", "third", "--", "x"},
		{"mcp", "add", "bad name", "--", "x"},
		{"mcp", "add", "web", "-url", "ftp://x"},
		{"mcp", "add", "web", "-url", "http://x", "--", "cmd"},
		{"mcp", "add", "nothing"},
	} {
		if r := agenthost(t, dir, "", nil, bad...); r.code == 0 {
			t.Errorf("%q: exit 0\n%s", bad, r.stdout)
		}
	}

	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	rest := text
	for line := range strings.Lines(original) {
		i := strings.Index(rest, line)
		if i < 0 {
			t.Fatalf("line %q of the original lost or out of order:\n%s", line, text)
		}
		rest = rest[i+len(line):]
	}
	// The new tables come after the last server, before the comment that leads into [serve].
	if i, j := strings.Index(text, "[mcp.servers.third]"), strings.Index(text, "# The serve table comes next."); i < 0 || i > j {
		t.Errorf("the new tables are not before [serve]'s comment:\n%s", text)
	}

	r = agenthost(t, dir, "", []string{"API_TOKEN=t"}, "mcp", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "MCP servers not reachable: broken, remote") { // the two that cannot connect
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, row := range []string{
		`(?m)^fixture\s+stdio\s+\S+\s+connected\s+4\s+-$`,
		`(?m)^second\s+stdio\s+\S+\s+connected\s+4\s+-$`,
		`(?m)^third\s+stdio\s+\S+ -unused-flag\s+connected\s+4\s+-$`,
		`(?m)^broken\s+stdio\s+\S+no-such-server\s+failed\s+0\s+\S`,
		`(?m)^remote\s+http\s+http://127\.0\.0\.1:9/mcp\s+failed\s+0\s+\S`,
	} {
		if !regexp.MustCompile(row).MatchString(r.stdout) {
			t.Errorf("list lacks a row matching %s:\n%s", row, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "sk-literal") || strings.Contains(r.stdout, "Bearer") {
		t.Errorf("list shows a secret:\n%s", r.stdout)
	}
}

// TestMCPAddCreatesConfig: `mcp add` in a directory without agent.toml creates it.
func TestMCPAddCreatesConfig(t *testing.T) {
	dir := t.TempDir()
	r := agenthost(t, dir, "", nil, "mcp", "add", "web", "-url", "http://127.0.0.1:9/mcp", "-header", "X-Team: core")
	if r.code != 0 || !strings.Contains(r.stdout, "Created agent.toml.") {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "agent.toml"))
	if want := "[mcp.servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { X-Team = \"core\" }\n"; string(data) != want {
		t.Errorf("agent.toml:\n%s\nwant:\n%s", data, want)
	}
	if r := agenthost(t, dir, "", nil, "mcp", "list"); r.code != 1 || !strings.Contains(r.stdout, "web") || !strings.Contains(r.stderr, "MCP servers not reachable: web") { // nothing listens at port 9
		t.Errorf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMCPImportKeepsTheEnvironment checks that the servers of a client that gave them its whole environment keep it
// (env_passthrough = ["*"], said in a comment and a note), and that Claude Desktop's, which got the same few
// variables as agenthost gives, get nothing more.
func TestMCPImportKeepsTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "mcp.json", `{"servers": {"local": {"command": "npx", "args": ["-y", "x"]}, "remote": {"url": "http://127.0.0.1:9/mcp"}}}`)
	if err := os.Mkdir(filepath.Join(dir, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".cursor/mcp.json", `{"mcpServers": {"cur": {"command": "uvx", "args": ["y"]}}}`)
	writeFile(t, dir, "claude_desktop_config.json", `{"mcpServers": {"desk": {"command": "npx"}}}`)
	writeFile(t, dir, "other.json", `{"mcpServers": {"other": {"command": "npx"}}}`)

	r := agenthost(t, dir, "", nil, "mcp", "import", "mcp.json", "-print")
	want := "[mcp.servers.local]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n" +
		"# VS Code gave this server its whole environment, secrets included: \"*\" keeps that. Narrow it to what the server reads.\n" +
		"env_passthrough = [\"*\"]\n\n[mcp.servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\n"
	if r.code != 0 || r.stdout != want || !strings.Contains(r.stderr, `VS Code gives stdio servers its whole environment`) ||
		!strings.Contains(r.stderr, `env_passthrough = ["*"] keeps local as they ran there`) {
		t.Fatalf("import mcp.json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "mcp", "import", ".cursor/mcp.json")
	data, _ := os.ReadFile(filepath.Join(dir, "agent.toml"))
	if r.code != 0 || !strings.Contains(string(data), "# Cursor gave this server its whole environment") ||
		!strings.Contains(string(data), "env_passthrough = [\"*\"]") || !strings.Contains(r.stderr, "Cursor gives stdio servers") {
		t.Fatalf("import .cursor/mcp.json: exit %d\n%s%s\n%s", r.code, r.stdout, r.stderr, data)
	}
	// The file it wrote is a valid configuration.
	if _, err := config.Load(filepath.Join(dir, "agent.toml")); err != nil {
		t.Fatalf("the imported table does not load: %v\n%s", err, data)
	}
	// Imported again, the server is taken: it is not added, and no note speaks of it.
	r = agenthost(t, dir, "", nil, "mcp", "import", ".cursor/mcp.json")
	if r.code == 0 || !strings.Contains(r.stderr, "already: left as it is") || strings.Contains(r.stderr, "Cursor gives stdio servers") {
		t.Fatalf("import .cursor/mcp.json again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "mcp", "import", "claude_desktop_config.json", "-print")
	if r.code != 0 || strings.Contains(r.stdout, "env_passthrough") || strings.Contains(r.stderr, "env_passthrough") {
		t.Fatalf("import claude_desktop_config.json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "mcp", "import", "other.json", "-print")
	if r.code != 0 || strings.Contains(r.stdout, "env_passthrough") ||
		!strings.Contains(r.stderr, "if the client gave other more (Cursor, Claude Code and VS Code give their whole environment), name what each reads in env_passthrough") ||
		!strings.Contains(r.stderr, "a stdio server gets only "+strings.Join(mcpclients.InheritedEnv()[:3], ", ")) ||
		!strings.Contains(r.stderr, "HTTPS_PROXY") {
		t.Fatalf("import other.json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
