package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// agenthost's own attributes and metrics, for what the conventions have no name for.
const (
	// AttrToolSource is the source of a tool: "builtin", "mcp:<server>", "a2a:<peer>", "agents".
	AttrToolSource = attribute.Key("agenthost.tool.source")
	// AttrStopReason is why a run ended (host.StopReason).
	AttrStopReason = attribute.Key("agenthost.stop_reason")
	// AttrIteration is the loop iteration of a model call.
	AttrIteration = attribute.Key("agenthost.iteration")
	// AttrToolSearchQuery is the query of a search_tools call (recorded only with CaptureContent, like the
	// arguments it is part of), and AttrToolSearchLoaded the names of the tools it loaded.
	AttrToolSearchQuery  = attribute.Key("agenthost.tool_search.query")
	AttrToolSearchLoaded = attribute.Key("agenthost.tool_search.loaded")

	// EventEvaluation is the span event of an evaluation check of the answer, on its run's span.
	EventEvaluation = "gen_ai.evaluation.result"

	MetricToolCalls    = "agenthost.tool.calls"
	MetricToolDuration = "agenthost.tool.duration"
	MetricRunsActive   = "agenthost.runs.active"
)

// Error types of spans and metrics beyond a JSON-RPC code.
const (
	ErrorTool      = "tool_error" // the tool ran and reported an error
	errorTimeout   = "timeout"
	errorCancelled = "cancelled"
)

type instruments struct {
	tokens       genaiconv.ClientTokenUsage
	duration     genaiconv.ClientOperationDuration
	toolCalls    metric.Int64Counter
	toolDuration metric.Float64Histogram
	runs         metric.Int64UpDownCounter
	mcpClient    mcpconv.ClientOperationDuration
	mcpServer    mcpconv.ServerOperationDuration
}

func newInstruments(mp metric.MeterProvider) instruments {
	var m metric.Meter
	if mp != nil {
		m = mp.Meter(instrumentation)
	}
	// The constructors return a no-op instrument with their error, which only a misnamed instrument causes.
	var in instruments
	in.tokens, _ = genaiconv.NewClientTokenUsage(m)
	in.duration, _ = genaiconv.NewClientOperationDuration(m)
	in.mcpClient, _ = mcpconv.NewClientOperationDuration(m)
	in.mcpServer, _ = mcpconv.NewServerOperationDuration(m)
	if m == nil {
		m = noopMeter
	}
	in.toolCalls, _ = m.Int64Counter(MetricToolCalls, metric.WithUnit("{call}"), metric.WithDescription("Tool calls executed, by tool, source and error type."))
	in.toolDuration, _ = m.Float64Histogram(MetricToolDuration, metric.WithUnit("s"), metric.WithDescription("Duration of tool calls."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	in.runs, _ = m.Int64UpDownCounter(MetricRunsActive, metric.WithUnit("{run}"), metric.WithDescription("Runs in flight, by agent."))
	return in
}

var _ host.Observer = (*Telemetry)(nil)

// Observer returns t as a host.Observer, or nil when t is nil (off).
func (t *Telemetry) Observer() host.Observer {
	if t == nil {
		return nil
	}
	return t
}

// StartRun implements host.Observer: an invoke_agent span, and the run counted in flight.
func (t *Telemetry) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	info := describe(run.Model)
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(run.Agent),
	}
	if run.Description != "" {
		attrs = append(attrs, semconv.GenAIAgentDescription(run.Description))
	}
	if run.ConversationID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(run.ConversationID))
	}
	attrs = append(attrs, modelAttrs(info)...)
	if t.capture {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON([]llm.Message{{Role: llm.RoleUser, Content: run.Prompt}})))
	}
	ctx, span := t.tracer.Start(ctx, spanName("invoke_agent", run.Agent), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	agent := metric.WithAttributes(semconv.GenAIAgentName(run.Agent))
	t.m.runs.Add(ctx, 1, agent)
	return ctx, func(ans *host.Answer, err error) {
		t.m.runs.Add(ctx, -1, agent)
		if ans != nil {
			span.SetAttributes(
				semconv.GenAIConversationID(ans.ConversationID),
				AttrStopReason.String(string(ans.StoppedBy)),
				semconv.GenAIUsageInputTokens(int(ans.Usage.PromptTokens)),
				semconv.GenAIUsageOutputTokens(int(ans.Usage.CompletionTokens)),
			)
			if t.capture {
				span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputJSON(llm.Message{Role: llm.RoleAssistant, Content: ans.Text}, "")))
			}
			for _, c := range ans.Checks {
				label := "pass"
				if !c.Passed {
					label = "fail"
				}
				attrs := []attribute.KeyValue{semconv.GenAIEvaluationName(c.Name), semconv.GenAIEvaluationScoreLabel(label)}
				if c.Detail != "" {
					attrs = append(attrs, semconv.GenAIEvaluationExplanation(c.Detail))
				}
				span.AddEvent(EventEvaluation, trace.WithAttributes(attrs...))
			}
		}
		endSpan(span, err, "")
	}
}

// StartModelCall implements host.Observer: a chat span, and the call's duration and tokens.
func (t *Telemetry) StartModelCall(ctx context.Context, call *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	info := describe(call.Model)
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, AttrIteration.Int(call.Iteration)}
	attrs = append(attrs, modelAttrs(info)...)
	if info.Address != "" {
		attrs = append(attrs, semconv.ServerAddress(info.Address), semconv.ServerPort(info.Port))
	}
	if call.ConversationID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(call.ConversationID))
	}
	if req := call.Request; req != nil {
		if req.Temperature != nil {
			attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
		}
		if req.MaxTokens > 0 {
			attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
		}
		if t.capture {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON(req.Messages)))
			if len(req.Tools) > 0 {
				attrs = append(attrs, semconv.GenAIToolDefinitionsKey.String(toolsJSON(req.Tools)))
			}
		}
	}
	ctx, span := t.tracer.Start(ctx, spanName("chat", info.Name), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	start := time.Now()
	return ctx, func(resp *llm.Response, err error) {
		provider := genaiconv.ProviderNameAttr(providerName(info))
		mattrs := make([]attribute.KeyValue, 0, 4)
		if info.Name != "" {
			mattrs = append(mattrs, semconv.GenAIRequestModel(info.Name))
		}
		if resp != nil {
			if resp.Model != "" {
				span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
				mattrs = append(mattrs, semconv.GenAIResponseModel(resp.Model))
			}
			if resp.FinishReason != "" {
				span.SetAttributes(semconv.GenAIResponseFinishReasons(string(resp.FinishReason)))
			}
			span.SetAttributes(semconv.GenAIUsageInputTokens(int(resp.Usage.PromptTokens)), semconv.GenAIUsageOutputTokens(int(resp.Usage.CompletionTokens)))
			if t.capture {
				span.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputJSON(resp.Message, string(resp.FinishReason))))
			}
			t.m.tokens.Record(ctx, resp.Usage.PromptTokens, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeInput, mattrs...)
			t.m.tokens.Record(ctx, resp.Usage.CompletionTokens, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeOutput, mattrs...)
		}
		if et := ErrorType(err); et != "" {
			mattrs = append(mattrs, semconv.ErrorTypeKey.String(et))
		}
		t.m.duration.Record(ctx, time.Since(start).Seconds(), genaiconv.OperationNameChat, provider, mattrs...)
		endSpan(span, err, "")
	}
}

// StartToolCall implements host.Observer: an execute_tool span, and the call counted and timed.
func (t *Telemetry) StartToolCall(ctx context.Context, call *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(call.Tool),
		AttrToolSource.String(call.Source),
	}
	if call.CallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(call.CallID))
	}
	if call.ConversationID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(call.ConversationID))
	}
	if call.Description != "" {
		attrs = append(attrs, semconv.GenAIToolDescription(call.Description))
	}
	if t.capture && len(call.Arguments) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(call.Arguments)))
	}
	ctx, span := t.tracer.Start(ctx, spanName("execute_tool", call.Tool), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	start := time.Now()
	return ctx, func(res *host.Result, err error) {
		et := ErrorType(err)
		if err == nil && res != nil && res.IsError {
			et = ErrorTool
		}
		if t.capture && res != nil {
			span.SetAttributes(semconv.GenAIToolCallResultKey.String(res.Text))
		}
		if call.Tool == host.SearchToolName && call.Source == host.SearchToolSource {
			span.SetAttributes(searchAttrs(call.Arguments, res, t.capture)...)
		}
		mattrs := []attribute.KeyValue{semconv.GenAIToolName(call.Tool), AttrToolSource.String(call.Source)}
		if et != "" {
			mattrs = append(mattrs, semconv.ErrorTypeKey.String(et))
		}
		set := metric.WithAttributeSet(attribute.NewSet(mattrs...))
		t.m.toolCalls.Add(ctx, 1, set)
		t.m.toolDuration.Record(ctx, time.Since(start).Seconds(), set)
		if err == nil && et != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, firstLine(res.Text))
			span.End()
			return
		}
		endSpan(span, err, "")
	}
}

// endSpan ends span, marking it failed when err is not nil, with error.type et (or one derived from err).
func endSpan(span trace.Span, err error, et string) {
	if err != nil {
		if et == "" {
			et = ErrorType(err)
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(et))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// ErrorType is a low-cardinality name for err, for error.type: "" for nil, "timeout", "cancelled", or "_OTHER".
func ErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return errorTimeout
	case errors.Is(err, context.Canceled):
		return errorCancelled
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

func spanName(op, target string) string {
	if target == "" {
		return op
	}
	return op + " " + target
}

func describe(m llm.Model) llm.Info {
	if d, ok := m.(llm.Describer); ok {
		return d.Describe()
	}
	return llm.Info{}
}

// providerName is the gen_ai.provider.name of a model; one that does not say is "_OTHER".
func providerName(info llm.Info) string {
	if info.Provider != "" {
		return info.Provider
	}
	return "_OTHER"
}

func modelAttrs(info llm.Info) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.GenAIProviderNameKey.String(providerName(info))}
	if info.Name != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(info.Name))
	}
	return attrs
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// The message shapes of gen_ai.input.messages and gen_ai.output.messages.
type (
	chatMessage struct {
		Role         string        `json:"role"`
		Parts        []messagePart `json:"parts"`
		FinishReason string        `json:"finish_reason,omitempty"`
	}
	messagePart struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
)

func chatMessageOf(m llm.Message) chatMessage {
	cm := chatMessage{Role: string(m.Role), Parts: []messagePart{}}
	switch {
	case m.Role == llm.RoleTool:
		cm.Parts = append(cm.Parts, messagePart{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
	case m.Content != "":
		cm.Parts = append(cm.Parts, messagePart{Type: "text", Content: m.Content})
	}
	for _, c := range m.ToolCalls {
		p := messagePart{Type: "tool_call", ID: c.ID, Name: c.Name}
		if json.Valid([]byte(c.Arguments)) {
			p.Arguments = json.RawMessage(c.Arguments)
		} else if c.Arguments != "" {
			p.Arguments, _ = json.Marshal(c.Arguments)
		}
		cm.Parts = append(cm.Parts, p)
	}
	return cm
}

func messagesJSON(msgs []llm.Message) string {
	out := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = chatMessageOf(m)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func outputJSON(m llm.Message, finish string) string {
	cm := chatMessageOf(m)
	cm.FinishReason = finish
	b, _ := json.Marshal([]chatMessage{cm})
	return string(b)
}

func toolsJSON(tools []llm.ToolSpec) string {
	type def struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	out := make([]def, len(tools))
	for i, s := range tools {
		out[i] = def{Type: "function", Name: s.Name, Description: s.Description, Parameters: s.Parameters}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// searchAttrs are the attributes of a search_tools call: the names it loaded, and its query when content is captured.
func searchAttrs(args json.RawMessage, res *host.Result, capture bool) []attribute.KeyValue {
	var out []attribute.KeyValue
	var in struct {
		Query string `json:"query"`
	}
	if capture && json.Unmarshal(args, &in) == nil && in.Query != "" {
		out = append(out, AttrToolSearchQuery.String(in.Query))
	}
	if res != nil && !res.IsError {
		var loaded struct {
			Loaded []string `json:"loaded"`
		}
		if json.Unmarshal(res.Structured, &loaded) == nil {
			out = append(out, AttrToolSearchLoaded.StringSlice(loaded.Loaded))
		}
	}
	return out
}
