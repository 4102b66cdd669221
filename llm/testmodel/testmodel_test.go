package testmodel

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/llm"
)

var (
	timeTool = llm.ToolSpec{Name: "current_time", Parameters: json.RawMessage(
		`{"type":"object","properties":{"timezone":{"type":"string"}}}`)}
	searchTool = llm.ToolSpec{Name: "search", Parameters: json.RawMessage(
		`{"type":"object","required":["query","limit"],"properties":{"query":{"type":"string"},"limit":{"type":"integer","default":5}}}`)}
	noSchemaTool = llm.ToolSpec{Name: "ping"}
)

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: text} }

// generate calls m and checks the streamed deltas add up to the answer text.
func generate(t *testing.T, m llm.Model, req *llm.Request) *llm.Response {
	t.Helper()
	var streamed strings.Builder
	deltas := 0
	resp, err := m.Generate(t.Context(), req, func(d llm.Delta) {
		streamed.WriteString(d.Text)
		deltas++
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if streamed.String() != resp.Message.Content {
		t.Errorf("streamed %q, answered %q", streamed.String(), resp.Message.Content)
	}
	if resp.Message.Content != "" && len(strings.Fields(resp.Message.Content)) > 1 && deltas < 2 {
		t.Errorf("text of several words came in %d delta(s)", deltas)
	}
	if resp.Message.Role != llm.RoleAssistant {
		t.Errorf("role = %q", resp.Message.Role)
	}
	if resp.Usage.Requests != 1 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens ||
		resp.Usage.PromptTokens <= 0 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	return resp
}

func TestModelCallsTools(t *testing.T) {
	tests := []struct {
		name   string
		tools  []llm.ToolSpec
		choice llm.ToolChoice
		want   []llm.ToolCall
	}{
		{
			name:  "auto calls every tool",
			tools: []llm.ToolSpec{timeTool, searchTool, noSchemaTool},
			want: []llm.ToolCall{
				{ID: "call_1", Name: "current_time", Arguments: `{}`},
				{ID: "call_2", Name: "search", Arguments: `{"limit":5,"query":"a"}`},
				{ID: "call_3", Name: "ping", Arguments: `{}`},
			},
		},
		{
			name:   "required calls every tool",
			tools:  []llm.ToolSpec{timeTool, searchTool},
			choice: llm.ToolChoice{Mode: llm.ToolChoiceRequired},
			want: []llm.ToolCall{
				{ID: "call_1", Name: "current_time", Arguments: `{}`},
				{ID: "call_2", Name: "search", Arguments: `{"limit":5,"query":"a"}`},
			},
		},
		{
			name:   "named tool only",
			tools:  []llm.ToolSpec{timeTool, searchTool},
			choice: llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: "search"},
			want:   []llm.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"limit":5,"query":"a"}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &llm.Request{Messages: []llm.Message{user("what time is it?")}, Tools: tt.tools, ToolChoice: tt.choice}
			resp := generate(t, New(), req)
			if !reflect.DeepEqual(resp.Message.ToolCalls, tt.want) {
				t.Errorf("tool calls\n got %+v\nwant %+v", resp.Message.ToolCalls, tt.want)
			}
			if resp.FinishReason != llm.FinishToolCalls || resp.Message.Content != "" {
				t.Errorf("finish %q, text %q", resp.FinishReason, resp.Message.Content)
			}
		})
	}
}

// TestModelCallsOnlyCallableTools: with Options.Callable, the refused tools are not called and are reported, and
// with none left the model answers with text.
func TestModelCallsOnlyCallableTools(t *testing.T) {
	var mu sync.Mutex
	var reported [][]string
	m := NewWith(&Options{
		Callable: func(context.Context) func(string) bool {
			return func(name string) bool { return name != "search" && name != "ping" }
		},
		Skipped: func(names []string) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, names)
		},
	})
	req := &llm.Request{Messages: []llm.Message{user("what time is it?")}, Tools: []llm.ToolSpec{searchTool, timeTool, noSchemaTool}}
	resp := generate(t, m, req)
	want := []llm.ToolCall{{ID: "call_1", Name: "current_time", Arguments: `{}`}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) || resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("tool calls %+v (finish %q), want %+v", resp.Message.ToolCalls, resp.FinishReason, want)
	}
	if !reflect.DeepEqual(reported, [][]string{{"search", "ping"}}) {
		t.Errorf("skipped reported as %q, want [[search ping]]", reported)
	}

	req.Tools = []llm.ToolSpec{searchTool}
	resp = generate(t, m, req)
	if len(resp.Message.ToolCalls) != 0 || resp.FinishReason != llm.FinishStop || !strings.Contains(resp.Message.Content, "offline test model") {
		t.Errorf("with no callable tool: calls %+v, finish %q, text %q", resp.Message.ToolCalls, resp.FinishReason, resp.Message.Content)
	}
}

func TestModelNamedToolNotOffered(t *testing.T) {
	req := &llm.Request{
		Messages:   []llm.Message{user("hi")},
		Tools:      []llm.ToolSpec{timeTool},
		ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: "search"},
	}
	if _, err := New().Generate(t.Context(), req, nil); err == nil || !strings.Contains(err.Error(), `"search"`) {
		t.Errorf("err = %v, want one naming the tool", err)
	}
}

func TestModelAnswersWithoutTools(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"no tools", &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "be brief"}, user("Hello\nthere")}}},
		{"tool choice none", &llm.Request{Messages: []llm.Message{user("Hello there")}, Tools: []llm.ToolSpec{timeTool},
			ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}}},
		{"old tool results only", &llm.Request{Messages: []llm.Message{
			user("first"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "ping", Arguments: "{}"}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "pong"},
			{Role: llm.RoleAssistant, Content: "done"},
			user("Hello there"),
		}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := generate(t, New(), tt.req)
			text := resp.Message.Content
			for _, want := range []string{`"Hello there"`, "offline test model", "OPENAI_API_KEY", "[model] base_url"} {
				if !strings.Contains(text, want) {
					t.Errorf("answer %q lacks %q", text, want)
				}
			}
			if resp.FinishReason != llm.FinishStop || len(resp.Message.ToolCalls) != 0 {
				t.Errorf("finish %q, calls %v", resp.FinishReason, resp.Message.ToolCalls)
			}
		})
	}
}

func TestModelSummarisesToolResults(t *testing.T) {
	refs := `[{"source":1,"title":"Paris","uri":"https://p","content":"capital"},{"source": 3,"uri":"https://x"}]` +
		"\n\nTwo results found.\nMore text."
	long := strings.Repeat("word ", 100)
	req := &llm.Request{
		Messages: []llm.Message{
			user("old question"),
			{Role: llm.RoleTool, ToolCallID: "old", Name: "old_tool", Content: "stale"},
			user("tell me"),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "current_time"}, {ID: "call_2", Name: "search"}, {ID: "call_3", Name: "long"}}},
			// As the orchestrator sends a result: between <tool_output> tags.
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: llm.WrapToolOutput("7f3a9c", "current_time", "\n2026-11-22 11:19:12 JST (Asia/Tokyo)\nsecond line")},
			{Role: llm.RoleTool, ToolCallID: "call_2", Name: "search", Content: refs},
			{Role: llm.RoleTool, ToolCallID: "call_3", Content: long + `{"source":1}`},
		},
		Tools: []llm.ToolSpec{timeTool, searchTool},
	}
	resp := generate(t, New(), req)
	want := "Here is what the tools returned:\n" +
		"- current_time: 2026-11-22 11:19:12 JST (Asia/Tokyo)\n" +
		"- search: Paris; https://x — Two results found. [source 1] [source 3]\n" +
		"- long: " + strings.TrimSpace(strings.Repeat("word ", 40)) + "… [source 1]"
	if resp.Message.Content != want {
		t.Errorf("answer\n got %q\nwant %q", resp.Message.Content, want)
	}
	if resp.FinishReason != llm.FinishStop || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("finish %q, calls %v", resp.FinishReason, resp.Message.ToolCalls)
	}
}

func TestModelDeterministic(t *testing.T) {
	req := &llm.Request{Messages: []llm.Message{user("hi")}, Tools: []llm.ToolSpec{searchTool, timeTool}}
	a := generate(t, New(), req)
	b := generate(t, New(), req)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two calls differ:\n%+v\n%+v", a, b)
	}
}

func TestModelCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := New().Generate(ctx, &llm.Request{Messages: []llm.Message{user("hi")}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}

	// cancelled while streaming
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	deltas := 0
	_, err = New().Generate(ctx, &llm.Request{Messages: []llm.Message{user("hi")}}, func(llm.Delta) {
		deltas++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || deltas != 1 {
		t.Errorf("err = %v after %d deltas, want context.Canceled after 1", err, deltas)
	}
}

// TestModelCallsFinalToolAlone: the tool that gives the answer is left out of the round that calls the others, and
// called alone on the next request, with arguments made from its schema; alone at once when nothing else may be
// called; and not called when the tool choice names another tool.
func TestModelCallsFinalToolAlone(t *testing.T) {
	final := llm.ToolSpec{Name: "final_answer", Final: true, Parameters: json.RawMessage(
		`{"type":"object","required":["city"],"properties":{"city":{"type":"string","enum":["Lyon"]}}}`)}
	m := New()
	first := generate(t, m, &llm.Request{Messages: []llm.Message{user("where?")}, Tools: []llm.ToolSpec{timeTool, final}})
	if got := first.Message.ToolCalls; len(got) != 1 || got[0].Name != "current_time" {
		t.Fatalf("first round: %+v, want current_time alone", got)
	}
	msgs := []llm.Message{user("where?"), first.Message, {Role: llm.RoleTool, ToolCallID: "call_1", Content: "noon"}}
	second := generate(t, m, &llm.Request{Messages: msgs, Tools: []llm.ToolSpec{timeTool, final}})
	want := []llm.ToolCall{{ID: "call_2", Name: "final_answer", Arguments: `{"city":"Lyon"}`}}
	if !reflect.DeepEqual(second.Message.ToolCalls, want) || second.FinishReason != llm.FinishToolCalls {
		t.Errorf("second round: %+v (%s), want %+v", second.Message.ToolCalls, second.FinishReason, want)
	}

	guarded := NewWith(&Options{Callable: func(context.Context) func(string) bool {
		return func(name string) bool { return name == "final_answer" }
	}})
	at := generate(t, guarded, &llm.Request{Messages: []llm.Message{user("where?")}, Tools: []llm.ToolSpec{timeTool, final}})
	if got := at.Message.ToolCalls; len(got) != 1 || got[0].Name != "final_answer" {
		t.Errorf("with only the answer callable: %+v, want final_answer alone", got)
	}

	named := generate(t, m, &llm.Request{Messages: msgs, Tools: []llm.ToolSpec{timeTool, final},
		ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: "current_time"}})
	if len(named.Message.ToolCalls) != 0 {
		t.Errorf("a tool choice naming another tool: %+v, want no call of final_answer", named.Message.ToolCalls)
	}
}
