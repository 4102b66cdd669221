package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// The server over HTTP, as a client on the wire sees it: hand-written JSON-RPC, the orchestrator behind it on a
// fakellm model (newTestServer, in roundtrip_test.go).

// serverWaitLimit bounds every wait on the server: generous, for a loaded machine; never a claim about speed.
const serverWaitLimit = 30 * time.Second

// noA2AVersion, as the version of postJSONRPC, sends no A2A-Version header (a v0.3 client).
const noA2AVersion = "-"

// postJSONRPC posts body to the JSON-RPC endpoint with A2A-Version v and Content-Type contentType, and returns the
// decoded response, which must come with HTTP 200.
func postJSONRPC(t *testing.T, url, v, contentType, body string) rpcResponse {
	t.Helper()
	resp, raw := postRaw(t, url, v, contentType, "", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %s: %s", resp.Status, raw)
	}
	if mt := resp.Header.Get("Content-Type"); mt != "application/json" {
		t.Fatalf("Content-Type %q: %s", mt, raw)
	}
	var rr rpcResponse
	if err := json.Unmarshal(raw, &rr); err != nil {
		t.Fatalf("response %s: %v", raw, err)
	}
	if rr.JSONRPC != "2.0" || (rr.Error == nil) == (rr.Result == nil) {
		t.Fatalf("not a JSON-RPC response: %s", raw)
	}
	return rr
}

// postRaw posts body and returns the response with its body read; token, when set, goes in Authorization.
func postRaw(t *testing.T, url, v, contentType, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testwait.Context(t, serverWaitLimit), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if v != noA2AVersion {
		req.Header.Set("A2A-Version", v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// callRPC calls method with params (marshalled as they are) in version v, with id 1.
func callRPC(t *testing.T, url, v, method string, params any) rpcResponse {
	t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return postJSONRPC(t, url, v, "application/json", `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+string(p)+`}`)
}

// wantRPCError checks that rr is the error code, with v1.0's ErrorInfo unless v0.3 answered.
func wantRPCError(t *testing.T, rr rpcResponse, code int, v03Shape bool) *rpcError {
	t.Helper()
	if rr.Error == nil {
		t.Fatalf("result %s, want error %d", rr.Result, code)
	}
	if rr.Error.Code != code {
		t.Fatalf("error %v, want code %d", rr.Error, code)
	}
	if v03Shape {
		if rr.Error.Data != nil {
			t.Errorf("v0.3 error with data %s", rr.Error.Data)
		}
	} else if infos := errorInfos(t, rr.Error.Data); len(infos) != 1 || infos[0]["reason"] != errorInfo[code].reason {
		t.Errorf("error data %s, want reason %s", rr.Error.Data, errorInfo[code].reason)
	}
	return rr.Error
}

// sendMessageParams returns v1.0 SendMessage params for a user message of parts, with extra fields of the message and
// the configuration.
func sendMessageParams(parts []any, msg, config map[string]any) map[string]any {
	m := map[string]any{"messageId": newID(), "role": "ROLE_USER", "parts": parts}
	for k, v := range msg {
		m[k] = v
	}
	p := map[string]any{"message": m}
	if config != nil {
		p["configuration"] = config
	}
	return p
}

func textParam(s string) map[string]any { return map[string]any{"text": s} }

// sendMessageV1 sends a v1.0 SendMessage and returns the task of the result.
func sendMessageV1(t *testing.T, url string, params map[string]any) task {
	t.Helper()
	rr := callRPC(t, url, "1.0", "SendMessage", params)
	if rr.Error != nil {
		t.Fatalf("SendMessage: %v", rr.Error)
	}
	var res streamResponse
	if err := json.Unmarshal(rr.Result, &res); err != nil || res.Task == nil {
		t.Fatalf("SendMessage result %s: %v", rr.Result, err)
	}
	return *res.Task
}

// getTaskV1 returns the task as GetTask (v1.0) shows it.
func getTaskV1(t *testing.T, url, id string) task {
	t.Helper()
	rr := callRPC(t, url, "1.0", "GetTask", map[string]any{"id": id})
	if rr.Error != nil {
		t.Fatalf("GetTask: %v", rr.Error)
	}
	var tk task
	if err := json.Unmarshal(rr.Result, &tk); err != nil {
		t.Fatalf("GetTask result %s: %v", rr.Result, err)
	}
	return tk
}

// waitTaskState polls GetTask until the task is in state, and returns it.
func waitTaskState(t *testing.T, url, id string, state taskState) task {
	t.Helper()
	var tk task
	testwait.Until(t, serverWaitLimit, "task "+id+" is "+string(state), func() bool {
		tk = getTaskV1(t, url, id)
		return tk.Status.State == state
	})
	return tk
}

// runToCompletion runs one message to completion and returns its task.
func runToCompletion(t *testing.T, llm *fakellm.Server, url string) task {
	t.Helper()
	llm.Enqueue(fakellm.Turn{Text: "All done."})
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("do it")}, nil, nil))
	if tk.Status.State != stateCompleted {
		t.Fatalf("task %s, want completed", asJSON(tk))
	}
	return tk
}

func TestServerContentType(t *testing.T) {
	_, _, url := newTestServer(t, nil)
	body := `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"x"}}`
	for _, ct := range []string{"text/plain", "", "application/xml", "application/json-ish"} {
		rr := postJSONRPC(t, url, "1.0", ct, body)
		wantRPCError(t, rr, codeContentTypeNotSupported, false)
		if string(rr.ID) != "null" {
			t.Errorf("%q: id %s, want null", ct, rr.ID)
		}
	}
	// v0.3 gets its own shape of the same error.
	wantRPCError(t, postJSONRPC(t, url, noA2AVersion, "text/plain", body), codeContentTypeNotSupported, true)
	// Both JSON media types are read, parameters allowed.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/a2a+json"} {
		rr := postJSONRPC(t, url, "1.0", ct, body)
		wantRPCError(t, rr, codeTaskNotFound, false)
		if string(rr.ID) != "5" {
			t.Errorf("%q: id %s, want 5", ct, rr.ID)
		}
	}
	// An unparsable body gets -32700 with a null id.
	rr := postJSONRPC(t, url, "1.0", "application/json", `{"jsonrpc":"2.0","id":5,`)
	wantRPCError(t, rr, codeParseError, false)
	if string(rr.ID) != "null" {
		t.Errorf("parse error id %s", rr.ID)
	}
}

func TestServerVersions(t *testing.T) {
	_, _, url := newTestServer(t, nil)
	getUnknown := `{"jsonrpc":"2.0","id":"q","method":"GetTask","params":{"id":"nope"}}`

	for _, v := range []string{"2.0", "1", "abc", "0.2"} {
		rr := postJSONRPC(t, url, v, "application/json", getUnknown)
		e := wantRPCError(t, rr, codeVersionNotSupported, false)
		if infos := errorInfos(t, e.Data); infos[0]["reason"] != "VERSION_NOT_SUPPORTED" || infos[0]["domain"] != "a2a-protocol.org" {
			t.Errorf("%s: data %s", v, e.Data)
		}
		if string(rr.ID) != `"q"` || !strings.Contains(e.Message, v) {
			t.Errorf("%s: id %s, message %q", v, rr.ID, e.Message)
		}
	}
	// A patch number is ignored.
	for _, v := range []string{"1.0", "1.0.3", " 1.0 "} {
		wantRPCError(t, postJSONRPC(t, url, v, "application/json", getUnknown), codeTaskNotFound, false)
		if rr := callRPC(t, url, v, "ListTasks", map[string]any{}); rr.Error != nil {
			t.Errorf("%q: ListTasks: %v", v, rr.Error)
		}
	}
	// The version may come as a query parameter.
	if rr := callRPC(t, url+"?A2A-Version=1.0", noA2AVersion, "ListTasks", map[string]any{}); rr.Error != nil {
		t.Errorf("query parameter: ListTasks: %v", rr.Error)
	}
	// No header is v0.3: v1.0 names are unknown there, and the other way round.
	for _, v := range []string{noA2AVersion, "", "0.3", "0.3.0"} {
		wantRPCError(t, callRPC(t, url, v, "GetTask", map[string]any{"id": "nope"}), codeMethodNotFound, true)
		wantRPCError(t, callRPC(t, url, v, "ListTasks", map[string]any{}), codeMethodNotFound, true)
		wantRPCError(t, callRPC(t, url, v, "tasks/get", map[string]any{"id": "nope"}), codeTaskNotFound, true)
	}
	wantRPCError(t, callRPC(t, url, "1.0", "message/send", map[string]any{}), codeMethodNotFound, false)
	wantRPCError(t, callRPC(t, url, "1.0", "NoSuchMethod", map[string]any{}), codeMethodNotFound, false)
}

func TestServerV03MessageSend(t *testing.T) {
	llm, _, url := newTestServer(t, nil)
	llm.Enqueue(fakellm.Turn{Text: "Hello from the agent."})
	rr := postJSONRPC(t, url, noA2AVersion, "application/json", `{"jsonrpc":"2.0","id":"v03","method":"message/send","params":{
		"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]},
		"configuration":{"blocking":true,"acceptedOutputModes":[]}}}`)
	if rr.Error != nil {
		t.Fatal(rr.Error)
	}
	var shape struct {
		Kind   string `json:"kind"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal(rr.Result, &shape); err != nil || shape.Kind != "task" || shape.Status.State != "completed" {
		t.Fatalf("result %s", rr.Result)
	}
	res, err := decodeV03(rr.Result)
	if err != nil || res.Task == nil {
		t.Fatalf("decodeV03: %v", err)
	}
	if len(res.Task.Artifacts) != 1 || !strings.Contains(partsText(res.Task.Artifacts[0].Parts), "Hello from the agent.") {
		t.Errorf("artifacts %s", asJSON(res.Task.Artifacts))
	}
	if string(rr.ID) != `"v03"` {
		t.Errorf("id %s", rr.ID)
	}
	// tasks/get reads it back in v0.3's shape.
	rr = callRPC(t, url, noA2AVersion, "tasks/get", map[string]any{"id": res.Task.ID, "historyLength": 0})
	if rr.Error != nil || !strings.Contains(string(rr.Result), `"kind":"task"`) || strings.Contains(string(rr.Result), `"history"`) {
		t.Errorf("tasks/get: %s %v", rr.Result, rr.Error)
	}
}

func TestServerUnsupportedMethods(t *testing.T) {
	_, _, url := newTestServer(t, nil)
	for _, m := range []string{"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"} {
		wantRPCError(t, callRPC(t, url, "1.0", m, map[string]any{"taskId": "t", "id": "c", "url": "http://x/"}), codePushNotSupported, false)
	}
	for _, m := range []string{"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"} {
		wantRPCError(t, callRPC(t, url, noA2AVersion, m, map[string]any{"id": "t"}), codePushNotSupported, true)
	}
	// A send that asks for push notifications is refused the same way, before any task.
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("hi")}, nil,
		map[string]any{"taskPushNotificationConfig": map[string]any{"url": "http://x/"}})), codePushNotSupported, false)
	wantRPCError(t, postJSONRPC(t, url, noA2AVersion, "application/json", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{
		"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},
		"configuration":{"pushNotificationConfig":{"url":"http://x/"}}}}`), codePushNotSupported, true)

	wantRPCError(t, callRPC(t, url, "1.0", "GetExtendedAgentCard", map[string]any{}), codeExtendedCardNotAvailable, false)
	wantRPCError(t, postJSONRPC(t, url, "1.0", "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`), codeExtendedCardNotAvailable, false)
	wantRPCError(t, callRPC(t, url, noA2AVersion, "agent/getAuthenticatedExtendedCard", map[string]any{}), codeExtendedCardNotAvailable, true)
	if rr := callRPC(t, url, "1.0", "ListTasks", map[string]any{}); rr.Error != nil || !strings.Contains(string(rr.Result), `"tasks":[]`) {
		t.Errorf("nothing ran: %s %v", rr.Result, rr.Error)
	}
}

func TestServerInvalidParams(t *testing.T) {
	_, _, url := newTestServer(t, nil)
	for name, params := range map[string]any{
		"missing messageId": map[string]any{"message": map[string]any{"role": "ROLE_USER", "parts": []any{textParam("hi")}}},
		"no parts":          map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{}}},
		"empty part":        map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{}}}},
		"no text":           sendMessageParams([]any{textParam("   ")}, nil, nil),
		"params null":       nil,
		"params a string":   "hi",
	} {
		if rr := callRPC(t, url, "1.0", "SendMessage", params); rr.Error == nil || rr.Error.Code != codeInvalidParams {
			t.Errorf("%s: %s %v, want -32602", name, rr.Result, rr.Error)
		}
	}
	wantRPCError(t, postJSONRPC(t, url, noA2AVersion, "application/json", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{
		"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`), codeInvalidParams, true)
	wantRPCError(t, callRPC(t, url, "1.0", "ListTasks", map[string]any{"pageSize": 0}), codeInvalidParams, false)
	wantRPCError(t, callRPC(t, url, "1.0", "ListTasks", map[string]any{"pageSize": 101}), codeInvalidParams, false)
	wantRPCError(t, callRPC(t, url, "1.0", "GetTask", nil), codeInvalidParams, false)
}

func TestServerTaskErrors(t *testing.T) {
	llm, _, url := newTestServer(t, nil)
	wantRPCError(t, callRPC(t, url, "1.0", "GetTask", map[string]any{"id": "no-such-task"}), codeTaskNotFound, false)
	wantRPCError(t, callRPC(t, url, "1.0", "CancelTask", map[string]any{"id": "no-such-task"}), codeTaskNotFound, false)
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("hi")}, map[string]any{"taskId": "no-such-task"}, nil)), codeTaskNotFound, false)

	done := runToCompletion(t, llm, url)
	wantRPCError(t, callRPC(t, url, "1.0", "CancelTask", map[string]any{"id": done.ID}), codeTaskNotCancelable, false)
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("more")}, map[string]any{"taskId": done.ID}, nil)), codeUnsupportedOperation, false)
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("more")}, map[string]any{"taskId": done.ID, "contextId": "another-context"}, nil)), codeInvalidParams, false)
	wantRPCError(t, callRPC(t, url, "1.0", "SubscribeToTask", map[string]any{"id": done.ID}), codeUnsupportedOperation, false)
	if got := getTaskV1(t, url, done.ID); got.Status.State != stateCompleted {
		t.Errorf("the task changed: %s", asJSON(got))
	}
	// A new message in the task's context starts a new task there.
	llm.Enqueue(fakellm.Turn{Text: "Again."})
	next := sendMessageV1(t, url, sendMessageParams([]any{textParam("again")}, map[string]any{"contextId": done.ContextID}, nil))
	if next.ContextID != done.ContextID || next.ID == done.ID || next.Status.State != stateCompleted {
		t.Errorf("follow-up task %s", asJSON(next))
	}
}

// startHangingTask starts a task whose model turn hangs, without waiting for it, and returns its id once the model was
// asked. The server is closed before the helper's cleanup, so that no run outlives the test whatever happens.
func startHangingTask(t *testing.T, llm *fakellm.Server, srv *Server, url string) string {
	t.Helper()
	t.Cleanup(func() { _ = srv.Close() })
	before := llm.RequestCount()
	llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("take your time")}, nil, map[string]any{"returnImmediately": true}))
	if tk.Status.State.terminal() {
		t.Fatalf("task %s", asJSON(tk))
	}
	testwait.Until(t, serverWaitLimit, "the model is asked", func() bool { return llm.RequestCount() > before })
	return tk.ID
}

func TestServerCancelTask(t *testing.T) {
	llm, srv, url := newTestServer(t, nil)
	id := startHangingTask(t, llm, srv, url)
	var first task
	for i := range 2 { // the second cancel finds it canceled, and returns it as it is
		rr := callRPC(t, url, "1.0", "CancelTask", map[string]any{"id": id})
		if rr.Error != nil {
			t.Fatalf("cancel %d: %v", i, rr.Error)
		}
		var tk task
		if err := json.Unmarshal(rr.Result, &tk); err != nil {
			t.Fatal(err)
		}
		if tk.ID != id || tk.Status.State != stateCanceled || !strings.Contains(statusText(tk.Status), "canceled by its caller") {
			t.Fatalf("cancel %d: %s", i, asJSON(tk))
		}
		if i == 0 {
			first = tk
		} else if tk.Status.Timestamp != first.Status.Timestamp {
			t.Errorf("the second cancel changed the task: %s then %s", asJSON(first), asJSON(tk))
		}
	}
	// v0.3 reads it the same way.
	rr := callRPC(t, url, noA2AVersion, "tasks/cancel", map[string]any{"id": id})
	if rr.Error != nil || !strings.Contains(string(rr.Result), `"state":"canceled"`) {
		t.Errorf("tasks/cancel: %s %v", rr.Result, rr.Error)
	}
}

func TestServerReturnImmediately(t *testing.T) {
	llm, _, url := newTestServer(t, nil)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the servers close
	llm.SetResponder(func(*fakellm.Request) fakellm.Turn {
		<-release
		return fakellm.Turn{Text: "Finally."}
	})
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("slowly")}, nil, map[string]any{"returnImmediately": true}))
	if tk.Status.State.terminal() || tk.Status.State.interrupted() || tk.ID == "" || tk.ContextID == "" {
		t.Fatalf("returned %s, want a task still going", asJSON(tk))
	}
	if len(tk.History) != 1 || partsText(tk.History[0].Parts) != "slowly" || tk.History[0].TaskID != tk.ID {
		t.Errorf("history %s", asJSON(tk.History))
	}
	free()
	done := waitTaskState(t, url, tk.ID, stateCompleted)
	if len(done.Artifacts) != 1 || !strings.HasPrefix(partsText(done.Artifacts[0].Parts), "Finally.") {
		t.Errorf("artifacts %s", asJSON(done.Artifacts))
	}
}

func TestServerBodyTooLarge(t *testing.T) {
	_, srv, _ := newTestServer(t, nil)
	hs := httptest.NewServer(srv.Handler(httpedge.Options{MaxBodyBytes: 512}, nil))
	t.Cleanup(hs.Close)
	small := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`
	wantRPCError(t, postJSONRPC(t, hs.URL+"/", "1.0", "application/json", small), codeTaskNotFound, false)
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` +
		strings.Repeat("a", 64<<10) + `"}]}}}`
	resp, raw := postRaw(t, hs.URL+"/", "1.0", "application/json", "", big) // bounded by its context: an error, not a hang
	var rr rpcResponse
	if err := json.Unmarshal(raw, &rr); err != nil {
		t.Fatalf("HTTP %s: %s", resp.Status, raw)
	}
	if rr.Error == nil || rr.Error.Code != codeInvalidRequest || !strings.Contains(rr.Error.Message, "512") {
		t.Errorf("response %+v, want -32600 naming the limit", rr.Error)
	}
}

func TestServerToken(t *testing.T) {
	_, srv, _ := newTestServer(t, nil)
	const token = "s3cret-token"
	hs := httptest.NewServer(srv.Handler(httpedge.Options{Token: token}, nil))
	t.Cleanup(hs.Close)

	for _, path := range []string{cardPath, "/.well-known/agent.json"} {
		for _, v := range []string{"1.0", noA2AVersion} {
			req, _ := http.NewRequestWithContext(testwait.Context(t, serverWaitLimit), http.MethodGet, hs.URL+path, nil)
			if v != noA2AVersion {
				req.Header.Set("A2A-Version", v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s without a token: HTTP %s", path, v, resp.Status)
			}
			c, err := decodeCard(raw)
			if err != nil || c.Name != "tester" {
				t.Fatalf("card %s: %v", raw, err)
			}
			ep, err := c.choose(hs.URL+path, version{})
			if err != nil || ep.Version != v10 || !ep.Streaming {
				t.Errorf("%s %s: chosen %+v, %v", path, v, ep, err)
			}
			if legacy := c.URL != ""; legacy != (v == noA2AVersion) {
				t.Errorf("%s %s: v0.3 url %q", path, v, c.URL)
			}
		}
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`
	for _, tok := range []string{"", "wrong"} {
		resp, raw := postRaw(t, hs.URL+"/", "1.0", "application/json", tok, body)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("token %q: HTTP %s %s", tok, resp.Status, raw)
		}
	}
	resp, raw := postRaw(t, hs.URL+"/", "1.0", "application/json", token, body)
	var rr rpcResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &rr) != nil || rr.Error == nil || rr.Error.Code != codeTaskNotFound {
		t.Errorf("with the token: HTTP %s %s", resp.Status, raw)
	}
}

// guardedTool is a tool whose calls are counted.
type guardedTool struct{ calls atomic.Int32 }

func (*guardedTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "danger", Description: "does something risky", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (g *guardedTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	g.calls.Add(1)
	return &host.Result{Text: "done the risky thing"}, nil
}

var approvalPolicy = map[string]host.ToolPolicy{"danger": {RequireApproval: true}}

func TestServerApproval(t *testing.T) {
	tool := &guardedTool{}
	llm, _, url := newTestServer(t, approvalPolicy, tool)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{"path":"/tmp/x"}`}}},
		fakellm.Turn{Text: "It is done."},
	)
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("do the risky thing")}, nil, nil))
	if tk.Status.State != stateInputRequired {
		t.Fatalf("task %s, want input-required", asJSON(tk))
	}
	q := tk.Status.Message
	if q == nil || q.Role != roleAgent || !strings.Contains(partsText(q.Parts), "danger") || !strings.Contains(partsText(q.Parts), "/tmp/x") {
		t.Fatalf("question %s", asJSON(q))
	}
	var data struct {
		Approval struct {
			Tool string `json:"tool"`
		} `json:"approval"`
	}
	for _, p := range q.Parts {
		if p.Kind == partData {
			_ = json.Unmarshal(p.Data, &data)
		}
	}
	if data.Approval.Tool != "danger" {
		t.Errorf("question data %s", asJSON(q.Parts))
	}
	if tool.calls.Load() != 0 {
		t.Fatal("the tool ran before its approval")
	}

	// An answer that is not one is refused, as is one from another context, and the task still waits.
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("maybe")}, map[string]any{"taskId": tk.ID}, nil)), codeInvalidParams, false)
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"taskId": tk.ID, "contextId": "elsewhere"}, nil)), codeInvalidParams, false)
	if got := getTaskV1(t, url, tk.ID); got.Status.State != stateInputRequired {
		t.Fatalf("after a bad answer: %s", asJSON(got))
	}

	// A data part approves.
	done := sendMessageV1(t, url, sendMessageParams([]any{map[string]any{"data": map[string]any{"approved": true}}},
		map[string]any{"taskId": tk.ID, "contextId": tk.ContextID}, nil))
	if done.ID != tk.ID || done.Status.State != stateCompleted {
		t.Fatalf("after approval: %s", asJSON(done))
	}
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if len(done.Artifacts) != 1 || !strings.HasPrefix(partsText(done.Artifacts[0].Parts), "It is done.") {
		t.Errorf("artifacts %s", asJSON(done.Artifacts))
	}
	// The history has the request, the question and the answer.
	if len(done.History) < 3 || done.History[1].MessageID != q.MessageID || done.History[2].Role != roleUser {
		t.Errorf("history %s", asJSON(done.History))
	}
	// A second answer finds nothing to answer.
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"taskId": tk.ID}, nil)), codeUnsupportedOperation, false)
	if llm.Unscripted() != 0 {
		t.Errorf("%d unscripted model requests", llm.Unscripted())
	}
}

func TestServerApprovalDenied(t *testing.T) {
	tool := &guardedTool{}
	llm, _, url := newTestServer(t, approvalPolicy, tool)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{}`}}},
		fakellm.Turn{Text: "I was not allowed."},
	)
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("do it")}, nil, nil))
	if tk.Status.State != stateInputRequired {
		t.Fatalf("task %s", asJSON(tk))
	}
	// In v0.3, with the answer as text.
	rr := postJSONRPC(t, url, noA2AVersion, "application/json", `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{
		"message":{"kind":"message","messageId":"a1","role":"user","taskId":"`+tk.ID+`","parts":[{"kind":"text","text":"Deny."}]},
		"configuration":{"blocking":true}}}`)
	if rr.Error != nil || !strings.Contains(string(rr.Result), `"state":"completed"`) {
		t.Fatalf("answer: %s %v", rr.Result, rr.Error)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("a denied tool ran %d times", n)
	}
	if req := llm.LastRequest(); req == nil || !strings.Contains(string(req.Body), "denied by the user") {
		t.Errorf("the model was not told of the refusal")
	}
}

func TestServerInputTimeout(t *testing.T) {
	tool := &guardedTool{}
	llm, srv, url := newTestServer(t, approvalPolicy, tool)
	// Set before the first request, which every run and handler comes after.
	srv.opts.InputTimeout = time.Millisecond
	llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "danger", Arguments: `{}`}}})
	tk := sendMessageV1(t, url, sendMessageParams([]any{textParam("do it")}, nil, nil))
	done := waitTaskState(t, url, tk.ID, stateCanceled)
	if !strings.Contains(statusText(done.Status), "no answer came") {
		t.Errorf("status %s, want a message saying no answer came", asJSON(done.Status))
	}
	asked := false
	for _, m := range done.History {
		if m.Role == roleAgent && strings.Contains(partsText(m.Parts), "danger") {
			asked = true
		}
	}
	if !asked {
		t.Errorf("the question is not in the history: %s", asJSON(done.History))
	}
	if tool.calls.Load() != 0 {
		t.Error("the tool ran without an answer")
	}
	// The question was withdrawn: a late answer finds a finished task.
	wantRPCError(t, callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("approve")}, map[string]any{"taskId": tk.ID}, nil)), codeUnsupportedOperation, false)
}

func TestServerCloseCancelsRuns(t *testing.T) {
	llm, srv, url := newTestServer(t, nil)
	id := startHangingTask(t, llm, srv, url)
	testwait.Within(t, serverWaitLimit, "Server.Close with a run in flight", func() { _ = srv.Close() })
	tk := getTaskV1(t, url, id)
	if tk.Status.State != stateCanceled || !strings.Contains(statusText(tk.Status), "shutting down") {
		t.Errorf("task after Close: %s", asJSON(tk.Status))
	}
	testwait.Within(t, serverWaitLimit, "a second Close", func() { _ = srv.Close() })
}

// A blocking send whose caller goes away stops waiting for the task, which goes on.
func TestServerBlockingSendCallerGone(t *testing.T) {
	llm, srv, url := newTestServer(t, nil)
	t.Cleanup(func() { _ = srv.Close() }) // ends the hanging run before the helper closes the HTTP server
	llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	ctx, cancel := context.WithCancel(testwait.Context(t, serverWaitLimit))
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": sendMessageParams([]any{textParam("wait for me")}, nil, nil)})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	testwait.Until(t, serverWaitLimit, "the model is asked", func() bool { return llm.RequestCount() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the blocking send returned %v before its caller went away", err)
	}
	var st *serverTask
	srv.store.mu.Lock()
	for _, x := range srv.store.tasks {
		st = x
	}
	srv.store.mu.Unlock()
	testwait.Until(t, serverWaitLimit, "the handler stops listening to the task", func() bool {
		srv.store.mu.Lock()
		defer srv.store.mu.Unlock()
		return len(st.subs) == 0
	})
	if got := getTaskV1(t, url, st.id); got.Status.State.terminal() {
		t.Errorf("the task ended with its caller: %s", asJSON(got.Status))
	}
}

// readRPCStream reads a streaming response's events as JSON-RPC responses, until the stream ends.
func readRPCStream(t *testing.T, resp *http.Response) []rpcResponse {
	t.Helper()
	if mt := resp.Header.Get("Content-Type"); mt != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("Content-Type %q: %s", mt, raw)
	}
	var out []rpcResponse
	r := newSSEReader(resp.Body)
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var rr rpcResponse
		if err := json.Unmarshal(ev.Data, &rr); err != nil {
			t.Fatalf("event %s: %v", ev.Data, err)
		}
		out = append(out, rr)
	}
}

func TestServerStream(t *testing.T) {
	llm, _, url := newTestServer(t, nil)
	for _, v := range []string{"1.0", noA2AVersion} {
		llm.Enqueue(fakellm.Turn{Text: "Streamed answer."})
		method, params := "SendStreamingMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"go"}]}}`
		if v == noA2AVersion {
			method, params = "message/stream", `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"go"}]}}`
		}
		req, _ := http.NewRequestWithContext(testwait.Context(t, serverWaitLimit), http.MethodPost, url,
			strings.NewReader(`{"jsonrpc":"2.0","id":"s","method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		if v != noA2AVersion {
			req.Header.Set("A2A-Version", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		evs := readRPCStream(t, resp)
		resp.Body.Close()
		var results []*streamResponse
		for _, rr := range evs {
			if rr.Error != nil || string(rr.ID) != `"s"` {
				t.Fatalf("%s: event %+v", v, rr)
			}
			var res *streamResponse
			if v == noA2AVersion {
				res, err = decodeV03(rr.Result)
			} else {
				res = &streamResponse{}
				err = json.Unmarshal(rr.Result, res)
			}
			if err != nil || res.empty() {
				t.Fatalf("%s: event %s: %v", v, rr.Result, err)
			}
			results = append(results, res)
		}
		if len(results) < 3 || results[0].Task == nil {
			t.Fatalf("%s: %d events, the first %s", v, len(results), asJSON(results))
		}
		last := results[len(results)-1].StatusUpdate
		if last == nil || last.Status.State != stateCompleted || (v == noA2AVersion && !last.Final) {
			t.Errorf("%s: last event %s", v, asJSON(results[len(results)-1]))
		}
		var answer strings.Builder
		for _, r := range results {
			if a := r.ArtifactUpdate; a != nil {
				if !a.Append {
					answer.Reset()
				}
				answer.WriteString(partsText(a.Artifact.Parts))
			}
		}
		if answer.String() != "Streamed answer." {
			t.Errorf("%s: streamed answer %q", v, answer.String())
		}
	}
}

// TestServerOutputSchema: a message asks for a structured answer with an output schema in its metadata or in a data
// part of its own; the answer artifact carries the value as a data part, and in the answer's details.
func TestServerOutputSchema(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	orch := host.New(fakeModel(t, llm), host.NewToolManager(nil, nil), &host.Options{CompileSchema: schemacheck.Compile})
	_, url := serveOrchestrator(t, orch, &ServerOptions{})

	schema := map[string]any{"type": "object", "required": []string{"city"}, "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	for _, tc := range []struct {
		name  string
		parts []any
		msg   map[string]any
	}{
		{"metadata", []any{textParam("Which city?")}, map[string]any{"metadata": map[string]any{OutputSchemaKey: schema}}},
		{"data part", []any{textParam("Which city?"), map[string]any{"data": map[string]any{OutputSchemaKey: schema}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: host.OutputToolName, Arguments: `{"city":"Lyon"}`}}})
			tk := sendMessageV1(t, url, sendMessageParams(tc.parts, tc.msg, nil))
			if tk.Status.State != stateCompleted || len(tk.Artifacts) != 1 {
				t.Fatalf("task %s", asJSON(tk))
			}
			var value string
			for _, p := range tk.Artifacts[0].Parts {
				switch {
				case p.Kind == partData && p.MediaType == "application/json":
					value = string(p.Data)
				case p.Kind == partData:
					t.Errorf("a data part besides the value: %s", asJSON(p))
				}
			}
			details := string(answerDetails(tk.Artifacts[0].Metadata))
			if value != `{"city":"Lyon"}` || !strings.Contains(details, `"output":{"city":"Lyon"}`) {
				t.Errorf("value part %s, details %s", value, details)
			}
			req := llm.LastRequest()
			if user := req.Messages[1].Content; strings.Contains(user, OutputSchemaKey) || user != "Which city?" {
				t.Errorf("the prompt the model read: %q", user)
			}
		})
	}
	rr := callRPC(t, url, "1.0", "SendMessage", sendMessageParams([]any{textParam("x")}, map[string]any{"metadata": map[string]any{OutputSchemaKey: "city"}}, nil))
	wantRPCError(t, rr, codeInvalidParams, false)
}
