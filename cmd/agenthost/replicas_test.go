package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/store"
)

// replicaConfig writes the configuration that every replica of the fleet shares: state in Postgres (the connection
// string from DATABASE_URL), every run durable, the executor from REPLICA, and stateless HTTP.
func replicaConfig(t *testing.T, dir string, llm *fakellm.Server) string {
	t.Helper()
	config := agentConfig(t, dir, "fleet", llm.URL, `"current_time"`, "\n[serve]\nstateless = true\n")
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	shared := strings.Replace(string(b), "[state]\n", "[state]\nbackend = \"postgres\"\ndurable_runs = \"all\"\nexecutor_id = \"${REPLICA}\"\n", 1)
	if err := os.WriteFile(config, []byte(shared), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// askMCP calls the agent tool of the server at url once, in a session of its own, and returns its structured
// content.
func askMCP(t *testing.T, url string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), a2aWait)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_fleet", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("ask_fleet %v: %+v, %v", args, res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplicas runs two agenthost serve processes, stateless, on one Postgres: a conversation started on one
// continues on the other, an A2A task created on one is read and listed through the other, and one still running
// on one is canceled through the other.
func TestReplicas(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dsn := pgtest.NewDatabase(t)
	config := replicaConfig(t, t.TempDir(), llm)
	args := []string{"serve", "--config", config, "--http", "127.0.0.1:0", "--a2a", "127.0.0.1:0"}
	a := startServeA2A(t, []string{"TEST_KEY=sk-fleet", "DATABASE_URL=" + dsn, "REPLICA=replica-a"}, args...)
	b := startServeA2A(t, []string{"TEST_KEY=sk-fleet", "DATABASE_URL=" + dsn, "REPLICA=replica-b"}, args...)

	llm.Enqueue(fakellm.Turn{Text: "Noted: blue."}, fakellm.Turn{Text: "You said blue."})
	first := askMCP(t, a.mcpURL, map[string]any{"prompt": "Remember: blue."})
	id, _ := first["conversation_id"].(string)
	if id == "" || first["answer"] != "Noted: blue." {
		t.Fatalf("the first call, on replica A: %v", first)
	}
	second := askMCP(t, b.mcpURL, map[string]any{"prompt": "What did I say?", "conversation_id": id})
	if second["conversation_id"] != id || second["answer"] != "You said blue." {
		t.Fatalf("the second call, on replica B: %v", second)
	}
	checkMessages(t, llm.Requests()[1].Messages, "user:Remember: blue.", "assistant:Noted: blue.", "user:What did I say?")

	llm.Enqueue(fakellm.Turn{Text: "Done on A."})
	tk := a2aOK[a2aOut](t, a.base, "send", map[string]any{"text": "Do it."}).task(t)
	if tk.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("the task on A: %+v", tk)
	}
	got := a2aOK[a2aTask](t, b.base, "get", map[string]any{"id": tk.ID})
	if text, _ := a2aAnswerOf(t, got); got.Status.State != "TASK_STATE_COMPLETED" || text != "Done on A." {
		t.Errorf("the task read on B: %+v", got)
	}
	list := a2aOK[a2aList](t, b.base, "list", map[string]any{"contextId": tk.ContextID})
	if list.TotalSize != 1 || list.Tasks[0].ID != tk.ID {
		t.Errorf("the tasks listed on B: %+v", list)
	}
	if e := a2aFails(t, b.base, "cancel", map[string]any{"id": tk.ID}); a2aCode(e) != -32002 {
		t.Errorf("cancelling A's finished task on B: %+v, want TaskNotCancelableError", e)
	}

	// A task that hangs on A is canceled through B: A takes the request from the database and cancels its run.
	before := llm.RequestCount()
	llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	hung := a2aOK[a2aOut](t, a.base, "send", map[string]any{"text": "Take your time.", "returnImmediately": true}).task(t)
	testwait.Until(t, a2aWait, "the model is asked", func() bool { return llm.RequestCount() > before })
	canceled := a2aOK[a2aTask](t, b.base, "cancel", map[string]any{"id": hung.ID})
	if canceled.Status.State != "TASK_STATE_CANCELED" {
		t.Fatalf("the task canceled through B: %+v", canceled)
	}
	if got := a2aOK[a2aTask](t, a.base, "get", map[string]any{"id": hung.ID}); got.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("the task on A after the cancel through B: %+v", got)
	}
}

// TestReplicaTakesOver kills one of two replicas with SIGKILL in the middle of an A2A task. The other, once the
// killed one has not beaten for 30 s, resumes the task's run from its last finished step and completes it: the
// tool that ran is not called again, and the model is asked only the call that had not finished.
func TestReplicaTakesOver(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	config := replicaConfig(t, dir, llm)
	notes := filepath.Join(dir, "notes")
	args := []string{"serve", "--config", config, "--a2a", "127.0.0.1:0"}
	env := func(replica string) []string {
		return []string{"TEST_KEY=sk-fleet", "DATABASE_URL=" + dsn, "REPLICA=" + replica}
	}
	noteArgs, _ := json.Marshal(map[string]string{"file": notes, "text": "once"})
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_note", Arguments: string(noteArgs)}}},
		fakellm.Turn{HangAfter: fakellm.Immediately}, // replica A dies during this call
	)
	a, aBase := startKillable(t, env("replica-a"), regexp.MustCompile(`serving A2A at \S+ \(card (http://[^/\s]+)/`), args...)
	b := startServeA2A(t, env("replica-b"), args...)
	tk := a2aOK[a2aOut](t, aBase, "send", map[string]any{"text": "Note it once.", "returnImmediately": true}).task(t)
	testwait.Until(t, a2aWait, "the second model call", func() bool { return llm.RequestCount() == 2 })
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.Wait()

	llm.Enqueue(fakellm.Turn{Text: "Noted once."})
	var got a2aTask
	testwait.Until(t, 2*time.Minute, "replica B completes the task", func() bool {
		got = a2aOK[a2aTask](t, b.base, "get", map[string]any{"id": tk.ID})
		return got.Status.State == "TASK_STATE_COMPLETED"
	})
	if text, _ := a2aAnswerOf(t, got); text != "Noted once." {
		t.Errorf("answer %q", text)
	}
	if n := llm.RequestCount(); n != 3 {
		t.Errorf("%d model requests in all, want 3", n)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "once\n" {
		t.Errorf("the note tool's calls: %q (%v), want it called once", b, err)
	}
}

// TestReplicasInputRequests runs two stateless replicas on one Postgres and a caller on protocol 2026-07-28 whose
// call needs an approval: the call starts on A, which returns the question; the answer reaches B, which hands it to
// the run on A through the database and returns the result.
func TestReplicasInputRequests(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dsn := pgtest.NewDatabase(t)
	config := replicaConfig(t, t.TempDir(), llm)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[tools.\"current_time\"]\nrequire_approval = true\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	args := []string{"serve", "--config", config, "--http", "127.0.0.1:0", "--a2a", "127.0.0.1:0"}
	a := startServeA2A(t, []string{"TEST_KEY=sk-fleet", "DATABASE_URL=" + dsn, "REPLICA=replica-a"}, args...)
	b := startServeA2A(t, []string{"TEST_KEY=sk-fleet", "DATABASE_URL=" + dsn, "REPLICA=replica-b"}, args...)

	connect := func(url string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "1"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test answers
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("asked within the call, on protocol 2026-07-28")
				return nil, context.Canceled
			},
		})
		session, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { session.Close() })
		if v := session.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("protocol %s", v)
		}
		return session
	}
	ca, cb := connect(a.mcpURL), connect(b.mcpURL)

	llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "t1", Name: "current_time", Arguments: `{}`}}}, fakellm.Turn{Text: "It is late."})
	ctx, cancel := context.WithTimeout(t.Context(), a2aWait)
	defer cancel()
	call := map[string]any{"prompt": "What time is it?"}
	res, err := ca.CallTool(ctx, &mcp.CallToolParams{Name: "ask_fleet", Arguments: call})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("the first round, on A: %+v, want one question", res)
	}
	var key string
	for k, q := range res.InputRequests {
		key = k
		if ask, ok := q.(*mcp.ElicitParams); !ok || !strings.Contains(ask.Message, "current_time") {
			t.Errorf("asked %#v", q)
		}
	}
	// agenthost state lists the call as waiting, on replica A, without its whole id.
	r := agenthost(t, filepath.Dir(config), "", []string{"DATABASE_URL=" + dsn, "REPLICA=replica-c"}, "state", "calls", "-config", config)
	if r.code != 0 || !regexp.MustCompile(`(?m)^`+res.RequestState[:8]+`…\s+ask_fleet\s+waiting\s+1\s+replica-a/`).MatchString(r.stdout) ||
		strings.Contains(r.stdout, res.RequestState) {
		t.Errorf("state calls: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	res, err = cb.CallTool(ctx, &mcp.CallToolParams{Name: "ask_fleet", Arguments: call, RequestState: res.RequestState, InputResponses: answer})
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("the second round, on B: %+v, %v", res, err)
	}
	b2, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Answer string `json:"answer"`
	}
	if err := json.Unmarshal(b2, &out); err != nil || out.Answer != "It is late." {
		t.Errorf("the result through B: %s", b2)
	}
	if n := llm.RequestCount(); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
	// The model read the tool's result, not a refusal: the approval reached the run on A.
	var toolText string
	for _, m := range llm.Requests()[1].Messages {
		if m.Role == "tool" {
			toolText = m.ToolOutput()
		}
	}
	if toolText == "" || strings.Contains(toolText, "denied") || strings.Contains(toolText, "not approved") {
		t.Errorf("the tool's result the model read: %q", toolText)
	}
}

// TestReplicasStartTogether starts four replicas at the same instant on an empty Postgres database, as a Deployment
// with replicas: 4 does: they migrate one at a time (agenthost's tables, then DBOS's schema) instead of racing each
// other's CREATE statements, and all four serve. The schema is migrated once.
func TestReplicasStartTogether(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dsn := pgtest.NewDatabase(t)
	config := replicaConfig(t, t.TempDir(), llm)
	const n = 4
	args := []string{"serve", "--config", config, "--http", "127.0.0.1:0"}
	type replica struct {
		cmd    *exec.Cmd
		stderr *watchedLog
		exited chan struct{}
		err    error
		served bool
	}
	replicas := make([]*replica, n)
	for i := range replicas {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(testEnv(), "TEST_KEY=sk-fleet", "DATABASE_URL="+dsn, fmt.Sprintf("REPLICA=replica-%d", i))
		r := &replica{cmd: cmd, stderr: &watchedLog{found: make(chan string, 1), re: servingLine}, exited: make(chan struct{})}
		cmd.Stderr, cmd.WaitDelay = r.stderr, 10*time.Second
		replicas[i] = r
	}
	// Started back to back, before any of them has reached its database: they race.
	for _, r := range replicas {
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			r.err = r.cmd.Wait()
			close(r.exited)
		}()
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.cmd.Process.Signal(os.Interrupt)
		}
		for i, r := range replicas {
			select {
			case <-r.exited:
				if r.served && r.err != nil {
					t.Errorf("replica %d exited with %v after SIGINT", i, r.err)
				}
			case <-time.After(30 * time.Second):
				r.cmd.Process.Kill()
				<-r.exited
				t.Errorf("replica %d did not exit within 30s of SIGINT", i)
			}
			if t.Failed() {
				t.Logf("replica %d stderr:\n%s", i, r.stderr.String())
			}
		}
	})
	for i, r := range replicas {
		var url string
		select {
		case url = <-r.stderr.found:
			r.served = true
		case <-r.exited:
			t.Fatalf("replica %d exited before it served: %v\n%s", i, r.err, r.stderr.String())
		case <-time.After(a2aWait):
			t.Fatalf("replica %d did not serve within %v", i, a2aWait)
		}
		health := strings.TrimSuffix(url, "/mcp") + "/healthz"
		ctx, cancel := context.WithTimeout(t.Context(), a2aWait)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("replica %d: GET %s: %v", i, health, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("replica %d: GET %s: %s", i, health, resp.Status)
		}
	}

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"agenthost_schema", "dbos.dbos_migrations"} {
		var rows int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+table).Scan(&rows); err != nil || rows != 1 {
			t.Errorf("%s has %d rows (%v), want 1", table, rows, err)
		}
	}
	var version int
	if err := db.QueryRowContext(t.Context(), "SELECT version FROM agenthost_schema").Scan(&version); err != nil || version != store.SchemaVersion {
		t.Errorf("schema version %d (%v), want %d", version, err, store.SchemaVersion)
	}
}
