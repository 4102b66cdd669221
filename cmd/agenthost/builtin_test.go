package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/builtin/docsearch"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// TestBuiltinTools runs the built-ins through the binary as agent.toml configures them: a page fetched from an
// allowed local host, a file read under a root relative to the configuration, a calculation and a document search,
// all called in one round, their references cited in the answer. check shows the index's state.
func TestBuiltinTools(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Widget guide</title></head><body><nav>Home</nav><h1>Widgets</h1><p>Widgets are blue.</p></body></html>`)
	}))
	defer page.Close()
	u, _ := url.Parse(page.URL)

	dir := t.TempDir()
	for _, sub := range []string{"notes", "handbook"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "notes/plan.md", "# Plan\n\nShip the widget on Friday.\n")
	writeFile(t, dir, "handbook/leave.md", "# Leave policy\n\nEvery employee has 30 days of paid leave a year.\n")
	srv := fakellm.New()
	defer srv.Close()
	srv.SetModels("m") // check lists it
	srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url":%q}`, page.URL+"/guide")},
			{ID: "2", Name: "read_file", Arguments: `{"path":"plan.md"}`},
			{ID: "3", Name: "calculate", Arguments: `{"expression":"0.1 + 0.2"}`},
			{ID: "4", Name: "doc_search", Arguments: `{"query":"paid leave"}`},
		}},
		fakellm.Turn{Text: "Widgets are blue [1], ship on Friday [2], 30 days of leave [3]."},
	)
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "openai"
model = "m"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[builtin]
tools = ["fetch_url", "read_file", "calculate", "doc_search"]

[builtin.fetch_url]
allow_hosts = [%q]

[builtin.files]
roots = ["notes"]

[builtin.doc_search]
roots = ["handbook"]
index = "state/docs.db"
refresh_interval = "0s"
`, srv.URL, u.Host))
	env := []string{"TEST_KEY=k"}

	// The index is built first, so that the run's search does not race its own start-up indexing.
	r := agenthost(t, dir, "", env, "index")
	if r.code != 0 || !strings.Contains(r.stdout, "docs.db: 1 document (1 read, 0 removed, 0 skipped) in ") {
		t.Fatalf("index: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "docs.db")); err != nil {
		t.Errorf("the index is not where index says: %v", err)
	}

	r = agenthost(t, dir, "", env, "run", "--json", "Tell me about widgets.")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatal(err)
	}
	planURI := (&url.URL{Scheme: "file", Path: filepath.Join(dir, "notes", "plan.md")}).String()
	leaveURI := (&url.URL{Scheme: "file", Path: filepath.Join(dir, "handbook", "leave.md")}).String()
	want := []host.NumberedReference{
		{Number: 1, Title: "Widget guide", URI: page.URL + "/guide"},
		{Number: 2, Title: "plan.md", URI: planURI},
		{Number: 3, Title: "Leave policy", URI: leaveURI},
	}
	if fmt.Sprint(ans.References) != fmt.Sprint(want) {
		t.Errorf("references %+v\nwant %+v", ans.References, want)
	}
	for _, c := range ans.ToolCalls {
		if !c.OK {
			t.Errorf("%s failed: %+v", c.Name, c)
		}
	}
	var toolText []string
	for _, m := range srv.LastRequest().Messages {
		if m.Role == "tool" {
			toolText = append(toolText, m.ToolOutput())
		}
	}
	all := strings.Join(toolText, "\n")
	for _, w := range []string{"Widgets are blue.", "Ship the widget on Friday.", "0.3", "paid leave"} {
		if !strings.Contains(all, w) {
			t.Errorf("the model did not read %q in the tool results:\n%s", w, all)
		}
	}
	if strings.Contains(all, "Home") {
		t.Errorf("the page's navigation reached the model:\n%s", all)
	}
	r = agenthost(t, dir, "", env, "check")
	if r.code != 0 || !strings.Contains(r.stdout, "BUILTIN     STATUS") || !strings.Contains(r.stdout, "doc_search  ") || !strings.Contains(r.stdout, "1 document") {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A refused address is the model's error to read, not the run's.
	writeFile(t, dir, "private.toml", fmt.Sprintf(`
[model]
provider = "openai"
model = "m"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[builtin]
tools = ["fetch_url"]
`, srv.URL))
	srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url":%q}`, page.URL)}}},
		fakellm.Turn{Text: "I cannot read it."},
	)
	r = agenthost(t, dir, "", env, "run", "--config", "private.toml", "Read the page.")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var refused string
	for _, m := range srv.LastRequest().Messages {
		if m.Role == "tool" {
			refused = m.ToolOutput()
		}
	}
	if !strings.Contains(refused, "refused: 127.0.0.1 is a loopback address") {
		t.Errorf("the model read %q", refused)
	}
}

func TestProgressBar(t *testing.T) {
	var buf strings.Builder
	bar := newProgressBar(&buf, true)
	bar.update(docsearch.Progress{Scanned: 1, Total: 4, Path: "/docs/a.md"})
	bar.update(docsearch.Progress{Scanned: 2, Total: 4, Path: "/docs/b.md"}) // within 100ms: not drawn
	bar.update(docsearch.Progress{Scanned: 4, Total: 4, Path: "/docs/d.md"}) // the last one always is
	bar.done()
	want := "\r\x1b[Kindexing [#######.......................] 1/4  /docs/a.md" +
		"\r\x1b[Kindexing [##############################] 4/4  /docs/d.md" + "\r\x1b[K"
	if buf.String() != want {
		t.Errorf("drew %q\nwant %q", buf.String(), want)
	}

	var off strings.Builder
	bar = newProgressBar(&off, false)
	bar.update(docsearch.Progress{Scanned: 4, Total: 4})
	bar.done()
	if off.Len() != 0 {
		t.Errorf("drew %q without a terminal", off.String())
	}
}

// TestIndexPerAgent indexes the documents of two agents through the binary. Each has its own index by default; and
// when they share one file, indexing either neither drops nor serves the other's documents.
func TestIndexPerAgent(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"newbie/kb", "other/kb"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "newbie/kb/memo.md", "# Newbie memo\n\nThe onboarding budget is small.\n")
	writeFile(t, dir, "other/kb/memo.md", "# Other memo\n\nThe secret budget is large.\n")
	srv := fakellm.New()
	defer srv.Close()
	state := filepath.Join(dir, "xdg")
	env := []string{"TEST_KEY=k", "XDG_STATE_HOME=" + state}
	config := func(agent, index string) string {
		return writeFile(t, dir, agent+index+".toml", fmt.Sprintf(`
[agent]
name = %q

[model]
provider = "openai"
model = "m"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[builtin]
tools = ["doc_search"]

[builtin.doc_search]
roots = [%q]
index = %q
refresh_interval = "0s"
`, agent, srv.URL, filepath.Join(agent, "kb"), index))
	}

	// By default, each agent's index is its own file in the state directory.
	for _, agent := range []string{"newbie", "other"} {
		r := agenthost(t, dir, "", env, "index", "-config", config(agent, ""))
		want := filepath.Join(state, "agenthost", agent+".docsearch.db") + ": 1 document (1 read, 0 removed, 0 skipped)"
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("index %s: exit %d, want %q\n%s%s", agent, r.code, want, r.stdout, r.stderr)
		}
	}
	// They hold the documents' text: private, as the state database is.
	for p, want := range map[string]os.FileMode{filepath.Join(state, "agenthost"): 0o700,
		filepath.Join(state, "agenthost", "newbie.docsearch.db"): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v, want %#o", p, fi.Mode(), err, want)
		}
	}

	// Sharing one file, indexing the other agent's documents leaves the first agent's.
	newbie, other := config("newbie", "shared.db"), config("other", "shared.db")
	for _, step := range []struct{ cfg, want string }{
		{newbie, "shared.db: 1 document (1 read, 0 removed, 0 skipped)"},
		{other, "shared.db: 1 document (1 read, 0 removed, 0 skipped)"},
		{newbie, "shared.db: 1 document (0 read, 0 removed, 0 skipped)"},
	} {
		r := agenthost(t, dir, "", env, "index", "-config", step.cfg)
		if r.code != 0 || !strings.Contains(r.stdout, step.want) {
			t.Fatalf("index %s: exit %d, want %q\n%s%s", step.cfg, r.code, step.want, r.stdout, r.stderr)
		}
	}
	srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "1", Name: "doc_search", Arguments: `{"query":"budget"}`}}},
		fakellm.Turn{Text: "The budget is small [1]."},
	)
	r := agenthost(t, dir, "", env, "run", "-config", newbie, "--json", "What is the budget?")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatal(err)
	}
	mine := (&url.URL{Scheme: "file", Path: filepath.Join(dir, "newbie", "kb", "memo.md")}).String()
	if len(ans.References) != 1 || ans.References[0].URI != mine {
		t.Errorf("references %+v, want newbie's memo only", ans.References)
	}
	for _, m := range srv.LastRequest().Messages {
		if strings.Contains(m.Content, "secret budget") || strings.Contains(m.Content, "Other memo") {
			t.Errorf("the other agent's document reached the model: %s", m.Content)
		}
	}
}
