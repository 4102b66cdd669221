package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// TestOfflineModelCallsOnlyReadOnlyTools: the offline test model chosen for want of a configured model calls only the
// tools that only read, and names the others on stderr; asked for by name, it calls every tool. The fixture's note
// tool writes a file in the directory agenthost runs in.
func TestOfflineModelCallsOnlyReadOnlyTools(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config := func(provider string) string {
		return fmt.Sprintf(`
[model]
provider = %q

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"
include = ["note", "shout"]

[tools."fx_shout"]
read_only = true
`, provider, self, fixtureEnv)
	}
	called := func(t *testing.T, r result) []string {
		t.Helper()
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
			t.Fatalf("run: exit %d, %v\nstdout %s\nstderr %s", r.code, err, r.stdout, r.stderr)
		}
		var names []string
		for _, c := range ans.ToolCalls {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		return names
	}

	dir := t.TempDir()
	written := filepath.Join(dir, "a") // where note writes, given the arguments the test model makes up
	writeFile(t, dir, "agent.toml", config("auto"))
	r := agenthost(t, dir, "", nil, "run", "--json", "tidy up my folder")
	if got := called(t, r); !slices.Equal(got, []string{"current_time", "fx_shout"}) {
		t.Errorf("provider auto without a key called %q, want current_time (annotated read-only) and fx_shout (read_only policy)", got)
	}
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Errorf("the write tool ran: stat %s: %v", written, err)
	}
	lines := strings.Split(r.stderr, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, "offline test model calls only read-only tools; it left alone: fx_note ")
	}) || !strings.Contains(r.stderr, "using the offline test model") {
		t.Errorf("stderr does not name the tool left alone and the model:\n%s", r.stderr)
	}

	writeFile(t, dir, "agent.toml", config("test"))
	r = agenthost(t, dir, "", nil, "run", "--json", "tidy up my folder")
	if got := called(t, r); !slices.Equal(got, []string{"current_time", "fx_note", "fx_shout"}) {
		t.Errorf("provider test called %q, want every tool", got)
	}
	if data, err := os.ReadFile(written); err != nil || strings.TrimSpace(string(data)) == "" {
		t.Errorf("provider test: note wrote %q, %v", data, err)
	}
	if strings.Contains(r.stderr, "left alone") {
		t.Errorf("provider test left tools alone:\n%s", r.stderr)
	}

	// -model test asks for it by name too.
	writeFile(t, dir, "agent.toml", config("auto"))
	r = agenthost(t, dir, "", nil, "run", "--json", "--model", "test", "tidy up my folder")
	if got := called(t, r); !slices.Contains(got, "fx_note") {
		t.Errorf("-model test called %q, want fx_note among them", got)
	}
}

// TestOfflineModelLeavesTheFilesystemServerAlone: with the real filesystem MCP server on a folder and no model
// configured, the offline test model calls only the server's read-only tools, and the folder is as it was.
func TestOfflineModelLeavesTheFilesystemServerAlone(t *testing.T) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, files, "notes.txt", "keep me\n")
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[mcp.servers.fs]
command = %q
args = [%q, %q]
`, peers.Node(t), peers.Bin(t, "mcp-server-filesystem"), files))
	r := agenthost(t, dir, "", nil, "run", "--json", "tidy up my folder")
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
		t.Fatalf("run: exit %d, %v\nstdout %s\nstderr %s", r.code, err, r.stdout, r.stderr)
	}
	var called []string
	for _, c := range ans.ToolCalls {
		called = append(called, c.Name)
	}
	if !slices.Contains(called, "fs_list_allowed_directories") {
		t.Errorf("called %q, want the read-only tools, such as fs_list_allowed_directories", called)
	}
	for _, w := range []string{"fs_write_file", "fs_edit_file", "fs_create_directory", "fs_move_file"} {
		if slices.Contains(called, w) {
			t.Errorf("the offline test model called %s", w)
		}
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not name %s as left alone:\n%s", w, r.stderr)
		}
	}
	entries, err := os.ReadDir(files)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(files, "notes.txt"))
	if len(entries) != 1 || string(data) != "keep me\n" {
		t.Errorf("the folder changed: %d entries, notes.txt %q", len(entries), data)
	}
}
