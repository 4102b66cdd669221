package evals

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/statedir"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// orchestrator returns an orchestrator over the scripted model server, with the calculate tool, whose conversations
// are kept in memory.
func orchestrator(t *testing.T, respond func(*fakellm.Request) fakellm.Turn) (*host.Orchestrator, *fakellm.Server) {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetResponder(respond)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := builtin.New([]string{"calculate"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close() })
	return host.New(model, host.NewToolManager([]host.Toolset{tools}, nil), nil), srv
}

// byPrompt answers each request by what its messages say, so that cases run concurrently and deterministically.
func byPrompt(req *fakellm.Request) fakellm.Turn {
	last := req.Messages[len(req.Messages)-1]
	all := func(s string) bool {
		return slices.ContainsFunc(req.Messages, func(m fakellm.Message) bool { return strings.Contains(m.Content, s) })
	}
	switch {
	case last.Role == "tool":
		return fakellm.Turn{Text: "The sum: " + last.ToolOutput() + "."}
	case all("I am Ada."):
		return fakellm.Turn{Text: "Your name is Ada."}
	case all("capital"):
		return fakellm.Turn{Text: "Paris is the capital of France."}
	case all("Add"):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculate", Arguments: `{"expression": "2 + 3"}`}}}
	case all("wrong"):
		return fakellm.Turn{Text: "London is the capital of France."}
	}
	return fakellm.Turn{Text: "I do not know."}
}

const dataset = `# the cases of the engine's test
{"name": "capital", "prompt": "What is the capital of France?", "expect": {"contains": ["paris"], "not_contains": ["London"], "stopped_by": "answered"}}
{"name": "sum", "prompt": "Add 2 and 3.", "expect": {"contains": ["5"], "tools_called": ["calculate"]}}

{"name": "memory", "prompt": "What is my name?", "conversation": [{"role": "user", "content": "I am Ada."}, {"role": "assistant", "content": "Hello Ada."}], "expect": {"contains": ["Ada"]}}
{"name": "wrong", "prompt": "Name the wrong city.", "expect": {"contains": ["Paris"], "tools_called": ["calculate"], "min_sources": 1}}
`

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunCases(t *testing.T) {
	orch, _ := orchestrator(t, byPrompt)
	cases, err := ReadDataset(write(t, t.TempDir(), "cases.jsonl", dataset))
	if err != nil {
		t.Fatal(err)
	}
	var ended []string // appended without a lock: onCase calls must not overlap (the race detector says)
	report := RunCases(t.Context(), orch, cases, 3, func(r *Result) { ended = append(ended, r.Name) })

	if report.Passed != 3 || report.Failed != 1 || len(report.Cases) != 4 {
		t.Fatalf("report: %d passed, %d failed, %d cases", report.Passed, report.Failed, len(report.Cases))
	}
	var names []string
	for _, c := range report.Cases {
		names = append(names, c.Name)
		if c.Name != "wrong" && !c.Passed {
			t.Errorf("case %s failed: %v (%q)", c.Name, c.Failures, c.Answer)
		}
	}
	if want := []string{"capital", "sum", "memory", "wrong"}; !slices.Equal(names, want) {
		t.Errorf("cases in the order %v, want the dataset's %v", names, want)
	}
	slices.Sort(ended)
	if want := []string{"capital", "memory", "sum", "wrong"}; !slices.Equal(ended, want) {
		t.Errorf("onCase saw %v, want each case once", ended)
	}
	if sum := report.Cases[1]; !slices.Equal(sum.Tools, []string{"calculate"}) || sum.Answer != "The sum: 2 + 3 = 5." || sum.Line != 3 {
		t.Errorf("the sum case: %+v", sum)
	}
	wrong := report.Cases[3]
	want := []string{`the answer does not contain "Paris"`, "calculate was not called", "the answer cites 0 of the 1 sources expected"}
	if wrong.Passed || !slices.Equal(wrong.Failures, want) || wrong.Line != 6 || wrong.StoppedBy != host.StopAnswered {
		t.Errorf("the wrong case: %+v\nwant failures %q", wrong, want)
	}
}

// TestRunCasesBounded checks that no more cases run at once than asked: each model request waits until as many are
// in flight as the bound allows, and the most ever in flight is the bound.
func TestRunCasesBounded(t *testing.T) {
	const bound = 2
	var mu sync.Mutex
	in, most := 0, 0
	full, closed := make(chan struct{}), false
	orch, _ := orchestrator(t, func(*fakellm.Request) fakellm.Turn {
		mu.Lock()
		in++
		most = max(most, in)
		if in == bound && !closed {
			close(full)
			closed = true
		}
		wait := full
		mu.Unlock()
		select { // a safety net only: with the bound working, the slots fill at once
		case <-wait:
		case <-time.After(10 * time.Second):
		}
		mu.Lock()
		in--
		if in == 0 {
			full, closed = make(chan struct{}), false
		}
		mu.Unlock()
		return fakellm.Turn{Text: "Paris."}
	})
	var lines []string
	for i := range 6 {
		lines = append(lines, `{"name": "c`+string(rune('0'+i))+`", "prompt": "capital?", "expect": {"contains": ["Paris"]}}`)
	}
	cases, err := ReadDataset(write(t, t.TempDir(), "six.jsonl", strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	report := RunCases(t.Context(), orch, cases, bound, nil)
	if report.Passed != 6 {
		t.Fatalf("report: %+v", report)
	}
	if most != bound {
		t.Errorf("%d cases ran at once, want %d", most, bound)
	}
}

func TestSuite(t *testing.T) {
	orch, _ := orchestrator(t, byPrompt)
	dir := t.TempDir()
	a := write(t, dir, "evals/a.jsonl", dataset)
	bad := write(t, dir, "evals/bad.jsonl", "{\"name\": \"x\"}\n")
	missing := filepath.Join(dir, "smoke.jsonl")
	s := NewSuite(orch, []string{filepath.Join(dir, "evals/*.jsonl"), missing, a})

	got := s.Datasets()
	if len(got) != 3 {
		t.Fatalf("datasets %+v, want a, bad and smoke, a listed once", got)
	}
	if d := got[0]; d != (Dataset{Name: "a", Path: a, Cases: 4}) {
		t.Errorf("a: %+v", d)
	}
	if d := got[1]; d.Name != "bad" || d.Path != bad || d.Cases != 0 || d.Error != bad+":1: prompt is required" {
		t.Errorf("bad: %+v", d)
	}
	if d := got[2]; d.Name != "smoke" || d.Cases != 0 || !strings.Contains(d.Error, "no such file") {
		t.Errorf("smoke: %+v", d)
	}

	// The globs are expanded at each call: a new file appears, and a file named alone once it exists.
	write(t, dir, "evals/b.jsonl", `{"prompt": "What is the capital of France?", "expect": {"contains": ["Paris"]}}`)
	write(t, dir, "smoke.jsonl", `{"prompt": "What is the capital of France?"}`)
	var names []string
	for _, d := range s.Datasets() {
		if d.Error != "" && d.Name != "bad" {
			t.Errorf("%s: %s", d.Name, d.Error)
		}
		names = append(names, d.Name)
	}
	if want := []string{"a", "b", "bad", "smoke"}; !slices.Equal(names, want) {
		t.Errorf("datasets %v, want %v", names, want)
	}

	var seen int
	report, err := s.Run(t.Context(), "a", 0, func(*Result) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	if report.Passed != 3 || report.Failed != 1 || seen != 4 {
		t.Errorf("run a: %d passed, %d failed, onCase %d times", report.Passed, report.Failed, seen)
	}
	if _, err := s.Run(t.Context(), "nothing", 1, nil); !errors.Is(err, ErrUnknownDataset) || !strings.Contains(err.Error(), `"nothing"`) {
		t.Errorf("an unknown dataset: %v", err)
	}
	if _, err := s.Run(t.Context(), "bad", 1, nil); err == nil || err.Error() != bad+":1: prompt is required" {
		t.Errorf("a dataset that does not read: %v", err)
	}
}

// A glob of [eval] datasets that matches a SQLite file agenthost has open (the state, say) lists it as a dataset
// that does not read, without opening it: closing the descriptor would drop the process's locks on it.
func TestSuiteLeavesHeldDatabaseAlone(t *testing.T) {
	orch, _ := orchestrator(t, byPrompt)
	dir := t.TempDir()
	write(t, dir, "evals/a.jsonl", dataset)
	state := write(t, dir, "evals/state.jsonl", "")
	t.Cleanup(statedir.HoldSQLite(state))
	s := NewSuite(orch, []string{filepath.Join(dir, "evals/*")})
	got := s.Datasets()
	if len(got) != 2 || got[0].Cases != 4 || got[1].Name != "state" || !strings.Contains(got[1].Error, "a database agenthost has open") {
		t.Errorf("datasets %+v; want a, and the held file refused", got)
	}
}

// TestReadDatasetEveryBadLine checks that every bad line of a dataset is reported at once, in line order, with
// the valid stop reasons when one is wrong and the column where the JSON is at fault. cmd/agenthost's eval test
// reads the same file.
func TestReadDatasetEveryBadLine(t *testing.T) {
	path := filepath.Join("testdata", "every-bad-line.jsonl")
	_, err := ReadDataset(path)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		path + `:3: expect.stopped_by "finished" is not a reason a run stops: the reasons are answered, tool_took_control, ` +
			`iteration_limit, usage_limit, cancelled, no_output, invalid_output, error`,
		path + `:5:63: invalid JSON: invalid character ']' looking for beginning of value`,
		path + `:6:69: expect.min_sources must be an integer (got a string)`,
		path + `:7: prompt is required`,
		path + `:7: unknown check "tone": the checks are citations, complete, schema, grounded`,
		path + `:7: expect.min_sources must not be negative`,
		path + `:8:35: invalid JSON: more after the case's object (one case per line)`,
		path + `:9:29: invalid JSON: the case ends before its object closes (a case is one JSON object on one line)`,
		path + `:10:1: a case is a JSON object (got an array)`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
