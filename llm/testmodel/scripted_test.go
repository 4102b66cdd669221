package testmodel

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/llm"
)

const script = `# a comment, then a blank line

{"tool_calls": [{"name": "search", "arguments": {"query": "paris",  "limit": 2}}, {"id": "mine", "name": "ping"}]}
{"tool_calls": [{"name": "search", "arguments": "{not json"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
   {"text": "Paris is the capital [source 1].", "finish_reason": "length", "usage": {"requests": 2, "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 9}}
{"error": "rate limited"}
`

func TestScriptedReplay(t *testing.T) {
	s, err := NewScripted(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Messages: []llm.Message{user("where?")}}
	tests := []struct {
		want    llm.Response
		wantErr string
	}{
		{want: llm.Response{
			Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "search", Arguments: `{"query":"paris","limit":2}`},
				{ID: "mine", Name: "ping", Arguments: `{}`},
			}},
			FinishReason: llm.FinishToolCalls,
		}},
		{want: llm.Response{
			Message:      llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "search", Arguments: `{not json`}}},
			Usage:        llm.Usage{Requests: 1, PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
			FinishReason: llm.FinishToolCalls,
		}},
		{want: llm.Response{
			Message:      llm.Message{Role: llm.RoleAssistant, Content: "Paris is the capital [source 1]."},
			Usage:        llm.Usage{Requests: 2, PromptTokens: 1, CompletionTokens: 2, TotalTokens: 9},
			FinishReason: llm.FinishLength,
		}},
		{wantErr: "rate limited"},
		{wantErr: "script exhausted"},
	}
	for i, tt := range tests {
		var streamed strings.Builder
		resp, err := s.Generate(t.Context(), req, func(d llm.Delta) { streamed.WriteString(d.Text) })
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("response %d: err = %v, want %q", i+1, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		if i == 0 {
			// no usage in the script: estimated
			if resp.Usage.Requests != 1 || resp.Usage.PromptTokens == 0 {
				t.Errorf("response 1: usage %+v, want an estimate", resp.Usage)
			}
			resp.Usage = llm.Usage{}
		}
		resp.Model = ""
		if !reflect.DeepEqual(*resp, tt.want) {
			t.Errorf("response %d\n got %+v\nwant %+v", i+1, *resp, tt.want)
		}
		if streamed.String() != resp.Message.Content {
			t.Errorf("response %d: streamed %q", i+1, streamed.String())
		}
	}
	_, err = s.Generate(t.Context(), req, nil)
	if !errors.Is(err, ErrScriptExhausted) || !strings.Contains(err.Error(), "all 4 scripted responses") {
		t.Errorf("err = %v, want ErrScriptExhausted saying how many responses there were", err)
	}
	if got := len(s.Requests()); got != 6 {
		t.Errorf("recorded %d requests, want 6", got)
	}
	if s.Remaining() != 0 {
		t.Errorf("Remaining = %d", s.Remaining())
	}
}

func TestScriptedRecordsRequests(t *testing.T) {
	s, err := NewScripted(strings.NewReader(`{"text": "a"}` + "\n" + `{"text": "b"}`))
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Messages: []llm.Message{user("first")}, Tools: []llm.ToolSpec{searchTool}}
	if _, err := s.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Content = "changed by the caller"
	got := s.Requests()
	if len(got) != 1 || got[0].Messages[0].Content != "first" || got[0].Tools[0].Name != "search" {
		t.Errorf("recorded %+v", got)
	}
	if s.Remaining() != 1 {
		t.Errorf("Remaining = %d, want 1", s.Remaining())
	}
}

func TestScriptedConcurrent(t *testing.T) {
	const n = 20
	s, err := NewScripted(strings.NewReader(strings.Repeat(`{"text": "x y z"}`+"\n", n)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for range n + 1 {
		wg.Go(func() {
			_, err := s.Generate(t.Context(), &llm.Request{}, func(llm.Delta) {})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	exhausted := 0
	for err := range errs {
		switch {
		case errors.Is(err, ErrScriptExhausted):
			exhausted++
		case err != nil:
			t.Error(err)
		}
	}
	if exhausted != 1 {
		t.Errorf("%d calls found the script exhausted, want 1", exhausted)
	}
}

func TestScriptedBadScript(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"invalid JSON", "{\"text\": \"ok\"}\n\n{\"text\": oops}\n", "script line 3:"},
		{"unknown field", `{"txt": "typo"}`, `script line 1: json: unknown field "txt"`},
		{"trailing data", `{"text": "a"} {"text": "b"}`, "script line 1: unexpected data"},
		{"not an object", `["text"]`, "script line 1:"},
		{"tool call without name", "# c\n" + `{"tool_calls": [{"arguments": {}}]}`, "script line 2: tool call 1 has no name"},
		{"bad arguments", `{"tool_calls": [{"name": "x", "arguments": "\u00"}]}`, "script line 1:"},
		{"empty", "# nothing\n\n", "has no responses"},
		{"line too long", `{"text": "` + strings.Repeat("a", maxScriptLine) + `"}`, "script line 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewScripted(strings.NewReader(tt.script))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte(`{"text": "hello"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScript(good)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Generate(t.Context(), &llm.Request{}, nil)
	if err != nil || resp.Message.Content != "hello" || resp.FinishReason != llm.FinishStop {
		t.Errorf("resp %+v, err %v", resp, err)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("\n\n{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl line 3") {
		t.Errorf("err = %v, want it to name the file and line 3", err)
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("loading a missing file succeeded")
	}
}

// TestScriptedMatch: responses kept for a prompt go to the requests that ask it, whatever order the requests come in.
func TestScriptedMatch(t *testing.T) {
	s, err := NewScripted(strings.NewReader(`{"text": "about cats", "match": "cats"}
{"text": "about dogs", "match": "dogs"}
{"text": "anything"}
{"text": "more about cats", "match": "cats"}
`))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(prompt string) string {
		t.Helper()
		resp, err := s.Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "cats and dogs"}, {Role: llm.RoleUser, Content: prompt}}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		return resp.Message.Content
	}
	for _, tc := range []struct{ prompt, want string }{
		{"Tell me about dogs.", "about dogs"},
		{"Tell me about cats.", "about cats"},
		{"Tell me about birds.", "anything"},
		{"Cats again: cats.", "more about cats"},
	} {
		if got := ask(tc.prompt); got != tc.want {
			t.Errorf("%q got %q, want %q", tc.prompt, got, tc.want)
		}
	}
	if _, err := s.Generate(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "dogs"}}}, nil); !errors.Is(err, ErrScriptExhausted) || s.Remaining() != 0 {
		t.Errorf("after the script: %v, %d left", err, s.Remaining())
	}
}
