package a2a

// The client side against hand-written Go peers, for what the JS agents do not do: tasks that must be polled, a
// stream that breaks, raw bytes, an agenthost answer's data part, an error from GetTask. Each call goes through the
// whole loop, as in peers_jsagents_test.go.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// fakePeer is an A2A v1.0 peer on an httptest server: a card, and JSON-RPC methods answered by its handlers, written
// by hand on the wire.
type fakePeer struct {
	srv      *httptest.Server
	handlers map[string]func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage)

	mu      sync.Mutex
	calls   map[string]int
	params  map[string][]json.RawMessage
	headers []http.Header
}

// newFakePeer starts a peer whose card says streaming as given and whose methods are handlers (any other method
// is -32601).
func newFakePeer(t *testing.T, streaming bool, handlers map[string]func(w http.ResponseWriter, id, params json.RawMessage)) *fakePeer {
	t.Helper()
	f := &fakePeer{handlers: handlers, calls: map[string]int{}, params: map[string][]json.RawMessage{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == cardPath:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"fake","description":"A hand-written peer.","version":"1.0.0",`+
				`"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
				`"capabilities":{"streaming":%t},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
				`"skills":[{"id":"fake","name":"Fake","description":"Answers as scripted.","tags":["test"]}]}`, f.srv.URL+"/", streaming)
		case r.Method == http.MethodPost && r.URL.Path == "/":
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				writeRPCError(w, nil, -32700, "invalid JSON")
				return
			}
			f.mu.Lock()
			f.calls[req.Method]++
			f.params[req.Method] = append(f.params[req.Method], req.Params)
			f.headers = append(f.headers, r.Header.Clone())
			f.mu.Unlock()
			h, ok := f.handlers[req.Method]
			if !ok {
				writeRPCError(w, req.ID, -32601, "method not found: "+req.Method)
				return
			}
			h(w, req.ID, req.Params)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePeer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakePeer) paramsOf(method string) []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]json.RawMessage(nil), f.params[method]...)
}

func writeRPCResult(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	m, _ := json.Marshal(msg) // a string: cannot fail
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, m)
}

// fakeTask is a task on the wire in state (a TASK_STATE_ name's suffix), with artifacts (JSON, "" for none).
func fakeTask(id, state, artifacts string) string {
	s := fmt.Sprintf(`{"id":%q,"contextId":"ctx-1","status":{"state":"TASK_STATE_%s","timestamp":"2026-01-02T03:04:05.000Z"}`, id, state)
	if artifacts != "" {
		s += `,"artifacts":` + artifacts
	}
	return s + "}"
}

// newFakeLoop is a loop over one fake peer named "fake", polled every 10ms.
func newFakeLoop(t *testing.T, f *fakePeer) *peerLoop {
	t.Helper()
	return newPeerLoop(t, nil, PeerConfig{Name: "fake", URL: f.srv.URL, Required: true, PollInterval: 10 * time.Millisecond})
}

func TestPeerFakePolling(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	f := newFakePeer(t, false, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, `{"task":`+fakeTask("t1", "WORKING", "")+`}`)
		},
		"GetTask": func(w http.ResponseWriter, id, _ json.RawMessage) {
			mu.Lock()
			gets++
			n := gets
			mu.Unlock()
			if n < 3 {
				writeRPCResult(w, id, fakeTask("t1", "WORKING", ""))
				return
			}
			writeRPCResult(w, id, fakeTask("t1", "COMPLETED", `[{"artifactId":"a1","name":"result","parts":[{"text":"polled to the end"}]}]`))
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "poll it"}, callPeer("p", "fake", "work slowly"), say("Done."))
	if got := r.toolMessage(t, "p"); got != "polled to the end" {
		t.Errorf("the model read %q, want %q", got, "polled to the end")
	}
	if n := f.count("GetTask"); n != 3 {
		t.Errorf("GetTask was called %d times, want 3", n)
	}
	if n, c := f.count("SendMessage"), f.count("CancelTask"); n != 1 || c != 0 {
		t.Errorf("SendMessage called %d times (want 1), CancelTask %d (want 0)", n, c)
	}
	for _, p := range f.paramsOf("GetTask") {
		var got struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(p, &got) != nil || got.ID != "t1" {
			t.Errorf("GetTask params = %s, want id t1", p)
		}
	}
	var send struct {
		Message struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	}
	if ps := f.paramsOf("SendMessage"); len(ps) != 1 || json.Unmarshal(ps[0], &send) != nil ||
		send.Message.Role != "ROLE_USER" || len(send.Message.Parts) != 1 || send.Message.Parts[0].Text != "work slowly" {
		t.Errorf("SendMessage params = %s", ps)
	}
	f.mu.Lock()
	for _, hd := range f.headers {
		if hd.Get("A2A-Version") != "1.0" || hd.Get("Content-Type") != "application/json" {
			t.Errorf("request headers A2A-Version %q, Content-Type %q", hd.Get("A2A-Version"), hd.Get("Content-Type"))
		}
	}
	f.mu.Unlock()
	info := r.callInfo(t, "p")
	if !info.OK || info.Debug["state"] != "completed" || info.Debug["task_id"] != "t1" {
		t.Errorf("tool call info = %+v", info)
	}
	if p := r.progress("p"); len(p) == 0 || p[0] != "working" || p[len(p)-1] != "completed" {
		t.Errorf("progress = %q, want working first and completed last", p)
	}
}

func TestPeerFakeStreamBreaks(t *testing.T) {
	f := newFakePeer(t, true, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendStreamingMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"task\":%s}}\n\n", id, fakeTask("s1", "WORKING", ""))
			rc := http.NewResponseController(w)
			_ = rc.Flush()
			conn, _, err := rc.Hijack()
			if err != nil {
				panic(http.ErrAbortHandler) // cut the stream anyway
			}
			conn.Close() // mid-stream, without the end of the chunked body
		},
		"GetTask": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, fakeTask("s1", "COMPLETED", `[{"artifactId":"a","name":"result","parts":[{"text":"recovered by polling"}]}]`))
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "stream it"}, callPeer("s", "fake", "go"), say("Recovered."))
	if got := r.toolMessage(t, "s"); got != "recovered by polling" {
		t.Errorf("the model read %q, want %q", got, "recovered by polling")
	}
	if f.count("SendStreamingMessage") != 1 || f.count("GetTask") < 1 || f.count("SendMessage") != 0 {
		t.Errorf("SendStreamingMessage %d, GetTask %d, SendMessage %d calls: want one stream, then GetTask",
			f.count("SendStreamingMessage"), f.count("GetTask"), f.count("SendMessage"))
	}
	if info := r.callInfo(t, "s"); !info.OK || info.Debug["task_id"] != "s1" {
		t.Errorf("tool call info = %+v", info)
	}
}

func TestPeerFakeRawBytes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n not really an image")
	f := newFakePeer(t, false, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, fmt.Sprintf(`{"message":{"messageId":"m1","role":"ROLE_AGENT","contextId":"ctx-1","parts":[`+
				`{"text":"Here is the chart."},{"raw":%q,"mediaType":"image/png","filename":"chart.png"}]}}`,
				base64.StdEncoding.EncodeToString(png)))
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "draw"}, callPeer("d", "fake", "a chart"), say("Drawn."))
	want := host.Media{Type: "image", MIMEType: "image/png", Data: png}
	msg := r.toolMessage(t, "d")
	if msg != "Here is the chart.\n\n"+want.Placeholder() {
		t.Errorf("the model read %q, want the text and %q", msg, want.Placeholder())
	}
	res := r.toolEnd(t, "d").Result
	if res == nil || len(res.Media) != 1 || res.Media[0].Type != want.Type || res.Media[0].MIMEType != want.MIMEType || !bytes.Equal(res.Media[0].Data, png) {
		t.Fatalf("result = %+v, want the image in Media", res)
	}
}

func TestPeerFakeAnswerData(t *testing.T) {
	details := `{"references":[{"number":1,"title":"Guide","uri":"https://example.com/guide"}],"usage":{"requests":2}}`
	f := newFakePeer(t, false, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, `{"message":{"messageId":"m1","role":"ROLE_AGENT","parts":[`+
				`{"text":"The answer is 42."},{"data":`+details+`,"mediaType":"`+answerMediaType+`"}]}}`)
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "ask the other agenthost"}, callPeer("q", "fake", "the question"), say("42."))
	if got := r.toolMessage(t, "q"); got != "The answer is 42." {
		t.Errorf("the model read %q, want the text only", got)
	}
	res := r.toolEnd(t, "q").Result
	if res == nil || strings.Contains(res.Text, "references") {
		t.Fatalf("result = %+v, want the details out of the text", res)
	}
	var got, want any
	if err := json.Unmarshal(res.Structured, &got); err != nil {
		t.Fatalf("structured = %s: %v", res.Structured, err)
	}
	_ = json.Unmarshal([]byte(details), &want)
	if !sameJSON(got, want) {
		t.Errorf("structured = %s, want %s", res.Structured, details)
	}
}

func TestPeerFakeGetTaskError(t *testing.T) {
	f := newFakePeer(t, false, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, `{"task":`+fakeTask("t9", "SUBMITTED", "")+`}`)
		},
		"GetTask": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCError(w, id, -32001, "task t9 vanished")
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "poll"}, callPeer("e", "fake", "start"), say("It broke."))
	msg := r.toolMessage(t, "e")
	wantContains(t, "tool message", msg, "Error: ", "-32001", "task t9 vanished")
	if info := r.callInfo(t, "e"); info.OK || !strings.Contains(info.Error, "task t9 vanished") {
		t.Errorf("tool call info = %+v, want not OK with the peer's error", info)
	}
	if res := r.toolEnd(t, "e").Result; res == nil || !res.IsError {
		t.Errorf("result = %+v, want an error result", res)
	}
}

// sameJSON reports whether two decoded JSON values are equal.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a) // decoded JSON: cannot fail
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
