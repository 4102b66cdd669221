package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseEveryProblemAtOnce checks that problems found while decoding, a file that is not there, an unknown
// built-in, a misspelt policy name and a missing root are reported in one error, in line order, each with its line.
func TestParseEveryProblemAtOnce(t *testing.T) {
	dir := t.TempDir()
	src := `[agent]
name = "helper"
max_iteration = 3

[agent.output]
schema_file = "answer.schema.json"

[builtin]
tools = ["doc_search", "calculator"]

[builtin.doc_search]
roots = ["handbook"]

[tools."calcualte"]
require_approval = true
`
	_, err := Parse(filepath.Join(dir, "agent.toml"), []byte(src), envOf(nil))
	want := []string{
		`agent.toml:3: agent.max_iteration: unknown key (did you mean "max_iterations"?)`,
		`agent.toml:6: agent.output.schema_file: cannot read "answer.schema.json": no such file or directory (looked for ` +
			filepath.Join(dir, "answer.schema.json") + `: a relative path starts from the config file's directory)`,
		`agent.toml:9: builtin.tools[1]: unknown built-in tool "calculator" (did you mean "calculate"?); the built-ins are ` +
			`current_time, calculate, fetch_url, web_search, read_file, list_dir, search_files, doc_search`,
		`agent.toml:12: builtin.doc_search.roots[0]: cannot read "handbook": no such file or directory (looked for ` +
			filepath.Join(dir, "handbook") + `: a relative path starts from the config file's directory)`,
		`agent.toml:14: tools.calcualte: matches no tool (did you mean "calculate"?): it is not a built-in, a sub-agent or an A2A peer`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("%T is not one error joining %d", err, len(want))
	}
	for i, e := range joined.Unwrap() {
		var ce *Error
		if !errors.As(e, &ce) || ce.File != "agent.toml" || ce.Line == 0 || ce.Key == "" {
			t.Errorf("problem %d = %#v, want an *Error with a file, a line and a key", i, e)
		}
	}
}

// TestParseToolNames checks the names of built-ins, tool policies and sub-agents' tools against the tools known
// before connecting, one problem at a time, and what must still load.
func TestParseToolNames(t *testing.T) {
	const notKnown = ": it is not a built-in, a sub-agent or an A2A peer"
	tests := []struct{ name, src, want string }{
		{"unknown built-in", "[builtin]\ntools = [\"current_time\",\n  \"calculator\"]\n",
			`agent.toml:2: builtin.tools[1]: unknown built-in tool "calculator" (did you mean "calculate"?); the built-ins are ` +
				"current_time, calculate, fetch_url, web_search, read_file, list_dir, search_files, doc_search"},
		{"unknown built-in like none", "[builtin]\ntools = [\"weather\"]\n",
			`agent.toml:2: builtin.tools[0]: unknown built-in tool "weather"; the built-ins are ` +
				"current_time, calculate, fetch_url, web_search, read_file, list_dir, search_files, doc_search"},
		{"policy typo", "[builtin]\ntools = [\"calculate\"]\n\n[tools.calcualte]\nforced = true\n",
			`agent.toml:4: tools.calcualte: matches no tool (did you mean "calculate"?)` + notKnown},
		{"policy typo of a sub-agent", "[agents.mathematician]\ndescription = \"d\"\n[tools.mathematican]\nforced = true\n",
			`agent.toml:3: tools.mathematican: matches no tool (did you mean "mathematician"?)` + notKnown},
		{"policy typo of a peer", "[a2a.peers.research]\nurl = \"http://127.0.0.1:1\"\n[tools.reserch]\nforced = true\n",
			`agent.toml:3: tools.reserch: matches no tool (did you mean "research"?)` + notKnown},
		{"policy typo in an inline table", "tools = { current_tme = { forced = true } }\n",
			`agent.toml:1: tools.current_tme: matches no tool (did you mean "current_time"?)` + notKnown},
		{"policy typo beside an MCP server", "[mcp.servers.fs]\ncommand = \"fs\"\n[mcp.servers.web]\ncommand = \"web\"\nprefix = \"w\"\n[tools.fetch_ur]\nforced = true\n",
			`agent.toml:6: tools.fetch_ur: matches no tool (did you mean "fetch_url"?)` + notKnown +
				`, and the MCP servers' tool names begin with "fs_" or "w_"`},
		{"sub-agent tool typo", "[agents.a]\ndescription = \"d\"\ntools = [\"current_time\", \"web_serch\"]\n",
			`agent.toml:3: agents.a.tools[1]: "web_serch" matches no tool (did you mean "web_search"?)` + notKnown},
		{"sub-agent typo of another", "[agents.writer]\ndescription = \"d\"\ntools = [\"reseacher\"]\n[agents.researcher]\ndescription = \"d\"\n",
			`agent.toml:3: agents.writer.tools[0]: "reseacher" matches no tool (did you mean "researcher"?)` + notKnown},
		{"code mode tool typo", "[agents.researcher]\ndescription = \"d\"\n[code_mode]\ntools = [\"current_time\", \"reseacher\"]\n",
			`agent.toml:4: code_mode.tools[1]: "reseacher" matches no tool (did you mean "researcher"?)` + notKnown},

		// Names that may be tools, or are like none (a policy for no tool, as before: check warns about it).
		{"policy of a built-in not enabled", "[builtin]\ntools = []\n[tools.fetch_url]\nenabled = false\n", ""},
		{"policy of an MCP tool", "[mcp.servers.fs]\ncommand = \"fs\"\n[tools.fs_read_fle]\nforced = true\n", ""},
		{"policy of a bare MCP tool", "[mcp.servers.fs]\ncommand = \"fs\"\nprefix = \"\"\n[tools.calcualte]\nforced = true\n", ""},
		{"policy of a cut MCP tool name", "[mcp.servers.fs]\ncommand = \"fs\"\n[tools." + strings.Repeat("x", 55) + "_12345678]\nforced = true\n", ""},
		{"policy like no tool", "[tools.not_a_tool]\nenabled = false\n", ""},
		{"sub-agent and peer tools", "[agents.a]\ndescription = \"d\"\ntools = [\"b\", \"p\", \"fs_x\"]\n[agents.b]\ndescription = \"d\"\n" +
			"[a2a.peers.p]\nurl = \"http://127.0.0.1:1\"\n[mcp.servers.fs]\ncommand = \"fs\"\n", ""},
		{"code mode tools of every kind", "[agents.b]\ndescription = \"d\"\n[a2a.peers.p]\nurl = \"http://127.0.0.1:1\"\n" +
			"[mcp.servers.fs]\ncommand = \"fs\"\n[code_mode]\ntools = [\"b\", \"p\", \"fs_x\", \"calculate\"]\n", ""},
		{"a sub-agent is not suggested to itself", "[agents.ab]\ndescription = \"d\"\ntools = [\"ac\"]\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("agent.toml", []byte(tc.src), envOf(nil))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

// TestParseFiles checks the files and directories a configuration names, relative to the config file's directory,
// one problem at a time, and what must still load.
func TestParseFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"ok.json":      `{"type": "object"}`,
		"broken.json":  "{\n  \"type\": \"object\",\n  \"required\": [\"a\",]\n}\n",
		"empty.json":   "",
		"docs/a.md":    "# A",
		"notes.txt":    "x",
		"conf/s.json":  `{}`,
		"conf/x/.keep": "",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	from := ": a relative path starts from the config file's directory)"
	tests := []struct{ name, src, want string }{
		{"schema file missing", "[agent.output]\nschema_file = \"answer.json\"\n",
			`agent.toml:2: agent.output.schema_file: cannot read "answer.json": no such file or directory (looked for ` +
				filepath.Join(dir, "answer.json") + from},
		{"schema file missing, absolute", "[agent.output]\nschema_file = \"" + filepath.Join(dir, "nope.json") + "\"\n",
			`agent.toml:2: agent.output.schema_file: cannot read "` + filepath.Join(dir, "nope.json") + `": no such file or directory`},
		{"schema file is a directory", "[agent.output]\nschema_file = \"docs\"\n",
			`agent.toml:2: agent.output.schema_file: cannot read "docs": is a directory (looked for ` + filepath.Join(dir, "docs") + from},
		{"schema file not JSON", "[agent.output]\nschema_file = \"broken.json\"\n",
			"agent.toml:2: agent.output.schema_file: " + filepath.Join(dir, "broken.json") +
				":3:20: not JSON: invalid character ']' looking for beginning of value"},
		{"schema file empty", "[agent.output]\nschema_file = \"empty.json\"\n",
			"agent.toml:2: agent.output.schema_file: " + filepath.Join(dir, "empty.json") + ":1:1: not JSON: unexpected end of JSON input"},
		{"file root missing", "[builtin]\ntools = [\"read_file\"]\n[builtin.files]\nroots = [\"docs\", \"gone\"]\n",
			`agent.toml:4: builtin.files.roots[1]: cannot read "gone": no such file or directory (looked for ` + filepath.Join(dir, "gone") + from},
		{"file root is a file", "[builtin]\ntools = [\"search_files\"]\n[builtin.files]\nroots = [\"notes.txt\"]\n",
			`agent.toml:4: builtin.files.roots[0]: "notes.txt" is a file, not a directory (looked for ` + filepath.Join(dir, "notes.txt") + from},
		{"doc root missing", "[builtin]\ntools = [\"doc_search\"]\n[builtin.doc_search]\nroots = [\"handbook\"]\n",
			`agent.toml:4: builtin.doc_search.roots[0]: cannot read "handbook": no such file or directory (looked for ` +
				filepath.Join(dir, "handbook") + from},

		{"schema file there", "[agent.output]\nschema_file = \"ok.json\"\n", ""},
		{"roots of tools not enabled", "[builtin.files]\nroots = [\"gone\"]\n[builtin.doc_search]\nroots = [\"gone\"]\n", ""},
		{"roots there", "[builtin]\ntools = [\"list_dir\", \"doc_search\"]\n[builtin.files]\nroots = [\"docs\", \"" + dir + "\"]\n" +
			"[builtin.doc_search]\nroots = [\"docs\"]\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "agent.toml"), []byte(tc.src), envOf(nil))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Parse: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got\n%v\nwant\n%s", err, tc.want)
			}
		})
	}

	// A config file in a sub-directory reads from there; Validate, for a Config built in code, from the current
	// directory.
	c, err := Parse(filepath.Join(dir, "conf", "agent.toml"), []byte("[agent.output]\nschema_file = \"s.json\"\n"), envOf(nil))
	if err != nil {
		t.Fatalf("schema_file beside a config in a sub-directory: %v", err)
	}
	if want := filepath.Join(dir, "conf", "s.json"); c.Agent.Output.SchemaFile != want {
		t.Errorf("SchemaFile = %q, want %q", c.Agent.Output.SchemaFile, want)
	}
	t.Chdir(filepath.Join(dir, "conf"))
	c = Default()
	c.Agent.Output = &Output{SchemaFile: "s.json"}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate with s.json in the current directory: %v", err)
	}
	c.Agent.Output.SchemaFile = "answer.json"
	want := `agent.output.schema_file: cannot read "answer.json": no such file or directory (looked for ` +
		filepath.Join(dir, "conf", "answer.json") + ": a relative path starts from the current directory)"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %s", err, want)
	}
}
