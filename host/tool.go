package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// ToolSpec describes a tool as the orchestrator offers it to the model.
type ToolSpec struct {
	// Name is the final name the model sees, matching ^[a-zA-Z0-9_-]{1,64}$ (see SanitizeToolName).
	Name  string
	Title string
	// Description is what the model reads to decide when to call the tool.
	Description string
	// Prompt is guidance on when and how to use the tool, added to the system prompt while the tool is offered:
	// what a built-in tool says of itself. The admin's [tools."<name>"] prompt replaces it.
	Prompt string
	// InputSchema is the JSON Schema of the arguments, passed through as the source gave it. Nil means
	// {"type":"object"}.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of Result.Structured, if the tool declares one.
	OutputSchema json.RawMessage
	Annotations  *ToolAnnotations
}

// ToolAnnotations are hints about a tool's behaviour, as MCP defines them. Nil fields are unknown.
type ToolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Tool is something the model can call.
//
// Call runs the tool with args, a JSON object already checked to be valid JSON. A tool that ran and failed returns a
// Result with IsError set; a Go error means the call could not happen at all (the server is down, the arguments could
// not be sent). Both reach the model as a tool message and neither stops the run. Call must return promptly once ctx
// is cancelled. Call is safe for concurrent use.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, args json.RawMessage, call *Call) (*Result, error)
}

// Toolset is a source of tools: the built-ins, one MCP server, the A2A peers.
//
// Tools returns the current list; the orchestrator asks again before every model call, so a run needs no other
// signal of a change. What offers the list to others (a gateway) learns of changes from the sources that implement
// Notifier, and has to poll the others. Tools should be cheap: cache, don't fetch.
// While the list is unchanged, Tools returns the same slice, and a changed list is a new slice: the ToolManager
// reuses its work while a source's slice is the same. Nobody modifies a returned slice.
type Toolset interface {
	// Name identifies the source in debug info, logs and errors, e.g. "builtin" or "mcp:filesystem".
	Name() string
	Tools(ctx context.Context) ([]Tool, error)
}

// Notifier is implemented by a Toolset that says when its list changes (an MCP server sending list_changed, a peer
// resolved): Changed returns a channel closed once Tools returns a new list. It returns nil for a source whose list
// never changes.
type Notifier interface {
	Changed() <-chan struct{}
}

// Signal is a change signal for a Notifier: Changed returns the channel that the next Notify closes. The zero value
// is ready to use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed returns the channel the next Notify closes.
func (s *Signal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify closes the channel Changed returned, if any: call it after the change is visible.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Follow calls f now, and again each time the channel changed returns is closed, until ctx ends (or at once when
// changed returns nil: no change will come). It takes each channel before it calls f, so a change while f runs is
// never missed: f runs again.
func Follow(ctx context.Context, changed func() <-chan struct{}, f func()) {
	for {
		ch := changed()
		f()
		if ch == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// Instructor is implemented by a Toolset that has instructions for the model (an MCP server's instructions). The
// orchestrator adds them to the system prompt when the run's options allow it.
type Instructor interface {
	Instructions() string
}

// Result is what a tool call produced.
type Result struct {
	// Text is what the model reads. When the result has references, the model instead reads them as numbered
	// sources, followed by Text.
	Text string
	// Structured is optional structured output (MCP structuredContent), shown to the model as JSON when Text is
	// empty, and kept for the caller.
	Structured json.RawMessage
	// References are documents the result is drawn from; the orchestrator numbers them for citation.
	References []Reference
	// Media holds non-text content (images, audio) kept for the caller; the model sees a placeholder in Text.
	Media []Media
	// IsError marks a tool that ran and failed. The model sees the text as an error.
	IsError bool
	// Debug holds tool-specific details for debug info. It must hold no secrets.
	Debug map[string]any
	// Original is the result as the tool's source gave it (an MCP server's *mcp.CallToolResult), for a gateway of
	// the same protocol to pass on unchanged: every content item with its MIME type and whole text or blob. The
	// orchestrator never reads it; nil when the source keeps none.
	Original any

	// nested is set on the result of a sub-agent: its Text cites References as "[source k]", k counting from 1,
	// and its usage adds to the calling run's.
	nested *nestedResult
}

// nestedResult is what the result of a sub-agent carries for the run that called it.
type nestedResult struct {
	usage llm.Usage
	// plain marks a Text that does not cite in the keyword style: a tool of the sub-agent took control.
	plain bool
}

// Media is a piece of binary content a tool returned.
type Media struct {
	Type     string // "image" or "audio"
	MIMEType string
	Data     []byte
}

// Reference is a document a tool result is drawn from.
type Reference struct {
	Title   string `json:"title,omitempty"`
	URI     string `json:"uri,omitempty"`
	Content string `json:"content,omitempty"` // an excerpt, for the model
}

// Progress is a progress report from a running tool.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"` // 0 when unknown
	Message  string  `json:"message,omitempty"`
}

// Call is the orchestrator's side of one tool call, handed to Tool.Call. It lets the tool report progress and ask
// whoever called the orchestrator for approval or input. A nil *Call is valid and does nothing.
type Call struct {
	// ID is the model's tool call id.
	ID string
	// Tool is the tool's final name; Source is the name of its Toolset.
	Tool, Source string
	// ConversationID is the conversation of the run that made the call, "" outside a run. A tool that keeps state
	// per conversation (an A2A peer's context) keys it by this id.
	ConversationID string

	progress   func(Progress)
	log        func(LogMessage)
	relay      func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	interactor Interactor
	// model is the run's model when the request replaced the orchestrator's (the caller's model through
	// sampling): sub-agents run on it too.
	model llm.Model
	// code makes a script's calls, for a call of run_code; parent is the id of the run_code call whose script
	// makes this call.
	code   *codeScope
	parent string
}

// NewCall returns a Call for tools invoked outside a run (gateways, tests). Either function may be nil.
func NewCall(id, tool, source string, progress func(Progress), interactor Interactor) *Call {
	return &Call{ID: id, Tool: tool, Source: source, progress: progress, interactor: interactor}
}

// LogMessage is a log message that a tool's server sent while the call ran (MCP notifications/message).
type LogMessage struct {
	// Level is a syslog severity as MCP names them: "debug", "info", ..., "emergency".
	Level string
	// Logger names the part of the server that logged, "" when it did not say.
	Logger string
	// Data is the message: any JSON value.
	Data json.RawMessage
}

// WithLog makes f receive the log messages of the call's server while the call runs (a gateway relays them to its
// caller), and returns c. Without it, they go nowhere but the server's log.
func (c *Call) WithLog(f func(LogMessage)) *Call {
	c.log = f
	return c
}

// WithRelay makes f put requests of the call's server to whoever made the call, unchanged, and returns c: a gateway
// lets an MCP server sample with its caller's model this way. method and params are the server's request (MCP's
// method and params, as JSON); the result is the caller's answer, as JSON.
func (c *Call) WithRelay(f func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)) *Call {
	c.relay = f
	return c
}

// ErrNoRelay is Relay's error for a call whose caller cannot be asked.
var ErrNoRelay = errors.New("the caller of this call cannot be asked")

// Relay puts a request of the call's server to whoever made the call (see WithRelay).
func (c *Call) Relay(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if c == nil || c.relay == nil {
		return nil, ErrNoRelay
	}
	return c.relay(ctx, method, params)
}

// TakesLogs reports whether someone takes the log messages of the call's server (WithLog).
func (c *Call) TakesLogs() bool { return c != nil && c.log != nil }

// ReportLog relays m to whoever WithLog named, and reports whether someone took it.
func (c *Call) ReportLog(m LogMessage) bool {
	if c == nil || c.log == nil {
		return false
	}
	c.log(m)
	return true
}

// ReportProgress relays p to the run's event stream.
func (c *Call) ReportProgress(p Progress) {
	if c != nil && c.progress != nil {
		c.progress(p)
	}
}

// Interactor returns who can be asked for approval or input during this call, or nil when nobody can.
func (c *Call) Interactor() Interactor {
	if c == nil {
		return nil
	}
	return c.interactor
}

// Interactor is whoever called the orchestrator, when it can be asked things mid-run: a person at a terminal, an MCP
// client through elicitation, an A2A caller through input-required. Both methods block until answered or until ctx
// ends.
type Interactor interface {
	// Approve asks whether a tool call may run.
	Approve(ctx context.Context, req *ApprovalRequest) (bool, error)
	// Elicit asks for structured input (an MCP elicitation forwarded from a server, for example).
	Elicit(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)
}

// ApprovalRequest describes a tool call waiting for approval.
type ApprovalRequest struct {
	Tool      string
	Source    string
	Arguments json.RawMessage
}

// ElicitRequest asks for input matching a JSON Schema.
type ElicitRequest struct {
	Message string
	Schema  json.RawMessage
	// Source names who asks (a tool or server), for the person answering.
	Source string
}

// ElicitAction is how an elicitation was answered.
type ElicitAction string

const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// ElicitResult is the answer to an ElicitRequest. Content is set with ElicitAccept.
type ElicitResult struct {
	Action  ElicitAction
	Content map[string]any
}

// ToolCallInfo is the debug record of one tool call.
type ToolCallInfo struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Source     string         `json:"source,omitempty"`
	Flags      []string       `json:"flags,omitempty"` // the tool's policy flags: exclusive, forced, takes_control, require_approval
	Iteration  int            `json:"iteration"`
	Duration   time.Duration  `json:"duration_ns"`
	OK         bool           `json:"ok"`
	Error      string         `json:"error,omitempty"`
	Duplicate  bool           `json:"duplicate,omitempty"`  // answered with the result of an identical call
	NotRun     string         `json:"not_run,omitempty"`    // why it was not executed (cap, takes_control, ...)
	Bytes      int            `json:"bytes"`                // size of the tool message content
	Truncated  bool           `json:"truncated,omitempty"`  // shortened to fit the context budget
	References int            `json:"references,omitempty"` // how many references it returned
	Approval   string         `json:"approval,omitempty"`   // "approved", "denied" or "unavailable"
	Parent     string         `json:"parent,omitempty"`     // the id of the run_code call whose script made this call
	Debug      map[string]any `json:"debug,omitempty"`
}
