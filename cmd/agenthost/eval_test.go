package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/evals"
)

// evalConfig writes an agent.toml for the scripted model replaying script, with the fixture MCP server (prefix fx)
// and the complete check on every answer.
func evalConfig(t *testing.T, dir, script string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "script.jsonl", script)
	return writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "scripted"
script = "script.jsonl"

[builtin]
tools = []

[eval]
checks = ["complete"]

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"
`, self, fixtureEnv))
}

// The script answers each case by its prompt (match), so that the cases run concurrently and deterministically;
// the memory case's answer matches a message of its conversation, which only a request with the history has.
const evalScript = `
{"match": "capital", "text": "Paris is the capital of France."}
{"match": "document", "tool_calls": [{"name": "fx_cite"}]}
{"match": "document", "text": "It says hello [source 1]."}
{"match": "as JSON", "tool_calls": [{"name": "final_answer", "arguments": {"city": "Lyon"}}]}
{"match": "wrong city", "text": "London is the capital of France [source 3]."}
{"match": "I am Ada.", "text": "Your name is Ada."}
`

const evalDataset = `# cases of the eval test
{"name": "capital", "prompt": "What is the capital of France?", "expect": {"contains": ["paris"], "not_contains": ["London"], "checks_passed": ["complete"], "stopped_by": "answered"}}
{"name": "document", "prompt": "What does the document say?", "expect": {"tools_called": ["fx_cite"], "min_sources": 1, "checks_passed": ["citations"]}}
{"name": "structured", "prompt": "Which city, as JSON?", "output_schema": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}},
  "expect": {"matches_schema": {"type": "object", "properties": {"city": {"const": "Lyon"}}}}}
{"name": "wrong", "prompt": "Name the wrong city.", "expect": {"contains": ["Paris"], "tools_called": ["fx_cite"], "min_sources": 1, "checks_passed": ["citations"]}}
{"name": "memory", "prompt": "What is my name?", "conversation": [{"role": "user", "content": "I am Ada."}, {"role": "assistant", "content": "Hello Ada."}], "expect": {"contains": ["Ada"]}}
`

func TestEval(t *testing.T) {
	dir := t.TempDir()
	cfg := evalConfig(t, dir, evalScript)
	dataset := writeFile(t, dir, "cases.jsonl", strings.Replace(evalDataset, "\n  \"expect\"", " \"expect\"", 1))

	r := agenthost(t, dir, "", nil, "eval", "--config", cfg, "--concurrency", "3", "--json", dataset)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a case fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var report evals.Report
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if report.Passed != 4 || report.Failed != 1 || len(report.Cases) != 5 {
		t.Fatalf("report: %d passed, %d failed, %d cases\n%s", report.Passed, report.Failed, len(report.Cases), r.stdout)
	}
	for _, c := range report.Cases {
		if c.Name == "wrong" {
			continue
		}
		if !c.Passed {
			t.Errorf("case %s failed: %v (%s)", c.Name, c.Failures, c.Answer)
		}
	}
	wrong := report.Cases[3]
	want := []string{
		`the answer does not contain "Paris"`,
		"fx_cite was not called",
		"the answer cites 0 of the 1 sources expected",
		"the citations check failed: the answer cites [source 3], which no tool returned",
	}
	if wrong.Name != "wrong" || wrong.Passed || strings.Join(wrong.Failures, "\n") != strings.Join(want, "\n") {
		t.Errorf("the wrong case: %+v\nwant failures %q", wrong, want)
	}
	if doc := report.Cases[1]; doc.Sources != 1 || len(doc.Tools) != 1 || len(doc.Checks) != 2 {
		t.Errorf("the document case: %+v", doc)
	}
	var out bytes.Buffer
	if s := report.Cases[2]; json.Compact(&out, s.Output) != nil || out.String() != `{"city":"Lyon"}` {
		t.Errorf("the structured case's output: %s", s.Output)
	}

	// The table, a summary, and the failures spelled out.
	r = agenthost(t, dir, "", nil, "eval", "--config", cfg, dataset)
	if r.code != 1 || !strings.Contains(r.stdout, "5 cases: 4 passed, 1 failed") || !strings.Contains(r.stdout, "wrong (line 5):\n  - the answer does not contain \"Paris\"") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if line := lineWith(r.stdout, "document"); !strings.Contains(line, "pass") || !strings.Contains(line, "fx_cite") || !strings.Contains(line, "2/2") {
		t.Errorf("the document case's row: %q", line)
	}

	// -run picks cases by name.
	r = agenthost(t, dir, "", nil, "eval", "--config", evalConfig(t, dir, evalScript), "--run", "^(capital|memory)$", dataset)
	if r.code != 0 || !strings.Contains(r.stdout, "2 cases: 2 passed, 0 failed") || strings.Contains(r.stdout, "document") {
		t.Errorf("-run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = agenthost(t, dir, "", nil, "eval", "--config", cfg, "--run", "nothing", dataset); r.code != 2 || !strings.Contains(r.stderr, "matches no case") {
		t.Errorf("-run matching nothing: exit %d, %s", r.code, r.stderr)
	}

	// Passing cases only: exit 0.
	passing := writeFile(t, dir, "passing.jsonl", strings.Join(strings.Split(evalDataset, "\n")[1:3], "\n"))
	r = agenthost(t, dir, "", nil, "eval", "--config", evalConfig(t, dir, evalScript), passing)
	if r.code != 0 || !strings.Contains(r.stdout, "2 cases: 2 passed, 0 failed") {
		t.Errorf("passing cases: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestEvalDatasetErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := evalConfig(t, dir, evalScript)
	for _, tc := range []struct{ dataset, want string }{
		{`{"prompt": "x", "expect": {"containz": ["a"]}}`, `bad.jsonl:1: json: unknown field "containz"`},
		{"\n{\"name\": \"a\"}", "bad.jsonl:2: prompt is required"},
		{`{"prompt": "x", "checks": ["tone"]}`, `bad.jsonl:1: unknown check "tone"`},
		{`{"prompt": "x", "output_schema": {"type": 3}}`, "bad.jsonl:1: output_schema:"},
		{"{\"name\": \"a\", \"prompt\": \"x\"}\n{\"name\": \"a\", \"prompt\": \"y\"}", `bad.jsonl:2: the name "a" is taken by line 1`},
		{"# nothing\n", "bad.jsonl: no cases"},
	} {
		path := writeFile(t, dir, "bad.jsonl", tc.dataset)
		r := agenthost(t, dir, "", nil, "eval", "--config", cfg, path)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("dataset %q: exit %d, %s; want %q", tc.dataset, r.code, r.stderr, tc.want)
		}
	}
}

// TestEvalDatasetEveryBadLine checks that the command reports every bad line of a dataset at once, in line order,
// with the valid stop reasons when one is wrong and the column where the JSON is at fault, and runs nothing
// (internal/evals tests the reading itself, of the same file).
func TestEvalDatasetEveryBadLine(t *testing.T) {
	dir := t.TempDir()
	path, err := filepath.Abs(filepath.Join("..", "..", "internal", "evals", "testdata", "every-bad-line.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// What the engine reports of the file, which internal/evals checks line by line.
	_, readErr := evals.ReadDataset(path)
	if readErr == nil || strings.Count(readErr.Error(), "\n") != 8 {
		t.Fatalf("the dataset's errors: %v", readErr)
	}
	r := agenthost(t, dir, "", nil, "eval", "--config", evalConfig(t, dir, evalScript), path)
	if r.code != 2 || !strings.Contains(r.stderr, readErr.Error()) {
		t.Errorf("eval: exit %d\n%s", r.code, r.stderr)
	}
}
