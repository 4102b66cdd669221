package a2a

// Benchmarks of the client's per-call overhead and of the server alone.
//
// BenchmarkEchoDirect and BenchmarkEchoPeerTool send the same message to the same JS SDK echo agent
// (testdata/a2a/echo-agent.mjs, started once per benchmark): the first with a plain net/http POST of a SendMessage
// request and a decoding of the reply, the floor; the second through the peer's tool, as the orchestrator calls it.
// The difference is the peer tool's overhead per call. Both run serially: one call in flight. Run one after the other,
// they meet different conditions on a shared machine; BenchmarkEchoOverhead makes one call of each kind per op, in
// alternating order, and reports the median of the paired differences.
//
//	go test -run '^$' -bench 'Echo|ServerSendMessage' -benchmem -count 5 ./a2a/

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/testkit/peers"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// benchSendBody is a v1.0 SendMessage request with text "ping" and message id n.
func benchSendBody(n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"SendMessage","params":{"message":{"messageId":"bench-` +
		strconv.Itoa(n) + `","role":"ROLE_USER","parts":[{"text":"ping"}]},"configuration":{}}}`)
}

// benchPost sends body to url as a v1.0 JSON-RPC request over client and decodes the reply into out.
func benchPost(ctx context.Context, client *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("HTTP %s: %s", resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// benchEchoReply is the part of the echo agent's reply the benchmarks check.
type benchEchoReply struct {
	Result struct {
		Message struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (r *benchEchoReply) text() (string, error) {
	if r.Error != nil {
		return "", fmt.Errorf("JSON-RPC error: %s", r.Error.Message)
	}
	if len(r.Result.Message.Parts) != 1 {
		return "", fmt.Errorf("reply has %d parts", len(r.Result.Message.Parts))
	}
	return r.Result.Message.Parts[0].Text, nil
}

// BenchmarkEchoDirect is the floor: a SendMessage POSTed with net/http and its reply decoded.
func BenchmarkEchoDirect(b *testing.B) {
	url := peers.A2AAgent(b, "echo-agent") + "/"
	client := &http.Client{} // as a peer's own client: the default transport
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		var reply benchEchoReply
		if err := benchPost(b.Context(), client, url, benchSendBody(n), &reply); err != nil {
			b.Fatal(err)
		}
		if text, err := reply.text(); err != nil || text != "echo: ping" {
			b.Fatalf("reply %q, %v", text, err)
		}
	}
}

// echoPeerTool starts the JS echo agent and returns its URL and its peer tool, resolved once.
func echoPeerTool(b *testing.B) (string, host.Tool) {
	url := peers.A2AAgent(b, "echo-agent")
	ps, err := Connect(b.Context(), []PeerConfig{{Name: "echo", URL: url, Required: true}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ps.Close() })
	tools, err := ps.Toolsets()[0].Tools(b.Context())
	if err != nil || len(tools) != 1 {
		b.Fatalf("tools: %d, %v", len(tools), err)
	}
	return url, tools[0]
}

// BenchmarkEchoPeerTool sends the same message through the peer's tool: Connect resolves the card once, then each op
// is one Call, as the orchestrator makes it.
func BenchmarkEchoPeerTool(b *testing.B) {
	_, tool := echoPeerTool(b)
	args := json.RawMessage(`{"message":"ping"}`)
	b.ReportAllocs()
	for b.Loop() {
		call := host.NewCall("call_1", "echo", "a2a:echo", nil, nil)
		call.ConversationID = "bench"
		res, err := tool.Call(b.Context(), args, call)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || !strings.Contains(res.Text, "echo: ping") {
			b.Fatalf("result %+v", res)
		}
	}
}

// BenchmarkEchoOverhead makes one direct call and one peer tool call per op, to one echo agent, in alternating order,
// and times each: it reports the median call on each path and the median of the per-op differences (peer tool minus
// direct) as overhead-ns/call.
func BenchmarkEchoOverhead(b *testing.B) {
	base, tool := echoPeerTool(b)
	client := &http.Client{}
	args := json.RawMessage(`{"message":"ping"}`)
	direct := func(n int) {
		var reply benchEchoReply
		if err := benchPost(b.Context(), client, base+"/", benchSendBody(n), &reply); err != nil {
			b.Fatal(err)
		}
		if text, err := reply.text(); err != nil || text != "echo: ping" {
			b.Fatalf("reply %q, %v", text, err)
		}
	}
	viaTool := func() {
		call := host.NewCall("call_1", "echo", "a2a:echo", nil, nil)
		call.ConversationID = "bench"
		res, err := tool.Call(b.Context(), args, call)
		if err != nil || res.IsError {
			b.Fatalf("result %+v, %v", res, err)
		}
	}
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	var directTimes, toolTimes, diffs []time.Duration
	n := 0
	for b.Loop() {
		n++
		var d, p time.Duration
		if n%2 == 0 {
			d, p = timed(func() { direct(n) }), timed(viaTool)
		} else {
			p, d = timed(viaTool), timed(func() { direct(n) })
		}
		directTimes, toolTimes, diffs = append(directTimes, d), append(toolTimes, p), append(diffs, p-d)
	}
	median := func(v []time.Duration) float64 {
		slices.Sort(v)
		return float64(v[len(v)/2])
	}
	b.ReportMetric(median(directTimes), "direct-ns/call")
	b.ReportMetric(median(toolTimes), "peertool-ns/call")
	b.ReportMetric(median(diffs), "overhead-ns/call")
}

// BenchmarkServerSendMessage measures the Go server alone: a SendMessage that the orchestrator runs on the offline
// test model with no tool, answered once the task is done. With transport=http it goes over loopback through an
// httptest server and a net/http client in the same process; with transport=handler the request is handed to the
// handler directly, so only the server's own work is timed.
func BenchmarkServerSendMessage(b *testing.B) {
	orch := host.New(testmodel.New(), host.NewToolManager(nil, nil), nil)
	check := func(b *testing.B, body []byte) {
		b.Helper()
		var reply struct {
			Result struct {
				Task *struct {
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"task"`
			} `json:"result"`
			Error *rpcError `json:"error"`
		}
		if err := json.Unmarshal(body, &reply); err != nil || reply.Error != nil || reply.Result.Task == nil ||
			reply.Result.Task.Status.State != string(stateCompleted) {
			b.Fatalf("reply %s (%v)", body, err)
		}
	}

	b.Run("transport=http", func(b *testing.B) {
		hs := httptest.NewUnstartedServer(nil)
		url := "http://" + hs.Listener.Addr().String() + "/"
		srv := NewServer(orch, &ServerOptions{URL: url})
		hs.Config.Handler = srv.Handler(httpedge.Options{}, nil)
		hs.Start()
		b.Cleanup(func() { hs.Close(); srv.Close() })
		client := &http.Client{}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			var raw json.RawMessage
			if err := benchPost(b.Context(), client, url, benchSendBody(n), &raw); err != nil {
				b.Fatal(err)
			}
			check(b, raw)
		}
	})

	b.Run("transport=handler", func(b *testing.B) {
		srv := NewServer(orch, &ServerOptions{URL: "http://127.0.0.1:1/"})
		b.Cleanup(func() { srv.Close() })
		h := srv.Handler(httpedge.Options{}, nil)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			req := httptest.NewRequestWithContext(b.Context(), http.MethodPost, "http://127.0.0.1:1/", bytes.NewReader(benchSendBody(n)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("A2A-Version", "1.0")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			check(b, rec.Body.Bytes())
		}
	})
}

// TestResponseJSONMatchesMarshal guards the fast path the server's responses take: responseJSON writes the bytes
// json.Marshal makes of the rpcResponse, ids and results of every kind included.
func TestResponseJSONMatchesMarshal(t *testing.T) {
	ids := []string{"", "null", "1", "-2.5e3", `"a"`, `"<&>\u2028 é"`, `"\"quoted\""`}
	results := []any{
		nil,
		map[string]string{"k": "<v>&"},
		streamResponse{Task: &task{ID: "t1", ContextID: "c1", Status: taskStatus{State: stateCompleted}}},
		streamResponse{Message: &message{MessageID: "m", Role: roleAgent, Parts: []part{textPart("x\u2029y"), {Kind: partData, Data: json.RawMessage(`{"a": [1, 2]}`)}}}},
	}
	for _, id := range ids {
		for _, res := range results {
			want := json.RawMessage("null")
			if id != "" {
				want = json.RawMessage(id)
			}
			wantJSON, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: want, Result: mustJSON(res)})
			if err != nil {
				t.Fatal(err)
			}
			if got := responseJSON(json.RawMessage(id), res); !bytes.Equal(got, wantJSON) {
				t.Errorf("id %s, result %T:\n got %s\nwant %s", id, res, got, wantJSON)
			}
		}
	}
}
