package wiring

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// TestEvals checks that the datasets of [eval] datasets are listed and run through the configured agent, and that
// running them leaves the state database (a real SQLite file) as it was, while the app's own runs keep their
// conversations in it.
func TestEvals(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	s.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "I am Ada.") {
				return fakellm.Turn{Text: "Your name is Ada."}
			}
		}
		return fakellm.Turn{Text: "Paris is the capital of France."}
	})
	dir := t.TempDir()
	for name, text := range map[string]string{
		"evals/geo.jsonl": `{"name": "capital", "prompt": "What is the capital of France?", "expect": {"contains": ["Paris"], "checks_passed": ["complete"]}}
{"name": "memory", "prompt": "What is my name?", "conversation": [{"role": "user", "content": "I am Ada."}, {"role": "assistant", "content": "Hello."}], "expect": {"contains": ["Ada"]}}
`,
		"agent.toml": `[model]
provider = "openai"
model = "scripted"
base_url = "` + s.URL + `"
api_key_env = "MODEL_KEY"

[builtin]
tools = ["calculate"]

[state]
path = "state.db"

[eval]
checks = ["complete"]
datasets = ["evals/*.jsonl"]
`,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(filepath.Join(dir, "agent.toml"), data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return map[string]string{"MODEL_KEY": "sk"}[k] }, Version: "test", RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if app.State() == nil {
		t.Fatal("the app keeps no state database")
	}

	suite := app.Evals()
	if suite == nil {
		t.Fatal("Evals is nil with a dataset configured")
	}
	want := evals.Dataset{Name: "geo", Path: filepath.Join(dir, "evals", "geo.jsonl"), Cases: 2}
	if got := suite.Datasets(); len(got) != 1 || got[0] != want {
		t.Fatalf("Datasets = %+v, want [%+v]", got, want)
	}
	report, err := suite.Run(t.Context(), "geo", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if report.Passed != 2 || report.Failed != 0 {
		t.Fatalf("report: %+v", report.Cases)
	}
	if c := report.Cases[0]; len(c.Checks) != 1 || c.Checks[0].Name != "complete" {
		t.Errorf("the capital case ran without [eval]'s check: %+v", c.Checks)
	}
	// The console lists the cases' runs, with their content, as runs of the origin "eval".
	var evalRuns int
	for _, r := range app.Runs().Runs() {
		if r.Origin == "eval" && r.Content && r.Status == "answered" {
			evalRuns++
		}
	}
	if evalRuns != 2 {
		t.Errorf("the recorder holds %d answered eval runs with their content, want 2: %+v", evalRuns, app.Runs().Runs())
	}

	// The app's own orchestrator keeps its conversations in the database, so that the count below can tell.
	ans, err := app.Orchestrator().Ask(t.Context(), &host.Request{Prompt: "Capital of France?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	app.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	rows, err := db.Query(`SELECT id FROM conversations`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != ans.ConversationID {
		t.Errorf("conversations in the state database: %q, want only the app's run's %q", ids, ans.ConversationID)
	}
}

func TestEvalsNone(t *testing.T) {
	cfg, err := config.Parse("agent.toml", []byte("[model]\nprovider = \"test\"\n[state]\nbackend = \"memory\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if s := app.Evals(); s != nil {
		t.Errorf("Evals = %+v without [eval] datasets, want nil", s)
	}
}
