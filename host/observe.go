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
	// Origin is the front end the run came from, as the front end put it in the context (WithOrigin): "cli",
	// "mcp", "a2a", "console"; "" when none did. A sub-agent's run inherits its caller's.
	Origin string
}

// EventObserver is an Observer that also sees every Event of the runs it observes, as the run's front end is handed
// it, on the run's goroutine, before the front end: the one stream behind the CLI, MCP, A2A and a console. The
// answer is the exception: StartRun's end function is handed it, just before the front end. ctx is
// the context StartRun returned for the run. It must not block, and must not keep ev past the call without copying
// what it needs: the front end may hold the same pointer.
type EventObserver interface {
	Observer
	ObserveEvent(ctx context.Context, ev *Event)
}

type originKey struct{}

// WithOrigin returns ctx marked as a run coming from the front end origin (see RunStart.Origin).
func WithOrigin(ctx context.Context, origin string) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

// Origin returns the front end ctx was marked with by WithOrigin, or "".
func Origin(ctx context.Context) string {
	s, _ := ctx.Value(originKey{}).(string)
	return s
}

type subjectKey struct{}

// WithSubject returns ctx marked as a run made for subject, the caller its front end told apart (the subject of
// its token); "" marks none. A console lists a run only to its subject.
func WithSubject(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

// Subject returns the subject ctx was marked with by WithSubject, or "" (callers not told apart).
func Subject(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(string)
	return s
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
