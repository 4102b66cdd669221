package a2a

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/fakellm"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/llm/openai"
)

// memTaskStore is a TaskStore in memory, shared by the servers of a test as a database is by replicas.
type memTaskStore struct {
	mu    sync.Mutex
	tasks map[string]*StoredTask
	saves int
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
		if (q.ContextID == "" || t.ContextID == q.ContextID) && (q.State == "" || t.State == q.State) && !t.Updated.Before(q.UpdatedAfter) {
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

// TestServerStoredTasks runs two servers on one TaskStore, as two replicas on one database. The task runs on the
// first and waits for an approval; the second reads and lists it, but cannot answer, cancel or stream it; once the
// first finishes it, the second reads the answer.
func TestServerStoredTasks(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	model, err := openai.New(&openai.Options{BaseURL: llm.URL, APIKey: "sk-test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tool := &guardedTool{}
	orch := host.New(model, host.NewToolManager([]host.Toolset{toolList{tool}}, &host.ToolManagerOptions{Policies: approvalPolicy}), nil)
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	serve := func() string {
		hs := httptest.NewUnstartedServer(nil)
		url := "http://" + hs.Listener.Addr().String() + "/"
		srv := NewServer(orch, &ServerOptions{Name: "tester", URL: url, Tasks: shared})
		hs.Config.Handler = srv.Handler(httpedge.Options{}, nil)
		hs.Start()
		t.Cleanup(func() { hs.Close(); srv.Close() })
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
	for _, call := range []struct {
		method string
		params any
	}{
		{"SendMessage", sendMessageParams([]any{map[string]any{"data": map[string]any{"approved": true}}}, map[string]any{"taskId": tk.ID}, nil)},
		{"CancelTask", map[string]any{"id": tk.ID}},
		{"SubscribeToTask", map[string]any{"id": tk.ID}},
	} {
		e := wantRPCError(t, callRPC(t, b, "1.0", call.method, call.params), codeUnsupportedOperation, false)
		if e != nil && !strings.Contains(e.Message, "in another agenthost process") {
			t.Errorf("%s on the other server: %q", call.method, e.Message)
		}
	}
	if tool.calls.Load() != 0 {
		t.Fatal("the tool ran without its approval")
	}

	done := sendMessageV1(t, a, sendMessageParams([]any{map[string]any{"data": map[string]any{"approved": true}}}, map[string]any{"taskId": tk.ID}, nil))
	if done.Status.State != stateCompleted {
		t.Fatalf("after approval: %s", asJSON(done))
	}
	got = getTaskV1(t, b, tk.ID)
	if got.Status.State != stateCompleted || len(got.Artifacts) != 1 || !strings.HasPrefix(partsText(got.Artifacts[0].Parts), "It is done.") || len(got.History) != len(done.History) {
		t.Errorf("the finished task on the other server: %s\nwant %s", asJSON(got), asJSON(done))
	}
	// Saved at each change of state (submitted, working, input-required, working, completed), not for each event.
	shared.mu.Lock()
	saves := shared.saves
	shared.mu.Unlock()
	if saves != 5 {
		t.Errorf("%d saves, want 5", saves)
	}
}
