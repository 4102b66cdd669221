// Package mcpserver offers the orchestrator as an MCP server: one tool, the agent, that runs the loop on a prompt and
// answers with the result, its references and debug info, over stdio (for Claude Desktop and IDEs) or streamable
// HTTP (for remote callers, another agenthost among them).
//
// In gateway mode (Options.ExposeTools) it also offers every enabled merged tool under its final name, forwards
// the calls through the ToolManager, and follows changes of the merged list.
//
// It owns the agent tool's schemas, the translation of the run's events into progress notifications, cancellation,
// approvals asked through elicitation (within the call, or through input requests for callers on protocol
// 2026-07-28 and later, see roundTrips), and the HTTP edge: bearer-token auth, Host and Origin checks, body limits and
// a health endpoint. MCP SDK types stop here. It imports host, llm, telemetry (with telemetry/mcptrace, its MCP
// middleware), internal/httpedge (the HTTP edge it shares with a2a) and the MCP SDK; it must not import config,
// mcpclients, a2a, builtin or a model SDK.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/telemetry/mcptrace"
)

// Options configures a Server. A nil *Options means all defaults.
type Options struct {
	// Name and Version identify the server to its clients; "" means "agenthost" and "dev".
	Name, Version string
	// ToolName is the agent tool's name; "" means "ask_<Name>", sanitised.
	ToolName string
	// Description opens the agent tool's description; a line listing the tools the agent can use follows it.
	Description string
	// ProgressInterval is the least time between two progress notifications that carry streamed answer text; 0
	// means 250ms. Notifications of steps (iterations, tool calls) are not held back.
	ProgressInterval time.Duration
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// Telemetry traces each request, in the trace its caller sends (in _meta, or the HTTP headers), and what the
	// server asks its caller within a trace; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// Sampling says when a call runs on the caller's own model through sampling; the zero value never does.
	Sampling Sampling
	// OutputSchema is the agent's configured output schema, if any, shown in the agent tool's output schema as the
	// shape of structuredContent.output.
	OutputSchema json.RawMessage
	// ExposeTools turns on gateway mode: every merged tool that the policy leaves enabled is offered too, under its
	// final name, and its calls go through the ToolManager (approvals, timeout) to the tool. The server then watches
	// the merged list and tells its clients when it changes; Close stops that.
	ExposeTools bool
	// GatewayTools shapes what gateway mode offers: GatewayToolsAll ("" too) every enabled tool by name;
	// GatewayToolsSearch the agent tool, the pinned tools (host.ToolPolicy.Pinned), search_tools and call_tool, for
	// clients that cap the tools they take (see gatewaysearch.go); GatewayToolsCode the agent tool, the pinned tools,
	// search_tools and run_code, whose scripts call every other tool (see gatewaycode.go). It is ignored without
	// ExposeTools.
	GatewayTools string
	// CodeRunner runs run_code's scripts in GatewayToolsCode; it must be set in that form.
	CodeRunner host.CodeRunner
	// Prompts are the upstream servers whose prompts gateway mode offers too, named as their tools are; none offers
	// no prompts. They are ignored without ExposeTools.
	Prompts []PromptSource
	// Resources are the upstream servers whose resources and resource templates gateway mode offers too, under
	// their own URIs (see resources.go for a URI two servers share); none offers no resources. They are ignored
	// without ExposeTools.
	Resources []ResourceSource
	// LogLevel, when set, is told of the level of each logging/setLevel a caller sends in gateway mode, so that the
	// upstream servers send their log messages; those that come during a forwarded call go to its caller.
	LogLevel func(ctx context.Context, level string)
	// ToolTimeout bounds each call of an offered tool in gateway mode; 0 means host.DefaultToolTimeout.
	ToolTimeout time.Duration
	// ToolsPollInterval is how often the merged tool list is checked for changes; 0 means 1s.
	ToolsPollInterval time.Duration
	// InputTimeout is how long a call waits for a caller on protocol 2026-07-28 or later to come back with the
	// answers it was asked for (approvals, elicitation, sampling) before the call is cancelled; 0 means 10 minutes.
	// Older callers are asked within the call and have no such bound.
	InputTimeout time.Duration
	// MaxWaitingCalls bounds the calls of such callers that run in the background between their requests; a call
	// beyond it gets an error result. 0 means 100.
	MaxWaitingCalls int
	// Calls shares those calls with the other processes serving the agent on the same state database, so that a
	// caller's next request may reach any of them; nil keeps them in this process, and the next request must reach
	// it.
	Calls CallStore
	// Instance names this process among those sharing Calls; "" means a random name.
	Instance string
	// Run runs the agent tool's calls; nil means the orchestrator's own Run. A durable engine's makes them survive
	// a crash.
	Run host.RunFunc
}

// Server is the agent as an MCP server.
type Server struct {
	orch      *host.Orchestrator
	opts      Options
	logger    *slog.Logger
	toolName  string
	mcp       *mcp.Server
	gateway   *gateway         // watches the merged tool list; offers the tools too in gateway mode
	prompts   *promptGateway   // the upstream servers' prompts in gateway mode; nil without
	resources *resourceGateway // the upstream servers' resources in gateway mode; nil without
	rounds    *roundTrips      // calls that ask their callers through input requests

	agentTools []string // the tools the agent tool names, guarded by gateway.mu (set only from its sync)
	search     bool     // gateway mode's search form: the agent tool names the pinned tools only

	slots          sync.Map  // key → *slot: the places taken for sessions being created (limitSessions)
	adoptSlotsOnce sync.Once // adds adoptSlot to the MCP server once
}

// New returns a Server for orch. The agent tool's description and schema name the orchestrator's tools; their list is
// watched until ctx ends or Close is called, and the agent tool follows it. In gateway mode (ExposeTools) the tools
// are offered too.
func New(ctx context.Context, orch *host.Orchestrator, opts *Options) (*Server, error) {
	s := &Server{orch: orch}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Name == "" {
		s.opts.Name = "agenthost"
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.ProgressInterval <= 0 {
		s.opts.ProgressInterval = 250 * time.Millisecond
	}
	if s.opts.Run == nil {
		s.opts.Run = orch.Run
	}
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.toolName = s.opts.ToolName
	if s.toolName == "" {
		s.toolName = host.ToolName("ask", s.opts.Name)
	}
	if !host.ValidToolName(s.toolName) {
		return nil, fmt.Errorf("mcpserver: invalid tool name %q", s.toolName)
	}
	search := false
	var code host.CodeRunner // set in the code form of gateway mode
	switch s.opts.GatewayTools {
	case "", GatewayToolsAll:
	case GatewayToolsSearch:
		search = s.opts.ExposeTools
		s.search = search
		if search && (s.toolName == host.SearchToolName || s.toolName == CallToolName) {
			return nil, fmt.Errorf("mcpserver: the agent tool cannot be named %q: gateway tools %q offer a tool of that name", s.toolName, GatewayToolsSearch)
		}
	case GatewayToolsCode:
		search = s.opts.ExposeTools
		s.search = search
		if search && (s.toolName == host.SearchToolName || s.toolName == host.CodeToolName) {
			return nil, fmt.Errorf("mcpserver: the agent tool cannot be named %q: gateway tools %q offer a tool of that name", s.toolName, GatewayToolsCode)
		}
		if search && s.opts.CodeRunner == nil {
			return nil, fmt.Errorf("mcpserver: gateway tools %q: no code runner to run %s's scripts", GatewayToolsCode, host.CodeToolName)
		}
		code = s.opts.CodeRunner
	default:
		return nil, fmt.Errorf("mcpserver: gateway tools %q: want %q, %q or %q", s.opts.GatewayTools, GatewayToolsAll, GatewayToolsSearch, GatewayToolsCode)
	}
	tools, err := orch.Tools().Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	s.rounds = newRoundTrips(s.opts.InputTimeout, s.opts.MaxWaitingCalls, s.opts.Calls, s.opts.Instance, s.logger)
	sopts := &mcp.ServerOptions{Logger: s.opts.Logger}
	withPrompts := s.opts.ExposeTools && len(s.opts.Prompts) > 0
	withResources := s.opts.ExposeTools && len(s.opts.Resources) > 0
	if withPrompts || withResources {
		// Declared from the start: the upstream servers' prompts and resources may come after a client initialized.
		sopts.Capabilities = &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	}
	if withPrompts || withResources {
		sopts.CompletionHandler = s.complete
	}
	if withPrompts {
		sopts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	if withResources {
		sopts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
		sopts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error { return s.resources.subscribe(ctx, req) }
		sopts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error { return s.resources.unsubscribe(ctx, req) }
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version}, sopts)
	if s.opts.Telemetry != nil {
		s.mcp.AddReceivingMiddleware(mcptrace.Server(s.opts.Telemetry)) // first: outermost, so its span covers the rest
		// What the server asks its callers within a trace (sampling for provider = "sampling" or an upstream
		// server, elicitation) is traced, and the caller is sent the trace context.
		s.mcp.AddSendingMiddleware(mcptrace.Client(s.opts.Telemetry, ""))
	}
	if s.opts.ExposeTools && s.opts.LogLevel != nil {
		s.mcp.AddReceivingMiddleware(s.forwardLogLevel)
	}
	s.gateway = startGateway(ctx, s, tools, s.opts.ToolsPollInterval, s.opts.ExposeTools, search, code)
	if withPrompts {
		s.prompts = startPrompts(ctx, s.mcp, s.opts.Prompts, s.logger)
	}
	if withResources {
		s.resources = startResources(ctx, s.mcp, s.opts.Resources, s.logger)
	}
	return s, nil
}

// complete routes completion/complete to the server that has the prompt or resource template. It runs once New has
// returned, with s.prompts and s.resources set.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	switch {
	case ref != nil && ref.Type == "ref/prompt" && s.prompts != nil:
		return s.prompts.complete(ctx, req)
	case ref != nil && ref.Type == "ref/resource" && s.resources != nil:
		return s.resources.complete(ctx, req)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion is offered for the arguments of the prompts and resource templates offered"}
}

// forwardLogLevel passes the level of a caller's logging/setLevel on to LogLevel once the SDK has taken it.
func (s *Server) forwardLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil && method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
				s.opts.LogLevel(ctx, string(p.Level))
			}
		}
		return res, err
	}
}

// setAgentTool offers the agent tool, described with the enabled tools of tools. It is called again when the merged
// list changes (a server's list_changed); the SDK then tells the clients that the tool list changed.
func (s *Server) setAgentTool(tools []*host.ManagedTool) {
	// In the search form the agent tool names the pinned tools only, as tools/list does: naming them all would put
	// back the definitions' bulk that the form keeps from the client, and change with every upstream list.
	var names []string
	for _, t := range tools {
		if !t.Policy.Disabled && (!s.search || t.Pinned()) {
			names = append(names, t.Spec.Name)
		}
	}
	if s.agentTools != nil && slices.Equal(names, s.agentTools) {
		return // only the gateway's tools changed
	}
	s.agentTools = append([]string{}, names...)
	desc, schema := description(s.opts.Description, names), inputSchema(names)
	if s.search {
		desc, schema = searchDescription(s.opts.Description, names), inputSchema(nil) // any tool may be chosen
	}
	s.mcp.AddTool(&mcp.Tool{
		Name:         s.toolName,
		Title:        s.opts.Name,
		Description:  desc,
		InputSchema:  schema,
		OutputSchema: agentOutputSchema(s.opts.OutputSchema),
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, s.handleAgent)
}

// ToolName returns the agent tool's name.
func (s *Server) ToolName() string { return s.toolName }

// ServeStdio serves one client over in and out (the process's stdin and stdout) until the client leaves or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	// Not mcp.Server.Run, which logs an error when it is asked to stop: stopping is how a stdio server ends.
	ss, err := s.mcp.Connect(ctx, &mcp.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		return nil // we were asked to stop
	case err = <-ended:
	}
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil // the client closed the connection, or we were asked to stop
	}
	return fmt.Errorf("mcpserver: %w", err)
}

func description(intro string, tools []string) string {
	intro = strings.TrimSpace(intro)
	if intro == "" {
		intro = "An agent that answers a request using its tools."
	}
	if len(tools) == 0 {
		return intro + " It has no tools."
	}
	return intro + " It can use: " + strings.Join(tools, ", ") + "."
}

// searchDescription is the agent tool's description in the search form of gateway mode.
func searchDescription(intro string, pinned []string) string {
	d := strings.TrimSuffix(description(intro, pinned), " It has no tools.")
	if len(pinned) > 0 {
		return strings.TrimSuffix(d, ".") + ", and the tools " + host.SearchToolName + " finds."
	}
	return d + " It can use the tools " + host.SearchToolName + " finds."
}

// agentInput is the agent tool's input.
type agentInput struct {
	Prompt         string          `json:"prompt"`
	ConversationID string          `json:"conversation_id,omitempty"`
	ToolChoices    []string        `json:"tool_choices,omitempty"`
	DisabledTools  []string        `json:"disabled_tools,omitempty"`
	OutputSchema   json.RawMessage `json:"output_schema,omitempty"`
}

func inputSchema(tools []string) json.RawMessage {
	names := map[string]any{"type": "string"}
	if len(tools) > 0 {
		names["enum"] = tools
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"prompt":          map[string]any{"type": "string", "description": "What to do or answer."},
			"conversation_id": map[string]any{"type": "string", "description": "Continue the conversation with this id, returned by an earlier call."},
			"tool_choices":    map[string]any{"type": "array", "items": names, "description": "Use only these tools, and call them first."},
			"disabled_tools":  map[string]any{"type": "array", "items": names, "description": "Do not use these tools."},
			"output_schema": map[string]any{"type": "object", "description": "A JSON Schema the answer must match: the answer is then a JSON value, " +
				"in structuredContent.output and as the text."},
		},
		"required":             []string{"prompt"},
		"additionalProperties": false,
	}
	b, _ := json.Marshal(schema) // plain maps and strings: cannot fail
	return b
}

// agentOutputSchema is the agent tool's output schema: outputSchema, with the configured output schema as the
// shape of output. A caller's own output_schema may replace it on a call, so the declared shape is one
// alternative of an anyOf that accepts any value: clients that check structured content never reject an answer
// they asked for.
func agentOutputSchema(configured json.RawMessage) json.RawMessage {
	if len(configured) == 0 {
		return outputSchema
	}
	var s map[string]any
	if err := json.Unmarshal(outputSchema, &s); err != nil {
		return outputSchema
	}
	s["properties"].(map[string]any)["output"] = map[string]any{
		"description": "The structured answer: it matches the agent's output schema (the first alternative) unless the call gave its own output_schema.",
		"anyOf":       []any{configured, map[string]any{}},
	}
	b, err := json.Marshal(s)
	if err != nil {
		return outputSchema
	}
	return b
}

// outputSchema describes the agent tool's structured content (host.AnswerSummary with its text); the enum of
// stopped_by is host's list of stop reasons.
var outputSchema = json.RawMessage(strings.Replace(outputSchemaText, "STOP_REASONS", stopReasonsEnum(), 1))

func stopReasonsEnum() string {
	var q []string
	for _, r := range host.StopReasons() {
		q = append(q, strconv.Quote(string(r)))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

const outputSchemaText = `{
  "type": "object",
  "properties": {
    "answer": {"type": "string"},
    "output": {"description": "The structured answer, when the call gave an output_schema."},
    "references": {"type": "array", "items": {"type": "object", "properties": {
      "number": {"type": "integer"}, "title": {"type": "string"}, "uri": {"type": "string"}}, "required": ["number"]}},
    "conversation_id": {"type": "string"},
    "stopped_by": {"type": "string", "enum": STOP_REASONS},
    "iterations": {"type": "integer"},
    "usage": {"type": "object", "properties": {
      "requests": {"type": "integer"}, "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}},
    "tool_calls": {"type": "array", "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "ok": {"type": "boolean"}, "duration_ms": {"type": "number"}}, "required": ["name", "ok"]}},
    "checks": {"type": "array", "description": "The evaluation checks of the answer.", "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "passed": {"type": "boolean"}, "detail": {"type": "string"}}, "required": ["name", "passed"]}}
  },
  "required": ["answer", "references", "conversation_id", "stopped_by", "iterations", "usage", "tool_calls"]
}`

// output is the agent tool's structured content: the answer's summary with its text and count of iterations.
func output(ans *host.Answer) host.AnswerSummary {
	return ans.Summary(host.SummaryOptions{Text: true})
}

// handleAgent runs the loop for one call of the agent tool. A caller that must be asked through input requests
// (protocol 2026-07-28 and later) and may be asked something gets its run in the background (see roundTrips); the
// others get it inside the call.
func (s *Server) handleAgent(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.rounds.resume(ctx, req)
	}
	var in agentInput
	dec := json.NewDecoder(strings.NewReader(string(req.Params.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil && len(req.Params.Arguments) > 0 {
		return toolError("invalid arguments: %v", err), nil
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return toolError("prompt is required: say what the agent should do"), nil
	}
	var c caller = req.Session
	var paused *pausedRun
	if needsRoundTrips(req.Session) {
		paused = s.rounds.prepare(req)
		c = paused
	}
	model, err := samplingFor(s.opts.Sampling, req.Session, c)
	if err != nil {
		return toolError("%v", err), nil
	}
	// A conversation belongs to the subject of the caller's token, when callers have tokens from an identity
	// provider: its id says whose it is, and another subject's is unknown to this caller.
	var subject string
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		subject = req.Extra.TokenInfo.UserID
	}
	convID, start := in.ConversationID, false
	switch {
	case convID != "" && !host.OwnsConversation(convID, subject):
		return toolError("%v: %q", host.ErrUnknownConversation, convID), nil
	case convID == "" && subject != "":
		convID, start = host.OwnedConversationID(host.NewConversationID(), subject), true
	}
	hreq := &host.Request{
		Model:             model,
		Prompt:            in.Prompt,
		ConversationID:    convID,
		StartConversation: start,
		Selection:         host.Selection{ToolChoices: in.ToolChoices, DisabledTools: in.DisabledTools},
		Interactor:        interactorFor(req.Session, c),
		OutputSchema:      in.OutputSchema,
	}
	p := newProgress(s.opts.ProgressInterval)
	run := func(ctx context.Context) (*mcp.CallToolResult, error) {
		return s.runAgent(host.WithSubject(ctx, subject), hreq, p)
	}
	if paused != nil && (hreq.Model != nil || hreq.Interactor != nil) {
		return paused.start(ctx, req, p, run)
	}
	p.attach(ctx, req)
	defer p.detach()
	return run(ctx)
}

// runAgent runs the loop for hreq, reporting its progress to p, and returns the call's result.
func (s *Server) runAgent(ctx context.Context, hreq *host.Request, p *progress) (*mcp.CallToolResult, error) {
	var ans *host.Answer
	var runErr error
	for ev, err := range s.opts.Run(host.WithOrigin(ctx, "mcp"), hreq) {
		if err != nil {
			runErr = err
			break
		}
		p.event(ev)
		if ev.Kind == host.EventAnswer {
			ans = ev.Answer
		}
	}
	switch {
	case runErr == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err() // the caller cancelled: nobody reads the result
	case errors.Is(runErr, host.ErrInvalidRequest), errors.Is(runErr, host.ErrUnknownConversation):
		return toolError("%v", runErr), nil
	case ans == nil:
		return toolError("the agent failed: %v", runErr), nil
	}
	out := output(ans)
	structured, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           content(ans),
		StructuredContent: json.RawMessage(structured),
		IsError:           runErr != nil,
	}, nil
}

// content is the answer's text, then a resource link per reference with a URI: a caller that is itself an agent
// (another agenthost) takes those as references of its own, so citations survive the hop.
func content(ans *host.Answer) []mcp.Content {
	out := []mcp.Content{&mcp.TextContent{Text: ans.Text}}
	for _, ref := range ans.References {
		if ref.URI == "" {
			continue
		}
		name := ref.Title
		if name == "" {
			name = ref.URI
		}
		out = append(out, &mcp.ResourceLink{URI: ref.URI, Name: name, Title: ref.Title})
	}
	return out
}

func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func ptr[T any](v T) *T { return &v }

// progress turns a run's events into progress notifications, when the request being served sent a progress token.
// Progress values strictly increase: one step per event that is notified, over all the rounds of a call. Streamed
// answer text is batched, at most one notification per interval, with the text gathered since the last one.
type progress struct {
	interval time.Duration

	mu      sync.Mutex
	to      progressTarget
	n       float64
	pending strings.Builder
	last    time.Time
	timer   *time.Timer
}

var _ progressSink = (*progress)(nil)

func newProgress(interval time.Duration) *progress {
	return &progress{interval: interval}
}

// attach sends what follows to req's progress token.
func (p *progress) attach(ctx context.Context, req *mcp.CallToolRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.to = targetOf(ctx, req)
}

// detach stops sending: the request was answered, and its token is no longer valid.
func (p *progress) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.pending.Reset()
	p.to = progressTarget{}
}

func (p *progress) active() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.to.active()
}

func (p *progress) event(ev *host.Event) {
	if !p.active() {
		return
	}
	switch ev.Kind {
	case host.EventIteration:
		p.notify(fmt.Sprintf("iteration %d", ev.Iteration+1))
	case host.EventToolStart:
		p.notify(fmt.Sprintf("calling %s (%s)", ev.ToolCall.Name, ev.ToolCall.Source))
	case host.EventToolProgress:
		msg := fmt.Sprintf("%s (%s): %s", ev.ToolCall.Name, ev.ToolCall.Source, ev.ToolCall.Progress.Message)
		p.notify(strings.TrimSuffix(msg, ": "))
	case host.EventToolEnd:
		status := "done"
		if info := ev.ToolCall.Info; info != nil && !info.OK {
			status = "failed: " + firstLine(info.Error)
		}
		p.notify(fmt.Sprintf("%s (%s) %s", ev.ToolCall.Name, ev.ToolCall.Source, status))
	case host.EventCheck:
		p.notify(checkLine(ev.Check))
	case host.EventTextDelta:
		p.text(ev.Text)
	case host.EventAnswer:
		p.flush()
	}
}

// checkLine is how an evaluation check's outcome reads in progress: "check citations: passed".
func checkLine(c *host.CheckResult) string {
	line := "check " + c.Name + ": passed"
	if !c.Passed {
		line = "check " + c.Name + ": failed"
	}
	if c.Detail != "" {
		line += " (" + c.Detail + ")"
	}
	return line
}

// text adds streamed answer text, sending it at once when the interval has passed, else when it next passes.
func (p *progress) text(delta string) {
	p.mu.Lock()
	if !p.to.active() {
		p.mu.Unlock()
		return
	}
	p.pending.WriteString(delta)
	wait := p.interval - time.Since(p.last)
	if wait <= 0 {
		p.mu.Unlock()
		p.flush()
		return
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(wait, p.flush)
	}
	p.mu.Unlock()
}

func (p *progress) flush() {
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	text := p.pending.String()
	p.pending.Reset()
	p.mu.Unlock()
	if text != "" {
		p.notify(text)
	}
}

func (p *progress) notify(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock() // notifications go out in the order of their progress values
	if !p.to.active() {
		return // between rounds, the run ended, or the caller cancelled it: nothing may be sent for this request
	}
	p.n++
	p.last = time.Now()
	p.to.send(&mcp.ProgressNotificationParams{Progress: p.n, Message: msg})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// interactorFor returns an Interactor that asks through c, or nil when the client of session did not declare
// elicitation (then approvals are refused and the model is told why).
func interactorFor(session *mcp.ServerSession, c caller) host.Interactor {
	if session == nil {
		return nil
	}
	params := session.InitializeParams()
	if params == nil || params.Capabilities == nil || params.Capabilities.Elicitation == nil {
		return nil
	}
	return &elicitor{caller: c}
}

// elicitor asks the MCP client through elicitation.
type elicitor struct {
	caller caller
}

var _ host.Interactor = (*elicitor)(nil)

func (e *elicitor) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	args := string(req.Arguments)
	if len(args) > 2000 {
		args = args[:2000] + "…"
	}
	res, err := e.caller.Elicit(ctx, &mcp.ElicitParams{
		Message: fmt.Sprintf("The agent wants to call %s (%s) with these arguments:\n%s\nAllow it?", req.Tool, req.Source, args),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Allow this call", "default": false},
			},
			"required": []string{"approve"},
		},
	})
	if err != nil {
		return false, err
	}
	approved, _ := res.Content["approve"].(bool)
	return res.Action == "accept" && approved, nil
}

func (e *elicitor) Elicit(ctx context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	params := &mcp.ElicitParams{Message: req.Message}
	if len(req.Schema) > 0 {
		params.RequestedSchema = json.RawMessage(req.Schema)
	}
	if req.Source != "" {
		params.Message = fmt.Sprintf("%s (asked by %s)", req.Message, req.Source)
	}
	res, err := e.caller.Elicit(ctx, params)
	if err != nil {
		return nil, err
	}
	action := host.ElicitAction(res.Action)
	if !slices.Contains([]host.ElicitAction{host.ElicitAccept, host.ElicitDecline, host.ElicitCancel}, action) {
		action = host.ElicitCancel
	}
	return &host.ElicitResult{Action: action, Content: res.Content}, nil
}
