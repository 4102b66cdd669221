package host

import (
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// EventKind says what an Event reports.
type EventKind string

const (
	// EventIteration starts an iteration of the loop: Iteration is set.
	EventIteration EventKind = "iteration"
	// EventTextDelta carries a piece of the model's text as it is generated, in Text.
	EventTextDelta EventKind = "text_delta"
	// EventToolStart reports a tool call about to run, in ToolCall.
	EventToolStart EventKind = "tool_start"
	// EventToolProgress relays a running tool's progress, in ToolCall.Progress.
	EventToolProgress EventKind = "tool_progress"
	// EventToolEnd reports a finished (or refused) tool call, in ToolCall with Info and Result.
	EventToolEnd EventKind = "tool_end"
	// EventCheck reports the outcome of an evaluation check of the answer, in Check.
	EventCheck EventKind = "check"
	// EventAnswer is the last event of a run that produced an answer: Answer is set.
	EventAnswer EventKind = "answer"
)

// Event is one step of a run, as the front-ends (CLI, MCP server, A2A server) consume it.
type Event struct {
	Kind      EventKind
	Iteration int
	Text      string
	ToolCall  *ToolEvent
	Check     *CheckResult
	Answer    *Answer
}

// ToolEvent describes a tool call in an event.
type ToolEvent struct {
	ID     string
	Name   string
	Source string
	// Parent is the id of the run_code call whose script made this call; "" for the model's own calls.
	Parent    string
	Arguments json.RawMessage
	Progress  *Progress     // EventToolProgress
	Result    *Result       // EventToolEnd; nil when the call could not happen
	Info      *ToolCallInfo // EventToolEnd
}

// StopReason says why a run ended.
type StopReason string

const (
	StopAnswered       StopReason = "answered"
	StopToolControl    StopReason = "tool_took_control"
	StopIterationLimit StopReason = "iteration_limit"
	StopUsageLimit     StopReason = "usage_limit"
	StopCancelled      StopReason = "cancelled"
	StopNoOutput       StopReason = "no_output"
	// StopInvalidOutput: the answers did not match the output schema, retries included.
	StopInvalidOutput StopReason = "invalid_output"
	StopError         StopReason = "error"
)

// StopReasons lists every StopReason, in the order the edges declare them (the enum of a schema).
func StopReasons() []StopReason {
	return []StopReason{StopAnswered, StopToolControl, StopIterationLimit, StopUsageLimit, StopCancelled, StopNoOutput,
		StopInvalidOutput, StopError}
}

// NumberedReference is a reference as the answer cites it: Number is the k of "[k]".
type NumberedReference struct {
	Number int    `json:"number"`
	Title  string `json:"title,omitempty"`
	URI    string `json:"uri,omitempty"`
}

// Answer is the outcome of a run.
type Answer struct {
	// Text is the final answer with citations rendered in the configured style (and its list of sources); with an
	// output schema, Output as indented JSON.
	Text string `json:"answer"`
	// Output is the structured answer, a JSON value that matched the run's output schema, with its citations
	// rendered in its strings; nil without an output schema.
	Output json.RawMessage `json:"output,omitempty"`
	// References are the documents the answer cites, numbered as in Text.
	References     []NumberedReference `json:"references"`
	ConversationID string              `json:"conversation_id"`
	StoppedBy      StopReason          `json:"stopped_by"`
	Usage          llm.Usage           `json:"usage"`
	// Iterations is the debug info of each iteration.
	Iterations []IterationInfo `json:"iterations"`
	// ToolCalls is every tool call of the run, in order.
	ToolCalls []ToolCallInfo `json:"tool_calls"`
	// Checks are the outcomes of the evaluation checks of the answer, in CheckNames order; nil when none applied.
	Checks []CheckResult `json:"checks,omitempty"`
	// Result is the result of the tool that took control, when StoppedBy is StopToolControl.
	Result *Result `json:"-"`

	// cited are the references of a nested run's answer in reference-number order, with their excerpts.
	cited []Reference
}

// AnswerSummary is what an edge reports of an Answer beside its text: the MCP agent tool's structured content and
// the A2A answer's details are both this shape, as JSON. The fields that only one edge reports are pointers or
// omitted when empty, so that each edge's bytes stay what its callers read.
type AnswerSummary struct {
	// Answer is the answer's text; nil where the text travels apart (A2A sends it as a part of its own).
	Answer         *string             `json:"answer,omitempty"`
	Output         json.RawMessage     `json:"output,omitempty"`
	References     []NumberedReference `json:"references"` // never null: [] without references
	ConversationID string              `json:"conversation_id"`
	StoppedBy      StopReason          `json:"stopped_by"`
	// Iterations counts the run's iterations; nil where it is not reported.
	Iterations *int              `json:"iterations,omitempty"`
	Usage      llm.Usage         `json:"usage"`
	ToolCalls  []ToolCallSummary `json:"tool_calls"` // never null: [] without tool calls
	Checks     []CheckResult     `json:"checks,omitempty"`
}

// ToolCallSummary is a tool call as an AnswerSummary reports it.
type ToolCallSummary struct {
	Name string `json:"name"`
	// Source is set with SummaryOptions.ToolDetails.
	Source     string  `json:"source,omitempty"`
	OK         bool    `json:"ok"`
	DurationMS float64 `json:"duration_ms"`
	// Error is set with SummaryOptions.ToolDetails: the edge clips it to what it sends.
	Error string `json:"error,omitempty"`
}

// SummaryOptions chooses what an AnswerSummary carries beyond what every edge reports. The zero value is the
// common part alone.
type SummaryOptions struct {
	// Text adds the answer's text and its count of iterations.
	Text bool
	// ToolDetails adds each tool call's source and error.
	ToolDetails bool
}

// Summary returns the answer's summary for an edge.
func (a *Answer) Summary(opts SummaryOptions) AnswerSummary {
	s := AnswerSummary{
		Output: a.Output, References: a.References, ConversationID: a.ConversationID, StoppedBy: a.StoppedBy,
		Usage: a.Usage, ToolCalls: make([]ToolCallSummary, 0, len(a.ToolCalls)), Checks: a.Checks,
	}
	if s.References == nil {
		s.References = []NumberedReference{}
	}
	if opts.Text {
		text, n := a.Text, len(a.Iterations)
		s.Answer, s.Iterations = &text, &n
	}
	for _, c := range a.ToolCalls {
		tc := ToolCallSummary{Name: c.Name, OK: c.OK, DurationMS: float64(c.Duration) / float64(time.Millisecond)}
		if opts.ToolDetails {
			tc.Source, tc.Error = c.Source, c.Error
		}
		s.ToolCalls = append(s.ToolCalls, tc)
	}
	return s
}

// IterationInfo is the debug record of one iteration.
type IterationInfo struct {
	Iteration    int              `json:"iteration"`
	Mode         string           `json:"mode"` // "forced", "auto" or "final" (no tools offered)
	ToolsOffered int              `json:"tools_offered"`
	ModelCalls   int              `json:"model_calls"`
	Duration     time.Duration    `json:"duration_ns"`
	Usage        llm.Usage        `json:"usage"`
	FinishReason llm.FinishReason `json:"finish_reason,omitempty"`
	ToolCalls    int              `json:"tool_calls"`
	// DroppedMessages and TruncatedResults report the context-budget trimming before the model call.
	DroppedMessages  int    `json:"dropped_messages,omitempty"`
	TruncatedResults int    `json:"truncated_results,omitempty"`
	Note             string `json:"note,omitempty"`
	// ToolSearch says whether the run offered search_tools in place of its deferred tools, ToolsDeferred how many
	// tools were not offered in the iteration, and ToolsLoaded which tools its searches (or calls of tools not
	// loaded yet) loaded, offered from the next iteration on.
	ToolSearch    bool     `json:"tool_search,omitempty"`
	ToolsDeferred int      `json:"tools_deferred,omitempty"`
	ToolsLoaded   []string `json:"tools_loaded,omitempty"`
}
