package openai

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/llm"
)

// accumulator assembles a response from stream chunks.
type accumulator struct {
	chunks int
	text   strings.Builder
	calls  []*partialCall // in order of first appearance
	// latest maps a call index to the position in calls of the last call seen with that index.
	latest map[int64]int
	finish string
	usage  llm.Usage
	model  string
}

type partialCall struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

func newAccumulator() *accumulator {
	return &accumulator{latest: map[int64]int{}}
}

// add folds one chunk in and forwards its text to onDelta.
func (a *accumulator) add(c *chunk, onDelta func(llm.Delta)) {
	a.chunks++
	if c.Model != "" {
		a.model = c.Model
	}
	// Usage comes in a last chunk with no choices (OpenAI, vLLM), with the finish reason (some servers), or on
	// every chunk as a running total (others): the last one seen wins.
	if u := c.Usage; u != nil && (u.PromptTokens != 0 || u.CompletionTokens != 0 || u.TotalTokens != 0) {
		a.usage = llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if a.usage.TotalTokens == 0 {
			a.usage.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
	}
	for _, choice := range c.Choices {
		if choice.Index != 0 {
			continue // only one choice is ever asked for
		}
		// A refusal is the model's answer too; it arrives instead of content.
		if text := choice.Delta.Content + choice.Delta.Refusal; text != "" {
			a.text.WriteString(text)
			if onDelta != nil {
				onDelta(llm.Delta{Text: text})
			}
		}
		for i := range choice.Delta.ToolCalls {
			a.addCall(&choice.Delta.ToolCalls[i])
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
}

// addCall folds in a tool-call delta. Fragments are joined by index; a delta that brings a different id under
// an index already in use starts a new call, since some servers number every parallel call 0.
func (a *accumulator) addCall(tc *chunkToolCall) {
	pos, ok := a.latest[tc.Index]
	if !ok || (tc.ID != "" && a.calls[pos].id != "" && tc.ID != a.calls[pos].id) {
		a.calls = append(a.calls, &partialCall{index: tc.Index})
		pos = len(a.calls) - 1
		a.latest[tc.Index] = pos
	}
	call := a.calls[pos]
	if call.id == "" {
		call.id = tc.ID
	}
	// The name arrives whole in the first delta; servers that repeat it later must not double it.
	if call.name == "" {
		call.name = tc.Function.Name
	}
	call.args.WriteString(string(tc.Function.Arguments))
}

// response builds the final response; calls are ordered by index, then by arrival.
func (a *accumulator) response() *llm.Response {
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *partialCall) int { return cmp.Compare(x.index, y.index) })
	res := &llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: a.text.String()},
		Usage:   a.usage,
		Model:   a.model,
	}
	res.Usage.Requests = 1
	for i, c := range calls {
		id := c.id
		if id == "" {
			// Some servers send no id; the tool message that answers the call still needs one.
			id = fmt.Sprintf("call_%d", i)
		}
		res.Message.ToolCalls = append(res.Message.ToolCalls, llm.ToolCall{ID: id, Name: c.name, Arguments: c.args.String()})
	}
	res.FinishReason = finishReason(a.finish, len(calls) > 0)
	return res
}

// finishReason maps the server's finish reason. Servers that say "stop" (or nothing) after tool calls are
// corrected to tool_calls; unknown reasons pass through as they are.
func finishReason(reason string, hasCalls bool) llm.FinishReason {
	switch reason {
	case "", "stop":
		if hasCalls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	case "length":
		return llm.FinishLength
	case "content_filter":
		return llm.FinishContentFilter
	default:
		return llm.FinishReason(reason)
	}
}
