package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/llm"
)

// Sampling says when the loop runs on the calling client's own model, through sampling/createMessage.
type Sampling int

const (
	// SamplingOff runs every call on the orchestrator's model.
	SamplingOff Sampling = iota
	// SamplingAlways runs every call on the caller's model; a caller whose client does not support sampling gets an
	// error result saying so.
	SamplingAlways
	// SamplingAuto runs a call on the caller's model when its client supports sampling, else on the orchestrator's
	// model: for an agent with no model configured.
	SamplingAuto
)

// samplingDefaultMaxTokens is the completion cap sent when the run sets none: sampling requires one.
const samplingDefaultMaxTokens = 4096

// samplingModel is an llm.Model that asks the MCP client's model through sampling/createMessage. With tools, the
// client must declare sampling with tools (tool use and tool results travel as content); without, only requests that
// offer no tools can be answered.
type samplingModel struct {
	caller caller
	tools  bool // the client declared sampling.tools
}

var _ llm.Model = (*samplingModel)(nil)

// errSamplingNoTools explains why a run with tools cannot use a client whose sampling has no tool support.
var errSamplingNoTools = errors.New("this agent runs on the calling client's model through MCP sampling, and the client does not support tools in sampling (sampling.tools); only runs without tools can work: pass every tool in disabled_tools, or configure a model provider for the agent")

// samplingFor returns the model for a call, asking through c, or an error explaining why the caller's model cannot be
// used. It is nil when the orchestrator's model is to be used.
func samplingFor(mode Sampling, session *mcp.ServerSession, c caller) (llm.Model, error) {
	if mode == SamplingOff || session == nil {
		return nil, nil
	}
	var caps *mcp.SamplingCapabilities
	if p := session.InitializeParams(); p != nil && p.Capabilities != nil {
		caps = p.Capabilities.Sampling
	}
	switch {
	case caps != nil:
		return &samplingModel{caller: c, tools: caps.Tools != nil}, nil
	case mode == SamplingAlways:
		return nil, errors.New("this agent runs on the calling client's model through MCP sampling, and this client does not support sampling: use a client that does, or configure a model provider for the agent")
	}
	return nil, nil
}

func (m *samplingModel) Generate(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = samplingDefaultMaxTokens
	}
	var temperature float64
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	system, msgs := splitSystem(req.Messages)
	var resp *llm.Response
	if m.tools {
		params := &mcp.CreateMessageWithToolsParams{SystemPrompt: system, MaxTokens: maxTokens, Temperature: temperature}
		params.Messages = toolMessages(msgs)
		params.Tools, params.ToolChoice = samplingTools(req)
		res, err := m.caller.CreateMessageWithTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("sampling: %w", err)
		}
		resp = fromToolsResult(res)
	} else {
		if len(req.Tools) > 0 && req.ToolChoice.Mode != llm.ToolChoiceNone || hasToolTraffic(msgs) {
			return nil, errSamplingNoTools
		}
		params := &mcp.CreateMessageParams{SystemPrompt: system, MaxTokens: maxTokens, Temperature: temperature}
		for _, msg := range msgs {
			params.Messages = append(params.Messages, &mcp.SamplingMessage{Role: mcp.Role(msg.Role), Content: &mcp.TextContent{Text: msg.Content}})
		}
		res, err := m.caller.CreateMessage(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("sampling: %w", err)
		}
		text := ""
		if t, ok := res.Content.(*mcp.TextContent); ok {
			text = t.Text
		}
		resp = &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, Model: res.Model, FinishReason: finishReason(res.StopReason)}
	}
	resp.Usage.Requests = 1 // the client reports no token counts
	if onDelta != nil && resp.Message.Content != "" {
		onDelta(llm.Delta{Text: resp.Message.Content})
	}
	return resp, nil
}

// splitSystem takes the system messages out, as sampling has a system prompt of its own.
func splitSystem(msgs []llm.Message) (string, []llm.Message) {
	var system []string
	var rest []llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			system = append(system, m.Content)
		} else {
			rest = append(rest, m)
		}
	}
	return strings.Join(system, "\n\n"), rest
}

func hasToolTraffic(msgs []llm.Message) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleTool || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// toolMessages converts the conversation into sampling messages with tool use: an assistant message carries its text
// and tool_use content, and the tool messages that follow become one user message of tool_result content.
func toolMessages(msgs []llm.Message) []*mcp.SamplingMessageV2 {
	var out []*mcp.SamplingMessageV2
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			result := &mcp.ToolResultContent{ToolUseID: m.ToolCallID, Content: []mcp.Content{&mcp.TextContent{Text: m.Content}}, IsError: strings.HasPrefix(m.Content, "Error: ")}
			if n := len(out); n > 0 && out[n-1].Role == "user" && isToolResults(out[n-1]) {
				out[n-1].Content = append(out[n-1].Content, result)
			} else {
				out = append(out, &mcp.SamplingMessageV2{Role: "user", Content: []mcp.Content{result}})
			}
		case llm.RoleAssistant:
			msg := &mcp.SamplingMessageV2{Role: "assistant"}
			if m.Content != "" {
				msg.Content = append(msg.Content, &mcp.TextContent{Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				var input map[string]any
				if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil {
					input = map[string]any{} // the model's malformed arguments were answered with an error already
				}
				msg.Content = append(msg.Content, &mcp.ToolUseContent{ID: c.ID, Name: c.Name, Input: input})
			}
			out = append(out, msg)
		default:
			out = append(out, &mcp.SamplingMessageV2{Role: mcp.Role(m.Role), Content: []mcp.Content{&mcp.TextContent{Text: m.Content}}})
		}
	}
	return out
}

func isToolResults(m *mcp.SamplingMessageV2) bool {
	for _, c := range m.Content {
		if _, ok := c.(*mcp.ToolResultContent); !ok {
			return false
		}
	}
	return len(m.Content) > 0
}

// samplingTools converts the offered tools and the tool choice. A named choice offers only that tool, required.
func samplingTools(req *llm.Request) ([]*mcp.Tool, *mcp.ToolChoice) {
	if len(req.Tools) == 0 || req.ToolChoice.Mode == llm.ToolChoiceNone {
		return nil, nil
	}
	var tools []*mcp.Tool
	for _, t := range req.Tools {
		if req.ToolChoice.Mode == llm.ToolChoiceFunction && t.Name != req.ToolChoice.Name {
			continue
		}
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(tools, &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	mode := "auto"
	if req.ToolChoice.Mode == llm.ToolChoiceRequired || req.ToolChoice.Mode == llm.ToolChoiceFunction {
		mode = "required"
	}
	return tools, &mcp.ToolChoice{Mode: mode}
}

func fromToolsResult(res *mcp.CreateMessageWithToolsResult) *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ToolUseContent:
			args, err := json.Marshal(c.Input)
			if err != nil || c.Input == nil {
				args = []byte("{}")
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: string(args)})
		}
	}
	msg.Content = strings.Join(text, "\n")
	finish := finishReason(res.StopReason)
	if len(msg.ToolCalls) > 0 {
		finish = llm.FinishToolCalls
	}
	return &llm.Response{Message: msg, Model: res.Model, FinishReason: finish}
}

func finishReason(stop string) llm.FinishReason {
	switch stop {
	case "toolUse":
		return llm.FinishToolCalls
	case "maxTokens":
		return llm.FinishLength
	}
	return llm.FinishStop
}
