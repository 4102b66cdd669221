package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// TestAgentOutputBytes pins the exact bytes of the agent tool's structured content: callers (other agenthost
// processes among them) read it back, so its shape must not drift.
func TestAgentOutputBytes(t *testing.T) {
	full := &host.Answer{
		Text:   "The answer is 42 [1].",
		Output: json.RawMessage(`{"n":42}`),
		References: []host.NumberedReference{
			{Number: 1, Title: "Go spec", URI: "https://go.dev/ref/spec"},
			{Number: 2, Title: "notes without a link"},
		},
		ConversationID: "conv-1",
		StoppedBy:      host.StopAnswered,
		Usage:          llm.Usage{Requests: 2, PromptTokens: 30, CompletionTokens: 12, TotalTokens: 42},
		Iterations:     []host.IterationInfo{{Iteration: 1}, {Iteration: 2}},
		ToolCalls: []host.ToolCallInfo{
			{Name: "search", Source: "docs", OK: true, Duration: 1500 * time.Microsecond, Bytes: 10},
			{Name: "fetch", OK: false, Duration: 2 * time.Second, Error: "not found"},
		},
		Checks: []host.CheckResult{{Name: "cites", Passed: true}, {Name: "length", Passed: false, Detail: "too long"}},
	}
	empty := &host.Answer{ConversationID: "conv-2", StoppedBy: host.StopError}
	tests := []struct {
		name string
		ans  *host.Answer
		want string
	}{
		{"full", full, `{"answer":"The answer is 42 [1].","output":{"n":42},` +
			`"references":[{"number":1,"title":"Go spec","uri":"https://go.dev/ref/spec"},{"number":2,"title":"notes without a link"}],` +
			`"conversation_id":"conv-1","stopped_by":"answered","iterations":2,"usage":{"requests":2,"prompt_tokens":30,"completion_tokens":12,"total_tokens":42},` +
			`"tool_calls":[{"name":"search","ok":true,"duration_ms":1.5},{"name":"fetch","ok":false,"duration_ms":2000}],` +
			`"checks":[{"name":"cites","passed":true},{"name":"length","passed":false,"detail":"too long"}]}`},
		{"empty", empty, `{"answer":"","references":[],"conversation_id":"conv-2","stopped_by":"error","iterations":0,` +
			`"usage":{"requests":0,"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"tool_calls":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(output(tt.ans))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("structured content:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestAgentOutputSchemaBytes pins the agent tool's declared output schema as it goes on the wire (compacted), the
// stop reasons' enum included.
func TestAgentOutputSchemaBytes(t *testing.T) {
	const want = `{"type":"object","properties":{"answer":{"type":"string"},` +
		`"output":{"description":"The structured answer, when the call gave an output_schema."},` +
		`"references":{"type":"array","items":{"type":"object","properties":{"number":{"type":"integer"},"title":{"type":"string"},"uri":{"type":"string"}},"required":["number"]}},` +
		`"conversation_id":{"type":"string"},` +
		`"stopped_by":{"type":"string","enum":["answered","tool_took_control","iteration_limit","usage_limit","cancelled","no_output","invalid_output","error"]},` +
		`"iterations":{"type":"integer"},` +
		`"usage":{"type":"object","properties":{"requests":{"type":"integer"},"prompt_tokens":{"type":"integer"},"completion_tokens":{"type":"integer"},"total_tokens":{"type":"integer"}}},` +
		`"tool_calls":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"ok":{"type":"boolean"},"duration_ms":{"type":"number"}},"required":["name","ok"]}},` +
		`"checks":{"type":"array","description":"The evaluation checks of the answer.","items":{"type":"object","properties":{"name":{"type":"string"},"passed":{"type":"boolean"},"detail":{"type":"string"}},"required":["name","passed"]}}},` +
		`"required":["answer","references","conversation_id","stopped_by","iterations","usage","tool_calls"]}`
	var got bytes.Buffer
	if err := json.Compact(&got, agentOutputSchema(nil)); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("output schema:\n got %s\nwant %s", got.String(), want)
	}
}
