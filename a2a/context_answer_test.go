package a2a

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// askingTask starts a task in contextID whose run waits for the approval of the guarded tool, on the server at url.
func askingTask(t *testing.T, llm *fakellm.Server, url, contextID string) task {
	t.Helper()
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{"path":"/tmp/x"}`}}},
		fakellm.Turn{Text: "It is done."},
	)
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("do the risky thing")}, map[string]any{"contextId": contextID}, nil))
	if tk.Status.State != stateInputRequired || tk.ContextID != contextID {
		t.Fatalf("task %s, want input-required in %s", asJSON(tk), contextID)
	}
	return tk
}

// contextTasks lists the tasks of contextID.
func contextTasks(t *testing.T, url, contextID string) []task {
	t.Helper()
	rr := callRPC(t, url, "1.0", "ListTasks", map[string]any{"contextId": contextID})
	var list listResult
	if rr.Error != nil || json.Unmarshal(rr.Result, &list) != nil {
		t.Fatalf("ListTasks: %v %s", rr.Error, rr.Result)
	}
	return list.Tasks
}

// TestServerAnswerWithoutTaskID: a message in a context whose one task waits in INPUT_REQUIRED, sent without taskId
// (as ADK sends its approval), answers that task, in v1.0 and v0.3: no second task is started to wait behind it.
func TestServerAnswerWithoutTaskID(t *testing.T) {
	for _, v := range []string{"1.0", noA2AVersion} {
		t.Run(v, func(t *testing.T) {
			tool := &guardedTool{}
			llm, _, url := newTestServer(t, approvalPolicy, tool)
			tk := askingTask(t, llm, url, "ctx-adk")
			method, msg := "SendMessage", map[string]any{"messageId": "m2", "role": "ROLE_USER", "contextId": "ctx-adk", "parts": []any{textParam("approve")}}
			if v == noA2AVersion {
				method, msg = "message/send", map[string]any{"kind": "message", "messageId": "m2", "role": "user", "contextId": "ctx-adk",
					"parts": []any{map[string]any{"kind": "text", "text": "approve"}}}
			}
			rr := callRPC(t, url, v, method, map[string]any{"message": msg})
			if rr.Error != nil {
				t.Fatalf("%s without taskId: %v", method, rr.Error)
			}
			if !strings.Contains(string(rr.Result), tk.ID) {
				t.Errorf("the answer's result %s does not name the waiting task %s", rr.Result, tk.ID)
			}
			done := waitTaskState(t, url, tk.ID, stateCompleted)
			if n := tool.calls.Load(); n != 1 || !strings.HasPrefix(partsText(done.Artifacts[0].Parts), "It is done.") {
				t.Errorf("tool calls %d, task %s", n, asJSON(done))
			}
			if tasks := contextTasks(t, url, "ctx-adk"); len(tasks) != 1 || tasks[0].ID != tk.ID {
				t.Errorf("the context's tasks %s, want the one that waited", asJSON(tasks))
			}
			// With no task waiting any more, a message in the context starts a new task, as before.
			llm.Enqueue(fakellm.Turn{Text: "Again."})
			next := sendMessageV1(t, url, sendMessageParams([]any{textParam("once more")}, map[string]any{"contextId": "ctx-adk"}, nil))
			if next.ID == tk.ID || next.Status.State != stateCompleted {
				t.Errorf("a message after the answer: %s, want a new completed task", asJSON(next))
			}
		})
	}
}

// TestServerAnswerWithoutTaskIDOnReplica: the task waits on one replica; the message without taskId reaches the
// other, which finds the task in the shared store and passes the answer on.
func TestServerAnswerWithoutTaskIDOnReplica(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	tool := &guardedTool{}
	orch := host.New(fakeModel(t, llm), host.NewToolManager([]host.Toolset{toolList{tool}}, &host.ToolManagerOptions{Policies: approvalPolicy}), nil)
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	_, a := serveOrchestrator(t, orch, &ServerOptions{Tasks: shared})
	_, b := serveOrchestrator(t, orch, &ServerOptions{Tasks: shared})
	tk := askingTask(t, llm, a, "ctx-replica")
	rr := callRPC(t, b, "1.0", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"contextId": "ctx-replica"}, nil))
	if rr.Error != nil || !strings.Contains(string(rr.Result), tk.ID) {
		t.Fatalf("SendMessage without taskId on the other replica: %v %s", rr.Error, rr.Result)
	}
	waitTaskState(t, a, tk.ID, stateCompleted)
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("tool calls %d, want 1", n)
	}
	if tasks := contextTasks(t, b, "ctx-replica"); len(tasks) != 1 {
		t.Errorf("the context's tasks %s, want the one that waited", asJSON(tasks))
	}
}

// TestServerAnswerWithoutTaskIDAmbiguous: with two tasks of the context waiting for input (one of another replica,
// in the shared store), a message without taskId cannot be routed: it is refused at once with an error naming both,
// and neither task is answered nor a new one started.
func TestServerAnswerWithoutTaskIDAmbiguous(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	tool := &guardedTool{}
	orch := host.New(fakeModel(t, llm), host.NewToolManager([]host.Toolset{toolList{tool}}, &host.ToolManagerOptions{Policies: approvalPolicy}), nil)
	shared := &memTaskStore{tasks: map[string]*StoredTask{}}
	_, url := serveOrchestrator(t, orch, &ServerOptions{Tasks: shared})
	tk := askingTask(t, llm, url, "ctx-two")
	other := task{ID: "task-on-another-replica", ContextID: "ctx-two", Status: taskStatus{State: stateInputRequired, Timestamp: timestamp(time.Now())}}
	body, _ := json.Marshal(other)
	shared.mu.Lock()
	shared.tasks[other.ID] = &StoredTask{ID: other.ID, ContextID: "ctx-two", State: string(stateInputRequired), Updated: time.Now(), Version: 1, Task: body, Owner: "elsewhere"}
	shared.mu.Unlock()

	e := wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"contextId": "ctx-two"}, nil)), codeInvalidParams, false)
	if !strings.Contains(e.Message, tk.ID) || !strings.Contains(e.Message, other.ID) || !strings.Contains(e.Message, "taskId") {
		t.Errorf("error %q, want it to name both waiting tasks and taskId", e.Message)
	}
	if got := getTaskV1(t, url, tk.ID); got.Status.State != stateInputRequired || tool.calls.Load() != 0 {
		t.Errorf("after the refused message: %s, %d tool calls", asJSON(got), tool.calls.Load())
	}
	if tasks := contextTasks(t, url, "ctx-two"); len(tasks) != 2 {
		t.Errorf("the context's tasks %s, want the two that wait and no new one", asJSON(tasks))
	}
	// Named, the task is answered.
	done := sendMessageV1(t, url, sendMessageParams([]any{textParam("approve")}, map[string]any{"contextId": "ctx-two", "taskId": tk.ID}, nil))
	if done.ID != tk.ID || done.Status.State != stateCompleted {
		t.Errorf("the answer with taskId: %s", asJSON(done))
	}
}
