package builtin

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/store"
)

// eventually polls cond until it holds or 20 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not the case after 20s", what)
		}
	}
}

func TestDocSearch(t *testing.T) {
	docs := fileTree(t, map[string]string{
		"leave.md":    "# Leave policy\n\nEvery employee has 30 days of paid leave a year. Leave is booked in the HR portal.\n",
		"expenses.md": "# Expenses\n\nKeep receipts. Paid leave is not an expense.\n",
		"guide.html":  "<title>Laptop guide</title><p>New hires get a laptop on their first day.</p>",
	})
	state := t.TempDir()
	var logs testwait.Buffer
	ts, err := New([]string{"doc_search"}, &Options{
		StateDir:  state,
		Agent:     "newbie",
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DocSearch: DocSearchOptions{Roots: []string{docs}, RefreshInterval: 50 * time.Millisecond, MaxResults: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	eventually(t, "the index is ready", func() bool { return ts.Statuses()[0].State == "ready" })
	if st := ts.Statuses()[0]; st.Tool != "doc_search" || !strings.HasPrefix(st.Detail, "3 documents, indexed ") {
		t.Errorf("status %+v", st)
	}
	if _, err := os.Stat(filepath.Join(state, "newbie.docsearch.db")); err != nil {
		t.Errorf("the index is not the agent's in the state directory: %v", err)
	}
	if !strings.Contains(logs.String(), "msg=\"doc_search: indexed\" documents=3") {
		t.Errorf("log:\n%s", logs.String())
	}
	tools, _ := ts.Tools(t.Context())
	tool := tools[0]

	res := callTool(t, tool, `{"query":"paid leave","max_results":2}`)
	want := []host.Reference{
		{Title: "Leave policy", URI: fileURI(filepath.Join(docs, "leave.md"))},
		{Title: "Expenses", URI: fileURI(filepath.Join(docs, "expenses.md"))},
	}
	if res.IsError || res.Text != `2 documents found for "paid leave", best first.` || len(res.References) != 2 {
		t.Fatalf("result %+v", res)
	}
	for i, r := range res.References {
		if r.Title != want[i].Title || r.URI != want[i].URI || !strings.Contains(strings.ToLower(r.Content), "paid leave") {
			t.Errorf("reference %d = %+v, want %+v with a snippet", i, r, want[i])
		}
	}
	if res := callTool(t, tool, `{"query":"leave"}`); len(res.References) != 1 {
		t.Errorf("max_results default 1: %d references", len(res.References))
	}
	if res := callTool(t, tool, `{"query":"zeppelin"}`); res.IsError || res.Text != `No document matches "zeppelin". Try other or fewer words.` {
		t.Errorf("no match: %+v", res)
	}
	if res := callTool(t, tool, `{"query":"?!"}`); !res.IsError || !strings.HasPrefix(res.Text, "Invalid arguments: the query has no words to search for") {
		t.Errorf("no words: %+v", res)
	}
	if res := callTool(t, tool, `{"query":5}`); !res.IsError || res.Text != `Invalid arguments: query must be a string, not number; for example {"query": "expense report deadline"}` {
		t.Errorf("bad type: %+v", res)
	}

	// The background refresh picks up an edit and a deletion.
	if err := os.WriteFile(filepath.Join(docs, "guide.html"), []byte("<title>Laptop guide</title><p>Desktops now.</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(docs, "expenses.md")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit is indexed", func() bool {
		return len(callTool(t, tool, `{"query":"desktops"}`).References) == 1 &&
			len(callTool(t, tool, `{"query":"receipts"}`).References) == 0
	})

	if err := ts.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestDocSearchNew(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		opts DocSearchOptions
		want string
	}{
		{DocSearchOptions{}, "builtin: doc_search: roots is required"},
		{DocSearchOptions{Roots: []string{filepath.Join(dir, "missing")}}, "root " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{DocSearchOptions{Roots: []string{dir}, MaxResults: 51}, "max_results must be between 1 and 50, not 51"},
	}
	for _, tt := range tests {
		_, err := New([]string{"doc_search"}, &Options{DocSearch: tt.opts, StateDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.opts, err, tt.want)
		}
	}

	// A root that vanishes after start-up makes the index fail, and check says so.
	gone := filepath.Join(dir, "gone")
	os.Mkdir(gone, 0o755)
	ts, err := New([]string{"doc_search"}, &Options{DocSearch: DocSearchOptions{Roots: []string{gone}, RefreshInterval: 20 * time.Millisecond,
		Index: filepath.Join(dir, "ix.db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	os.Remove(gone)
	eventually(t, "the failure is reported", func() bool {
		st := ts.Statuses()[0]
		return st.State == "failed" && strings.Contains(st.Detail, "no such file or directory")
	})
	if _, err := os.Stat(filepath.Join(dir, "ix.db")); err != nil {
		t.Errorf("the index option was not used: %v", err)
	}
}

// Each agent has its own index by default, named like its state database but never the same file.
func TestDocSearchIndexPath(t *testing.T) {
	state := t.TempDir()
	tests := []struct {
		opts Options
		want string
	}{
		{Options{StateDir: state, Agent: "newbie"}, filepath.Join(state, "newbie.docsearch.db")},
		{Options{StateDir: state, Agent: "other"}, filepath.Join(state, "other.docsearch.db")},
		{Options{StateDir: state, Agent: "newbie-docsearch"}, filepath.Join(state, "newbie-docsearch.docsearch.db")},
		{Options{StateDir: state}, filepath.Join(state, "docsearch.unnamed.db")},
		{Options{StateDir: state, Agent: "newbie", DocSearch: DocSearchOptions{Index: "/x/shared.db"}}, "/x/shared.db"},
	}
	for _, tt := range tests {
		if got, err := tt.opts.DocSearchIndex(); err != nil || got != tt.want {
			t.Errorf("%q: %s, %v, want %s", tt.opts.Agent, got, err, tt.want)
		}
	}
}

// No default index is ever an agent's state database: not that of an agent named "docsearch" (whose state was
// docsearch.db, the index of agents without a name), nor any other's.
func TestDocSearchIndexNeverStateDatabase(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	names := []string{"", "docsearch", "docsearch-unnamed", "unnamed", "a", "newbie"}
	indexes := map[string]bool{}
	for _, agent := range names {
		ix, err := (&Options{Agent: agent}).DocSearchIndex()
		if err != nil {
			t.Fatal(err)
		}
		indexes[ix] = true
		// An agent's name has no dot: the index's name, less ".db", must have one.
		if base := strings.TrimSuffix(filepath.Base(ix), ".db"); !strings.Contains(base, ".") {
			t.Errorf("agent %q: index %s could be the state database of an agent named %q", agent, ix, base)
		}
	}
	for _, agent := range names[1:] {
		db, err := store.DefaultPath(agent)
		if err != nil {
			t.Fatal(err)
		}
		if indexes[db] {
			t.Errorf("%s is both a doc_search index and the state database of agent %q", db, agent)
		}
	}
}
