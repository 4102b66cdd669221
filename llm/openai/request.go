package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agenthost/agenthost/llm"
)

// params converts req into the SDK's request, plus the options that merge req.Extra into the body.
func (m *Model) params(req *llm.Request) (sdk.ChatCompletionNewParams, []option.RequestOption, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         m.name,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	for i, msg := range req.Messages {
		mp, err := toMessage(msg)
		if err != nil {
			return p, nil, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, spec := range req.Tools {
		tool, err := toTool(spec)
		if err != nil {
			return p, nil, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if len(req.Tools) > 0 {
		choice, err := toToolChoice(req.ToolChoice, req.Tools)
		if err != nil {
			return p, nil, err
		}
		p.ToolChoice = choice
	}
	if req.Temperature != nil {
		p.Temperature = sdk.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if m.maxCompletionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}

	// Extra fields are set on the serialised body, after every field above, so they may override them
	// ("stream" excepted: the SDK sets it last).
	keys := make([]string, 0, len(req.Extra))
	for k := range req.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	extra := make([]option.RequestOption, 0, len(keys))
	for _, k := range keys {
		if k == "" {
			return p, nil, fmt.Errorf("extra field with an empty name")
		}
		extra = append(extra, option.WithJSONSet(jsonPathKey(k), req.Extra[k]))
	}
	return p, extra, nil
}

func toMessage(msg llm.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case llm.RoleSystem:
		return sdk.SystemMessage(msg.Content), nil
	case llm.RoleUser:
		return sdk.UserMessage(msg.Content), nil
	case llm.RoleAssistant:
		a := &sdk.ChatCompletionAssistantMessageParam{}
		// Content may be left out when there are tool calls; an assistant message with neither still needs it.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			args := c.Arguments
			if args == "" {
				args = "{}" // some servers parse the arguments of past calls and reject an empty string
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: a}, nil
	case llm.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without a tool_call_id")
		}
		return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil
	default:
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

func toTool(spec llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	// Each top-level member stays raw JSON, so the schema reaches the server as it was written, numbers and
	// nested key order included.
	var schema map[string]json.RawMessage
	if len(spec.Parameters) == 0 || string(spec.Parameters) == "null" {
		schema = map[string]json.RawMessage{"type": json.RawMessage(`"object"`)}
	} else if err := json.Unmarshal(spec.Parameters, &schema); err != nil || schema == nil {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: parameters are not a JSON object", spec.Name)
	}
	params := make(sdk.FunctionParameters, len(schema))
	for k, v := range schema {
		params[k] = v
	}
	def := sdk.FunctionDefinitionParam{Name: spec.Name, Parameters: params}
	if spec.Description != "" {
		def.Description = sdk.String(spec.Description)
	}
	return sdk.ChatCompletionFunctionTool(def), nil
}

func toToolChoice(c llm.ToolChoice, tools []llm.ToolSpec) (sdk.ChatCompletionToolChoiceOptionUnionParam, error) {
	var auto string
	switch c.Mode {
	case "", llm.ToolChoiceAuto:
		auto = string(sdk.ChatCompletionToolChoiceOptionAutoAuto)
	case llm.ToolChoiceNone:
		auto = string(sdk.ChatCompletionToolChoiceOptionAutoNone)
	case llm.ToolChoiceRequired:
		auto = string(sdk.ChatCompletionToolChoiceOptionAutoRequired)
	case llm.ToolChoiceFunction:
		if !slices.ContainsFunc(tools, func(t llm.ToolSpec) bool { return t.Name == c.Name }) {
			return sdk.ChatCompletionToolChoiceOptionUnionParam{}, fmt.Errorf("tool choice names %q, which is not among the request's tools", c.Name)
		}
		return sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: c.Name}), nil
	default:
		return sdk.ChatCompletionToolChoiceOptionUnionParam{}, fmt.Errorf("unknown tool choice mode %q", c.Mode)
	}
	return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String(auto)}, nil
}

// jsonPathKey escapes a top-level field name for option.WithJSONSet, whose keys are paths in which '.', '*',
// '?', '|', '#', '@' and a leading ':' mean something.
func jsonPathKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`\.*?|#@:!=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
