// Package llm defines the model interface the orchestrator talks to and the message types it exchanges with a
// chat model. It is a leaf: it imports no other package of this project and no model SDK. Adapters live in
// sub-packages (llm/openai for OpenAI-compatible APIs, llm/testmodel for deterministic offline models).
package llm

import (
	"context"
	"encoding/json"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message.
//
// An assistant message may carry ToolCalls; a tool message answers exactly one of them through ToolCallID. Content
// of a tool message is always a string (the orchestrator JSON-encodes non-text results), so every provider can
// carry it.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message. It is informational: OpenAI ignores it, but tests and logs read it.
	Name string `json:"name,omitempty"`
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text exactly as the model produced it. It may be invalid JSON: validating it is the
	// orchestrator's job, so that a malformed call can be answered with an error message instead of being lost.
	Arguments string `json:"arguments"`
}

// ToolSpec is a tool definition offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object; nil means {"type":"object"}
	// Final marks the tool whose call gives the run's answer: it is called alone, once the other calls are done.
	// A model adapter sends it as any other tool; a stand-in model that calls tools by rule needs to know.
	Final bool `json:"final,omitempty"`
}

// Embedder turns texts into vectors, as an OpenAI-compatible /v1/embeddings endpoint does. Tool search uses one to
// rank by meaning beside words.
type Embedder interface {
	// Model names the embedding model: vectors of different models are not comparable, and caches key by it.
	Model() string
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ToolChoiceMode says whether and how the model may call tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto     ToolChoiceMode = "auto"     // the model decides (the zero value means this too)
	ToolChoiceNone     ToolChoiceMode = "none"     // the model must not call tools
	ToolChoiceRequired ToolChoiceMode = "required" // the model must call at least one tool
	ToolChoiceFunction ToolChoiceMode = "function" // the model must call the tool named in ToolChoice.Name
)

// ToolChoice constrains tool use for one request.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"` // with ToolChoiceFunction
}

// Request is one model call.
type Request struct {
	Messages   []Message
	Tools      []ToolSpec
	ToolChoice ToolChoice
	// Temperature is nil for the provider's default.
	Temperature *float64
	// MaxTokens caps the completion; 0 means the provider's default.
	MaxTokens int
	// Extra holds provider-specific body fields, passed through as they are.
	Extra map[string]any
	// Output, when set, asks for an answer that is a JSON value matching a schema (OpenAI's response_format of
	// type json_schema). The model may still call tools instead.
	Output *OutputFormat
}

// OutputFormat is the shape a model's answer must take.
type OutputFormat struct {
	// Name names the schema: letters, digits, "_" and "-", at most 64.
	Name string
	// Schema is the JSON Schema of the answer.
	Schema json.RawMessage
	// Strict asks the provider to enforce the schema while generating, which constrains the schemas it accepts
	// (OpenAI's strict mode: every property required, no additional properties).
	Strict bool
}

// FinishReason is why the model stopped generating.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

// Usage counts what model calls cost. Requests counts the calls themselves.
type Usage struct {
	Requests         int   `json:"requests"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Requests += o.Requests
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
}

// Response is the outcome of one model call.
type Response struct {
	// Message is the assistant message: text and/or tool calls.
	Message      Message
	Usage        Usage
	FinishReason FinishReason
	// Model is the model name the provider reported, if any.
	Model string
}

// Delta is a piece of a streamed response. Only text is streamed to consumers; tool calls arrive whole in the
// Response.
type Delta struct {
	Text string
}

// Model is a chat model that can call tools.
//
// Generate must honour ctx: when it is cancelled, the call returns promptly with an error wrapping ctx.Err().
// onDelta, when not nil, is called with text as it arrives, from the goroutine that called Generate, before
// Generate returns. Generate is safe for concurrent use: the orchestrator runs forced-tool calls in parallel.
type Model interface {
	Generate(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Info describes a model, for telemetry.
type Info struct {
	// Provider names who serves the model, as the OpenTelemetry GenAI conventions name providers: "openai" for
	// the Chat Completions API.
	Provider string
	// Name is the model's name as requests give it.
	Name string
	// Address and Port are where its API is reached; empty for a model in the process.
	Address string
	Port    int
}

// Describer is a Model that says what it is.
type Describer interface {
	Describe() Info
}
