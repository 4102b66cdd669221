package testmodel

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/llm"
)

// Rounds is an in-process model with no latency, for benchmarks: it calls tools for a number of rounds, then
// answers with a text that cites sources 1 and 2, streamed in 8-byte deltas. Its responses are made once, so a
// benchmark measures what calls it, not the model. It is safe for concurrent use.
type Rounds struct {
	rounds []*llm.Response
	answer *llm.Response
	deltas []llm.Delta
}

// NewRounds returns a Rounds model that makes calls tool calls per round for rounds rounds, naming the tools
// tool_00 to tool_<tools-1> in turn (each with arguments {"query": ..., "limit": ...}).
func NewRounds(rounds, calls, tools int) *Rounds {
	usage := llm.Usage{Requests: 1, PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050}
	m := &Rounds{}
	for r := range rounds {
		tc := make([]llm.ToolCall, calls)
		for i := range tc {
			tc[i] = llm.ToolCall{ID: fmt.Sprintf("call_%d_%d", r, i), Name: fmt.Sprintf("tool_%02d", (r*calls+i)%tools), Arguments: fmt.Sprintf(`{"query":"q%d","limit":%d}`, i, r)}
		}
		m.rounds = append(m.rounds, &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: tc}, Usage: usage, FinishReason: llm.FinishToolCalls})
	}
	text := "All done [source 1], see also [source 2]."
	m.answer = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, Usage: usage, FinishReason: llm.FinishStop}
	for i := 0; i < len(text); i += 8 {
		m.deltas = append(m.deltas, llm.Delta{Text: text[i:min(i+8, len(text))]})
	}
	return m
}

// Generate implements llm.Model: the response of the round that the request's tool calls so far reach.
func (m *Rounds) Generate(_ context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	round := 0
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleAssistant && len(msg.ToolCalls) > 0 {
			round++
		}
	}
	if round < len(m.rounds) {
		return m.rounds[round], nil
	}
	if onDelta != nil {
		for _, d := range m.deltas {
			onDelta(d)
		}
	}
	return m.answer, nil
}
