package openai

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/llm"
)

// TestAccumulator feeds raw chunks in shapes that OpenAI-compatible servers really send, beyond what the fake
// server produces.
func TestAccumulator(t *testing.T) {
	tests := []struct {
		name       string
		chunks     []string // the "choices" and other members of each chunk
		wantText   string
		wantCalls  []llm.ToolCall
		wantFinish llm.FinishReason
		wantUsage  llm.Usage
	}{
		{
			name: "calls arrive out of index order",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"second","arguments":"{\"y\""}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"first","arguments":""}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]`,
				`"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`,
			},
			wantCalls:  []llm.ToolCall{{ID: "a", Name: "first", Arguments: "{}"}, {ID: "b", Name: "second", Arguments: `{"y":2}`}},
			wantFinish: llm.FinishToolCalls,
			wantUsage:  llm.Usage{Requests: 1},
		},
		{
			name: "every parallel call numbered 0, told apart by id",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{\"n\":1}"}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"y","type":"function","function":{"name":"g","arguments":"{\"n\":"}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]}}]`,
				`"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`,
			},
			wantCalls:  []llm.ToolCall{{ID: "x", Name: "f", Arguments: `{"n":1}`}, {ID: "y", Name: "g", Arguments: `{"n":2}`}},
			wantFinish: llm.FinishToolCalls,
			wantUsage:  llm.Usage{Requests: 1},
		},
		{
			name: "id and name repeated on every fragment",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]`,
				`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":":1}"}}]}}]`,
				`"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`,
			},
			wantCalls:  []llm.ToolCall{{ID: "x", Name: "f", Arguments: `{"a":1}`}},
			wantFinish: llm.FinishToolCalls,
			wantUsage:  llm.Usage{Requests: 1},
		},
		{
			name: "no ids, finish reason stop, usage with the finish reason",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}},{"index":1,"function":{"name":"g","arguments":"{}"}}]}}]`,
				`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}`,
			},
			wantCalls:  []llm.ToolCall{{ID: "call_0", Name: "f", Arguments: "{}"}, {ID: "call_1", Name: "g", Arguments: "{}"}},
			wantFinish: llm.FinishToolCalls,
			wantUsage:  llm.Usage{Requests: 1, PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7},
		},
		{
			name: "running usage on every chunk, other choices ignored, no finish reason",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"content":"He"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`,
				`"choices":[{"index":1,"delta":{"content":"ignored"}}],"usage":null`,
				`"choices":[{"index":0,"delta":{"content":"llo"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}`,
			},
			wantText:   "Hello",
			wantFinish: llm.FinishStop,
			wantUsage:  llm.Usage{Requests: 1, PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7},
		},
		{
			name: "refusal, length and an unknown reason",
			chunks: []string{
				`"choices":[{"index":0,"delta":{"refusal":"I can't."}}]`,
				`"choices":[{"index":0,"delta":{},"finish_reason":"eos_token"}]`,
			},
			wantText:   "I can't.",
			wantFinish: "eos_token",
			wantUsage:  llm.Usage{Requests: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acc := newAccumulator()
			var deltas strings.Builder
			for _, c := range tt.chunks {
				var chunk chunk
				if err := decodeChunk([]byte(`{"id":"x","object":"chat.completion.chunk","model":"m",`+c+`}`), &chunk); err != nil {
					t.Fatalf("chunk %s: %v", c, err)
				}
				acc.add(&chunk, func(d llm.Delta) { deltas.WriteString(d.Text) })
			}
			res := acc.response()
			if res.Message.Content != tt.wantText || deltas.String() != tt.wantText {
				t.Errorf("text = %q, deltas = %q; want %q", res.Message.Content, deltas.String(), tt.wantText)
			}
			if !reflect.DeepEqual(res.Message.ToolCalls, tt.wantCalls) {
				t.Errorf("calls = %+v\nwant %+v", res.Message.ToolCalls, tt.wantCalls)
			}
			if res.FinishReason != tt.wantFinish {
				t.Errorf("finish = %q, want %q", res.FinishReason, tt.wantFinish)
			}
			if res.Usage != tt.wantUsage {
				t.Errorf("usage = %+v, want %+v", res.Usage, tt.wantUsage)
			}
			if res.Model != "m" || res.Message.Role != llm.RoleAssistant {
				t.Errorf("model %q role %q", res.Model, res.Message.Role)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		reason   string
		hasCalls bool
		want     llm.FinishReason
	}{
		{"", false, llm.FinishStop},
		{"", true, llm.FinishToolCalls},
		{"stop", false, llm.FinishStop},
		{"stop", true, llm.FinishToolCalls},
		{"tool_calls", true, llm.FinishToolCalls},
		{"function_call", true, llm.FinishToolCalls},
		{"length", false, llm.FinishLength},
		{"length", true, llm.FinishLength},
		{"content_filter", false, llm.FinishContentFilter},
		{"eos", false, "eos"},
	}
	for _, tt := range tests {
		if got := finishReason(tt.reason, tt.hasCalls); got != tt.want {
			t.Errorf("finishReason(%q, %v) = %q, want %q", tt.reason, tt.hasCalls, got, tt.want)
		}
	}
}
