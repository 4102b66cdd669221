package main

// The tests of `agenthost serve --a2a`, agenthost as an A2A server, driven by the official A2A JS SDK client
// (testdata/a2a/client.mjs, @a2a-js/sdk 1.3.0): the card, blocking and streaming sends, tasks read back, listed,
// cancelled and resubscribed to, approvals through INPUT_REQUIRED, the v0.3 interface, version and method errors,
// the bearer token, MCP and A2A served by one process, and two agenthosts chained over A2A. Every process is a child
// of the test; the models are fakellm servers and the tools are this test binary's fixture server (serveFixture).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// a2aAnswerMediaType is the key of the answer artifact's metadata that holds agenthost's answer details.
const a2aAnswerMediaType = "application/vnd.agenthost.answer+json"

// a2aWait bounds the waits of these tests for something that happens soon. It is generous, for a loaded machine.
const a2aWait = 30 * time.Second

// a2aConfig writes an agent.toml in dir for an agent named name whose model is at modelURL (a fakellm server or an
// a2aModelWatch in front of one), whose one built-in tool is current_time and whose one MCP server is the fixture,
// with prefix fx; extra is appended. The API key comes from TEST_KEY.
func a2aConfig(t *testing.T, dir, name, modelURL, extra string) string {
	t.Helper()
	return agentConfig(t, dir, name, modelURL, `"current_time"`, extra)
}

// a2aServing is what `agenthost serve --a2a` writes to stderr once it listens: the endpoint's URL as the card
// advertises it, and the listener's own address.
var a2aServing = regexp.MustCompile(`serving A2A at (\S+) \(card (http://[^/\s]+)/\.well-known/agent-card\.json\)`)

// a2aServer is a running `agenthost serve --a2a`.
type a2aServer struct {
	url    string // the JSON-RPC endpoint as the card advertises it
	base   string // http://HOST:PORT of the listener, where the card is
	mcpURL string // the MCP endpoint, when --http was given too
}

// startServeA2A starts the binary with args, which must include --a2a, with env added to the test's environment.
// When the test ends, the server is interrupted and must exit with code 0; its stderr is logged if the test failed.
func startServeA2A(t *testing.T, env []string, args ...string) a2aServer {
	t.Helper()
	line, stderr := serveChild(t, env, regexp.MustCompile(`(`+a2aServing.String()+`)`), args...)
	m := a2aServing.FindStringSubmatch(line)
	s := a2aServer{url: m[1], base: m[2]}
	if mm := servingLine.FindStringSubmatch(stderr.String()); mm != nil {
		s.mcpURL = mm[1]
	}
	return s
}

// The v1.0 objects as client.mjs prints them (the SDK's toJSON: ProtoJSON, defaults omitted).
type (
	a2aTask struct {
		ID        string        `json:"id"`
		ContextID string        `json:"contextId"`
		Status    a2aStatus     `json:"status"`
		Artifacts []a2aArtifact `json:"artifacts"`
		History   []a2aMessage  `json:"history"`
	}
	a2aStatus struct {
		State     string      `json:"state"`
		Message   *a2aMessage `json:"message"`
		Timestamp string      `json:"timestamp"`
	}
	a2aMessage struct {
		MessageID string    `json:"messageId"`
		Role      string    `json:"role"`
		Parts     []a2aPart `json:"parts"`
		ContextID string    `json:"contextId"`
		TaskID    string    `json:"taskId"`
	}
	a2aPart struct {
		Text      *string         `json:"text"`
		URL       string          `json:"url"`
		Data      json.RawMessage `json:"data"`
		MediaType string          `json:"mediaType"`
		Filename  string          `json:"filename"`
	}
	a2aArtifact struct {
		ArtifactID string                     `json:"artifactId"`
		Name       string                     `json:"name"`
		Parts      []a2aPart                  `json:"parts"`
		Metadata   map[string]json.RawMessage `json:"metadata"`
	}
	a2aEvent struct {
		Task         *a2aTask    `json:"task"`
		Message      *a2aMessage `json:"message"`
		StatusUpdate *struct {
			TaskID    string    `json:"taskId"`
			ContextID string    `json:"contextId"`
			Status    a2aStatus `json:"status"`
		} `json:"statusUpdate"`
		ArtifactUpdate *struct {
			TaskID    string      `json:"taskId"`
			ContextID string      `json:"contextId"`
			Artifact  a2aArtifact `json:"artifact"`
			Append    bool        `json:"append"`
			LastChunk bool        `json:"lastChunk"`
		} `json:"artifactUpdate"`
	}
	a2aCard struct {
		Name                string         `json:"name"`
		SupportedInterfaces []a2aInterface `json:"supportedInterfaces"`
		Capabilities        struct {
			Streaming bool `json:"streaming"`
		} `json:"capabilities"`
		Skills []struct {
			ID          string   `json:"id"`
			Name        string   `json:"name"`
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
		} `json:"skills"`
		SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		// v0.3.
		URL                string `json:"url"`
		PreferredTransport string `json:"preferredTransport"`
		ProtocolVersion    string `json:"protocolVersion"`
	}
	a2aInterface struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	a2aList struct {
		Tasks         []a2aTask `json:"tasks"`
		NextPageToken string    `json:"nextPageToken"`
		PageSize      int       `json:"pageSize"`
		TotalSize     int       `json:"totalSize"`
	}
	// a2aOut is the envelope of the send, stream, resubscribe, stream-cancel and v03 scenarios.
	a2aOut struct {
		Kind      string          `json:"kind"`
		Result    json.RawMessage `json:"result"`
		Events    []a2aEvent      `json:"events"`
		Cancelled *a2aTask        `json:"cancelled"`
		Wire      json.RawMessage `json:"wire"`
	}
	a2aError struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Code    *int   `json:"code"`
	}
)

// a2aPartsText returns the text of the parts, joined.
func a2aPartsText(parts []a2aPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// messageText is the text of a status's message, or "".
func (s a2aStatus) messageText() string {
	if s.Message == nil {
		return ""
	}
	return a2aPartsText(s.Message.Parts)
}

// task decodes a send's result as a task.
func (o a2aOut) task(t *testing.T) a2aTask {
	t.Helper()
	if o.Kind != "task" {
		t.Fatalf("the send's result is a %q, want a task: %s", o.Kind, o.Result)
	}
	var tk a2aTask
	if err := json.Unmarshal(o.Result, &tk); err != nil {
		t.Fatalf("%v: %s", err, o.Result)
	}
	return tk
}

// a2aClientScript is testdata/a2a/client.mjs, the JS SDK client driver.
func a2aClientScript(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "a2a", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	peers.Dir(t) // fails the test with the way to install the SDK when it is missing
	return script
}

// a2aRunClient runs client.mjs with node against base with scenario and args (JSON-encoded) and env added to the
// test's environment (without any TOKEN of its own), and returns the line it printed and its error, if it printed
// one. It does not use t, so that it may run on a goroutine of its own.
func a2aRunClient(ctx context.Context, node, script, base, scenario string, args any, env ...string) ([]byte, *a2aError, error) {
	jsonArgs, err := json.Marshal(args)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, processLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, base, scenario, string(jsonArgs))
	cmd.Env = append(slices.DeleteFunc(testEnv(), func(kv string) bool { return strings.HasPrefix(kv, "TOKEN=") }), env...)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		Error *a2aError `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || runErr != nil {
		return nil, nil, fmt.Errorf("client.mjs %s %s: %v (%v)\nstdout: %s\nstderr: %s", scenario, jsonArgs, err, runErr, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), out.Error, nil
}

// a2aJS runs client.mjs (see a2aRunClient) and returns the line it printed and its error, if it printed one.
func a2aJS(t *testing.T, base, scenario string, args any, env ...string) ([]byte, *a2aError) {
	t.Helper()
	line, e, err := a2aRunClient(t.Context(), peers.Node(t), a2aClientScript(t), base, scenario, args, env...)
	if err != nil {
		t.Fatal(err)
	}
	return line, e
}

// a2aOK runs a scenario that must succeed and decodes its output into a T.
func a2aOK[T any](t *testing.T, base, scenario string, args any, env ...string) T {
	t.Helper()
	line, e := a2aJS(t, base, scenario, args, env...)
	if e != nil {
		t.Fatalf("client.mjs %s %v: %+v (code %v)\n%s", scenario, args, e, a2aCode(e), line)
	}
	var v T
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("client.mjs %s: %v\n%s", scenario, err, line)
	}
	return v
}

// a2aFails runs a scenario that must fail and returns its error.
func a2aFails(t *testing.T, base, scenario string, args any, env ...string) *a2aError {
	t.Helper()
	line, e := a2aJS(t, base, scenario, args, env...)
	if e == nil {
		t.Fatalf("client.mjs %s %v succeeded, want an error:\n%s", scenario, args, line)
	}
	return e
}

// a2aCode is the JSON-RPC error code of e, or nil when it has none.
func a2aCode(e *a2aError) any {
	if e == nil || e.Code == nil {
		return nil
	}
	return *e.Code
}

// a2aModelWatch is a reverse proxy in front of a fakellm server that records the model requests whose caller went
// away before their response ended, which the fakellm server cannot tell a test. A client may also close its
// connection once it has read [DONE], before the end of the body: only the requests a test expects to hang tell
// something.
type a2aModelWatch struct {
	URL string // the base URL to configure, ending in /v1

	mu        sync.Mutex
	abandoned []string // the last user message of each request abandoned
}

func a2aWatchModel(t *testing.T, llm *fakellm.Server) *a2aModelWatch {
	t.Helper()
	target, err := url.Parse(strings.TrimSuffix(llm.URL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	w := &a2aModelWatch{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		prompt := ""
		for _, m := range req.Messages {
			if s, ok := m.Content.(string); ok && m.Role == "user" {
				prompt = s
			}
		}
		// Deferred: the proxy panics with http.ErrAbortHandler when it cannot finish a streamed response.
		defer func() {
			if r.Context().Err() != nil {
				w.mu.Lock()
				w.abandoned = append(w.abandoned, prompt)
				w.mu.Unlock()
			}
		}()
		a2aProxy(target).ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL + "/v1"
	return w
}

// abandonedCall reports whether a model request whose last user message is prompt was abandoned by its caller.
func (w *a2aModelWatch) abandonedCall(prompt string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.abandoned, prompt)
}

// a2aProxy is a reverse proxy to target. It opens a connection per request: with connections reused, a request
// whose caller had just gone away was seen, under load, to close the connection of the next request to the target.
func a2aProxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{DisableKeepAlives: true},
		ErrorLog:  log.New(io.Discard, "", 0), // a request whose caller went away is expected here
	}
}

// a2aAnswer is the data part of agenthost's answer artifact.
type a2aAnswer struct {
	References []host.NumberedReference `json:"references"`
	StoppedBy  string                   `json:"stopped_by"`
	Usage      struct {
		Requests    int   `json:"requests"`
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
	ToolCalls []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
		OK     bool   `json:"ok"`
	} `json:"tool_calls"`
}

// a2aAnswerOf checks that the task has one artifact, the answer, whose parts are its text and a url part per
// reference, with the details in its metadata (no part a client would render), and returns the text and the details.
func a2aAnswerOf(t *testing.T, tk a2aTask) (string, a2aAnswer) {
	t.Helper()
	if len(tk.Artifacts) != 1 || tk.Artifacts[0].Name != "answer" {
		t.Fatalf("artifacts = %+v, want the answer", tk.Artifacts)
	}
	parts := tk.Artifacts[0].Parts
	if len(parts) < 1 || parts[0].Text == nil {
		t.Fatalf("answer parts = %+v, want text first", parts)
	}
	var d a2aAnswer
	if json.Unmarshal(tk.Artifacts[0].Metadata[a2aAnswerMediaType], &d) != nil {
		t.Fatalf("answer metadata = %s, want the details under %s", tk.Artifacts[0].Metadata, a2aAnswerMediaType)
	}
	var urls []host.NumberedReference
	for _, p := range parts[1:] {
		if p.URL == "" {
			t.Errorf("answer part %+v, want only url parts between the text and the data", p)
		}
		urls = append(urls, host.NumberedReference{Title: p.Filename, URI: p.URL})
	}
	var want []host.NumberedReference
	for _, r := range d.References {
		if r.URI != "" {
			want = append(want, host.NumberedReference{Title: r.Title, URI: r.URI})
		}
	}
	if !slices.Equal(urls, want) {
		t.Errorf("url parts %+v, want one per reference %+v", urls, d.References)
	}
	return *parts[0].Text, d
}

// a2aApplyUpdates builds the answer's text from a stream's artifact updates as a client must: a chunk with
// append adds its parts to the artifact, one without replaces it.
func a2aApplyUpdates(events []a2aEvent) string {
	var parts []a2aPart
	for _, ev := range events {
		if u := ev.ArtifactUpdate; u != nil {
			if !u.Append {
				parts = nil
			}
			parts = append(parts, u.Artifact.Parts...)
		}
	}
	return a2aPartsText(parts)
}

// a2aMessages writes a model request's messages as "role:content", "role:call NAME" for an assistant message that
// calls the tool NAME, and "tool" alone for a tool result.
func a2aMessages(msgs []fakellm.Message) []string {
	var got []string
	for _, m := range msgs {
		switch {
		case m.Role == "system":
		case len(m.ToolCalls) > 0:
			got = append(got, m.Role+":call "+m.ToolCalls[0].Function.Name)
		case m.Role == "tool":
			got = append(got, "tool")
		default:
			got = append(got, m.Role+":"+m.Content)
		}
	}
	return got
}

// a2aLastToolResult is the content of the last tool message of a model request.
func a2aLastToolResult(req *fakellm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].ToolOutput()
		}
	}
	return ""
}

// a2aCheckStream checks that a stream's events are about one task, start with the task as SUBMITTED, go on in
// WORKING, and end with one status update in state last.
func a2aCheckStream(t *testing.T, events []a2aEvent, last string) {
	t.Helper()
	if len(events) < 2 || events[0].Task == nil || events[0].Task.Status.State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("events %+v, want the SUBMITTED task first", events)
	}
	id := events[0].Task.ID
	for i, ev := range events[1:] {
		switch {
		case ev.StatusUpdate != nil:
			if ev.StatusUpdate.TaskID != id {
				t.Errorf("event %d is about task %q, want %q", i+1, ev.StatusUpdate.TaskID, id)
			}
			want := "TASK_STATE_WORKING"
			if i == len(events)-2 {
				want = last
			}
			if ev.StatusUpdate.Status.State != want {
				t.Errorf("event %d: status %s (%q), want %s", i+1, ev.StatusUpdate.Status.State, ev.StatusUpdate.Status.messageText(), want)
			}
		case ev.ArtifactUpdate != nil:
			if ev.ArtifactUpdate.TaskID != id {
				t.Errorf("event %d is about task %q, want %q", i+1, ev.ArtifactUpdate.TaskID, id)
			}
			if i == len(events)-2 {
				t.Errorf("the stream ends with an artifact update, want a %s status update", last)
			}
		default:
			t.Errorf("event %d: %+v, want a status or artifact update", i+1, ev)
		}
	}
}

// TestA2AServe drives one `agenthost serve --a2a` with the JS SDK client through the protocol: the card, sends and
// streams, tasks read back and listed, cancellations, approvals, the v0.3 interface and the errors. The subtests
// share the server and its model, whose script each subtest writes for its own runs.
func TestA2AServe(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	model := a2aWatchModel(t, llm)
	dir := t.TempDir()
	config := a2aConfig(t, dir, "helper", model.URL, `
[tools."fx_shout"]
require_approval = true
`)
	srv := startServeA2A(t, []string{"TEST_KEY=sk-a2a"}, "serve", "--config", config, "--a2a", "127.0.0.1:0")
	base := srv.base
	wantRefs := []host.NumberedReference{{Number: 1, Title: "The test document", URI: fixtureDocURI}}

	t.Run("card", func(t *testing.T) {
		card := a2aOK[a2aCard](t, base, "card", map[string]any{})
		if card.Name != "helper" || !card.Capabilities.Streaming {
			t.Errorf("card name %q, streaming %v", card.Name, card.Capabilities.Streaming)
		}
		if srv.url != base+"/" {
			t.Errorf("served at %q, listening at %q", srv.url, base)
		}
		if !slices.Contains(card.SupportedInterfaces, a2aInterface{URL: srv.url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}) {
			t.Errorf("interfaces %+v, want JSONRPC 1.0 at %s", card.SupportedInterfaces, srv.url)
		}
		if len(card.Skills) == 0 || card.Skills[0].ID == "" || card.Skills[0].Name == "" || card.Skills[0].Description == "" || len(card.Skills[0].Tags) == 0 {
			t.Errorf("skills %+v", card.Skills)
		}

		// A v0.3 client sends no A2A-Version: the card has v0.3's fields as well.
		resp, err := testHTTP.Get(base + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		var legacy a2aCard
		err = json.NewDecoder(resp.Body).Decode(&legacy)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET card: %d %v", resp.StatusCode, err)
		}
		if legacy.Name != "helper" || legacy.URL != srv.url || legacy.PreferredTransport != "JSONRPC" || !strings.HasPrefix(legacy.ProtocolVersion, "0.3") {
			t.Errorf("card without A2A-Version: url %q, preferredTransport %q, protocolVersion %q, want the v0.3 fields",
				legacy.URL, legacy.PreferredTransport, legacy.ProtocolVersion)
		}
		if len(legacy.SupportedInterfaces) == 0 {
			t.Errorf("card without A2A-Version has no supportedInterfaces, want the v1.0 fields too")
		}
	})

	// The tasks of the conversation the send subtest has, for get and list.
	var first, second a2aTask

	t.Run("send", func(t *testing.T) {
		llm.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}},
			fakellm.Turn{Text: "The document says hello [source 1]."},
			fakellm.Turn{Text: "You asked what the document says."},
		)
		before := llm.RequestCount()
		first = a2aOK[a2aOut](t, base, "send", map[string]any{"text": "What does the document say?"}).task(t)
		if first.Status.State != "TASK_STATE_COMPLETED" || first.ID == "" || first.ContextID == "" {
			t.Fatalf("task %s in context %q: %s (%q)", first.ID, first.ContextID, first.Status.State, first.Status.messageText())
		}
		text, d := a2aAnswerOf(t, first)
		if !strings.HasPrefix(text, "The document says hello") {
			t.Errorf("answer text %q", text)
		}
		if !slices.Equal(d.References, wantRefs) || d.StoppedBy != "answered" || d.Usage.Requests != 2 || d.Usage.TotalTokens == 0 ||
			len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "fx_cite" || !d.ToolCalls[0].OK || d.ToolCalls[0].Source != "mcp:fixture" {
			t.Errorf("answer details %+v, want the reference %+v", d, wantRefs)
		}

		// The same contextId continues the conversation, in a new task.
		second = a2aOK[a2aOut](t, base, "send", map[string]any{"text": "What did I ask you?", "contextId": first.ContextID}).task(t)
		if second.Status.State != "TASK_STATE_COMPLETED" || second.ContextID != first.ContextID || second.ID == first.ID {
			t.Fatalf("second task %s in context %q: %s, want a new task in context %q", second.ID, second.ContextID, second.Status.State, first.ContextID)
		}
		if text, _ := a2aAnswerOf(t, second); text != "You asked what the document says." {
			t.Errorf("second answer %q", text)
		}
		reqs := llm.Requests()[before:]
		if len(reqs) != 3 {
			t.Fatalf("%d model requests, want 3", len(reqs))
		}
		if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer sk-a2a" {
			t.Errorf("model request authorization %q", auth)
		}
		got := a2aMessages(reqs[2].Messages)
		want := []string{"user:What does the document say?", "assistant:call fx_cite", "tool", "assistant:" + text, "user:What did I ask you?"}
		if len(got) != len(want) || !slices.Equal(got[:3], want[:3]) || !strings.HasPrefix(got[3], "assistant:The document says hello") || got[4] != want[4] {
			t.Errorf("the second run's model request:\n%q\nwant the first exchange first:\n%q", got, want)
		}
	})

	t.Run("stream", func(t *testing.T) {
		// The first iteration writes text and calls two tools: that text is not the answer, which starts again with
		// the next iteration's text.
		llm.Enqueue(
			fakellm.Turn{Text: "Let me look.", ToolCalls: []fakellm.ToolCall{
				{ID: "s1", Name: "fx_cite", Arguments: `{}`},
				{ID: "s2", Name: "current_time", Arguments: `{"timezone":"UTC"}`},
			}},
			fakellm.Turn{Text: "The document says hello [source 1].", ChunkSize: 4},
		)
		out := a2aOK[a2aOut](t, base, "stream", map[string]any{"text": "Read the document."})
		events := out.Events
		a2aCheckStream(t, events, "TASK_STATE_COMPLETED")
		lastCalling := -1
		for _, tool := range []string{"fx_cite", "current_time"} {
			i := slices.IndexFunc(events, func(ev a2aEvent) bool {
				return ev.StatusUpdate != nil && strings.HasPrefix(ev.StatusUpdate.Status.messageText(), "Calling "+tool+" ")
			})
			if i < 0 {
				t.Fatalf("no status update names the call of %s:\n%+v", tool, events)
			}
			lastCalling = max(lastCalling, i)
		}
		var after []a2aEvent
		for _, ev := range events[lastCalling:] {
			if ev.ArtifactUpdate != nil {
				after = append(after, ev)
			}
		}
		if len(after) < 3 || after[0].ArtifactUpdate.Append || !after[len(after)-1].ArtifactUpdate.LastChunk {
			t.Errorf("artifact updates after the tool calls: %+v, want several, the first replacing the artifact, the last marked lastChunk", after)
		}
		final := a2aOK[a2aTask](t, base, "get", map[string]any{"id": events[0].Task.ID})
		text, d := a2aAnswerOf(t, final)
		if got := a2aApplyUpdates(events); got != text {
			t.Errorf("the artifact updates add up to %q, want the answer %q", got, text)
		}
		if !strings.HasPrefix(text, "The document says hello") || !slices.Equal(d.References, wantRefs) || len(d.ToolCalls) != 2 || d.Usage.Requests != 2 {
			t.Errorf("answer %q with details %+v", text, d)
		}
		// The last chunk carries the references, and the details in its metadata.
		lastChunk := after[len(after)-1].ArtifactUpdate.Artifact
		if n := len(lastChunk.Parts); n < 1 || lastChunk.Parts[n-1].URL != fixtureDocURI || lastChunk.Metadata[a2aAnswerMediaType] == nil {
			t.Errorf("last chunk %+v, want the url part, and the details in the metadata", lastChunk)
		}
	})

	t.Run("get and list", func(t *testing.T) {
		if first.ID == "" || second.ID == "" {
			t.Fatal("the send subtest made no tasks")
		}
		got := a2aOK[a2aTask](t, base, "get", map[string]any{"id": first.ID})
		if got.ID != first.ID || got.ContextID != first.ContextID || got.Status.State != "TASK_STATE_COMPLETED" || len(got.Artifacts) != 1 {
			t.Errorf("get: %+v", got)
		}
		if len(got.History) == 0 || got.History[0].Role != "ROLE_USER" || a2aPartsText(got.History[0].Parts) != "What does the document say?" {
			t.Errorf("get: history %+v, want the user's message first", got.History)
		}
		got = a2aOK[a2aTask](t, base, "get", map[string]any{"id": first.ID, "historyLength": 0})
		if len(got.History) != 0 || len(got.Artifacts) != 1 || got.Status.State != "TASK_STATE_COMPLETED" {
			t.Errorf("get with historyLength 0: history %+v, artifacts %d", got.History, len(got.Artifacts))
		}
		if e := a2aFails(t, base, "get", map[string]any{"id": "no-such-task"}); a2aCode(e) != -32001 {
			t.Errorf("get of an unknown task: %+v (code %v), want -32001", e, a2aCode(e))
		}

		ids := []string{first.ID, second.ID}
		slices.Sort(ids)
		taskIDs := func(tasks []a2aTask) []string {
			var out []string
			for _, tk := range tasks {
				out = append(out, tk.ID)
			}
			slices.Sort(out)
			return out
		}
		list := a2aOK[a2aList](t, base, "list", map[string]any{"contextId": first.ContextID, "includeArtifacts": false})
		if !slices.Equal(taskIDs(list.Tasks), ids) || list.TotalSize != 2 || list.NextPageToken != "" {
			t.Errorf("list of the context: %+v, want tasks %q", list, ids)
		} else if list.Tasks[0].ID != second.ID {
			t.Errorf("list of the context: %s first, want the newest, %s", list.Tasks[0].ID, second.ID)
		}
		for _, tk := range list.Tasks {
			if tk.ContextID != first.ContextID || len(tk.Artifacts) != 0 || tk.Status.State != "TASK_STATE_COMPLETED" {
				t.Errorf("listed task %s: context %q, state %s, %d artifacts (want none)", tk.ID, tk.ContextID, tk.Status.State, len(tk.Artifacts))
			}
		}
		list = a2aOK[a2aList](t, base, "list", map[string]any{"contextId": first.ContextID, "includeArtifacts": true})
		for _, tk := range list.Tasks {
			if len(tk.Artifacts) != 1 {
				t.Errorf("listed task %s with includeArtifacts: %d artifacts", tk.ID, len(tk.Artifacts))
			}
		}

		var paged []a2aTask
		token := ""
		for pages := 1; ; pages++ {
			page := a2aOK[a2aList](t, base, "list", map[string]any{"contextId": first.ContextID, "pageSize": 1, "pageToken": token})
			if len(page.Tasks) != 1 || page.PageSize != 1 || page.TotalSize != 2 {
				t.Fatalf("page %d: %+v, want one task of 2", pages, page)
			}
			paged = append(paged, page.Tasks...)
			if token = page.NextPageToken; token == "" {
				break
			}
			if pages == 2 {
				t.Fatalf("page %d of 2 has a next page token %q", pages, token)
			}
		}
		if !slices.Equal(taskIDs(paged), ids) {
			t.Errorf("paging went through %q, want %q", taskIDs(paged), ids)
		}

		if e := a2aFails(t, base, "list", map[string]any{"pageSize": 0}); a2aCode(e) != -32602 {
			t.Errorf("list with pageSize 0: %+v (code %v), want -32602", e, a2aCode(e))
		}
	})

	t.Run("cancel", func(t *testing.T) {
		t.Run("model call", func(t *testing.T) {
			// The model sends a chunk of text, then hangs: the third event is that chunk, so the cancel comes while
			// the model call is under way.
			llm.Enqueue(fakellm.Turn{Text: "never finished", HangAfter: 2})
			before := llm.RequestCount()
			out := a2aOK[a2aOut](t, base, "stream-cancel", map[string]any{"text": "Take your time.", "afterEvents": 3})
			if out.Cancelled == nil || out.Cancelled.Status.State != "TASK_STATE_CANCELED" {
				t.Fatalf("cancel result %+v, want the task CANCELED", out.Cancelled)
			}
			a2aCheckStream(t, out.Events, "TASK_STATE_CANCELED")
			testwait.Until(t, a2aWait, "the model call sees its caller go away", func() bool { return model.abandonedCall("Take your time.") })
			if n := llm.RequestCount() - before; n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
		})

		t.Run("tool call", func(t *testing.T) {
			marker := filepath.Join(dir, "wait-a2a")
			args, _ := json.Marshal(map[string]string{"file": marker})
			llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "w1", Name: "fx_wait", Arguments: string(args)}}})
			before := llm.RequestCount()
			sent := a2aOK[a2aOut](t, base, "send", map[string]any{"text": "Wait.", "returnImmediately": true}).task(t)
			if s := sent.Status.State; s != "TASK_STATE_SUBMITTED" && s != "TASK_STATE_WORKING" {
				t.Fatalf("returnImmediately: the task is %s, want it not done yet", s)
			}
			recorded := func() string { b, _ := os.ReadFile(marker); return string(b) }
			testwait.Until(t, a2aWait, "the wait tool runs", func() bool { return recorded() == "waiting\n" })
			cancelled := a2aOK[a2aTask](t, base, "cancel", map[string]any{"id": sent.ID})
			if cancelled.ID != sent.ID || cancelled.Status.State != "TASK_STATE_CANCELED" || !strings.Contains(cancelled.Status.messageText(), "canceled") {
				t.Errorf("cancel: task %s %s (%q)", cancelled.ID, cancelled.Status.State, cancelled.Status.messageText())
			}
			// The fixture records "cancelled" when its call was cancelled while its client still answers pings.
			testwait.Until(t, a2aWait, "the wait tool sees its call cancelled", func() bool { return recorded() != "waiting\n" })
			if got := recorded(); got != "waiting\ncancelled\n" {
				t.Errorf("the wait tool recorded %q, want its call cancelled while its connection was alive", got)
			}
			if got := a2aOK[a2aTask](t, base, "get", map[string]any{"id": sent.ID}); got.Status.State != "TASK_STATE_CANCELED" {
				t.Errorf("get after the cancel: %s", got.Status.State)
			}
			if n := llm.RequestCount() - before; n != 1 {
				t.Errorf("%d model requests, want 1: a cancelled run must not call the model again", n)
			}
		})

		t.Run("completed task", func(t *testing.T) {
			if first.ID == "" {
				t.Fatal("the send subtest made no task")
			}
			if e := a2aFails(t, base, "cancel", map[string]any{"id": first.ID}); a2aCode(e) != -32002 {
				t.Errorf("cancel of a completed task: %+v (code %v), want -32002", e, a2aCode(e))
			}
		})
	})

	t.Run("approval", func(t *testing.T) {
		for _, tt := range []struct {
			answer string
			stream bool   // ask over a stream, else a blocking send
			want   string // in the tool result the model read
		}{
			{"approve", true, "HELLO"},
			{"deny", false, "denied"},
		} {
			t.Run(tt.answer, func(t *testing.T) {
				llm.Enqueue(
					fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a-" + tt.answer, Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
					fakellm.Turn{Text: "Done: " + tt.answer + "."},
				)
				before := llm.RequestCount()
				var asked a2aTask
				if tt.stream {
					events := a2aOK[a2aOut](t, base, "stream", map[string]any{"text": "Shout hello."}).Events
					a2aCheckStream(t, events, "TASK_STATE_INPUT_REQUIRED")
					asked = *events[0].Task
					asked.Status = events[len(events)-1].StatusUpdate.Status
				} else {
					asked = a2aOK[a2aOut](t, base, "send", map[string]any{"text": "Shout hello."}).task(t)
				}
				q := asked.Status.messageText()
				if asked.Status.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(q, "fx_shout") || !strings.Contains(q, `"hello"`) {
					t.Fatalf("task %s (%q), want INPUT_REQUIRED asking to approve fx_shout with its arguments", asked.Status.State, q)
				}
				done := a2aOK[a2aOut](t, base, "send", map[string]any{"text": tt.answer, "taskId": asked.ID, "contextId": asked.ContextID}).task(t)
				if done.ID != asked.ID || done.Status.State != "TASK_STATE_COMPLETED" {
					t.Fatalf("after %q: task %s %s (%q), want %s COMPLETED", tt.answer, done.ID, done.Status.State, done.Status.messageText(), asked.ID)
				}
				text, d := a2aAnswerOf(t, done)
				if text != "Done: "+tt.answer+"." || len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "fx_shout" || d.ToolCalls[0].OK != (tt.answer == "approve") {
					t.Errorf("answer %q, details %+v", text, d)
				}
				reqs := llm.Requests()[before:]
				if len(reqs) != 2 {
					t.Fatalf("%d model requests, want 2", len(reqs))
				}
				if got := a2aLastToolResult(reqs[1]); !strings.Contains(got, tt.want) || (tt.answer == "deny" && strings.Contains(got, "HELLO")) {
					t.Errorf("the model read the tool result %q, want it to contain %q", got, tt.want)
				}
			})
		}
	})

	t.Run("v0.3", func(t *testing.T) {
		llm.Enqueue(fakellm.Turn{Text: "Hello over v0.3."}, fakellm.Turn{Text: "Streamed over v0.3.", ChunkSize: 5})
		sent := a2aOK[a2aOut](t, base, "v03-send", map[string]any{"text": "Hi."})
		tk := sent.task(t)
		if tk.Status.State != "TASK_STATE_COMPLETED" || len(tk.Artifacts) != 1 || a2aPartsText(tk.Artifacts[0].Parts) != "Hello over v0.3." {
			t.Errorf("v0.3 send: %s, artifacts %+v", tk.Status.State, tk.Artifacts)
		}
		var wire struct {
			Kind   string `json:"kind"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifacts []struct {
				Parts []struct {
					Kind string `json:"kind"`
				} `json:"parts"`
				Metadata map[string]json.RawMessage `json:"metadata"`
			} `json:"artifacts"`
		}
		if err := json.Unmarshal(sent.Wire, &wire); err != nil || wire.Kind != "task" || wire.Status.State != "completed" ||
			len(wire.Artifacts) != 1 || len(wire.Artifacts[0].Parts) == 0 || wire.Artifacts[0].Parts[0].Kind != "text" {
			t.Errorf("v0.3 send on the wire: %s (%v), want a completed task in v0.3's shape", sent.Wire, err)
		} else if parts := wire.Artifacts[0].Parts; parts[len(parts)-1].Kind == "data" || wire.Artifacts[0].Metadata[a2aAnswerMediaType] == nil {
			// The details travel in the artifact's metadata, where a client that renders every part does not show them.
			t.Errorf("v0.3 send on the wire: %s, want no data part and the answer details in the artifact's metadata", sent.Wire)
		}

		streamed := a2aOK[a2aOut](t, base, "v03-stream", map[string]any{"text": "Stream."})
		a2aCheckStream(t, streamed.Events, "TASK_STATE_COMPLETED")
		if got := a2aApplyUpdates(streamed.Events); got != "Streamed over v0.3." {
			t.Errorf("v0.3 stream: the artifact updates add up to %q", got)
		}
		var events []struct {
			Kind   string `json:"kind"`
			Final  bool   `json:"final"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if err := json.Unmarshal(streamed.Wire, &events); err != nil || len(events) < 2 {
			t.Fatalf("v0.3 stream on the wire: %s (%v)", streamed.Wire, err)
		}
		last := events[len(events)-1]
		if events[0].Kind != "task" || last.Kind != "status-update" || !last.Final || last.Status.State != "completed" {
			t.Errorf("v0.3 stream on the wire: %s, want the task first and a final completed status-update last", streamed.Wire)
		}
		for i, ev := range events[1 : len(events)-1] {
			if (ev.Kind != "status-update" && ev.Kind != "artifact-update") || ev.Final {
				t.Errorf("v0.3 event %d: kind %q, final %v", i+1, ev.Kind, ev.Final)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name, version, body string
			want                int
		}{
			{"unsupported version", "2.0", `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}`, -32009},
			{"unknown method", "1.0", `{"jsonrpc":"2.0","id":7,"method":"GetTheWeather","params":{}}`, -32601},
			{"push config", "1.0", `{"jsonrpc":"2.0","id":7,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"x","url":"http://127.0.0.1:1/hook"}}`, -32003},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url, strings.NewReader(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("A2A-Version", tt.version)
				resp, err := testHTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var got struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK || got.JSONRPC != "2.0" || string(got.ID) != "7" || got.Error == nil || got.Error.Code != tt.want {
					t.Errorf("status %d, response %+v, error %+v, want code %d", resp.StatusCode, got, got.Error, tt.want)
				}
			})
		}
	})

	if llm.Unscripted() != 0 || llm.Pending() != 0 {
		t.Errorf("model script: %d unscripted requests, %d turns unused", llm.Unscripted(), llm.Pending())
	}
}

// a2aTap is a reverse proxy in front of an A2A server, advertised as its endpoint through [serve] a2a_public_url,
// that tells when it has relayed the first bytes of a SubscribeToTask stream: the server had subscribed the caller
// by then.
type a2aTap struct {
	URL        string
	target     atomic.Pointer[url.URL]
	subscribed chan struct{} // closed at the first bytes of a SubscribeToTask response
	once       sync.Once
}

func newA2ATap(t *testing.T) *a2aTap {
	t.Helper()
	tap := &a2aTap{subscribed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method == "SubscribeToTask" {
			rw = &a2aTapWriter{ResponseWriter: rw, first: func() { tap.once.Do(func() { close(tap.subscribed) }) }}
		}
		a2aProxy(tap.target.Load()).ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	tap.URL = srv.URL
	return tap
}

// a2aTapWriter calls first before the first bytes of the body are written.
type a2aTapWriter struct {
	http.ResponseWriter
	first func()
}

func (w *a2aTapWriter) Write(p []byte) (int, error) {
	w.first()
	return w.ResponseWriter.Write(p)
}

func (w *a2aTapWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestA2AServeResubscribe starts a task that returns at once, resubscribes to it from a second client while its
// model call is held, and then lets the model answer: the second client gets the task first, then its events to
// the end.
func TestA2AServeResubscribe(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	release := make(chan struct{})
	ctx := t.Context()
	llm.SetResponder(func(*fakellm.Request) fakellm.Turn {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fakellm.Turn{Text: "Finished after the wait.", ChunkSize: 4}
	})
	tap := newA2ATap(t)
	config := a2aConfig(t, t.TempDir(), "helper", llm.URL, fmt.Sprintf("\n[serve]\na2a_public_url = %q\n", tap.URL+"/"))
	srv := startServeA2A(t, []string{"TEST_KEY=k"}, "serve", "--config", config, "--a2a", "127.0.0.1:0")
	target, err := url.Parse(srv.base)
	if err != nil {
		t.Fatal(err)
	}
	tap.target.Store(target)
	if srv.url != tap.URL+"/" {
		t.Fatalf("served at %q, want the public URL %q", srv.url, tap.URL+"/")
	}

	sent := a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "Take a while.", "returnImmediately": true}).task(t)
	if s := sent.Status.State; s != "TASK_STATE_SUBMITTED" && s != "TASK_STATE_WORKING" {
		t.Fatalf("returnImmediately: the task is %s, want it not done yet", s)
	}
	testwait.Until(t, a2aWait, "the task calls the model", func() bool { return llm.RequestCount() == 1 })

	type result struct {
		line []byte
		e    *a2aError
		err  error
	}
	resubscribed := make(chan result, 1)
	node, script := peers.Node(t), a2aClientScript(t)
	go func() {
		line, e, err := a2aRunClient(ctx, node, script, srv.base, "resubscribe", map[string]any{"id": sent.ID})
		resubscribed <- result{line, e, err}
	}()
	select {
	case <-tap.subscribed:
	case r := <-resubscribed:
		t.Fatalf("the resubscription ended before the task did: %s %+v %v", r.line, r.e, r.err)
	case <-time.After(a2aWait):
		t.Fatalf("the resubscription did not start within %v", a2aWait)
	}
	close(release)
	var r result
	select {
	case r = <-resubscribed:
	case <-time.After(processLimit):
		t.Fatalf("the resubscription did not end within %v", processLimit)
	}
	if r.err != nil || r.e != nil {
		t.Fatalf("resubscribe: %v %+v\n%s", r.err, r.e, r.line)
	}
	var out a2aOut
	if err := json.Unmarshal(r.line, &out); err != nil {
		t.Fatal(err)
	}
	events := out.Events
	if len(events) < 3 || events[0].Task == nil || events[0].Task.ID != sent.ID || events[0].Task.Status.State != "TASK_STATE_WORKING" {
		t.Fatalf("resubscribe events %+v, want the WORKING task first", events)
	}
	last := events[len(events)-1].StatusUpdate
	if last == nil || last.TaskID != sent.ID || last.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("resubscribe: the last event is %+v, want the task COMPLETED", events[len(events)-1])
	}
	final := a2aOK[a2aTask](t, srv.base, "get", map[string]any{"id": sent.ID})
	text, _ := a2aAnswerOf(t, final)
	if got := a2aApplyUpdates(events); text != "Finished after the wait." || got != text {
		t.Errorf("the resubscription's artifact updates add up to %q, want the answer %q", got, text)
	}

	// A finished task has no events to follow.
	if e := a2aFails(t, srv.base, "resubscribe", map[string]any{"id": sent.ID}); a2aCode(e) != -32004 {
		t.Errorf("resubscribe to a completed task: %+v (code %v), want -32004", e, a2aCode(e))
	}
}

// TestA2AServeAuth serves A2A with a bearer token: the card is public, the JS client is served with the token and
// refused without it or with a wrong one.
func TestA2AServeAuth(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := a2aConfig(t, t.TempDir(), "guarded", llm.URL, "\n[serve]\nauth_token_env = \"A2A_TOKEN\"\n")
	srv := startServeA2A(t, []string{"TEST_KEY=k", "A2A_TOKEN=the-right-token"}, "serve", "--config", config, "--a2a", "127.0.0.1:0")

	card := a2aOK[a2aCard](t, srv.base, "card", map[string]any{})
	if card.Name != "guarded" || !strings.Contains(string(card.SecuritySchemes["bearer"]), "httpAuthSecurityScheme") {
		t.Errorf("card without a token: name %q, security schemes %s, want a bearer scheme", card.Name, card.SecuritySchemes)
	}

	llm.Enqueue(fakellm.Turn{Text: "Hello, holder of the token."})
	tk := a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "Hi."}, "TOKEN=the-right-token").task(t)
	if text, _ := a2aAnswerOf(t, tk); tk.Status.State != "TASK_STATE_COMPLETED" || text != "Hello, holder of the token." {
		t.Errorf("send with the token: %s, answer %q", tk.Status.State, text)
	}
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"no token", nil},
		{"wrong token", []string{"TOKEN=the-wrong-token"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if e := a2aFails(t, srv.base, "send", map[string]any{"text": "Hi."}, tt.env...); !strings.Contains(e.Message, "Status: 401") {
				t.Errorf("send: %+v, want HTTP 401", e)
			}
		})
	}
	if llm.RequestCount() != 1 || llm.Pending() != 0 {
		t.Errorf("%d model requests, %d turns unused: only the call with the token may run", llm.RequestCount(), llm.Pending())
	}
}

// TestA2AServeWithHTTP serves MCP over HTTP and A2A from one process: both listeners answer.
func TestA2AServeWithHTTP(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := a2aConfig(t, t.TempDir(), "both", llm.URL, "")
	srv := startServeA2A(t, []string{"TEST_KEY=k"}, "serve", "--config", config, "--http", "127.0.0.1:0", "--a2a", "127.0.0.1:0")
	if srv.mcpURL == "" {
		t.Fatal("agenthost serve --http --a2a did not say where it serves MCP")
	}

	ctx := testwait.Context(t, processLimit)
	session, err := mcp.NewClient(&mcp.Implementation{Name: "a2a-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.mcpURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "ask_both" {
		t.Errorf("MCP tools/list: %+v, want ask_both", tools.Tools)
	}

	llm.Enqueue(fakellm.Turn{Text: "Answered over A2A."})
	tk := a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "Where are you?"}).task(t)
	if text, _ := a2aAnswerOf(t, tk); tk.Status.State != "TASK_STATE_COMPLETED" || text != "Answered over A2A." {
		t.Errorf("A2A send: %s, answer %q", tk.Status.State, text)
	}
}

// TestA2AServeChained runs agenthost A with agenthost B as its A2A peer b. B's model calls the fixture's cite tool;
// the document B cites reaches A's answer as a reference of A's own. Then cancelling A's task from the JS client
// cancels B's task, and B's model call with it.
func TestA2AServeChained(t *testing.T) {
	llmA, llmB := fakellm.New(), fakellm.New()
	t.Cleanup(llmA.Close)
	t.Cleanup(llmB.Close)
	modelB := a2aWatchModel(t, llmB)
	dir := t.TempDir()
	b := startServeA2A(t, []string{"TEST_KEY=sk-b"}, "serve", "--config", a2aConfig(t, dir, "b", modelB.URL, ""), "--a2a", "127.0.0.1:0")
	configA := a2aConfig(t, dir, "a", llmA.URL, fmt.Sprintf("\n[a2a.peers.b]\nurl = %q\nrequired = true\n", b.base))

	t.Run("references", func(t *testing.T) {
		llmA.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "b", Arguments: `{"message":"Find the document."}`}}},
			fakellm.Turn{Text: "B found that the document says hello [source 1]."},
		)
		llmB.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b1", Name: "fx_cite", Arguments: `{}`}}},
			fakellm.Turn{Text: "The document says hello [source 1]."},
		)
		r := agenthost(t, dir, "", []string{"TEST_KEY=sk-a"}, "run", "--json", "--config", configA, "What does the document say?")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var ans host.Answer
		if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		want := []host.NumberedReference{{Number: 1, Title: "The test document", URI: fixtureDocURI}}
		if !slices.Equal(ans.References, want) || !strings.HasPrefix(ans.Text, "B found that the document says hello") {
			t.Errorf("A's answer %q with references %+v, want B's reference %+v", ans.Text, ans.References, want)
		}
		if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].Name != "b" || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "a2a:b" {
			t.Errorf("A's tool calls = %+v", ans.ToolCalls)
		}
		reqs := llmA.Requests()
		if len(reqs) != 2 || !strings.Contains(a2aLastToolResult(reqs[1]), "The document says hello") {
			t.Fatalf("%d requests to A's model; B's result as A's model read it: %q", len(reqs), a2aLastToolResult(reqs[len(reqs)-1]))
		}
	})

	t.Run("cancel", func(t *testing.T) {
		a := startServeA2A(t, []string{"TEST_KEY=sk-a"}, "serve", "--config", configA, "--a2a", "127.0.0.1:0")
		llmA.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a2", Name: "b", Arguments: `{"message":"Take your time."}`}}})
		llmB.Enqueue(fakellm.Turn{Text: "never finished", HangAfter: 2})
		beforeA, beforeB := llmA.RequestCount(), llmB.RequestCount()

		sent := a2aOK[a2aOut](t, a.base, "send", map[string]any{"text": "Ask B to take its time.", "returnImmediately": true}).task(t)
		testwait.Until(t, a2aWait, "B calls its model", func() bool { return llmB.RequestCount() == beforeB+1 })
		working := a2aOK[a2aList](t, b.base, "list", map[string]any{"status": "TASK_STATE_WORKING"})
		if len(working.Tasks) != 1 {
			t.Fatalf("B's working tasks: %+v, want the one A started", working.Tasks)
		}
		bTask := working.Tasks[0]

		cancelled := a2aOK[a2aTask](t, a.base, "cancel", map[string]any{"id": sent.ID})
		if cancelled.Status.State != "TASK_STATE_CANCELED" {
			t.Errorf("A's task after the cancel: %s (%q)", cancelled.Status.State, cancelled.Status.messageText())
		}
		if got := a2aOK[a2aTask](t, b.base, "get", map[string]any{"id": bTask.ID}); got.Status.State != "TASK_STATE_CANCELED" {
			t.Errorf("B's task once A's is cancelled: %s (%q), want CANCELED", got.Status.State, got.Status.messageText())
		}
		testwait.Until(t, a2aWait, "B's model call sees its caller go away", func() bool { return modelB.abandonedCall("Take your time.") })
		if a, b := llmA.RequestCount()-beforeA, llmB.RequestCount()-beforeB; a != 1 || b != 1 {
			t.Errorf("model requests: A %d, B %d, want 1 each", a, b)
		}
	})
	for name, llm := range map[string]*fakellm.Server{"A": llmA, "B": llmB} {
		if llm.Unscripted() != 0 || llm.Pending() != 0 {
			t.Errorf("%s's model script: %d unscripted requests, %d turns unused", name, llm.Unscripted(), llm.Pending())
		}
	}
}

// TestA2AServeRestart restarts `agenthost serve --a2a` on the same state file: the second process answers GetTask
// and ListTasks for the first one's task, and a message in the task's context continues the conversation.
func TestA2AServeRestart(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := a2aConfig(t, t.TempDir(), "keeper", llm.URL, "")
	args := []string{"serve", "--config", config, "--a2a", "127.0.0.1:0"}
	env := []string{"TEST_KEY=sk-a2a"}
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}},
		fakellm.Turn{Text: "The document says hello [source 1]."},
		fakellm.Turn{Text: "You asked what the document says [source 1]."},
	)
	var first a2aTask
	t.Run("first process", func(t *testing.T) {
		srv := startServeA2A(t, env, args...)
		first = a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "What does the document say?"}).task(t)
		if first.Status.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("task %s: %s", first.ID, first.Status.State)
		}
	}) // the server is interrupted here
	if t.Failed() {
		return
	}

	srv := startServeA2A(t, env, args...)
	got := a2aOK[a2aTask](t, srv.base, "get", map[string]any{"id": first.ID})
	if got.ID != first.ID || got.ContextID != first.ContextID || got.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("GetTask after the restart: %+v", got)
	}
	if text, d := a2aAnswerOf(t, got); !strings.HasPrefix(text, "The document says hello") || len(d.References) != 1 {
		t.Errorf("the answer after the restart: %q, %+v", text, d)
	}
	if len(got.History) == 0 || a2aPartsText(got.History[0].Parts) != "What does the document say?" {
		t.Errorf("the history after the restart: %+v", got.History)
	}
	list := a2aOK[a2aList](t, srv.base, "list", map[string]any{"contextId": first.ContextID})
	if list.TotalSize != 1 || len(list.Tasks) != 1 || list.Tasks[0].ID != first.ID {
		t.Errorf("ListTasks after the restart: %+v", list)
	}
	if e := a2aFails(t, srv.base, "cancel", map[string]any{"id": first.ID}); a2aCode(e) != -32002 {
		t.Errorf("cancelling the finished task: %+v, want TaskNotCancelableError", e)
	}

	// The context continues: the model reads the first exchange, and the source keeps its number.
	second := a2aOK[a2aOut](t, srv.base, "send", map[string]any{"text": "What did I ask you?", "contextId": first.ContextID}).task(t)
	if second.Status.State != "TASK_STATE_COMPLETED" || second.ContextID != first.ContextID {
		t.Fatalf("second task: %+v", second)
	}
	if text, d := a2aAnswerOf(t, second); text != "You asked what the document says [1].\n\nSources:\n[1] The test document — "+fixtureDocURI || len(d.References) != 1 {
		t.Errorf("second answer %q, references %+v", text, d.References)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if msgs := a2aMessages(reqs[2].Messages); len(msgs) < 4 || !slices.Contains(msgs, "user:What does the document say?") {
		t.Errorf("the model's request after the restart lacks the first exchange: %q", msgs)
	}
	list = a2aOK[a2aList](t, srv.base, "list", map[string]any{"contextId": first.ContextID})
	if list.TotalSize != 2 || list.Tasks[0].ID != second.ID || list.Tasks[1].ID != first.ID {
		t.Errorf("ListTasks with both tasks: %+v", list)
	}

	// agenthost state lists, shows and deletes the tasks.
	dir := filepath.Dir(config)
	r := agenthost(t, dir, "", nil, "state", "tasks", "-config", config, "-context", first.ContextID)
	if r.code != 0 || !regexp.MustCompile(`(?m)^`+second.ID+`\s+`+first.ContextID+`\s+completed\s`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, first.ID) {
		t.Errorf("state tasks: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "state", "show", "-config", config, first.ID)
	if r.code != 0 || !strings.Contains(r.stdout, `"state": "TASK_STATE_COMPLETED"`) || !strings.Contains(r.stdout, "What does the document say?") {
		t.Errorf("state show TASK: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", nil, "state", "delete", "-config", config, first.ID, "no-such-id")
	if r.code != 1 || !strings.Contains(r.stdout, "deleted task "+first.ID) || !strings.Contains(r.stderr, `no conversation or task "no-such-id"`) {
		t.Errorf("state delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if e := a2aFails(t, srv.base, "get", map[string]any{"id": first.ID}); a2aCode(e) != -32001 {
		t.Errorf("GetTask of the deleted task: %+v, want TaskNotFoundError", e)
	}
}
