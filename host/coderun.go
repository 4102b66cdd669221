package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// This file is run_code in the loop: the tool offered when Options.CodeMode has a Runner, and the ToolCaller through
// which a script's calls are made as the model's are.
//
// Which tools a script may call: CodeModeOptions.Tools when set, else every tool the run may offer (newOffer's set,
// the caller's selection applied), but tools that take control (their result would be the answer, which a script
// cannot hand over). With tool search on, a script may call every tool the run may offer, loaded or not, and
// run_code's description declares only the offered ones, with a line saying that search_tools finds the others.
//
// Limits: each call from a script counts toward Limits.ToolCalls; the per-round cap (Options.MaxToolCalls) does not
// apply to them, the runner's own cap of calls per script does. Each call has Options.ToolTimeout; the script as a
// whole is a tool call of the round, under the same timeout.
//
// Durability: run_code is not a step itself; each call it makes is, named after its parent call and its number in
// the script ("iteration 2: code call get_weather (c1/3)"), and so is each approval. A run resumed mid-script runs
// the script again from its start, and the calls it makes again get their recorded outcomes instead of running. This
// holds because the script makes its calls in the same order: calls are numbered, and their steps started (with
// StepRunner.Go, from the script's goroutine), in the order StartTool is entered, which a runner keeps to the
// script's order (see ToolCaller), however the calls' executions interleave and in whatever order they finish. Two run_code calls of one round number their steps in the order
// their calls happen to come, so such a round may not replay.

// CodeToolSource is the Source of a run's run_code, in debug info and to an Observer.
const CodeToolSource = "code"

// codeInput is run_code's input schema.
var codeInput = json.RawMessage(`{"type":"object","properties":{` +
	`"code":{"type":"string","description":"The program to run: it calls the tools and returns what you need of their results."}},` +
	`"required":["code"],"additionalProperties":false}`)

// codeTool is run_code in one offer.
type codeTool struct {
	spec ToolSpec
	// tools are the tools a script may call, by name; all are the run's tools, to say why another may not be.
	tools map[string]*ManagedTool
	all   []*ManagedTool
	sel   Selection
}

func (t *codeTool) Spec() ToolSpec { return t.spec }

// Call runs the script. call must come from a round (execute gives it its scope): outside a run there is no one to
// make the script's calls.
func (t *codeTool) Call(ctx context.Context, args json.RawMessage, call *Call) (*Result, error) {
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return &Result{Text: fmt.Sprintf("the arguments of %s cannot be read: %v", CodeToolName, err), IsError: true}, nil
	}
	if call == nil || call.code == nil {
		return nil, errors.New("run_code runs only inside a run")
	}
	sc := call.code
	res, err := sc.r.o.opts.CodeMode.Runner.Run(ctx, in.Code, sc)
	if err != nil {
		return nil, fmt.Errorf("running the code: %w", err)
	}
	if res == nil {
		res = &Result{}
	}
	// The references the script's calls returned are numbered in the run as this call's, in the order of the calls,
	// so the model can cite what the script read; a sub-agent's usage adds to the run's.
	refs, usage := sc.collected()
	out := *res
	out.References = append(slices.Clone(res.References), refs...)
	out.nested = &nestedResult{usage: usage, plain: true}
	return &out, nil
}

// isCodeTool reports whether t is a run's run_code.
func isCodeTool(t *ManagedTool) bool {
	_, ok := t.Tool.(*codeTool)
	return ok
}

// codeOn reports whether a run offering base offers run_code: a Runner is set, no tool of the run is named run_code
// (offering both would give the model two tools of one name), no exclusive tool is offered (it is the only tool that
// may run), and a script would have a tool to call.
func (r *run) codeOn(base *offer) bool {
	return r.o.opts.CodeMode.Runner != nil && base.byName[CodeToolName] == nil &&
		!slices.ContainsFunc(base.tools, func(t *ManagedTool) bool { return t.Policy.Exclusive }) &&
		len(r.scriptTools(base)) > 0
}

// scriptTools are the tools of base a script may call, in base's order.
func (r *run) scriptTools(base *offer) []*ManagedTool {
	names := r.o.opts.CodeMode.Tools
	var out []*ManagedTool
	for _, t := range base.tools {
		if t.Policy.TakesControl || t.Spec.Name == SearchToolName || t.Spec.Name == OutputToolName {
			continue
		}
		if len(names) > 0 && !slices.Contains(names, t.Spec.Name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// newCodeTool returns run_code for a run offering base, whose script declarations are of declared (offered tools).
// searching says that search_tools finds more.
func (r *run) newCodeTool(base *offer, all []*ManagedTool, declared []*ManagedTool, searching bool) *ManagedTool {
	callable := r.scriptTools(base)
	ct := &codeTool{tools: make(map[string]*ManagedTool, len(callable)), all: all, sel: r.req.Selection}
	for _, t := range callable {
		ct.tools[t.Spec.Name] = t
	}
	var described []*ManagedTool
	for _, t := range declared {
		if ct.tools[t.Spec.Name] == t {
			described = append(described, t)
		}
	}
	desc := r.o.opts.CodeMode.Runner.Describe(described)
	if searching && len(described) < len(callable) {
		desc += fmt.Sprintf("\n\nThe code may also call tools not declared here: %s finds them and says what they take; call them by name.", SearchToolName)
	}
	ct.spec = ToolSpec{Name: CodeToolName, Description: desc, InputSchema: codeInput}
	return &ManagedTool{Tool: ct, Spec: ct.spec, Source: CodeToolSource}
}

// withTool returns off with t appended to the tools offered.
func (o *offer) withTool(t *ManagedTool) *offer {
	out := &offer{tools: append(o.tools[:len(o.tools):len(o.tools)], t), forced: o.forced, deferred: o.deferred,
		specs:  append(o.specs[:len(o.specs):len(o.specs)], llm.ToolSpec{Name: t.Spec.Name, Description: t.Spec.Description, Parameters: t.Spec.InputSchema}),
		byName: make(map[string]*ManagedTool, len(o.byName)+1)}
	for k, v := range o.byName {
		out.byName[k] = v
	}
	out.byName[t.Spec.Name] = t
	return out
}

// codeRound is what the run_code calls of one round share: the count of executed calls for Limits.ToolCalls, and
// the turn to ask approvals, one question at a time.
type codeRound struct {
	mu       sync.Mutex
	executed int
	limit    int
	// starting is held while a script of the round starts a step (a call, or an approval while the user decides):
	// the durable step runner takes its steps' numbers from one goroutine at a time, and the questions go to the
	// user one at a time, as the round asks the model's. Between the scripts of one round, the order of their steps
	// is the order they reach it: such a round may not replay after a crash.
	starting sync.Mutex
}

// codeScope is one run_code call's ToolCaller: the script's calls, made as the round makes the model's.
type codeScope struct {
	r      *run // only what does not change during a round is read: o, steps, convID, req
	tool   *codeTool
	iter   int
	parent string // run_code's call id
	relay  *progressRelay
	round  *codeRound
	call   *Call // run_code's own Call, for the interactor and the model

	mu    sync.Mutex
	seq   int
	byKey map[string]*nestedCall
	calls []*nestedCall // in the order the script made them
}

var _ ToolCaller = (*codeScope)(nil)

// nestedCall is one call of a script.
type nestedCall struct {
	done    chan struct{} // closed when res, err and info are set
	res     *Result
	err     error
	info    ToolCallInfo
	primary bool // it ran (or was refused) itself, not answered with an identical call's outcome
	tool    *ManagedTool
}

// StartTool implements ToolCaller. What decides a call's fate in the script's order happens here, on the script's
// goroutine: its number, the checks, the lookup of an identical call, the run's limit and the approval step. The
// call itself is started as a step with the run's StepRunner.Go, so that a durable runner sees the steps of a script
// started in its order from one goroutine, as the round starts the model's parallel calls; its outcome is awaited on
// a goroutine of its own, which ends it (and closes done) whether or not the script waits.
func (sc *codeScope) StartTool(ctx context.Context, name string, args json.RawMessage) func() (*Result, error) {
	if err := ctx.Err(); err != nil {
		return func() (*Result, error) { return nil, err } // the script was stopped: no call starts
	}
	sc.mu.Lock()
	sc.seq++
	nc := &nestedCall{done: make(chan struct{}), info: ToolCallInfo{ID: fmt.Sprintf("%s/%d", sc.parent, sc.seq), Name: name, Iteration: sc.iter, Parent: sc.parent}}
	sc.calls = append(sc.calls, nc)
	sc.mu.Unlock()
	wait := func() (*Result, error) {
		<-nc.done
		return nc.res, nc.err
	}

	t, argsOK, key, problem := sc.check(name, args)
	if t != nil {
		nc.tool = t
		nc.info.Source, nc.info.Flags = t.Source, t.Policy.Flags()
	}
	if problem != "" {
		nc.info.NotRun = problem
		nc.fail(errors.New(problem))
		close(nc.done)
		return wait
	}
	sc.mu.Lock()
	first, dup := sc.byKey[key]
	if !dup {
		sc.byKey[key] = nc
	}
	sc.mu.Unlock()
	if dup {
		nc.info.Duplicate = true
		go func() {
			defer close(nc.done)
			select {
			case <-first.done:
			case <-ctx.Done():
				nc.fail(ctx.Err())
				return
			}
			nc.res, nc.err = first.res, first.err
			nc.info.OK, nc.info.Error, nc.info.Bytes = first.info.OK, first.info.Error, first.info.Bytes
		}()
		return wait
	}
	nc.primary = true
	if finish := sc.start(ctx, nc, t, argsOK); finish != nil {
		go func() {
			defer close(nc.done)
			finish()
		}()
	} else {
		close(nc.done)
	}
	return wait
}

// fail ends nc with err, which the script sees.
func (nc *nestedCall) fail(err error) {
	nc.err = err
	nc.info.Error = err.Error()
}

// check finds the tool and checks the arguments as the round checks the model's: it returns the tool, the
// arguments as a JSON object, the key under which identical calls are one, and the problem that keeps the call from
// running, if any.
func (sc *codeScope) check(name string, args json.RawMessage) (*ManagedTool, json.RawMessage, string, string) {
	t, ok := sc.tool.tools[name]
	if !ok {
		return nil, nil, "", sc.refusal(name)
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	parsed, obj, err := parseArguments(string(args))
	if err != nil {
		return t, nil, "", fmt.Sprintf("the arguments of %s are not valid: %v", name, err)
	}
	if problems := validateArguments(sc.r.o.tools.schemas.get(t.Spec.InputSchema), obj); len(problems) > 0 {
		return t, nil, "", fmt.Sprintf("the arguments of %s do not match its schema: %s", name, strings.Join(problems, "; "))
	}
	key := name + "\x00" + string(parsed)
	if canon, err := canonicalValue(obj); err == nil {
		key = name + "\x00" + canon
	}
	return t, parsed, key, ""
}

// refusal says why the script may not call name.
func (sc *codeScope) refusal(name string) string {
	i := slices.IndexFunc(sc.tool.all, func(t *ManagedTool) bool { return t.Spec.Name == name })
	switch {
	case name == CodeToolName || name == SearchToolName || name == OutputToolName:
		return fmt.Sprintf("%s cannot be called from code", name)
	case i < 0:
		return fmt.Sprintf("unknown tool %q", name)
	case sc.tool.all[i].Policy.Disabled:
		return fmt.Sprintf("tool %q is disabled by the configuration", name)
	case slices.Contains(sc.tool.sel.DisabledTools, name):
		return fmt.Sprintf("tool %q is disabled for this request", name)
	case sc.tool.all[i].Policy.TakesControl:
		return fmt.Sprintf("%s hands the conversation over, so it cannot be called from code: call it directly", name)
	}
	return fmt.Sprintf("tool %q may not be called from code in this run", name)
}

// start makes nc, a call of t that is not a duplicate: the run's tool-call limit and approval, on the caller's
// goroutine, then the call started as a step. It returns the function that awaits the step and sets nc's outcome, or
// nil when the call does not run (nc's outcome is then set).
func (sc *codeScope) start(ctx context.Context, nc *nestedCall, t *ManagedTool, args json.RawMessage) (finish func()) {
	o := sc.r.o
	if !sc.round.reserve() {
		nc.info.NotRun = "tool call limit"
		nc.fail(fmt.Errorf("not executed: the run reached its limit of %d tool calls", sc.round.limit))
		return nil
	}
	id := nc.info.ID
	call := &Call{ID: id, Tool: t.Spec.Name, Source: t.Source, ConversationID: sc.r.convID, interactor: sc.call.interactor, model: sc.call.model, parent: sc.parent}
	call.progress = func(p Progress) {
		sc.relay.send(&Event{Kind: EventToolProgress, Iteration: sc.iter, ToolCall: &ToolEvent{ID: id, Name: t.Spec.Name, Source: t.Source, Parent: sc.parent, Progress: &p}})
	}
	if t.Policy.RequireApproval {
		name := fmt.Sprintf("iteration %d: code approval of %s (%s)", sc.iter, t.Spec.Name, id)
		sc.round.starting.Lock()
		out, err := stepJSON(ctx, sc.r.steps, name, func(ctx context.Context) (approvalOutcome, error) {
			refusal, approval, err := o.tools.approve(ctx, t, args, call)
			return approvalOutcome{Refusal: recordResult(refusal), Approval: approval}, err
		})
		sc.round.starting.Unlock()
		if err != nil {
			sc.round.release()
			if ctx.Err() == nil {
				nc.info.Approval, nc.info.NotRun = "unavailable", "approval unavailable"
				err = fmt.Errorf("asking the user for approval failed (%v); the call did not run", err)
			}
			nc.fail(err)
			return nil
		}
		nc.info.Approval = out.Approval
		if out.Refusal != nil {
			sc.round.release()
			nc.info.NotRun = "approval " + out.Approval
			nc.fail(errors.New(out.Refusal.Text))
			return nil
		}
	}
	sc.relay.send(&Event{Kind: EventToolStart, Iteration: sc.iter, ToolCall: &ToolEvent{ID: id, Name: t.Spec.Name, Source: t.Source, Parent: sc.parent, Arguments: args}})
	start := time.Now()
	timeout := o.opts.ToolTimeout
	name := fmt.Sprintf("iteration %d: code call %s (%s)", sc.iter, t.Spec.Name, id)
	sc.round.starting.Lock()
	defer sc.round.starting.Unlock() // goJSON returns once the step started
	wait := goJSON(ctx, sc.r.steps, name, func(ctx context.Context) (toolOutcome, error) {
		res, err := o.tools.run(ctx, t, args, call, timeout)
		switch {
		case err == nil:
			return toolOutcome{Result: recordResult(res)}, nil
		case ctx.Err() != nil:
			return toolOutcome{}, ctx.Err() // the script ends: not an outcome to keep
		}
		return toolOutcome{Error: err.Error()}, nil
	})
	return func() {
		out, err := wait()
		if err == nil {
			err = out.err()
		}
		nc.info.Duration = time.Since(start)
		nc.res, nc.err = out.Result.result(), err
		switch {
		case err != nil:
			nc.info.Error = err.Error()
		case nc.res.IsError:
			nc.info.Error = firstLine(nc.res.Text)
		default:
			nc.info.OK = true
		}
		if nc.res != nil {
			nc.info.Debug, nc.info.References = nc.res.Debug, len(nc.res.References)
			nc.info.Bytes = len(nc.res.Text) + len(nc.res.Structured)
		}
		info := nc.info
		sc.relay.send(&Event{Kind: EventToolEnd, Iteration: sc.iter, ToolCall: &ToolEvent{ID: id, Name: t.Spec.Name, Source: t.Source, Parent: sc.parent, Arguments: args, Result: nc.res, Info: &info}})
	}
}

// reserve counts a call toward the run's limit, and reports whether it may run.
func (cr *codeRound) reserve() bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.limit > 0 && cr.executed >= cr.limit {
		return false
	}
	cr.executed++
	return true
}

// release gives back a reserved call that did not run (refused at approval).
func (cr *codeRound) release() {
	cr.mu.Lock()
	cr.executed--
	cr.mu.Unlock()
}

// count is how many calls the round executed, the model's and the scripts'.
func (cr *codeRound) count() int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.executed
}

// finished returns the calls the script made that ended, in the order it made them. A call still running (of a
// script abandoned after its timeout) is left out.
func (sc *codeScope) finished() []*nestedCall {
	sc.mu.Lock()
	calls := slices.Clone(sc.calls)
	sc.mu.Unlock()
	var out []*nestedCall
	for _, nc := range calls {
		select {
		case <-nc.done:
			out = append(out, nc)
		default:
		}
	}
	return out
}

// collected returns the references of the script's calls, in the order it made them, and the usage of the
// sub-agents it called.
func (sc *codeScope) collected() ([]Reference, llm.Usage) {
	var refs []Reference
	var usage llm.Usage
	for _, nc := range sc.finished() {
		if !nc.primary || nc.res == nil {
			continue
		}
		refs = append(refs, nc.res.References...)
		if nc.res.nested != nil {
			usage.Add(nc.res.nested.usage)
		}
	}
	return refs, usage
}

// nestedCalls records the calls of sc's script in the run, after run_code's own: their debug info, the tools used
// (for format prompts) and the checks of those that ran.
func (r *run) nestedCalls(sc *codeScope) {
	for _, nc := range sc.finished() {
		r.calls = append(r.calls, nc.info)
		if !nc.primary || !nc.info.OK {
			continue
		}
		if !slices.Contains(r.used, nc.tool.Spec.Name) {
			r.used = append(r.used, nc.tool.Spec.Name)
		}
		if !r.req.nested {
			r.checks.add(nc.tool.Policy.EvaluationChecks...)
		}
	}
}
