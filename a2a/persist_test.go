package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// memTaskStore is a TaskStore in memory, shared by the servers of a test as a database is by replicas.
type memTaskStore struct {
	mu      sync.Mutex
	tasks   map[string]*StoredTask
	signals []host.RunSignal
	saves   int
}

func (m *memTaskStore) Signal(_ context.Context, taskID, kind string, body json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.signals = append(m.signals, host.RunSignal{Target: taskID, Kind: kind, Body: body})
	return nil
}

func (m *memTaskStore) Orphans(_ context.Context, owner string) ([]*StoredTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*StoredTask
	for _, t := range m.tasks {
		if t.Owner == owner && !t.Terminal && !t.Durable {
			c := *t
			out = append(out, &c)
		}
	}
	return out, nil
}

func (m *memTaskStore) TakeSignals(_ context.Context, taskIDs []string) ([]host.RunSignal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out, rest []host.RunSignal
	for _, sig := range m.signals {
		if slices.Contains(taskIDs, sig.Target) {
			out = append(out, sig)
		} else {
			rest = append(rest, sig)
		}
	}
	m.signals = rest
	return out, nil
}

func (m *memTaskStore) SaveTask(_ context.Context, t *StoredTask) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	if old, ok := m.tasks[t.ID]; !ok || old.Version < t.Version {
		c := *t
		m.tasks[t.ID] = &c
	}
	return nil
}

func (m *memTaskStore) LoadTask(_ context.Context, id string) (*StoredTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, nil
	}
	c := *t
	return &c, nil
}

func (m *memTaskStore) ListTasks(_ context.Context, q TaskQuery) ([]*StoredTask, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var match []*StoredTask
	for _, t := range m.tasks {
		if t.Subject == q.Subject && (q.ContextID == "" || t.ContextID == q.ContextID) && (q.State == "" || t.State == q.State) && !t.Updated.Before(q.UpdatedAfter) {
			match = append(match, t)
		}
	}
	sort.Slice(match, func(i, j int) bool {
		if !match[i].Updated.Equal(match[j].Updated) {
			return match[i].Updated.After(match[j].Updated)
		}
		return match[i].ID > match[j].ID
	})
	total := len(match)
	if q.AfterID != "" {
		i := sort.Search(len(match), func(i int) bool {
			t := match[i]
			return t.Updated.Before(q.AfterUpdated) || (t.Updated.Equal(q.AfterUpdated) && t.ID < q.AfterID)
		})
		match = match[i:]
	}
	if q.Limit > 0 && len(match) > q.Limit {
		match = match[:q.Limit]
	}
	return match, total, nil
}

// TestServerStoredTasks runs two servers on one TaskStore, as two replicas on one database. A task runs on the
// first and waits for an approval; the second reads and lists it, streams it, and passes on the answer, which the
// first takes; the stream on the second sees the task to its end. A task that hangs on the first is canceled
// through the second.
func TestServerStoredTasks(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	model := fakeModel(t, llm)
	tool := &guardedTool{}
	orch := host.New(model, host.NewToolManager([]host.Toolset{toolList{tool}}, &host.ToolManagerOptions{Policies: approvalPolicy}), nil)
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	serve := func() string {
		_, url := serveOrchestrator(t, orch, &ServerOptions{Tasks: shared})
		return url
	}
	a, b := serve(), serve()

	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{"path":"/tmp/x"}`}}},
		fakellm.Turn{Text: "It is done."},
	)
	tk := sendMessageV1(t, a, sendMessageParams([]any{textParam("do the risky thing")}, nil, nil))
	if tk.Status.State != stateInputRequired {
		t.Fatalf("task %s, want input-required", asJSON(tk))
	}
	got := getTaskV1(t, b, tk.ID)
	if got.Status.State != stateInputRequired || got.Status.Message == nil || !strings.Contains(partsText(got.Status.Message.Parts), "danger") {
		t.Errorf("GetTask on the other server: %s", asJSON(got))
	}
	// v0.3 reads it too, in its own shape.
	if rr := callRPC(t, b, noA2AVersion, "tasks/get", map[string]any{"id": tk.ID}); rr.Error != nil || !strings.Contains(string(rr.Result), `"state":"input-required"`) {
		t.Errorf("tasks/get on the other server: %s %v", rr.Result, rr.Error)
	}
	var list listResult
	rr := callRPC(t, b, "1.0", "ListTasks", map[string]any{"contextId": tk.ContextID})
	if rr.Error != nil || json.Unmarshal(rr.Result, &list) != nil || list.TotalSize != 1 || list.Tasks[0].ID != tk.ID {
		t.Errorf("ListTasks on the other server: %s %v", rr.Result, rr.Error)
	}
	if tool.calls.Load() != 0 {
		t.Fatal("the tool ran without its approval")
	}

	// The answer goes through the second server; the blocking send there returns the finished task.
	done := sendMessageV1(t, b, sendMessageParams([]any{map[string]any{"data": map[string]any{"approved": true}}}, map[string]any{"taskId": tk.ID}, nil))
	if done.Status.State != stateCompleted || len(done.Artifacts) != 1 || !strings.HasPrefix(partsText(done.Artifacts[0].Parts), "It is done.") {
		t.Fatalf("after the approval through the other server: %s", asJSON(done))
	}
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if got := getTaskV1(t, a, tk.ID); got.Status.State != stateCompleted || len(got.History) != len(done.History) {
		t.Errorf("the task on its own server: %s\nwant %s", asJSON(got), asJSON(done))
	}
	// Saved at each change of state (submitted, working, input-required, working, completed), not for each event.
	shared.mu.Lock()
	saves := shared.saves
	shared.mu.Unlock()
	if saves != 5 {
		t.Errorf("%d saves, want 5", saves)
	}

	// A task that hangs on the first server is streamed and canceled through the second.
	before := llm.RequestCount()
	llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	hung := sendMessageV1(t, a, sendMessageParams([]any{textParam("take your time")}, nil, map[string]any{"returnImmediately": true}))
	testwait.Until(t, serverWaitLimit, "the model is asked", func() bool { return llm.RequestCount() > before })
	req, _ := http.NewRequestWithContext(testwait.Context(t, serverWaitLimit), http.MethodPost, b,
		strings.NewReader(`{"jsonrpc":"2.0","id":"s","method":"SubscribeToTask","params":{"id":"`+hung.ID+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	cancelled := make(chan []byte, 1)
	go func() { // the stream is read below until the task ends
		body := `{"jsonrpc":"2.0","id":8,"method":"CancelTask","params":{"id":"` + hung.ID + `"}}`
		creq, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, b, strings.NewReader(body))
		creq.Header.Set("Content-Type", "application/json")
		creq.Header.Set("A2A-Version", "1.0")
		var out []byte
		if cresp, err := http.DefaultClient.Do(creq); err == nil {
			out, _ = io.ReadAll(cresp.Body)
			cresp.Body.Close()
		}
		cancelled <- out
	}()
	evs := readRPCStream(t, stream)
	var lastState taskState
	for _, ev := range evs {
		var r streamResponse
		if json.Unmarshal(ev.Result, &r) == nil && r.StatusUpdate != nil {
			lastState = r.StatusUpdate.Status.State
		}
	}
	if len(evs) < 2 || lastState != stateCanceled {
		t.Errorf("the stream through the other server ended with %q after %d events", lastState, len(evs))
	}
	var rr2 struct {
		Result task `json:"result"`
	}
	if err := json.Unmarshal(<-cancelled, &rr2); err != nil || rr2.Result.Status.State != stateCanceled ||
		!strings.Contains(statusText(rr2.Result.Status), "canceled by its caller") {
		t.Fatalf("CancelTask through the other server: %+v, %v", rr2, err)
	}
	if got := getTaskV1(t, a, hung.ID); got.Status.State != stateCanceled {
		t.Errorf("the canceled task on its own server: %s", asJSON(got))
	}
}

// FailOrphans fails the unfinished tasks an earlier process of the same owner left, unless their runs are durable.
func TestServerFailOrphans(t *testing.T) {
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	for _, rec := range []StoredTask{
		{ID: "plain", State: string(stateWorking), Owner: "a"},
		{ID: "durable", State: string(stateWorking), Owner: "a", Durable: true},
		{ID: "other", State: string(stateInputRequired), Owner: "b"},
	} {
		rec.Version, rec.ContextID = 3, "c"
		rec.Task = []byte(`{"id":"` + rec.ID + `","contextId":"c","status":{"state":"` + rec.State + `"}}`)
		shared.tasks[rec.ID] = &rec
	}
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	model := fakeModel(t, llm)
	srv := NewServer(host.New(model, host.NewToolManager(nil, nil), nil), &ServerOptions{URL: "http://127.0.0.1/", Tasks: shared, Owner: "a"})
	defer srv.Close()
	n, err := srv.FailOrphans(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("FailOrphans = %d, %v; want 1", n, err)
	}
	var failed task
	if err := json.Unmarshal(shared.tasks["plain"].Task, &failed); err != nil || failed.Status.State != stateFailed ||
		!strings.Contains(statusText(failed.Status), "stopped before it finished") || shared.tasks["plain"].Version != 4 || !shared.tasks["plain"].Terminal {
		t.Errorf("the orphaned task: %+v (%s)", shared.tasks["plain"], shared.tasks["plain"].Task)
	}
	if shared.tasks["durable"].State != string(stateWorking) || shared.tasks["other"].State != string(stateInputRequired) {
		t.Errorf("the durable task or another owner's was touched: %+v, %+v", shared.tasks["durable"], shared.tasks["other"])
	}
}

// rpcAs makes a JSON-RPC call (A2A 1.0) as the caller named in X-Caller, which the servers of TestServerCallers
// take as the caller's identity.
func rpcAs(t *testing.T, url, caller, method string, params any) rpcResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-Caller", caller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil {
		t.Fatal(err)
	}
	return rr
}

// TestServerCallers: with callers told apart, a task is its caller's alone, on the server that runs it and on
// another sharing its TaskStore: another caller can neither get, list, cancel nor answer it, and one contextId is
// two conversations for two callers.
func TestServerCallers(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	model := fakeModel(t, llm)
	orch := host.New(model, host.NewToolManager(nil, nil), nil)
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	caller := func(r *http.Request) string { return r.Header.Get("X-Caller") }
	serve := func() string {
		_, url := serveOrchestrator(t, orch, &ServerOptions{Tasks: shared, Caller: caller})
		return url
	}
	a, b := serve(), serve()
	send := func(url, who string, msg map[string]any, text string) task {
		t.Helper()
		rr := rpcAs(t, url, who, "SendMessage", sendMessageParams([]any{textParam(text)}, msg, nil))
		if rr.Error != nil {
			t.Fatalf("%s's SendMessage: %v", who, rr.Error)
		}
		var res streamResponse
		if err := json.Unmarshal(rr.Result, &res); err != nil || res.Task == nil {
			t.Fatalf("%s's SendMessage: %s", who, rr.Result)
		}
		return *res.Task
	}
	llm.Enqueue(fakellm.Turn{Text: "Hello Alice."})
	alices := send(a, "alice", map[string]any{"contextId": "shared-ctx"}, "I am Alice, remember the word plum.")

	for _, url := range []string{a, b} {
		for _, method := range []string{"GetTask", "CancelTask"} {
			wantRPCError(t, rpcAs(t, url, "bob", method, map[string]any{"id": alices.ID}), codeTaskNotFound, false)
		}
		var list listResult
		if rr := rpcAs(t, url, "bob", "ListTasks", map[string]any{}); rr.Error != nil || json.Unmarshal(rr.Result, &list) != nil || list.TotalSize != 0 || len(list.Tasks) != 0 {
			t.Errorf("bob's ListTasks: %s %v", rr.Result, rr.Error)
		}
		if rr := rpcAs(t, url, "alice", "ListTasks", map[string]any{}); rr.Error != nil || json.Unmarshal(rr.Result, &list) != nil || list.TotalSize != 1 || list.Tasks[0].ID != alices.ID {
			t.Errorf("alice's ListTasks: %s %v", rr.Result, rr.Error)
		}
		if rr := rpcAs(t, url, "alice", "GetTask", map[string]any{"id": alices.ID}); rr.Error != nil {
			t.Errorf("alice's GetTask: %v", rr.Error)
		}
	}
	rr := rpcAs(t, a, "bob", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"taskId": alices.ID}, nil))
	wantRPCError(t, rr, codeTaskNotFound, false)

	// Bob in Alice's contextId starts a conversation of his own; Alice's goes on.
	llm.Enqueue(fakellm.Turn{Text: "Hello Bob."}, fakellm.Turn{Text: "The word was plum."})
	send(a, "bob", map[string]any{"contextId": "shared-ctx"}, "What word did I ask you to remember?")
	if prompt := asJSON(llm.LastRequest().Messages); strings.Contains(prompt, "plum") {
		t.Errorf("bob's run read alice's conversation: %s", prompt)
	}
	send(b, "alice", map[string]any{"contextId": "shared-ctx"}, "What word did I ask you to remember?")
	if prompt := asJSON(llm.LastRequest().Messages); !strings.Contains(prompt, "plum") {
		t.Errorf("alice's follow-up lost her conversation: %s", prompt)
	}
}
