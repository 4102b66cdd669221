package host

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// refTool returns a tool whose result carries the given references.
func refTool(name string, refs ...Reference) Tool {
	return &funcTool{spec: ToolSpec{Name: name, Description: "finds documents"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return &Result{Text: name + " found " + string(rune('0'+len(refs))) + " documents", References: refs}, nil
	}}
}

// citedRun is a two-round run: search returns two documents in round one, wiki one in round two (the same URI as
// search's second), and the answer cites all three plus a source that does not exist.
func citedRun(t *testing.T, style CitationStyle) (*harness, *Answer) {
	t.Helper()
	search := refTool("search", Reference{Title: "Go spec", URI: "https://go.dev/ref/spec", Content: "The Go spec."}, Reference{Title: "Effective Go", URI: "https://go.dev/doc/effective_go", Content: "Tips."})
	wiki := refTool("wiki", Reference{Title: "Effective Go (mirror)", URI: "https://go.dev/doc/effective_go", Content: "Tips again."})
	h := newHarness(t, harnessConfig{tools: []Tool{search, wiki}, opts: Options{CitationStyle: style, Instructions: "You answer questions about Go.",
		ToolOutputID: func() string { return "7f3a9c0d1e2b4a56" }}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("s1", "search", `{"q":"go"}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("w1", "wiki", `{"q":"effective go"}`)}},
		fakellm.Turn{Text: "Go has a spec [source 1]. Write idiomatic code [source 3][source 2]. Ignore [source 7].", ChunkSize: 5},
	)
	return h, h.mustAsk(t, &Request{Prompt: "Tell me about Go."})
}

func TestCitationsAcrossToolsAndRounds(t *testing.T) {
	wantRefs := []NumberedReference{{Number: 1, Title: "Go spec", URI: "https://go.dev/ref/spec"}, {Number: 2, Title: "Effective Go", URI: "https://go.dev/doc/effective_go"}}
	tests := []struct {
		style CitationStyle
		want  string
	}{
		{CitationMarkdown, "Go has a spec [1]. Write idiomatic code [2]. Ignore.\n\nSources:\n[1] Go spec — https://go.dev/ref/spec\n[2] Effective Go — https://go.dev/doc/effective_go"},
		{CitationSup, "Go has a spec <sup>1</sup>. Write idiomatic code <sup>2</sup>. Ignore.\n\nSources:\n1. Go spec — https://go.dev/ref/spec\n2. Effective Go — https://go.dev/doc/effective_go"},
		{CitationNone, "Go has a spec. Write idiomatic code. Ignore."},
	}
	for _, tt := range tests {
		t.Run(string(tt.style), func(t *testing.T) {
			h, ans := citedRun(t, tt.style)
			if ans.Text != tt.want {
				t.Errorf("answer:\n%s\nwant:\n%s", ans.Text, tt.want)
			}
			if tt.style != CitationNone || len(ans.References) > 0 {
				// Effective Go is one document whatever source number cited it; its title comes from the first source
				// that has one, in source-number order.
				if len(ans.References) != 2 || ans.References[0] != wantRefs[0] || ans.References[1] != wantRefs[1] {
					t.Errorf("references = %+v, want %+v", ans.References, wantRefs)
				}
			}
			// Round one numbered search's documents 1 and 2; round two continued with 3.
			reqs := h.srv.Requests()
			if got := toolMessages(reqs[1])["s1"]; !strings.Contains(got, `"source":1,`) || !strings.Contains(got, `"source":2,`) {
				t.Errorf("round one result: %s", got)
			}
			if got := toolMessages(reqs[2])["w1"]; !strings.Contains(got, `"source":3,`) {
				t.Errorf("round two result: %s", got)
			}
			// What was streamed adds up to the answer, citations rendered.
			var streamed strings.Builder
			for _, ev := range h.events {
				if ev.Kind == EventTextDelta && ev.Iteration == 2 {
					streamed.WriteString(ev.Text)
				}
			}
			if streamed.String() != ans.Text {
				t.Errorf("streamed:\n%q\nanswer:\n%q", streamed.String(), ans.Text)
			}
		})
	}
}

// TestGoldenMessages pins the exact requests of a two-round run: the messages (system prompt, assistant tool calls,
// tool results with numbered sources), the tools and tool_choice. Run with -update to rewrite it.
func TestGoldenMessages(t *testing.T) {
	h, _ := citedRun(t, CitationMarkdown)
	var out bytes.Buffer
	for _, r := range h.srv.Requests() {
		if err := json.Indent(&out, r.Body, "", "  "); err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n")
	}
	path := filepath.Join("testdata", "two_rounds.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		gotLines, wantLines := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gotLines), len(wantLines)) {
			if gotLines[i] != wantLines[i] {
				t.Fatalf("requests differ from %s at line %d:\n got: %s\nwant: %s\n(run with -update if the change is intended)", path, i+1, gotLines[i], wantLines[i])
			}
		}
		t.Fatalf("requests differ from %s in length: %d lines, want %d", path, len(gotLines), len(wantLines))
	}
}

func TestToolListChangesBetweenIterations(t *testing.T) {
	set := &staticSet{name: "mcp:dyn", tools: named("first")}
	h := newHarness(t, harnessConfig{sets: []Toolset{set}})
	h.srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		if req.Seq == 1 {
			set.tools = named("first", "second") // the server sent list_changed while the first call ran
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("1", "first", `{}`)}}
		}
		return fakellm.Turn{Text: "ok"}
	})
	if _, err := h.ask(t, &Request{Prompt: "x"}); err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()
	if !slices.Equal(reqs[0].ToolNames(), []string{"first"}) || !slices.Equal(reqs[1].ToolNames(), []string{"first", "second"}) {
		t.Errorf("offered %v then %v", reqs[0].ToolNames(), reqs[1].ToolNames())
	}
}
