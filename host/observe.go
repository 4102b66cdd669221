package host

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/llm"
)

// Observer watches runs from the inside, for tracing and metrics. Each Start method is called as a piece of work
// begins, with the context it was given; it returns the context the work runs under (one that carries a span, say)
// and the function that the work calls, once, when it ends.
//
// Model and tool calls are observed inside their steps (see StepRunner): a call whose outcome a durable runner
// hands back from its record is not observed again. A nil Observer in the options observes nothing and costs
// nothing.
type Observer interface {
	StartRun(ctx context.Context, run *RunStart) (context.Context, func(*Answer, error))
	StartModelCall(ctx context.Context, call *ModelCallStart) (context.Context, func(*llm.Response, error))
	StartToolCall(ctx context.Context, call *ToolCallStart) (context.Context, func(*Result, error))
}

// RunStart describes a run as it starts.
type RunStart struct {
	// Agent and Description name the orchestrator (Options.Name and Options.Description).
	Agent, Description string
	// ConversationID is the conversation the request continues; "" starts a new one, whose id the answer has.
	ConversationID string
	// Prompt is the user's prompt.
	Prompt string
	// Model is the model the run asks.
	Model llm.Model
}

// ModelCallStart describes a model call as it starts.
type ModelCallStart struct {
	Agent          string
	ConversationID string
	Iteration      int
	// Model is the model called, and Request what it is asked.
	Model   llm.Model
	Request *llm.Request
}

// ToolCallStart describes a tool call as it starts.
type ToolCallStart struct {
	// Tool is the tool's final name, Source the name of its source, and Description its description.
	Tool, Source, Description string
	// CallID is the model's id of the call ("" outside a run, unless the caller gave one).
	CallID string
	// ParentCallID is the id of the run_code call whose script makes this call, "" for others. The call is
	// observed under the context of run_code's, so a span of it is a child of run_code's.
	ParentCallID   string
	ConversationID string
	Arguments      json.RawMessage
}
