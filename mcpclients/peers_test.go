package mcpclients_test

// These tests run the real MCP servers pinned in testdata/peers (server-everything, server-filesystem,
// server-memory) through the whole loop: the orchestrator offers their tools to llm/openai, which talks to a
// scripted fakellm server, and the tests check what the model received as tool results and what the run answered.
// internal/testkit/peers fails a test when the peers are not installed (`make peers`); nothing here skips.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
	"github.com/agenthost/agenthost/mcpclients"
)

// everythingCase is one tool of server-everything called through the loop: the model calls it as call "c1", then
// answers.
type everythingCase struct {
	name string
	tool string // the server's own name; the model calls "ev_<tool>"
	args string
	// sampled, when set, is the model's answer to the sampling request the server makes during the call.
	sampled    string
	answer     string
	interactor host.Interactor
	check      func(t *testing.T, run *loopRun)
}

func TestEverythingThroughTheLoop(t *testing.T) {
	transports := []struct {
		name   string
		config func(*testing.T) mcpclients.ServerConfig
	}{
		{"stdio", everythingStdio},
		{"streamable http", everythingHTTP},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t)
			h := newLoopHarness(t, nil, cfg)
			set := h.client.Toolsets()[0]
			// The sampling and elicitation tools exist only once the server knows the client can do both.
			waitForTools(t, set, "ev_echo", "ev_trigger-sampling-request", "ev_trigger-elicitation-request")
			if st := h.client.Status()[0]; st.State != mcpclients.StateConnected || st.Transport != cfg.Transport {
				t.Fatalf("status %+v", st)
			}
			for _, tc := range everythingCases() {
				t.Run(tc.name, func(t *testing.T) {
					turns := []fakellm.Turn{callTurn("c1", "ev_"+tc.tool, tc.args)}
					if tc.sampled != "" {
						turns = append(turns, fakellm.Turn{Text: tc.sampled})
					}
					turns = append(turns, fakellm.Turn{Text: tc.answer})
					run := h.ask(t, "Use the "+tc.tool+" tool.", tc.interactor, nil, turns...)
					if run.answer.StoppedBy != host.StopAnswered {
						t.Errorf("the run stopped by %s: %q", run.answer.StoppedBy, run.answer.Text)
					}
					if info := run.answer.ToolCalls; len(info) != 1 || !info[0].OK || info[0].Source != "mcp:everything" {
						t.Errorf("tool call info %+v, want one successful call to mcp:everything", info)
					}
					tc.check(t, run)
				})
			}
		})
	}
}

func everythingCases() []everythingCase {
	form := &formFiller{}
	return []everythingCase{
		{
			name: "echo", tool: "echo", args: `{"message":"hello from the loop"}`, answer: "It echoed.",
			check: func(t *testing.T, run *loopRun) {
				if got := run.toolMessage(t, "c1"); got != "Echo: hello from the loop" {
					t.Errorf("the model received %q", got)
				}
				if run.answer.Text != "It echoed." || len(run.answer.References) != 0 {
					t.Errorf("answer %q with references %+v", run.answer.Text, run.answer.References)
				}
			},
		},
		{
			name: "get-sum", tool: "get-sum", args: `{"a":2.5,"b":40}`, answer: "42.5",
			check: func(t *testing.T, run *loopRun) {
				if got := run.toolMessage(t, "c1"); got != "The sum of 2.5 and 40 is 42.5." {
					t.Errorf("the model received %q", got)
				}
			},
		},
		{
			name: "get-structured-content", tool: "get-structured-content", args: `{"location":"Chicago"}`, answer: "Drizzle.",
			check: func(t *testing.T, run *loopRun) {
				want := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}
				// The model reads the structured content as JSON, once.
				var got map[string]any
				if msg := run.toolMessage(t, "c1"); json.Unmarshal([]byte(msg), &got) != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("the model received %q, want the structured content %v as JSON", msg, want)
				}
				// The caller gets it as structured JSON too.
				var structured map[string]any
				if res := run.toolEnd(t, "c1").Result; res == nil || json.Unmarshal(res.Structured, &structured) != nil || !reflect.DeepEqual(structured, want) {
					t.Errorf("the tool_end event carries %+v, want structured %v", res, want)
				}
			},
		},
		{
			name: "get-resource-links cited", tool: "get-resource-links", args: `{"count":2}`,
			answer: "The second resource is text [source 2]; the first is a blob [source 1].",
			check: func(t *testing.T, run *loopRun) {
				msg := run.toolMessage(t, "c1")
				text, sources, ok := strings.Cut(msg, "Sources (cite as [source N]):\n")
				if !ok || !strings.HasPrefix(text, "Here are 2 resource links") {
					t.Fatalf("the model received %q, want the server's text and then numbered sources", msg)
				}
				var got []map[string]any
				if err := json.Unmarshal([]byte(sources), &got); err != nil {
					t.Fatalf("sources %q: %v", sources, err)
				}
				// The server gives its blob resources the MIME type text/plain, so it describes both as plaintext.
				want := []map[string]any{
					{"source": 1.0, "title": "Blob Resource 1", "uri": "demo://resource/dynamic/blob/1", "content": "Resource 1: plaintext resource"},
					{"source": 2.0, "title": "Text Resource 2", "uri": "demo://resource/dynamic/text/2", "content": "Resource 2: plaintext resource"},
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("the model received the sources\n%v\nwant\n%v", got, want)
				}
				// The answer numbers the documents in the order it cites them.
				refs := []host.NumberedReference{
					{Number: 1, Title: "Text Resource 2", URI: "demo://resource/dynamic/text/2"},
					{Number: 2, Title: "Blob Resource 1", URI: "demo://resource/dynamic/blob/1"},
				}
				if !reflect.DeepEqual(run.answer.References, refs) {
					t.Errorf("references %+v, want %+v", run.answer.References, refs)
				}
				wantText := "The second resource is text [1]; the first is a blob [2].\n\nSources:\n" +
					"[1] Text Resource 2 — demo://resource/dynamic/text/2\n[2] Blob Resource 1 — demo://resource/dynamic/blob/1"
				if got := strings.TrimRight(run.answer.Text, "\n"); got != wantText {
					t.Errorf("answer\n%s\nwant\n%s", got, wantText)
				}
				if n := run.answer.ToolCalls[0].References; n != 2 {
					t.Errorf("the call's debug info counts %d references, want 2", n)
				}
			},
		},
		{
			name: "trigger-long-running-operation progress", tool: "trigger-long-running-operation", args: `{"duration":0.6,"steps":3}`,
			answer: "Done.",
			check: func(t *testing.T, run *loopRun) {
				if got := run.toolMessage(t, "c1"); got != "Long running operation completed. Duration: 0.6 seconds, Steps: 3." {
					t.Errorf("the model received %q", got)
				}
				// The last notification and the result travel independently, so it may be dropped as late; the
				// earlier ones were sent long before the result.
				got := run.progress("c1")
				if len(got) == 0 {
					t.Fatal("no progress was relayed to the run")
				}
				for i, p := range got {
					if p.Total != 3 || p.Progress < 1 || p.Progress > 3 || i > 0 && p.Progress <= got[i-1].Progress {
						t.Errorf("progress %+v, want steps 1 to 3 of 3, rising", got)
						break
					}
				}
				// Progress comes between the call's start and its end.
				var kinds []host.EventKind
				for _, ev := range run.events {
					if ev.ToolCall != nil && (len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind) {
						kinds = append(kinds, ev.Kind)
					}
				}
				if want := []host.EventKind{host.EventToolStart, host.EventToolProgress, host.EventToolEnd}; !slices.Equal(kinds, want) {
					t.Errorf("tool events %v, want %v", kinds, want)
				}
			},
		},
		{
			name: "trigger-sampling-request answered by the model", tool: "trigger-sampling-request",
			args: `{"prompt":"Name a colour.","maxTokens":50}`, sampled: "Ultramarine, from our model.", answer: "The model said ultramarine.",
			check: func(t *testing.T, run *loopRun) {
				// Three chat completions: the run's call, the server's sampling request during it, the answer.
				if len(run.requests) != 3 {
					t.Fatalf("%d chat completions, want 3", len(run.requests))
				}
				sampling := run.requests[1]
				var msgs []string
				for _, m := range sampling.Messages {
					msgs = append(msgs, m.Role+": "+m.Content)
				}
				wantMsgs := []string{"system: You are a helpful test server.", "user: Resource trigger-sampling-request context: Name a colour."}
				if !slices.Equal(msgs, wantMsgs) || len(sampling.Tools) != 0 {
					t.Errorf("the sampling request has messages %q and tools %v; want %q and no tools", msgs, sampling.ToolNames(), wantMsgs)
				}
				if mt := firstNonNil(sampling.MaxTokens, sampling.MaxCompletionTokens); mt == nil || *mt != 50 {
					t.Errorf("the sampling request asks for %v tokens, want the server's 50", mt)
				}
				msg := run.toolMessage(t, "c1")
				if !strings.HasPrefix(msg, "LLM sampling result:") || !strings.Contains(msg, `"text": "Ultramarine, from our model."`) {
					t.Errorf("the model received %q, want the sampled text in the server's result", msg)
				}
			},
		},
		{
			name: "trigger-elicitation-request answered by the interactor", tool: "trigger-elicitation-request", args: `{}`,
			interactor: form, answer: "Thanks, Ada.",
			check: func(t *testing.T, run *loopRun) {
				asked := form.requests()
				if len(asked) != 1 {
					t.Fatalf("the interactor was asked %d times, want 1", len(asked))
				}
				if asked[0].Source != "mcp:everything" || asked[0].Message != "Please provide inputs for the following fields:" {
					t.Errorf("asked %+v", asked[0])
				}
				if form.err != nil {
					t.Fatalf("the interactor could not fill the form: %v", form.err)
				}
				msg := run.toolMessage(t, "c1")
				for _, want := range []string{
					"✅ User provided the requested information!",
					"- Name: Ada Lovelace",
					"- Email: ada@example.com",
					"- Favorite Integer: 42",
					`"action": "accept"`,
				} {
					if !strings.Contains(msg, want) {
						t.Errorf("the model received %q, which lacks %q", msg, want)
					}
				}
			},
		},
	}
}

func firstNonNil[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// formFiller is an interactor that accepts every elicitation with content it builds from the schema the server
// sent: each property's default when it has one, otherwise a value of its type and format. It checks that the
// schema is the form server-everything sends and that the content validates against it.
type formFiller struct {
	mu    sync.Mutex
	asked []*host.ElicitRequest
	err   error // why the last form could not be filled
}

func (f *formFiller) Approve(context.Context, *host.ApprovalRequest) (bool, error) {
	return false, errors.New("these tests ask for no approval")
}

func (f *formFiller) Elicit(_ context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	content, err := fillForm(req.Schema)
	f.err = err
	if err != nil {
		return &host.ElicitResult{Action: host.ElicitDecline}, nil
	}
	return &host.ElicitResult{Action: host.ElicitAccept, Content: content}, nil
}

func (f *formFiller) requests() []*host.ElicitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// fillForm builds content for a flat elicitation schema and validates it against the schema.
func fillForm(raw json.RawMessage) (map[string]any, error) {
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type    string   `json:"type"`
			Format  string   `json:"format"`
			Default any      `json:"default"`
			Minimum *float64 `json:"minimum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	if schema.Type != "object" || !slices.Equal(schema.Required, []string{"name"}) || len(schema.Properties) < 10 {
		return nil, fmt.Errorf("not the form server-everything sends: %s", raw)
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		var v any
		switch {
		case p.Default != nil:
			v = p.Default
		case name == "name":
			v = "Ada Lovelace"
		case p.Type == "string" && p.Format == "email":
			v = "ada@example.com"
		case p.Type == "string" && p.Format == "uri":
			v = "https://example.com/ada"
		case p.Type == "string" && p.Format == "date":
			v = "1815-12-10"
		case p.Type == "string":
			v = "text"
		case p.Type == "boolean":
			v = true
		case p.Type == "integer" || p.Type == "number":
			v = 1
			if p.Minimum != nil {
				v = *p.Minimum
			}
		default:
			return nil, fmt.Errorf("property %q of type %q has no default", name, p.Type)
		}
		content[name] = v
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	// Validate what the server will decode: the content as JSON.
	b, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		return nil, err
	}
	if err := resolved.Validate(decoded); err != nil {
		return nil, fmt.Errorf("the content %s does not match the schema: %v", b, err)
	}
	return content, nil
}

func TestFilesystemThroughTheLoop(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // the server resolves symlinks in the allowed directory
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("The launch code is 1234.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newLoopHarness(t, nil, mcpclients.ServerConfig{
		Name:      "files",
		Transport: mcpclients.TransportStdio,
		Command:   peers.Node(t),
		Args:      []string{peers.Bin(t, "mcp-server-filesystem"), dir},
		Prefix:    "fs",
	})
	// The server's tool names are its own business: find the reading and listing tools by listing.
	names := toolNames(t, h.client.Toolsets()[0])
	read := firstWithSuffix(names, "_read_text_file", "_read_file")
	list := firstWithSuffix(names, "_list_directory")
	if read == "" || list == "" || !strings.HasPrefix(read, "fs_") {
		t.Fatalf("no prefixed tools to read a file and list a directory in %v", names)
	}
	args, _ := json.Marshal(map[string]string{"path": file})
	dirArgs, _ := json.Marshal(map[string]string{"path": dir})
	run := h.ask(t, "What is the launch code?", nil, nil,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{toolCall("r1", read, string(args)), toolCall("l1", list, string(dirArgs))}},
		fakellm.Turn{Text: "The launch code is 1234."},
	)
	if got := run.toolMessage(t, "r1"); !strings.HasPrefix(got, "The launch code is 1234.") {
		t.Errorf("the model received %q from %s, want the file's content", got, read)
	}
	if got := run.toolMessage(t, "l1"); !strings.Contains(got, "[FILE] notes.txt") {
		t.Errorf("the model received %q from %s, want the file listed", got, list)
	}
	if run.answer.Text != "The launch code is 1234." || len(run.answer.ToolCalls) != 2 {
		t.Errorf("answer %q after calls %+v", run.answer.Text, run.answer.ToolCalls)
	}
	for _, info := range run.answer.ToolCalls {
		if !info.OK || info.Source != "mcp:files" {
			t.Errorf("call %+v, want a successful call to mcp:files", info)
		}
	}
}

func firstWithSuffix(names []string, suffixes ...string) string {
	for _, s := range suffixes {
		for _, n := range names {
			if strings.HasSuffix(n, s) {
				return n
			}
		}
	}
	return ""
}

func TestMemoryThroughTheLoop(t *testing.T) {
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	h := newLoopHarness(t, nil, mcpclients.ServerConfig{
		Name:      "memory",
		Transport: mcpclients.TransportStdio,
		Command:   peers.Node(t),
		Args:      []string{peers.Bin(t, "mcp-server-memory")},
		Env:       map[string]string{"MEMORY_FILE_PATH": memory},
		Prefix:    "mem",
	})
	waitForTools(t, h.client.Toolsets()[0], "mem_create_entities", "mem_read_graph")
	run := h.ask(t, "Remember Ada, then tell me what you know.", nil, nil,
		callTurn("m1", "mem_create_entities", `{"entities":[{"name":"Ada Lovelace","entityType":"person","observations":["wrote the first program"]}]}`),
		callTurn("m2", "mem_read_graph", `{}`),
		fakellm.Turn{Text: "Ada Lovelace wrote the first program."},
	)
	if len(run.requests) != 3 {
		t.Fatalf("%d chat completions, want 3 (two rounds of tools, then the answer)", len(run.requests))
	}
	// What the model read after each round, in the request that followed it.
	created := toolMessageIn(run.requests[1], "m1")
	if !strings.Contains(created, `"Ada Lovelace"`) || strings.HasPrefix(created, "Error") {
		t.Errorf("after create_entities the model received %q", created)
	}
	graph := toolMessageIn(run.requests[2], "m2")
	var decoded struct {
		Entities []struct {
			Name         string   `json:"name"`
			EntityType   string   `json:"entityType"`
			Observations []string `json:"observations"`
		} `json:"entities"`
	}
	// The graph comes as JSON, possibly followed by the same data as structured content.
	dec := json.NewDecoder(strings.NewReader(graph))
	if err := dec.Decode(&decoded); err != nil || len(decoded.Entities) != 1 || decoded.Entities[0].Name != "Ada Lovelace" ||
		decoded.Entities[0].EntityType != "person" || !slices.Equal(decoded.Entities[0].Observations, []string{"wrote the first program"}) {
		t.Errorf("after read_graph the model received %q (%v), want the entity just created", graph, err)
	}
	if data, err := os.ReadFile(memory); err != nil || !strings.Contains(string(data), "Ada Lovelace") {
		t.Errorf("the memory file holds %q (%v), want the entity", data, err)
	}
	if run.answer.Text != "Ada Lovelace wrote the first program." || len(run.answer.Iterations) != 3 {
		t.Errorf("answer %q after %d iterations", run.answer.Text, len(run.answer.Iterations))
	}
}

func TestEverythingStdioRestartsAfterACrash(t *testing.T) {
	cfg := everythingStdio(t)
	bin := cfg.Args[0]
	isEverything := func(args []string) bool {
		return len(args) == 3 && args[1] == bin && args[2] == "stdio"
	}
	h := newLoopHarness(t, &mcpclients.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, cfg)
	pids := childProcesses(isEverything)
	if len(pids) != 1 {
		t.Fatalf("found %d server-everything children (%v), want 1", len(pids), pids)
	}
	old := pids[0]

	// The server dies while a call is in flight: it is killed once the call reports its first progress.
	var killed bool
	run := h.ask(t, "Run the long operation.", nil, func(ev *host.Event) {
		if ev.Kind == host.EventToolProgress && !killed {
			killed = true
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Errorf("kill %d: %v", old, err)
			}
		}
	},
		callTurn("c1", "ev_trigger-long-running-operation", `{"duration":2,"steps":2}`),
		fakellm.Turn{Text: "The operation completed."},
	)
	if !killed {
		t.Fatal("the call reported no progress, so the server was not killed")
	}
	// The server annotates the operation read-only: the call was made again on the restarted server, and the model
	// got its result.
	if got := run.toolMessage(t, "c1"); strings.HasPrefix(got, "Error: ") || !strings.Contains(got, "completed") {
		t.Errorf("the model received %q, want the operation's result", got)
	}
	if calls := run.answer.ToolCalls; run.answer.StoppedBy != host.StopAnswered || len(calls) != 1 || !calls[0].OK {
		t.Errorf("answer %q (%s) after calls %+v, want an answer after one call that succeeded", run.answer.Text, run.answer.StoppedBy, calls)
	}

	// The server comes back as a fresh process.
	var fresh []int
	waitUntil(t, "the server is connected again with a new process", func() bool {
		fresh = childProcesses(isEverything)
		return h.client.Status()[0].State == mcpclients.StateConnected && len(fresh) == 1 && fresh[0] != old
	})
	if st := h.client.Status()[0]; st.Error != "" || st.Tools == 0 {
		t.Errorf("status after the restart %+v", st)
	}

	// And the next call works.
	run = h.ask(t, "Echo again.", nil, nil,
		callTurn("c2", "ev_echo", `{"message":"back again"}`),
		fakellm.Turn{Text: "It is back."},
	)
	if got := run.toolMessage(t, "c2"); got != "Echo: back again" {
		t.Errorf("after the restart the model received %q", got)
	}
}
