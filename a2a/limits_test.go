package a2a

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// TestServerTaskCaps: unfinished tasks count against the shared cap (503) and their caller's own (429), each
// refusal with Retry-After and a JSON-RPC error saying why; a task whose run ended gives its place back.
func TestServerTaskCaps(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	tm := host.NewToolManager([]host.Toolset{toolList(nil)}, nil)
	sessions := httpedge.NewSessions(2)
	srv, url := serveOrchestrator(t, host.New(fakeModel(t, llm), tm, nil), &ServerOptions{
		Sessions: sessions, MaxTasksPerSubject: 1,
		// The token names the caller, as a verified JWT's subject does.
		Caller: func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") },
	})
	t.Cleanup(func() { _ = srv.Close() })
	send := func(caller, v string) (*http.Response, rpcResponse) {
		t.Helper()
		method, params := "SendMessage", any(sendMessageParams([]any{textParam("take your time")}, nil, map[string]any{"returnImmediately": true}))
		if v == noA2AVersion {
			method = "message/send"
			params = map[string]any{"message": map[string]any{"messageId": newID(), "role": "user", "kind": "message",
				"parts": []any{map[string]any{"kind": "text", "text": "take your time"}}}, "configuration": map[string]any{"blocking": false}}
		}
		p, _ := json.Marshal(params)
		resp, raw := postRaw(t, url, v, "application/json", caller, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+string(p)+`}`)
		var rr rpcResponse
		if err := json.Unmarshal(raw, &rr); err != nil {
			t.Fatalf("response %d %s: %v", resp.StatusCode, raw, err)
		}
		return resp, rr
	}
	start := func(caller string) string {
		t.Helper()
		llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
		resp, rr := send(caller, "1.0")
		var res streamResponse
		if resp.StatusCode != http.StatusOK || rr.Error != nil || json.Unmarshal(rr.Result, &res) != nil || res.Task == nil {
			t.Fatalf("%s's task: HTTP %d, %s %v", caller, resp.StatusCode, rr.Result, rr.Error)
		}
		return res.Task.ID
	}
	refused := func(caller, v string, status int, want string) {
		t.Helper()
		resp, rr := send(caller, v)
		if resp.StatusCode != status || resp.Header.Get("Retry-After") != "10" || rr.Error == nil || rr.Error.Code != codeServerBusy ||
			!strings.Contains(rr.Error.Message, want) || string(rr.ID) != "7" {
			t.Fatalf("%s's refused task (%s): HTTP %d, Retry-After %q, %s %v; want %d and an error saying %q",
				caller, v, resp.StatusCode, resp.Header.Get("Retry-After"), rr.Result, rr.Error, status, want)
		}
	}
	alice := start("alice")
	refused("alice", "1.0", http.StatusTooManyRequests, "limit of 1 open task")
	refused("alice", noA2AVersion, http.StatusTooManyRequests, "limit of 1 open task")
	start("bob")
	refused("carol", "1.0", http.StatusServiceUnavailable, "limit of 2 open sessions and tasks")
	resp, raw := postRaw(t, url, "1.0", "application/json", "alice", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+alice+`"}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"TASK_STATE_CANCELED"`) {
		t.Fatalf("cancel: %d %s", resp.StatusCode, raw)
	}
	// The place is given back before CancelTask answers.
	if n := sessions.Len(); n != 1 {
		t.Fatalf("%d places taken once alice's task was canceled; want bob's alone", n)
	}
	start("alice")
}

// TestServerTaskPlaceBackBeforeItsEnd: a task gives its place back before its final state is published, so that a
// caller at a cap of 1 may send the next message as soon as the last one is answered (a blocking send, or
// CancelTask), with no wait between them.
func TestServerTaskPlaceBackBeforeItsEnd(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	tm := host.NewToolManager([]host.Toolset{toolList(nil)}, nil)
	sessions := httpedge.NewSessions(1)
	srv, url := serveOrchestrator(t, host.New(fakeModel(t, llm), tm, nil), &ServerOptions{
		Sessions: sessions, MaxTasksPerSubject: 1,
		Caller: func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") },
	})
	t.Cleanup(func() { _ = srv.Close() })
	send := func(config map[string]any) (*http.Response, rpcResponse, *task) {
		t.Helper()
		p, _ := json.Marshal(sendMessageParams([]any{textParam("hello")}, nil, config))
		resp, raw := postRaw(t, url, "1.0", "application/json", "alice", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":`+string(p)+`}`)
		var rr rpcResponse
		var res streamResponse
		if err := json.Unmarshal(raw, &rr); err != nil {
			t.Fatalf("response %d %s: %v", resp.StatusCode, raw, err)
		}
		_ = json.Unmarshal(rr.Result, &res)
		return resp, rr, res.Task
	}

	llm.SetResponder(func(*fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "done"} })
	for i := range 200 {
		resp, rr, tk := send(nil)
		if resp.StatusCode != http.StatusOK || rr.Error != nil || tk == nil || tk.Status.State != stateCompleted {
			t.Fatalf("blocking message %d after %d answered: HTTP %d, %s %v", i+1, i, resp.StatusCode, rr.Result, rr.Error)
		}
	}

	llm.SetResponder(func(*fakellm.Request) fakellm.Turn { return fakellm.Turn{HangAfter: fakellm.Immediately} })
	for i := range 2 {
		resp, rr, tk := send(map[string]any{"returnImmediately": true})
		if resp.StatusCode != http.StatusOK || rr.Error != nil || tk == nil {
			t.Fatalf("message %d, sent as soon as the task before it was canceled: HTTP %d, %s %v", i+1, resp.StatusCode, rr.Result, rr.Error)
		}
		resp, raw := postRaw(t, url, "1.0", "application/json", "alice", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"`+tk.ID+`"}}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"TASK_STATE_CANCELED"`) {
			t.Fatalf("cancel: %d %s", resp.StatusCode, raw)
		}
	}
}
