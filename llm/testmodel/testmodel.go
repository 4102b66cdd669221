// Package testmodel provides deterministic offline implementations of llm.Model: Model, a stand-in that calls
// every offered tool and then summarises what they returned (for demos and tests without an API key), and
// Scripted, which replays responses from a JSON-lines script (for tests that need exact model behaviour).
//
// testmodel imports package llm and the standard library only.
package testmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/agenthost/llm"
)

// Model is the offline test model. It is stateless and safe for concurrent use.
//
// On a request with no tool results after the last user message, when tools are offered and the tool choice is
// not "none", it calls every offered tool once (only the named one with a function tool choice), with arguments
// generated from the tool's input schema: a value for each required property, taken from const, enum, examples or
// default, or else a simple value of the property's type. Call ids are "call_1", "call_2", ... in offer order.
// The tool that gives the answer (llm.ToolSpec.Final) is left out of that round, and called alone, with arguments
// made the same way, on the next request, or on this one when it is the only tool the model may call.
//
// Otherwise it answers with text: one line per tool result after the last user message ("- name: first line"),
// citing as "[source N]" every source number the result shows (a JSON "source": N field, as the orchestrator
// writes references); with no tool results, a fixed sentence that echoes the prompt and says how to configure a
// real model. The text is streamed word by word through onDelta.
//
// Usage is an estimate of four characters per token, deterministic for a given request.
//
// Options.Callable narrows the tools it calls: the others are left alone as if they were not offered, and when it
// may call none of them it answers with text.
type Model struct{ opts Options }

var _ llm.Model = (*Model)(nil)

// Options tune the offline test model. The zero value calls every offered tool.
type Options struct {
	// Callable is asked once per request and returns whether the model may call a named tool; nil means every
	// tool may be called.
	Callable func(ctx context.Context) func(name string) bool
	// Skipped, when set, is given the names of the offered tools a request left alone, in offer order, each time
	// there are some. It must be safe for concurrent use.
	Skipped func(names []string)
}

// New returns the offline test model, which calls every offered tool.
func New() *Model { return &Model{} }

// NewWith returns the offline test model tuned by opts; nil means New.
func NewWith(opts *Options) *Model {
	if opts == nil {
		return New()
	}
	return &Model{opts: *opts}
}

// modelName is what Response.Model reports.
const modelName = "testmodel"

// summaryLen bounds the excerpt of each tool result in the summary, in characters.
const summaryLen = 200

// Generate implements llm.Model.
func (m *Model) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("testmodel: %w", err)
	}
	if req == nil {
		return nil, fmt.Errorf("testmodel: nil request")
	}
	lastUser := -1
	for i, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			lastUser = i
		}
	}
	var results []llm.Message
	for _, msg := range req.Messages[lastUser+1:] {
		if msg.Role == llm.RoleTool {
			results = append(results, msg)
		}
	}

	if len(req.Tools) > 0 && req.ToolChoice.Mode != llm.ToolChoiceNone {
		var calls []llm.ToolCall
		var err error
		if len(results) == 0 {
			calls, err = m.toolCalls(ctx, req)
		} else {
			calls = finalCall(req, len(results))
		}
		if err != nil {
			return nil, err
		}
		if len(calls) > 0 {
			return &llm.Response{
				Message:      llm.Message{Role: llm.RoleAssistant, ToolCalls: calls},
				Usage:        estimateUsage(req, "", calls),
				FinishReason: llm.FinishToolCalls,
				Model:        modelName,
			}, nil
		}
	}

	var text string
	if len(results) > 0 {
		text = summary(req.Messages, results)
	} else {
		prompt := ""
		if lastUser >= 0 {
			prompt = req.Messages[lastUser].Content
		}
		text = fmt.Sprintf("You asked: %q. This is the offline test model, which does not really answer: to use a "+
			"real model, set OPENAI_API_KEY or configure [model] base_url in agent.toml.", excerpt(prompt, summaryLen))
	}
	if err := stream(ctx, text, onDelta); err != nil {
		return nil, err
	}
	return &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: text},
		Usage:        estimateUsage(req, text, nil),
		FinishReason: llm.FinishStop,
		Model:        modelName,
	}, nil
}

// toolCalls calls every offered tool, or the one the tool choice names, except those Options.Callable refuses.
func (m *Model) toolCalls(ctx context.Context, req *llm.Request) ([]llm.ToolCall, error) {
	tools := req.Tools
	if req.ToolChoice.Mode == llm.ToolChoiceFunction {
		tools = nil
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Name {
				tools = []llm.ToolSpec{t}
				break
			}
		}
		if tools == nil {
			return nil, fmt.Errorf("testmodel: tool choice names %q, which is not among the offered tools",
				req.ToolChoice.Name)
		}
	}
	calls := make([]llm.ToolCall, 0, len(tools))
	var skipped []string
	callable := func(string) bool { return true }
	if m.opts.Callable != nil && len(tools) > 0 {
		callable = m.opts.Callable(ctx)
	}
	for _, t := range tools {
		if t.Final && len(tools) > 1 {
			continue // called alone, once the others are done
		}
		if !callable(t.Name) {
			skipped = append(skipped, t.Name)
			continue
		}
		calls = append(calls, llm.ToolCall{
			ID:        "call_" + strconv.Itoa(len(calls)+1),
			Name:      t.Name,
			Arguments: string(exampleArguments(t.Parameters)),
		})
	}
	if len(skipped) > 0 && m.opts.Skipped != nil {
		m.opts.Skipped(skipped)
	}
	if len(calls) == 0 {
		return finalCall(req, 0), nil // nothing else it may call: the answer at once
	}
	return calls, nil
}

// finalCall calls the tool that gives the answer, alone, when one is offered (and the tool choice names no other).
// Its id follows those of the done calls, whose results there are.
func finalCall(req *llm.Request, done int) []llm.ToolCall {
	for _, t := range req.Tools {
		if t.Final && (req.ToolChoice.Mode != llm.ToolChoiceFunction || req.ToolChoice.Name == t.Name) {
			return []llm.ToolCall{{ID: "call_" + strconv.Itoa(done+1), Name: t.Name, Arguments: string(exampleArguments(t.Parameters))}}
		}
	}
	return nil
}

// sourceField finds the source numbers the orchestrator writes into referenced results.
var sourceField = regexp.MustCompile(`"source"\s*:\s*([0-9]{1,9})\b`)

// summary writes one line per tool result, citing its sources.
func summary(msgs []llm.Message, results []llm.Message) string {
	var b strings.Builder
	b.WriteString("Here is what the tools returned:")
	for _, r := range results {
		b.WriteString("\n- ")
		b.WriteString(toolName(msgs, r))
		b.WriteString(": ")
		b.WriteString(resultExcerpt(undelimited(r.Content)))
		seen := map[string]bool{}
		for _, m := range sourceField.FindAllStringSubmatch(r.Content, -1) {
			n := strings.TrimLeft(m[1], "0")
			if n == "" || seen[n] {
				continue
			}
			seen[n] = true
			b.WriteString(" [source " + n + "]")
		}
	}
	return b.String()
}

// undelimited is a tool result without the tags the orchestrator puts around it (llm.WrapToolOutput).
func undelimited(content string) string {
	inner, _ := llm.UnwrapToolOutput(content)
	return inner
}

// toolName is the name of the tool that produced a tool message: its Name, or else the name in the assistant's
// call with the same id.
func toolName(msgs []llm.Message, result llm.Message) string {
	if result.Name != "" {
		return result.Name
	}
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			if c.ID == result.ToolCallID && c.Name != "" {
				return c.Name
			}
		}
	}
	return "tool"
}

// resultExcerpt is a short, one-line view of a tool result. A leading JSON array of references is shown by its
// titles, followed by the first line of the text after it.
func resultExcerpt(content string) string {
	content = strings.TrimSpace(content)
	if strings.HasPrefix(content, "[") {
		dec := json.NewDecoder(strings.NewReader(content))
		var refs []struct {
			Source *int   `json:"source"`
			Title  string `json:"title"`
			URI    string `json:"uri"`
		}
		if err := dec.Decode(&refs); err == nil && len(refs) > 0 && refs[0].Source != nil {
			var names []string
			for _, r := range refs {
				switch {
				case r.Title != "":
					names = append(names, r.Title)
				case r.URI != "":
					names = append(names, r.URI)
				}
			}
			s := strings.Join(names, "; ")
			if rest := firstLine(content[dec.InputOffset():]); rest != "" {
				s += " — " + rest
			}
			if s != "" {
				return excerpt(s, summaryLen)
			}
		}
	}
	if line := firstLine(content); line != "" {
		return excerpt(line, summaryLen)
	}
	return "(empty)"
}

func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// excerpt flattens s to one line and cuts it to at most n characters.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// stream sends text through onDelta one word (with the space after it) at a time.
func stream(ctx context.Context, text string, onDelta func(llm.Delta)) error {
	if onDelta == nil {
		return nil
	}
	for text != "" {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("testmodel: %w", err)
		}
		// a piece is a word and the spaces after it
		i := strings.IndexFunc(text, unicode.IsSpace)
		if i < 0 {
			i = len(text)
		} else if j := strings.IndexFunc(text[i:], notSpace); j < 0 {
			i = len(text)
		} else {
			i += j
		}
		onDelta(llm.Delta{Text: text[:i]})
		text = text[i:]
	}
	return nil
}

func notSpace(r rune) bool { return !unicode.IsSpace(r) }

// estimateUsage counts four characters per token: the prompt is every message and tool definition, the completion
// the text and tool calls produced.
func estimateUsage(req *llm.Request, text string, calls []llm.ToolCall) llm.Usage {
	prompt := 0
	for _, msg := range req.Messages {
		prompt += len(msg.Role) + len(msg.Content)
		for _, c := range msg.ToolCalls {
			prompt += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		prompt += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	completion := len(text)
	for _, c := range calls {
		completion += len(c.Name) + len(c.Arguments)
	}
	u := llm.Usage{
		Requests:         1,
		PromptTokens:     int64((prompt + 3) / 4),
		CompletionTokens: int64((completion + 3) / 4),
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
