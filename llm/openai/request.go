package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/llm"
)

// The request body, written with encoding/json from these plain types: only the fields below are ever sent.
type (
	requestBody struct {
		Model               string          `json:"model"`
		Messages            []message       `json:"messages"`
		Tools               []tool          `json:"tools,omitempty"`
		ToolChoice          any             `json:"tool_choice,omitempty"` // a mode string or a namedToolChoice
		Temperature         *float64        `json:"temperature,omitempty"`
		MaxTokens           int             `json:"max_tokens,omitempty"`
		MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
		ResponseFormat      *responseFormat `json:"response_format,omitempty"`
		Stream              bool            `json:"stream"`
		StreamOptions       streamOptions   `json:"stream_options"`
	}
	responseFormat struct {
		Type       string     `json:"type"`
		JSONSchema jsonSchema `json:"json_schema"`
	}
	jsonSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	message struct {
		Role       llm.Role   `json:"role"`
		Content    *string    `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function functionCall `json:"function"`
	}
	functionCall struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	tool struct {
		Type     string      `json:"type"`
		Function functionDef `json:"function"`
	}
	functionDef struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	namedToolChoice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
)

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object"}`)

// body converts req into the request body.
func (m *Model) body(req *llm.Request) ([]byte, error) {
	b := requestBody{
		Model:         m.name,
		Messages:      make([]message, 0, len(req.Messages)),
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
		Temperature:   req.Temperature,
	}
	for i, msg := range req.Messages {
		mp, err := toMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		b.Messages = append(b.Messages, mp)
	}
	for _, spec := range req.Tools {
		t, err := toTool(spec)
		if err != nil {
			return nil, err
		}
		b.Tools = append(b.Tools, t)
	}
	if len(req.Tools) > 0 {
		choice, err := toToolChoice(req.ToolChoice, req.Tools)
		if err != nil {
			return nil, err
		}
		b.ToolChoice = choice
	}
	if o := req.Output; o != nil {
		b.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: jsonSchema{Name: o.Name, Schema: o.Schema, Strict: o.Strict}}
	}
	if req.MaxTokens > 0 {
		if m.maxCompletionTokens {
			b.MaxCompletionTokens = req.MaxTokens
		} else {
			b.MaxTokens = req.MaxTokens
		}
	}
	body, err := json.Marshal(&b)
	if err != nil {
		return nil, err
	}
	if len(req.Extra) == 0 {
		return body, nil
	}
	return mergeExtra(body, req.Extra)
}

// mergeExtra sets the extra fields on body, overriding the fields already there, except "stream": the response
// must be streamed.
func mergeExtra(body []byte, extra map[string]any) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if k == "" {
			return nil, fmt.Errorf("extra field with an empty name")
		}
		if k == "stream" {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("extra field %q: %w", k, err)
		}
		fields[k] = raw
	}
	return json.Marshal(fields)
}

func toMessage(msg llm.Message) (message, error) {
	switch msg.Role {
	case llm.RoleSystem, llm.RoleUser:
		return message{Role: msg.Role, Content: &msg.Content}, nil
	case llm.RoleAssistant:
		m := message{Role: msg.Role}
		// Content may be left out when there are tool calls; an assistant message with neither still needs it.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			m.Content = &msg.Content
		}
		for _, c := range msg.ToolCalls {
			args := c.Arguments
			if args == "" {
				args = "{}" // some servers parse the arguments of past calls and reject an empty string
			}
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: functionCall{Name: c.Name, Arguments: args}})
		}
		return m, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return message{}, fmt.Errorf("tool message without a tool_call_id")
		}
		return message{Role: msg.Role, Content: &msg.Content, ToolCallID: msg.ToolCallID}, nil
	default:
		return message{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// toTool converts a tool definition. The schema reaches the server as it was written, numbers and key order
// included.
func toTool(spec llm.ToolSpec) (tool, error) {
	params := spec.Parameters
	switch trimmed := bytes.TrimSpace(params); {
	case len(trimmed) == 0 || string(trimmed) == "null":
		params = defaultParameters
	case trimmed[0] != '{' || !json.Valid(trimmed):
		return tool{}, fmt.Errorf("tool %q: parameters are not a JSON object", spec.Name)
	}
	return tool{Type: "function", Function: functionDef{Name: spec.Name, Description: spec.Description, Parameters: params}}, nil
}

func toToolChoice(c llm.ToolChoice, tools []llm.ToolSpec) (any, error) {
	switch c.Mode {
	case "", llm.ToolChoiceAuto:
		return "auto", nil
	case llm.ToolChoiceNone:
		return "none", nil
	case llm.ToolChoiceRequired:
		return "required", nil
	case llm.ToolChoiceFunction:
		for _, t := range tools {
			if t.Name == c.Name {
				var named namedToolChoice
				named.Type = "function"
				named.Function.Name = c.Name
				return named, nil
			}
		}
		return nil, fmt.Errorf("tool choice names %q, which is not among the request's tools", c.Name)
	default:
		return nil, fmt.Errorf("unknown tool choice mode %q", c.Mode)
	}
}
