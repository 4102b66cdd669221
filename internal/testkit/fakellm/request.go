package fakellm

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/agenthost/agenthost/llm"
)

// Request is one recorded chat-completion request: the raw body and the fields a test usually checks.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq    int         `json:"-"`
	Path   string      `json:"-"`
	Header http.Header `json:"-"`
	// Body is the raw request body, exactly as received.
	Body []byte `json:"-"`
	// Fields holds every top-level field of the body, raw, including ones that have no field below.
	Fields map[string]json.RawMessage `json:"-"`

	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Tools               []Tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"` // nil when absent
	Temperature         *float64        `json:"temperature"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options"`
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	Role string `json:"role"`
	// Content is the message's text: a string content as it is, an array of content parts as the concatenation of
	// its text parts, null or absent as "". RawContent tells these apart.
	Content    string            `json:"-"`
	RawContent json.RawMessage   `json:"content"`
	ToolCalls  []MessageToolCall `json:"tool_calls"`
	ToolCallID string            `json:"tool_call_id"`
	Name       string            `json:"name"`
}

// ToolOutput is the result a tool message carries, without the tags agenthost puts around it (llm.WrapToolOutput).
// A message without them comes back whole, marked "undelimited: ", so that a test expecting a result fails.
func (m Message) ToolOutput() string {
	inner, ok := llm.UnwrapToolOutput(m.Content)
	if !ok {
		return "undelimited: " + m.Content
	}
	return inner
}

// MessageToolCall is a tool call inside an assistant message of a request.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// ToolNames returns the names of the request's tools, in order.
func (r *Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Function.Name
	}
	return names
}

// ToolChoiceMode returns "auto", "none" or "required" for a string tool_choice, the object's type (such as
// "function") for an object, and "" when the request has no tool_choice.
func (r *Request) ToolChoiceMode() string {
	if len(r.ToolChoice) == 0 || bytes.Equal(r.ToolChoice, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(r.ToolChoice, &s) == nil {
		return s
	}
	var obj struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(r.ToolChoice, &obj)
	return obj.Type
}

// ForcedTool returns the function a tool_choice of the form {"type":"function","function":{"name":...}} names,
// or "" when tool_choice names no function.
func (r *Request) ForcedTool() string {
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(r.ToolChoice, &obj) != nil || obj.Type != "function" {
		return ""
	}
	return obj.Function.Name
}

// decodeRequest records r and its body. The returned Request is complete even when the body is not valid JSON;
// the error says why it could not be decoded.
func decodeRequest(r *http.Request, body []byte) (*Request, error) {
	req := &Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, &req.Fields); err != nil {
		return req, err
	}
	if err := json.Unmarshal(body, req); err != nil {
		return req, err
	}
	for i := range req.Messages {
		req.Messages[i].Content = contentText(req.Messages[i].RawContent)
	}
	return req, nil
}

// contentText flattens a message content (string, array of parts, or null) into its text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
