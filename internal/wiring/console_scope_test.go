package wiring

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/console"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/store"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// getAs reads a JSON answer of the console at base with a bearer token.
func getAs(t *testing.T, token, url string, v any) int {
	t.Helper()
	resp, err := (&http.Client{Transport: bearer{token}}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestServeUIScopesCallers: with [serve] auth_tokens_env, a run asked for over MCP by alice, and its conversation,
// are shown by the console to alice and to nobody else.
func TestServeUIScopesCallers(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "agent.toml"), []byte(`[model]
provider = "test"

[serve]
auth_tokens_env = ["ALICE", "BOB"]

[state]
path = "`+filepath.Join(dir, "state.db")+`"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ALICE": "alice-token-0123456789", "BOB": "bob-token-0123456789"}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return env[k] }, Version: "test", RecordRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	got, stop := serving(t, app, &ServeOptions{HTTP: "127.0.0.1:0", UI: "127.0.0.1:0"})
	ui, mcpEnd := got["ui"], got["mcp"]

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpEnd.URL,
		HTTPClient: &http.Client{Transport: bearer{env["ALICE"]}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpEnd.Tool, Arguments: map[string]any{"prompt": "alice's secret"}})
	if err != nil || res.IsError {
		t.Fatalf("calling the agent: %v %+v", err, res)
	}
	cs.Close()

	type runsAnswer struct {
		Runs []struct{ ID, Origin, Status string } `json:"runs"`
	}
	var runs runsAnswer
	testwait.Until(t, 10*time.Second, "alice's MCP run to be listed as ended", func() bool {
		getAs(t, env["ALICE"], ui.URL+"api/runs", &runs)
		return len(runs.Runs) == 1 && runs.Runs[0].Status != "running"
	})
	if sum := app.Runs().Runs()[0]; sum.Subject != "ALICE" || sum.Origin != "mcp" {
		t.Errorf("the MCP run's subject %q, origin %q", sum.Subject, sum.Origin)
	}
	var bobs runsAnswer
	if code := getAs(t, env["BOB"], ui.URL+"api/runs", &bobs); code != http.StatusOK || len(bobs.Runs) != 0 {
		t.Errorf("bob lists %d %+v", code, bobs)
	}
	var nothing any
	if code := getAs(t, env["BOB"], ui.URL+"api/runs/"+runs.Runs[0].ID, &nothing); code != http.StatusNotFound {
		t.Errorf("bob reads alice's run: %d", code)
	}
	type convsAnswer struct {
		Conversations []struct{ ID string } `json:"conversations"`
	}
	var convs, bobConvs convsAnswer
	if code := getAs(t, env["ALICE"], ui.URL+"api/conversations", &convs); code != http.StatusOK || len(convs.Conversations) != 1 {
		t.Fatalf("alice lists %d %+v", code, convs)
	}
	if code := getAs(t, env["BOB"], ui.URL+"api/conversations", &bobConvs); code != http.StatusOK || len(bobConvs.Conversations) != 0 {
		t.Errorf("bob lists %d %+v", code, bobConvs)
	}
	if code := getAs(t, env["BOB"], ui.URL+"api/conversations/"+convs.Conversations[0].ID, &nothing); code != http.StatusNotFound {
		t.Errorf("bob reads alice's conversation: %d", code)
	}
	stop()
}

// TestConsoleTasksOfTheSubject: the console's tasks of a real SQLite file are those of the subject asked for; another
// subject's is not found.
func TestConsoleTasksOfTheSubject(t *testing.T) {
	db, err := store.Open(t.Context(), store.Options{Backend: store.SQLite, Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tk := range []*store.Task{
		{ID: "t-alice", ContextID: "c", State: "completed", Terminal: true, Updated: time.Now(), Body: []byte(`{"id":"t-alice"}`), Subject: "alice"},
		{ID: "t-anon", ContextID: "c", State: "completed", Terminal: true, Updated: time.Now(), Body: []byte(`{"id":"t-anon"}`)},
	} {
		if err := db.PutTask(t.Context(), tk); err != nil {
			t.Fatal(err)
		}
	}
	tasks := consoleTasks{db}
	for subject, want := range map[string]string{"alice": "t-alice", "": "t-anon", "bob": ""} {
		list, err := tasks.List(t.Context(), subject)
		if err != nil {
			t.Fatal(err)
		}
		if (want == "") != (len(list) == 0) || want != "" && (len(list) != 1 || list[0].ID != want) {
			t.Errorf("%q's tasks: %+v, want %q", subject, list, want)
		}
	}
	if _, err := tasks.Get(t.Context(), "bob", "t-alice"); !errors.Is(err, console.ErrNotFound) {
		t.Errorf("bob gets alice's task: %v", err)
	}
	if body, err := tasks.Get(t.Context(), "alice", "t-alice"); err != nil || string(body) != `{"id":"t-alice"}` {
		t.Errorf("alice gets her task: %s %v", body, err)
	}
}
