package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestImportClaudeDesktop(t *testing.T) {
	im, err := ImportServers([]byte(`{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
    "github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal"}},
    "My Notes!": {"command": "notes-mcp", "env": {"PRICE": "5$"}, "alwaysAllow": ["read"]},
    "linear": {"type": "http", "url": "https://mcp.linear.app/mcp"},
    "legacy": {"type": "sse", "url": "https://example.com/sse", "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
    "off": {"command": "x", "disabled": true}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range im.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"filesystem", "github", "My-Notes", "linear", "legacy"}; !slices.Equal(names, want) {
		t.Fatalf("servers %q, want %q in the file's order", names, want)
	}
	var got strings.Builder
	for _, s := range im.Servers {
		got.WriteString(s.TOML())
	}
	want := `[mcp.servers.filesystem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
[mcp.servers.github]
command = "docker"
args = ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_literal" }
[mcp.servers.My-Notes]
command = "notes-mcp"
env = { PRICE = "5$$" }
[mcp.servers.linear]
transport = "http"
url = "https://mcp.linear.app/mcp"
[mcp.servers.legacy]
transport = "sse"
url = "https://example.com/sse"
headers = { Authorization = "Bearer ${API_TOKEN}" }
`
	if got.String() != want {
		t.Errorf("TOML:\n%s\nwant:\n%s", got.String(), want)
	}
	notes := strings.Join(im.Notes, "\n")
	for _, n := range []string{
		"off: left out: it is disabled there",
		"My Notes!: ignored alwaysAllow",
		"My Notes!: named My-Notes",
		`github: env.GITHUB_PERSONAL_ACCESS_TOKEN is copied as written`,
	} {
		if !strings.Contains(notes, n) {
			t.Errorf("notes lack %q:\n%s", n, notes)
		}
	}
	if !slices.Equal(im.Variables, []string{"API_TOKEN"}) {
		t.Errorf("variables %q", im.Variables)
	}
}

func TestImportVSCode(t *testing.T) {
	im, err := ImportServers([]byte(`{
  // VS Code allows comments
  "inputs": [{"type": "promptString", "id": "github-token", "description": "GitHub token", "password": true}],
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
               "headers": {"Authorization": "Bearer ${input:github-token}"}}, /* and block comments */
    "files": {"type": "stdio", "command": "npx", "args": ["-y", "server-filesystem", "${workspaceFolder}", "${userHome}/notes", "a // b"],
              "env": {"DEBUG": "${env:DEBUG_LEVEL}", "MODE": "${MODE:-fast}"}},
  },
}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Servers) != 2 {
		t.Fatalf("servers %+v", im.Servers)
	}
	gh, files := im.Servers[0], im.Servers[1]
	if gh.Headers["Authorization"] != "Bearer ${GITHUB_TOKEN}" || gh.Transport != TransportHTTP {
		t.Errorf("github %+v", gh)
	}
	if !slices.Equal(files.Args, []string{"-y", "server-filesystem", "${WORKSPACE_FOLDER}", "${HOME}/notes", "a // b"}) ||
		files.Env["DEBUG"] != "${DEBUG_LEVEL}" || files.Env["MODE"] != "${MODE}" || files.Transport != "" {
		t.Errorf("files %+v", files)
	}
	if want := []string{"DEBUG_LEVEL", "GITHUB_TOKEN", "HOME", "MODE", "WORKSPACE_FOLDER"}; !slices.Equal(im.Variables, want) {
		t.Errorf("variables %q, want %q", im.Variables, want)
	}
	notes := strings.Join(im.Notes, "\n")
	for _, n := range []string{`${GITHUB_TOKEN} is what VS Code asked for as "GitHub token"`, "${WORKSPACE_FOLDER} stands for the client's ${workspaceFolder}",
		"${MODE} has no default"} {
		if !strings.Contains(notes, n) {
			t.Errorf("notes lack %q:\n%s", n, notes)
		}
	}
}

func TestImportErrors(t *testing.T) {
	for _, tt := range []struct{ name, json, want string }{
		{"not json", `{"mcpServers": `, "not a JSON configuration"},
		{"no servers", `{"theme": "dark"}`, `no "mcpServers" or "servers" object`},
		{"neither command nor url", `{"mcpServers": {"x": {"args": ["a"]}}}`, `server "x" has neither a command nor a URL`},
		{"unknown type", `{"servers": {"x": {"type": "ws", "url": "ws://x"}}}`, `server "x": unknown type "ws"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ImportServers([]byte(tt.json)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAddServers(t *testing.T) {
	fs := ServerTable{Name: "fs", Command: "npx", Args: []string{"-y", `quo"te\`}, Env: map[string]string{"A B": "tab\there"}}
	web := ServerTable{Name: "web", URL: "https://example.com/mcp"}
	tests := []struct{ name, src, want string }{
		{"empty file", "", "# added\n[mcp.servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"quo\\\"te\\\\\"]\nenv = { \"A B\" = \"tab\\there\" }\n\n[mcp.servers.web]\nurl = \"https://example.com/mcp\"\n"},
		{"no servers yet: at the end", "# my agent\n[agent]\nname = \"x\" # keep me\n",
			"# my agent\n[agent]\nname = \"x\" # keep me\n\n# added\n[mcp.servers.fs]\n"},
		{"after the last server, before the next table's comments", `[agent]
name = "x"

[mcp.servers.old]
command = "old"
# include = ["a"]   (a comment of old's)

# The serve table.
# More about it.
[serve]
http = "127.0.0.1:1"
`, `[mcp.servers.old]
command = "old"
# include = ["a"]   (a comment of old's)

# added
[mcp.servers.fs]
command = "npx"
args = ["-y", "quo\"te\\"]
env = { "A B" = "tab\there" }

[mcp.servers.web]
url = "https://example.com/mcp"

# The serve table.
# More about it.
[serve]
http = "127.0.0.1:1"
`},
		{"no newline at the end", "[mcp.servers.old]\ncommand = \"old\"", "command = \"old\"\n\n# added\n[mcp.servers.fs]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AddServers([]byte(tt.src), "added", []ServerTable{fs, web})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("got:\n%s\nwant it to contain:\n%s", out, tt.want)
			}
			c, err := Parse("agent.toml", out, envOf(nil))
			if err != nil {
				t.Fatalf("the result does not load: %v\n%s", err, out)
			}
			if s := c.MCP.Servers["fs"]; len(s.Args) != 2 || s.Args[1] != `quo"te\` || s.Env["A B"] != "tab\there" {
				t.Errorf("fs reads back as %+v", s)
			}
		})
	}
	if _, err := AddServers([]byte("[mcp.servers.fs]\ncommand = \"x\"\n"), "", []ServerTable{fs}); err == nil ||
		!strings.Contains(err.Error(), "[mcp.servers.fs] exists already") {
		t.Errorf("a taken name: %v", err)
	}
	if _, err := AddServers([]byte("[mcp]\nservers = \"none\"\n"), "", []ServerTable{fs}); err == nil {
		t.Error("a file whose mcp.servers is not a table took a server")
	}
}

// TestAddServersToExample adds a server to the repository's agent.toml: every line of it stays, in order, and the
// result still loads.
func TestAddServersToExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := AddServers(src, "", []ServerTable{{Name: "added", Command: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	rest := string(out)
	for line := range strings.Lines(string(src)) {
		i := strings.Index(rest, line)
		if i < 0 {
			t.Fatalf("line %q lost or moved", line)
		}
		rest = rest[i+len(line):]
	}
	c, err := Parse("agent.toml", out, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.Servers["added"].Command != "x" {
		t.Errorf("servers %+v", c.MCP.Servers)
	}
}
