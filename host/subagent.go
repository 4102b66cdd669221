package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MaxAgentDepth bounds how deep sub-agents may call each other: a run nested this deep offers no further
// sub-agent. Configurations without cycles never reach it unless their chains are that long.
const MaxAgentDepth = 8

// SubAgents is the Toolset of the local sub-agents, named "agents": each is a tool whose call is a nested run of its
// own Orchestrator. Sub-agents are added once, before the first run, since each needs the ToolManager that holds
// this Toolset to restrict its tools from (see ToolManager.Restrict).
type SubAgents struct {
	mu      sync.Mutex
	tools   []Tool
	changed Signal
}

var (
	_ Toolset  = (*SubAgents)(nil)
	_ Notifier = (*SubAgents)(nil)
)

// Changed implements Notifier.
func (s *SubAgents) Changed() <-chan struct{} { return s.changed.Changed() }

// Name implements Toolset.
func (s *SubAgents) Name() string { return "agents" }

// Tools implements Toolset.
func (s *SubAgents) Tools(context.Context) ([]Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}

// Add offers the sub-agent name: a call {"task": "..."} runs o with the task as its prompt.
//
// The nested run's events reach the caller as progress of the call; its answer is the result, with its references,
// whose citations the calling run renumbers into its own sources; its usage adds to the calling run's. Cancelling
// the call cancels the nested run, and its approvals go to the calling run's interactor. A calling run whose request
// replaced the model (Request.Model) runs the sub-agent on that model too.
func (s *SubAgents) Add(name, description string, o *Orchestrator) {
	s.mu.Lock()
	// A new slice: ToolManager rebuilds its list when a source's slice changes.
	s.tools = append(slices.Clip(s.tools), &subAgent{name: name, description: description, o: o})
	s.mu.Unlock()
	s.changed.Notify()
}

// subAgent is one sub-agent as a tool.
type subAgent struct {
	name, description string
	o                 *Orchestrator
}

var subAgentInput = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string",` +
	`"description":"The task, complete and self-contained: the sub-agent sees nothing of this conversation but this text."}},` +
	`"required":["task"]}`)

func (a *subAgent) Spec() ToolSpec {
	return ToolSpec{Name: a.name, Title: a.name, Description: a.description, InputSchema: subAgentInput}
}

// depthKey is the context key of the nesting depth of sub-agent runs.
type depthKey struct{}

func (a *subAgent) Call(ctx context.Context, args json.RawMessage, call *Call) (*Result, error) {
	var in struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Task) == "" {
		return &Result{Text: fmt.Sprintf(`%s needs a task: call it with {"task": "what to do, with everything it needs to know"}`, a.name), IsError: true}, nil
	}
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxAgentDepth {
		return &Result{Text: fmt.Sprintf("%s cannot run: sub-agents are nested %d deep, the limit", a.name, MaxAgentDepth), IsError: true}, nil
	}
	ctx = context.WithValue(ctx, depthKey{}, depth+1)

	// The messages do not name the sub-agent: the events that carry them name the tool call, which is the
	// sub-agent, and every edge shows that name before the message ("mathematician: calling calculate").
	progress := 0
	report := func(msg string) {
		progress++
		call.ReportProgress(Progress{Progress: float64(progress), Message: msg})
	}
	var ans *Answer
	var runErr error
	req := &Request{Prompt: in.Task, Interactor: call.Interactor(), nested: true}
	if call != nil {
		req.Model = call.model // the caller's model, when the run is on it, is the sub-agent's too
	}
	for ev, err := range a.o.Run(ctx, req) {
		if err != nil {
			runErr = err
			break
		}
		switch ev.Kind {
		case EventToolStart:
			report("calling " + ev.ToolCall.Name)
		case EventToolProgress:
			if p := ev.ToolCall.Progress; p != nil && p.Message != "" {
				report(ev.ToolCall.Name + ": " + p.Message)
			}
		case EventToolEnd:
			if info := ev.ToolCall.Info; info != nil && !info.OK && info.NotRun == "" {
				report(ev.ToolCall.Name + " failed: " + info.Error)
			}
		case EventAnswer:
			ans = ev.Answer
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ans == nil {
		if runErr == nil {
			runErr = errors.New("it ended without an answer")
		}
		return &Result{Text: fmt.Sprintf("%s failed: %v", a.name, runErr), IsError: true}, nil
	}
	return a.result(ans), nil
}

// result turns the nested run's answer into the call's result.
func (a *subAgent) result(ans *Answer) *Result {
	var tools []string
	for _, c := range ans.ToolCalls {
		tools = append(tools, c.Name)
	}
	res := &Result{
		Text:    ans.Text,
		IsError: ans.StoppedBy == StopError || ans.StoppedBy == StopNoOutput,
		Debug: map[string]any{
			"agent": a.name, "stopped_by": string(ans.StoppedBy), "iterations": len(ans.Iterations),
			"tool_calls": tools, "usage": ans.Usage,
		},
		nested: &nestedResult{usage: ans.Usage},
	}
	switch {
	case ans.StoppedBy == StopToolControl && ans.Result != nil:
		// A tool of the sub-agent took control: its result is the answer, as it was.
		res.Text, res.References, res.Structured = ans.Result.Text, ans.Result.References, ans.Result.Structured
		res.nested = &nestedResult{usage: ans.Usage, plain: true}
	default:
		res.References = ans.cited
	}
	return res
}
