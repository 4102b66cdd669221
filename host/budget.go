package host

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/agenthost/agenthost/llm"
)

// Token counts are estimated from text length: about four characters a token for English and JSON, plus a few
// tokens of framing per message. An estimate is enough to stay under a budget with the margin the caller keeps.
const (
	charsPerToken     = 4
	tokensPerMessage  = 4
	minResultChars    = 1000 // a shortened tool result keeps at least this much
	completionReserve = 4096 // kept free for the answer when no MaxTokens is set
)

// toolOutputIDShape is as long as an id of NewToolOutputID, to estimate the tags around a tool result.
const toolOutputIDShape = "0123456789abcdef"

func estimateTokens(m llm.Message) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + len(c.ID)
	}
	if m.Role == llm.RoleTool { // the tags delimitToolOutput puts around it, with an id of NewToolOutputID's length
		n += len(llm.WrapToolOutput(toolOutputIDShape, m.Name, ""))
	}
	return n/charsPerToken + tokensPerMessage
}

// budget is how many tokens the messages may take: the context less the tool definitions and room for the answer.
func (r *run) budget(tools []llm.ToolSpec) int {
	n := r.o.opts.ContextTokens
	reserve := r.o.opts.MaxTokens
	if reserve <= 0 {
		reserve = min(completionReserve, n/4)
	}
	n -= reserve
	for _, t := range tools {
		n -= (len(t.Name)+len(t.Description)+len(t.Parameters))/charsPerToken + tokensPerMessage
	}
	return n
}

// fitBudget composes the messages of a model call: the system prompt, the conversation's past messages and this run's
// messages, kept under budget tokens. Oldest whole turns of the past go first (a turn starts at a user message, so
// tool calls are never separated from their results); then the largest tool results are shortened, to no less than
// minResultChars each, with the cut marked. This run's messages are never dropped. It returns the messages, how many
// past messages were dropped and the ids of the tool calls whose results were shortened. The inputs are not
// modified.
func fitBudget(system string, past, current []llm.Message, budget int) (msgs []llm.Message, dropped int, cut []string) {
	sys := llm.Message{Role: llm.RoleSystem, Content: system}
	total := estimateTokens(sys)
	for _, m := range past {
		total += estimateTokens(m)
	}
	for _, m := range current {
		total += estimateTokens(m)
	}
	for total > budget && dropped < len(past) {
		// Drop the oldest turn: up to the next user message.
		end := dropped + 1
		for end < len(past) && past[end].Role != llm.RoleUser {
			end++
		}
		for _, m := range past[dropped:end] {
			total -= estimateTokens(m)
		}
		dropped = end
	}
	msgs = make([]llm.Message, 0, 1+len(past)-dropped+len(current))
	msgs = append(msgs, sys)
	msgs = append(msgs, past[dropped:]...)
	msgs = append(msgs, current...)
	for total > budget {
		// Shorten the largest tool result that can still be shortened.
		largest := -1
		for i, m := range msgs {
			if m.Role == llm.RoleTool && len(m.Content) > minResultChars && (largest < 0 || len(m.Content) > len(msgs[largest].Content)) {
				largest = i
			}
		}
		if largest < 0 {
			break // nothing left to shorten: the model will say if it is too long
		}
		m := msgs[largest]
		excess := (total - budget) * charsPerToken
		keep := max(minResultChars, len(m.Content)-excess-100)
		for keep > 0 && !utf8.RuneStart(m.Content[keep]) {
			keep-- // never split a character
		}
		removed := len(m.Content) - keep
		m.Content = m.Content[:keep] + fmt.Sprintf("\n[... %d characters cut to fit the context budget]", removed)
		total -= removed / charsPerToken
		msgs[largest] = m
		if !slices.Contains(cut, m.ToolCallID) {
			cut = append(cut, m.ToolCallID)
		}
	}
	return msgs, dropped, cut
}
