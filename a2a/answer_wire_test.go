package a2a

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// TestAnswerPartsBytes pins the exact bytes of an answer's parts and of its artifact's metadata: the answer's details
// are read back by other agenthost processes and by whatever else calls the agent, so their shape must not drift.
// They are in the metadata, not in a part, so that a client that shows every part shows the text clean.
func TestAnswerPartsBytes(t *testing.T) {
	full := &host.Answer{
		Text:   "ignored: the text travels in a part of its own",
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
			{Name: "fetch", OK: false, Duration: 2 * time.Second, Error: strings.Repeat("x", 499) + "é and more"},
		},
		Checks: []host.CheckResult{{Name: "cites", Passed: true}, {Name: "length", Passed: false, Detail: "too long"}},
	}
	empty := &host.Answer{ConversationID: "conv-2", StoppedBy: host.StopError}
	fullDetails := `{"output":{"n":42},"references":[{"number":1,"title":"Go spec","uri":"https://go.dev/ref/spec"},{"number":2,"title":"notes without a link"}],` +
		`"conversation_id":"conv-1","stopped_by":"answered","usage":{"requests":2,"prompt_tokens":30,"completion_tokens":12,"total_tokens":42},` +
		`"tool_calls":[{"name":"search","source":"docs","ok":true,"duration_ms":1.5},{"name":"fetch","ok":false,"duration_ms":2000,"error":"` + strings.Repeat("x", 499) + `…"}],` +
		`"checks":[{"name":"cites","passed":true},{"name":"length","passed":false,"detail":"too long"}]}`
	tests := []struct {
		name      string
		ans       *host.Answer
		parts, md string
	}{
		{"full", full, `[{"data":{"n":42},"mediaType":"application/json"},{"url":"https://go.dev/ref/spec","filename":"Go spec"}]`,
			`{"application/vnd.agenthost.answer+json":` + fullDetails + `}`},
		{"empty", empty, `null`, `{"application/vnd.agenthost.answer+json":{"references":[],"conversation_id":"conv-2","stopped_by":"error",` +
			`"usage":{"requests":0,"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"tool_calls":[]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(referenceParts(tt.ans))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.parts {
				t.Errorf("parts:\n got %s\nwant %s", got, tt.parts)
			}
			if md := answerMetadata(tt.ans); string(md) != tt.md {
				t.Errorf("metadata:\n got %s\nwant %s", md, tt.md)
			}
			if d := answerDetails(answerMetadata(tt.ans)); !json.Valid(d) || !strings.Contains(tt.md, string(d)) {
				t.Errorf("answerDetails read back %s", d)
			}
		})
	}
}
