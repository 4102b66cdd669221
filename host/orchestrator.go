package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/internal/cite"
	"github.com/agenthost/agenthost/llm"
)

// Defaults and bounds of the loop, as DESIGN.md gives them.
const (
	DefaultMaxIterations = 10
	MaxMaxIterations     = 100
	DefaultMaxToolCalls  = 10
	DefaultToolTimeout   = 2 * time.Minute
	DefaultContextTokens = 128000
)

// CitationStyle is how the final answer writes citations.
type CitationStyle string

const (
	CitationMarkdown CitationStyle = "markdown" // [1] with a "Sources:" list
	CitationSup      CitationStyle = "sup"      // <sup>1</sup> with a "Sources:" list
	CitationNone     CitationStyle = "none"     // markers removed, no list
)

// Limits bound what one run may spend. Zero means unlimited.
type Limits struct {
	Requests    int   // model calls
	TotalTokens int64 // tokens, prompt and completion
	ToolCalls   int   // executed tool calls
}

// Options configures an Orchestrator. A nil *Options means all defaults.
type Options struct {
	// Instructions open the system prompt.
	Instructions string
	// MaxIterations bounds the loop; 0 means DefaultMaxIterations, and it is capped at MaxMaxIterations.
	MaxIterations int
	// MaxToolCalls is how many distinct tool calls run per round; 0 means DefaultMaxToolCalls.
	MaxToolCalls int
	// ToolTimeout bounds each tool call; 0 means DefaultToolTimeout.
	ToolTimeout time.Duration
	// Temperature is passed to the model; nil leaves the provider's default.
	Temperature *float64
	// MaxTokens caps each completion; 0 leaves the provider's default.
	MaxTokens int
	// CitationStyle renders the answer's citations; "" means CitationMarkdown.
	CitationStyle CitationStyle
	// Limits bound each run.
	Limits Limits
	// ContextTokens is the model's context budget in tokens, estimated from text length; 0 means
	// DefaultContextTokens.
	ContextTokens int
	// ToolSearch is when runs offer search_tools in place of many tools, and how.
	ToolSearch ToolSearchOptions
	// CodeMode offers run_code, a script that calls the run's tools.
	CodeMode CodeModeOptions
	// Conversations keeps conversations; nil means a new MemoryStore with default bounds.
	Conversations ConversationStore
	// Logger receives the run's log lines; nil discards them.
	Logger *slog.Logger
	// Name and Description name the agent to an Observer.
	Name, Description string
	// Observer watches each run, model call and tool call; nil watches nothing.
	Observer Observer
	// OutputSchema, when set, is the JSON Schema every run's answer must match, unless the request gives its own:
	// the answer is then a JSON value (Answer.Output). CompileSchema checks it and the requests' schemas.
	OutputSchema json.RawMessage
	// CompileSchema compiles output schemas; nil makes a run with an output schema fail.
	CompileSchema CompileFunc
	// OutputMode is how the model is asked for a structured answer; "" means OutputTool. Runs on the request's own
	// model (Request.Model) always use OutputTool.
	OutputMode OutputMode
	// OutputRetries is how many answers that do not match the output schema go back to the model, with what does
	// not match, before the run stops with StopInvalidOutput; 0 means DefaultOutputRetries, negative none.
	OutputRetries int
	// Checks are the evaluation checks every answer must pass (see CheckNames); the request and the tools that ran
	// may add others.
	Checks []string
	// OnCheckFailure is what a failed check does: CheckWarn (the default: it is reported) or CheckRetry (the model
	// is told what failed and answers again, once).
	OnCheckFailure CheckPolicy
	// Grader is the model of the grounded check; nil means the run's own.
	Grader llm.Model
	// ToolOutputID draws, for each run, the id of the tags that mark tool output in the model's messages (see
	// llm.WrapToolOutput): a tool cannot close them early without knowing it. nil means NewToolOutputID; tests set
	// a fixed one for golden requests.
	ToolOutputID func() string
}

// Orchestrator runs the tool-calling loop. It is safe for concurrent use: each Run is independent, except that runs
// of one conversation take turns.
type Orchestrator struct {
	model         llm.Model
	tools         *ToolManager
	opts          Options
	conversations ConversationStore
	turns         turns
	logger        *slog.Logger
	// defaultOutput compiles Options.OutputSchema, once.
	defaultOutput func() (Validator, error)
}

// New returns an Orchestrator that asks model and offers the tools of tools.
func New(model llm.Model, tools *ToolManager, opts *Options) *Orchestrator {
	o := &Orchestrator{model: model, tools: tools}
	if opts != nil {
		o.opts = *opts
	}
	if o.opts.MaxIterations <= 0 {
		o.opts.MaxIterations = DefaultMaxIterations
	}
	o.opts.MaxIterations = min(o.opts.MaxIterations, MaxMaxIterations)
	if o.opts.MaxToolCalls <= 0 {
		o.opts.MaxToolCalls = DefaultMaxToolCalls
	}
	if o.opts.ToolTimeout <= 0 {
		o.opts.ToolTimeout = DefaultToolTimeout
	}
	if o.opts.ContextTokens <= 0 {
		o.opts.ContextTokens = DefaultContextTokens
	}
	if o.opts.CitationStyle == "" {
		o.opts.CitationStyle = CitationMarkdown
	}
	switch {
	case o.opts.OutputRetries == 0:
		o.opts.OutputRetries = DefaultOutputRetries
	case o.opts.OutputRetries < 0:
		o.opts.OutputRetries = 0
	}
	o.conversations = o.opts.Conversations
	if o.conversations == nil {
		o.conversations = NewMemoryStore(nil)
	}
	o.defaultOutput = sync.OnceValues(func() (Validator, error) {
		if o.opts.CompileSchema == nil {
			return nil, errNoCompiler
		}
		return o.opts.CompileSchema(o.opts.OutputSchema)
	})
	o.logger = o.opts.Logger
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Tools returns the orchestrator's ToolManager.
func (o *Orchestrator) Tools() *ToolManager { return o.tools }

// Conversations returns the orchestrator's conversation store.
func (o *Orchestrator) Conversations() ConversationStore { return o.conversations }

// Request is one run's input.
type Request struct {
	Prompt string
	// ConversationID continues a conversation; empty starts a new one.
	ConversationID string
	// StartConversation makes an unknown ConversationID start a new conversation under that id, instead of failing
	// with ErrUnknownConversation: for front-ends whose callers choose the ids (an A2A contextId).
	StartConversation bool
	Selection
	// Interactor is asked for approvals and input during the run; nil means nobody can be asked.
	Interactor Interactor
	// Model, when set, replaces the orchestrator's model for this run: the calling MCP client's own model, reached
	// through sampling, for example.
	Model llm.Model
	// Steps runs the run's steps; nil means DirectSteps. A durable runner makes the run resumable after a crash.
	Steps StepRunner
	// OutputSchema, when set, is the JSON Schema this run's answer must match, instead of Options.OutputSchema.
	OutputSchema json.RawMessage
	// Checks are evaluation checks this run's answer must pass, besides Options.Checks.
	Checks []string
	// Tag is opaque to the orchestrator: it names the front end's own object behind the run (an A2A task), for a
	// durable runner, which hands it back to the front end when it resumes the run after a crash.
	Tag string

	// nested marks the run of a sub-agent (see SubAgents): its answer cites in the keyword style, so the calling
	// run can renumber the citations into its own sources, and keeps the cited references' excerpts.
	nested bool
}

// RunFunc runs a request as Orchestrator.Run does: the orchestrator's own Run, or a durable engine's, which runs it
// as a workflow that survives a crash.
type RunFunc func(ctx context.Context, req *Request) iter.Seq2[*Event, error]

// Run runs the loop for req and returns its events. The last event of a run that ends with an answer has Kind
// EventAnswer. A run that cannot start (bad request, unknown conversation) yields only an error. A run that fails
// (the model keeps failing) or is cancelled yields its partial answer (StoppedBy StopError or StopCancelled, with the
// debug info of what ran) and then the error, which for cancellation wraps ctx.Err(). Stopping the iteration early
// cancels the run and waits for it to end.
//
// The loop runs on the consumer's goroutine: events are handed over without a goroutine switch, and the consumer
// sees them one at a time, in order.
func (o *Orchestrator) Run(ctx context.Context, req *Request) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		r := &run{o: o, req: req, steps: req.Steps, outputID: o.newToolOutputID()}
		if r.steps == nil {
			r.steps = DirectSteps{}
		}
		r.emit = func(ev *Event) {
			if !stopped && !yield(ev, nil) {
				stopped = true
				cancel() // the run unwinds promptly; its remaining events are dropped
			}
		}
		var observed func(*Answer, error)
		if obs := o.opts.Observer; obs != nil {
			ctx, observed = obs.StartRun(ctx, &RunStart{Agent: o.opts.Name, Description: o.opts.Description,
				ConversationID: req.ConversationID, Prompt: req.Prompt, Model: r.model(), Origin: Origin(ctx)})
			if eo, ok := obs.(EventObserver); ok {
				runCtx, emit := ctx, r.emit
				r.emit = func(ev *Event) {
					eo.ObserveEvent(runCtx, ev)
					emit(ev)
				}
			}
		}
		ans, err := r.run(ctx)
		if observed != nil {
			observed(ans, err)
		}
		if stopped {
			return
		}
		if ans != nil && !yield(&Event{Kind: EventAnswer, Iteration: r.iteration, Answer: ans}, nil) {
			return
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// Ask runs req to the end, handing each event to onEvent (when not nil), and returns the answer. On error the
// partial answer, if any, is returned with it.
func (o *Orchestrator) Ask(ctx context.Context, req *Request, onEvent func(*Event)) (*Answer, error) {
	var ans *Answer
	for ev, err := range o.Run(ctx, req) {
		if err != nil {
			return ans, err
		}
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Kind == EventAnswer {
			ans = ev.Answer
		}
	}
	return ans, nil
}

// run is the state of one Run. Only the run goroutine touches it, except where noted.
type run struct {
	o     *Orchestrator
	req   *Request
	steps StepRunner
	emit  func(*Event) // only on the run's goroutine; tools report progress through their round (see execute)

	convID    string
	past      []llm.Message // the conversation before this run
	sources   []Reference   // every reference shown to the model in the conversation; source N is sources[N-1]
	loaded    int           // how many of sources the conversation had before this run
	messages  []llm.Message // this run's messages, user prompt first
	iteration int
	usage     llm.Usage
	executed  int         // tool calls executed, for Limits.ToolCalls
	used      []string    // tools used so far, in first-use order, for format prompts
	lastText  string      // the latest text the model wrote, for answers cut short
	stream    *citeStream // renders the current model call's text as it streams; nil when not streamed
	infos     []IterationInfo
	calls     []ToolCallInfo
	truncated map[string]bool // tool call ids whose results were shortened to fit the context budget
	output    *output         // the answer's schema; nil for a plain answer
	checks    checkSet        // the checks the answer must pass
	retried   bool            // the model answered again after failed checks
	takerText string          // the answer of a takes_control tool, its citations in the run's source numbers
	outputID  string          // the id of the tags around tool output in this run's model requests
	search    *bool           // whether the run offers search_tools; decided with its first offer
	// toolsLoaded are the tools that searches loaded in the conversation, in load order: the conversation's first
	// (convTools of them), then this run's.
	toolsLoaded []string
	convTools   int
}

func (r *run) run(ctx context.Context) (*Answer, error) {
	o := r.o
	if strings.TrimSpace(r.req.Prompt) == "" {
		return nil, fmt.Errorf("%w: the prompt is empty", ErrInvalidRequest)
	}
	tools := o.tools.currentTools(ctx)
	if err := checkSelection(tools, r.req.Selection); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	var err error
	if r.output, err = r.newOutput(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	for _, c := range r.req.Checks {
		if !ValidCheck(c) {
			return nil, fmt.Errorf("%w: unknown check %q: the checks are %s", ErrInvalidRequest, c, strings.Join(CheckNames, ", "))
		}
	}
	if !r.req.nested { // a sub-agent's answer is checked as part of the answer it serves
		r.checks.add(o.opts.Checks...)
		r.checks.add(r.req.Checks...)
	}
	conv, done, err := o.open(ctx, r.req, r.steps)
	if err != nil {
		return nil, err
	}
	defer done()
	r.convID, r.past, r.sources, r.loaded = conv.ID, conv.Messages, conv.Sources, len(conv.Sources)
	r.toolsLoaded, r.convTools = slices.Clone(conv.Tools), len(conv.Tools)
	r.messages = []llm.Message{{Role: llm.RoleUser, Content: r.req.Prompt}}

	ans, err := r.loop(ctx, tools)
	switch {
	case ans != nil || err == nil:
	case ctx.Err() != nil:
		ans = r.stop(StopCancelled, "The request was cancelled before an answer was ready.")
		err = fmt.Errorf("run cancelled: %w", context.Cause(ctx))
	default:
		// The model failed for good: the partial answer keeps the debug info of what did run.
		ans = r.stop(StopError, "The run failed: "+err.Error())
	}
	if ans != nil && ans.Checks == nil && len(r.checks) > 0 && ans.StoppedBy != StopCancelled && ans.StoppedBy != StopError {
		raw := r.lastText // what the model wrote last, for a run that stopped
		if ans.StoppedBy == StopToolControl {
			raw = r.takerText
		}
		ans.Checks = r.evaluate(ctx, ans, raw) // an answer the checks did not see yet: no retry
	}
	if ans != nil {
		ans.ConversationID = conv.ID
		ans.Usage = r.usage
		ans.Iterations = r.infos
		for i := range r.calls {
			r.calls[i].Truncated = r.truncated[r.calls[i].ID]
		}
		ans.ToolCalls = r.calls
		// The conversation keeps what the user saw, so a follow-up reads the same answer.
		r.messages = append(r.messages, llm.Message{Role: llm.RoleAssistant, Content: ans.Text})
	}
	if ans != nil || len(r.messages) > 1 {
		r.save(ctx)
	}
	return ans, err
}

// open returns the conversation of req, its turn taken, and the function that ends the turn: a new conversation
// when req names none, or when it names one the store does not have and StartConversation is set. Creating and
// loading are steps: a resumed run reads the conversation as it was when the run started.
func (o *Orchestrator) open(ctx context.Context, req *Request, steps StepRunner) (*Conversation, func(), error) {
	id := req.ConversationID
	if id == "" {
		id, err := stepJSON(ctx, steps, "create conversation", func(ctx context.Context) (string, error) {
			return o.conversations.Create(ctx, "")
		})
		if err != nil {
			return nil, nil, fmt.Errorf("starting a conversation: %w", err)
		}
		done, err := o.turns.take(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		return &Conversation{ID: id}, done, nil
	}
	done, err := o.turns.take(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	conv, err := stepJSON(ctx, steps, "load conversation", func(ctx context.Context) (*Conversation, error) {
		conv, err := o.conversations.Load(ctx, id)
		if errors.Is(err, ErrUnknownConversation) && req.StartConversation {
			if _, err = o.conversations.Create(ctx, id); err == nil {
				return &Conversation{ID: id}, nil
			} else if errors.Is(err, ErrConversationExists) { // started at the same moment elsewhere
				return o.conversations.Load(ctx, id)
			}
		}
		return conv, err
	})
	if err != nil {
		done()
		return nil, nil, err
	}
	return conv, done, nil
}

// saveTimeout bounds saving a run's messages, which happens also when the run was cancelled.
const saveTimeout = 30 * time.Second

// save appends the run's messages and new sources to its conversation. A failure is logged: the caller has the
// answer, and the conversation stays as it was (or as the run that won a conflict left it).
func (r *run) save(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	_, err := stepJSON(ctx, r.steps, "save conversation", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.o.conversations.Append(ctx, r.convID, len(r.past), r.messages, r.sources[r.loaded:], r.toolsLoaded[r.convTools:])
	})
	if err != nil {
		r.o.logger.Error("the run's messages were not saved in its conversation", "conversation", r.convID, "err", err)
	}
}

// loop runs the iterations. It returns the answer, or an error when the run cannot go on.
func (r *run) loop(ctx context.Context, tools []*ManagedTool) (*Answer, error) {
	o := r.o
	last := o.opts.MaxIterations - 1
	if err := r.decideSearch(ctx, tools); err != nil {
		return nil, err
	}
	var off *offer
	for i := 0; i <= last; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.iteration = i
		r.emit(&Event{Kind: EventIteration, Iteration: i})
		if i > 0 {
			if now := o.tools.currentTools(ctx); !slices.Equal(now, tools) { // a source's list changed
				tools, off = now, nil
			}
		}
		if off == nil {
			off = r.offer(tools)
		}
		info := IterationInfo{Iteration: i, Mode: "auto", ToolsOffered: len(off.tools), ToolSearch: *r.search, ToolsDeferred: len(off.deferred)}
		forced := i == 0 && len(off.forced) > 0 && i != last
		switch {
		case i == last:
			info.Mode, info.ToolsOffered = "final", 0
		case forced:
			info.Mode = "forced"
		}
		calls := 1
		if forced {
			calls = len(off.forced)
		}
		if reason := r.overModelLimits(calls); reason != "" {
			info.Note = reason
			r.infos = append(r.infos, info)
			return r.stop(StopUsageLimit, "The run stopped: "+reason+"."), nil
		}

		start := time.Now()
		req := r.request(off, info.Mode == "final", &info)
		var resp *llm.Response
		var err error
		r.stream = nil
		if forced {
			resp, err = r.generateForced(ctx, i, req, off.forced)
		} else {
			var onDelta func(llm.Delta)
			if r.output == nil { // a structured answer is shown once, when it validated (see structured)
				r.stream = newCiteStream(r.citeSources, r.citationStyle())
				onDelta = func(d llm.Delta) {
					if out := r.stream.write(d.Text); out != "" {
						r.emit(&Event{Kind: EventTextDelta, Iteration: i, Text: out})
					}
				}
			}
			resp, err = stepJSON(ctx, r.steps, fmt.Sprintf("iteration %d: model call", i), func(ctx context.Context) (*llm.Response, error) {
				return r.generate(ctx, i, req, onDelta)
			})
		}
		info.ModelCalls = calls
		info.Duration = time.Since(start)
		if err != nil {
			info.Note = "model error: " + err.Error()
			r.infos = append(r.infos, info)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		info.Usage = resp.Usage
		info.FinishReason = resp.FinishReason
		r.usage.Add(resp.Usage)
		text := resp.Message.Content
		if strings.TrimSpace(text) != "" {
			r.lastText = text
		}
		toolCalls := resp.Message.ToolCalls
		if info.Mode == "final" && len(toolCalls) > 0 {
			// No tools were offered, but final_answer; a model that calls another anyway is not obeyed.
			kept := slices.DeleteFunc(slices.Clone(toolCalls), func(c llm.ToolCall) bool { return r.output == nil || r.output.tool == nil || c.Name != OutputToolName })
			if n := len(toolCalls) - len(kept); n > 0 {
				info.Note = fmt.Sprintf("ignored %d tool calls on the final iteration", n)
			}
			toolCalls = kept
		}
		info.ToolCalls = len(toolCalls)
		if len(toolCalls) == 0 {
			r.infos = append(r.infos, info)
			if strings.TrimSpace(text) == "" {
				if i == last && len(resp.Message.ToolCalls) > 0 {
					break
				}
				r.infos[len(r.infos)-1].Note = "the model produced no output"
				return r.stop(StopNoOutput, "The model produced no output."), nil
			}
			if r.output == nil {
				if ans := r.checked(ctx, r.answer(text), text, i == last); ans != nil {
					return ans, nil
				}
				continue
			}
			value, problem := r.output.fromText(text)
			if problem == nil {
				if ans := r.checked(ctx, r.structured(value), string(value), i == last); ans != nil {
					return ans, nil
				}
				continue
			}
			// The answer goes back to the model with what is wrong with it.
			r.infos[len(r.infos)-1].Note = "the answer does not match the output schema: " + problem.Error()
			if why := r.output.retry(o.opts.OutputRetries, problem); why != "" {
				return r.stop(StopInvalidOutput, "The run stopped: "+why+"."), nil
			}
			r.messages = append(r.messages, llm.Message{Role: llm.RoleAssistant, Content: text},
				llm.Message{Role: llm.RoleUser, Content: r.output.feedback(problem)})
			continue
		}

		before, loadedBefore := len(r.calls), len(r.toolsLoaded)
		taker, err := r.round(ctx, i, off, resp.Message, toolCalls)
		if len(r.toolsLoaded) > loadedBefore { // offered from the next request on
			info.ToolsLoaded, off = slices.Clone(r.toolsLoaded[loadedBefore:]), nil
		}
		r.infos = append(r.infos, info)
		if err != nil {
			return nil, err
		}
		if r.output != nil && r.output.tool != nil {
			if taker != nil && taker.tool == r.output.tool {
				value := taker.result.Structured
				if ans := r.checked(ctx, r.structured(value), string(value), i == last); ans != nil {
					return ans, nil
				}
				continue
			}
			for _, c := range r.calls[before:] {
				if c.Name == OutputToolName && !c.OK && !c.Duplicate {
					if why := r.output.retry(o.opts.OutputRetries, errors.New(c.Error)); why != "" {
						return r.stop(StopInvalidOutput, "The run stopped: "+why+"."), nil
					}
				}
			}
		}
		if taker != nil {
			return r.tookControl(taker), nil
		}
		if reason := r.overToolLimit(); reason != "" {
			r.infos[len(r.infos)-1].Note = reason
			return r.stop(StopUsageLimit, "The run stopped: "+reason+"."), nil
		}
	}
	return r.stop(StopIterationLimit, fmt.Sprintf("The run stopped at its limit of %d iterations before the model gave an answer.", o.opts.MaxIterations)), nil
}

// model is the model of this run: the request's, else the orchestrator's.
func (r *run) model() llm.Model {
	if r.req.Model != nil {
		return r.req.Model
	}
	return r.o.model
}

// generate calls the run's model, observed when the orchestrator has an Observer.
func (r *run) generate(ctx context.Context, iter int, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	return r.generateWith(ctx, r.model(), iter, req, onDelta)
}

// generateWith calls m, observed when the orchestrator has an Observer.
func (r *run) generateWith(ctx context.Context, m llm.Model, iter int, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	obs := r.o.opts.Observer
	if obs == nil {
		return m.Generate(ctx, req, onDelta)
	}
	ctx, end := obs.StartModelCall(ctx, &ModelCallStart{Agent: r.o.opts.Name, ConversationID: r.convID, Iteration: iter, Model: m, Request: req})
	resp, err := m.Generate(ctx, req, onDelta)
	end(resp, err)
	return resp, err
}

// checked runs the evaluation checks on ans, whose raw text (citations unrendered) is raw, and returns it with
// their outcomes. When one failed and the policy says retry, it returns nil instead, once per run and not on the
// last iteration: the model is told what failed, to answer again.
func (r *run) checked(ctx context.Context, ans *Answer, raw string, last bool) *Answer {
	if len(r.checks) == 0 {
		return ans
	}
	ans.Checks = r.evaluate(ctx, ans, raw)
	var failed []string
	for _, c := range ans.Checks {
		if !c.Passed {
			failed = append(failed, fmt.Sprintf("- %s: %s", c.Name, c.Detail))
		}
	}
	if len(failed) == 0 || r.o.opts.OnCheckFailure != CheckRetry || r.retried || last || ctx.Err() != nil {
		return ans
	}
	r.retried = true
	r.infos[len(r.infos)-1].Note = "the answer failed checks and went back to the model"
	r.messages = append(r.messages, llm.Message{Role: llm.RoleAssistant, Content: raw},
		llm.Message{Role: llm.RoleUser, Content: "Your answer failed these checks:\n" + strings.Join(failed, "\n") + "\nAnswer again, fixing them."})
	return nil
}

// overModelLimits returns why calling the model n more times would break the run's limits, or "".
func (r *run) overModelLimits(n int) string {
	l := r.o.opts.Limits
	if l.Requests > 0 && r.usage.Requests+n > l.Requests {
		return fmt.Sprintf("the limit of %d model requests per run was reached", l.Requests)
	}
	if l.TotalTokens > 0 && r.usage.TotalTokens >= l.TotalTokens {
		return fmt.Sprintf("the limit of %d tokens per run was reached (%d used)", l.TotalTokens, r.usage.TotalTokens)
	}
	return ""
}

// overToolLimit returns why the run may execute no more tool calls, or "".
func (r *run) overToolLimit() string {
	if l := r.o.opts.Limits.ToolCalls; l > 0 && r.executed >= l {
		return fmt.Sprintf("the limit of %d tool calls per run was reached", l)
	}
	return ""
}

// request composes the model request for one iteration.
func (r *run) request(off *offer, final bool, info *IterationInfo) *llm.Request {
	o := r.o
	system := r.systemPrompt(off)
	req := &llm.Request{Temperature: o.opts.Temperature, MaxTokens: o.opts.MaxTokens}
	if !final && len(off.specs) > 0 {
		req.Tools = off.specs
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceAuto}
	}
	if out := r.output; out != nil {
		switch {
		case out.mode == OutputNative:
			req.Output = &llm.OutputFormat{Name: "answer", Schema: out.params}
		case final: // the last iteration offers final_answer alone, and asks for it
			req.Tools = []llm.ToolSpec{{Name: out.tool.Spec.Name, Description: out.tool.Spec.Description, Parameters: out.params}}
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: OutputToolName}
		}
	}
	msgs, dropped, cut := fitBudget(system, r.past, r.messages, r.budget(req.Tools))
	delimitToolOutput(msgs, r.outputID)
	req.Messages = msgs
	info.DroppedMessages, info.TruncatedResults = dropped, len(cut)
	for _, id := range cut {
		if r.truncated == nil {
			r.truncated = map[string]bool{}
		}
		r.truncated[id] = true
	}
	return req
}

// generateForced makes one model call per forced tool, concurrently, each naming its tool, and merges them: tool
// calls in forced order, usage summed, the first response's text kept. One failure cancels the others.
func (r *run) generateForced(ctx context.Context, iter int, base *llm.Request, forced []*ManagedTool) (*llm.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	waits := make([]func() (*llm.Response, error), len(forced))
	for i, t := range forced {
		name := fmt.Sprintf("iteration %d: model call forcing %s", iter, t.Spec.Name)
		waits[i] = goJSON(ctx, r.steps, name, func(ctx context.Context) (*llm.Response, error) {
			req := *base
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: t.Spec.Name}
			resp, err := r.generate(ctx, iter, &req, nil)
			if err != nil {
				// The first failure is the cause; the others only saw its cancellation.
				cancel(fmt.Errorf("forced call of %s: %w", t.Spec.Name, err))
			}
			return resp, err
		})
	}
	resps := make([]*llm.Response, len(forced))
	var errs []error
	for i, wait := range waits {
		var err error
		if resps[i], err = wait(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if len(errs) > 0 { // recorded failures, read back in a resumed run
		return nil, errs[0]
	}
	merged := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: resps[0].Message.Content}, FinishReason: resps[0].FinishReason, Model: resps[0].Model}
	for _, resp := range resps {
		merged.Usage.Add(resp.Usage)
		merged.Message.ToolCalls = append(merged.Message.ToolCalls, resp.Message.ToolCalls...)
	}
	if len(merged.Message.ToolCalls) > 0 {
		merged.FinishReason = llm.FinishToolCalls
	}
	return merged, nil
}

// answer finishes a run with the model's text, its citations rendered.
func (r *run) answer(text string) *Answer {
	rendered, refs := cite.Render(text, r.citeSources(), cite.Style(r.citationStyle()))
	// Complete the stream, so that the text deltas of the answering iteration add up to the answer.
	emitted := ""
	if r.stream != nil {
		emitted = r.stream.emitted
	}
	if rest, ok := strings.CutPrefix(rendered, emitted); ok && rest != "" {
		r.emit(&Event{Kind: EventTextDelta, Iteration: r.iteration, Text: rest})
	}
	ans := &Answer{Text: rendered, References: numbered(refs), StoppedBy: StopAnswered}
	if r.req.nested {
		for _, ref := range refs {
			src := r.sources[ref.Sources[0]-1] // sources are numbered from 1 in order
			ans.cited = append(ans.cited, Reference{Title: ref.Title, URI: ref.URI, Content: src.Content})
		}
	}
	return ans
}

// citationStyle is the style of this run's answer: the keyword style for a nested run, else the configured one.
func (r *run) citationStyle() CitationStyle {
	if r.req.nested {
		return CitationStyle(cite.StyleKeyword)
	}
	return r.o.opts.CitationStyle
}

// stop finishes a run that ended without a proper answer: the latest text the model wrote, if any, then why.
func (r *run) stop(reason StopReason, why string) *Answer {
	if r.lastText == "" {
		return &Answer{Text: why, StoppedBy: reason, References: []NumberedReference{}}
	}
	ans := r.answer(r.lastText)
	ans.Text = strings.TrimRight(ans.Text, "\n") + "\n\n" + why
	ans.StoppedBy = reason
	return ans
}

// tookControl finishes a run whose takes_control tool ran: its result is the answer. The answer of a sub-agent is
// rendered like the run's own, its citations being already this run's source numbers.
func (r *run) tookControl(s *slot) *Answer {
	r.takerText = s.text
	res := s.result
	if res != nil && res.nested != nil && !res.nested.plain {
		ans := r.answer(s.text)
		ans.StoppedBy, ans.Result = StopToolControl, res
		return ans
	}
	if res == nil {
		res = &Result{Text: s.content, IsError: true}
	}
	text := res.Text
	if text == "" {
		text = s.content
	}
	refs := []NumberedReference{}
	seen := map[string]bool{}
	for _, ref := range res.References {
		key := ref.URI
		if key == "" {
			key = "title:" + ref.Title
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		refs = append(refs, NumberedReference{Number: len(refs) + 1, Title: ref.Title, URI: ref.URI})
	}
	return &Answer{Text: text, References: refs, StoppedBy: StopToolControl, Result: res}
}

func (r *run) citeSources() []cite.Source {
	out := make([]cite.Source, len(r.sources))
	for i, s := range r.sources {
		out[i] = cite.Source{Number: i + 1, Title: s.Title, URI: s.URI}
	}
	return out
}

func numbered(refs []cite.Ref) []NumberedReference {
	out := make([]NumberedReference, len(refs))
	for i, ref := range refs {
		out[i] = NumberedReference{Number: ref.Number, Title: ref.Title, URI: ref.URI}
	}
	return out
}
