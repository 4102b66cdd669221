package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// This file is gateway mode's code form (Options.GatewayTools = GatewayToolsCode): the gateway offers the agent tool,
// the pinned tools, search_tools and run_code, whose script calls any other enabled tool, so that a client with a
// small tool budget reaches every tool through two, and its model makes many calls in one step. The script runs in
// Options.CodeRunner; each call it makes goes the way of a direct call of the tool (policy, approval through the
// caller's elicitation, tool_timeout, progress on run_code's progress token), and cancelling run_code cancels them.
//
// Which tools a script may call: every enabled tool but those that take control (their result would be the answer,
// which a script cannot hand over) and the gateway's own. run_code's description declares the pinned ones only, as
// tools/list offers only those, with a line saying that search_tools finds the others.

// codeInput is run_code's input schema, as the loop's run_code has it.
var codeInput = json.RawMessage(`{"type":"object","properties":{` +
	`"code":{"type":"string","description":"The program to run: it calls the tools and returns what you need of their results."}},` +
	`"required":["code"],"additionalProperties":false}`)

// searchCodeToolDef is search_tools in the code form: the tools it finds are called from run_code's code.
var searchCodeToolDef = func() *mcp.Tool {
	t := *searchToolDef
	t.Description = "Finds the tools of this gateway that fit a task, best first, with their full input schemas; " +
		"call them from the code of " + host.CodeToolName + ". Give a query in words (what you want to do), or names " +
		"to get tools you already know by their exact names."
	return &t
}()

// scriptable reports whether a script may call t, an enabled tool.
func (g *gateway) scriptable(t *host.ManagedTool) bool {
	return !t.Policy.Disabled && !t.Policy.TakesControl && !g.reserved(t.Spec.Name)
}

// offerCode offers run_code, described for tools, when its description changed. g.mu is held.
func (g *gateway) offerCode(tools []*host.ManagedTool) {
	var callable, declared []*host.ManagedTool
	for _, t := range tools {
		if !g.scriptable(t) {
			continue
		}
		callable = append(callable, t)
		if t.Pinned() {
			declared = append(declared, t)
		}
	}
	desc := g.code.Describe(declared)
	if len(declared) < len(callable) {
		desc += fmt.Sprintf("\n\nThe code may also call tools not declared here: %s finds them and says what they take; call them by name.", host.SearchToolName)
	}
	if desc == g.codeDesc {
		return
	}
	g.codeDesc = desc
	g.mcp.AddTool(&mcp.Tool{
		Name:        host.CodeToolName,
		Description: desc,
		InputSchema: codeInput,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, g.runCode)
}

// runCode serves run_code: the script runs with a ToolCaller whose calls are made as direct calls of the tools are.
// For a caller that must be asked through input requests, the script runs in the background while it waits for the
// answers (see roundTrips), as a direct call does.
func (g *gateway) runCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return g.rounds.resume(ctx, req)
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(cmpRaw(req.Params.Arguments), &in); err != nil {
		return toolError("%s: invalid arguments: %v", host.CodeToolName, err), nil
	}
	if strings.TrimSpace(in.Code) == "" {
		return toolError("%s: give the code to run", host.CodeToolName), nil
	}
	c, paused, interactor, relay := g.callerOf(req)
	run := func(ctx context.Context) (*mcp.CallToolResult, error) {
		calls := &scriptCalls{g: g, req: req, c: c, relay: relay}
		if interactor != nil {
			calls.interactor = &oneQuestionAtATime{Interactor: interactor, turn: make(chan struct{}, 1)}
		}
		res, err := g.code.Run(ctx, in.Code, calls)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err() // the caller cancelled: nobody reads the result
		case err != nil:
			return toolError("%s: %v", host.CodeToolName, err), nil
		}
		return callToolResult(res), nil
	}
	if paused != nil && interactor != nil {
		return paused.start(ctx, req, relay, run)
	}
	relay.attach(ctx, req)
	defer relay.detach()
	return run(ctx)
}

// scriptCalls is one run_code call's ToolCaller.
type scriptCalls struct {
	g          *gateway
	req        *mcp.CallToolRequest // run_code's request
	c          caller               // who is asked the questions
	interactor host.Interactor      // nil when the caller cannot be asked
	relay      *progressRelay       // to run_code's progress token
}

var _ host.ToolCaller = (*scriptCalls)(nil)

// StartTool implements host.ToolCaller: the call goes to the tool as a direct call of it would, on a goroutine of
// its own (the gateway keeps no durable steps, so the order of starts numbers nothing). A call refused at approval
// is an error, as is one the script may not make. Approvals are asked one at a time (oneQuestionAtATime).
func (sc *scriptCalls) StartTool(ctx context.Context, name string, args json.RawMessage) func() (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return func() (*host.Result, error) { return nil, err } // the script was stopped: no call starts
	}
	type outcome struct {
		res *host.Result
		err error
	}
	ch := make(chan outcome, 1) // buffered: the call ends whether or not the script waits
	go func() {
		res, err := sc.call(ctx, name, args)
		ch <- outcome{res, err}
	}()
	return func() (*host.Result, error) {
		o := <-ch
		return o.res, o.err
	}
}

// call makes one call of a script.
func (sc *scriptCalls) call(ctx context.Context, name string, args json.RawMessage) (*host.Result, error) {
	t, err := sc.g.scriptTool(ctx, name)
	if err != nil {
		return nil, err
	}
	args = cmpRaw(args)
	if !isObject(args) {
		return nil, fmt.Errorf("the arguments of %s must be a JSON object", name)
	}
	res, approval, err := sc.g.invoke(ctx, t, args, sc.req, sc.c, sc.interactor, sc.relay)
	switch {
	case err != nil:
		return nil, err
	case approval == "denied" || approval == "unavailable":
		return nil, errors.New(res.Text) // refused: the tool did not run
	}
	return res, nil
}

// scriptTool returns the tool a script calls by name, or why it may not call it.
func (g *gateway) scriptTool(ctx context.Context, name string) (*host.ManagedTool, error) {
	if g.reserved(name) {
		return nil, fmt.Errorf("%s cannot be called from code", name)
	}
	tools, _ := g.tools.Tools(ctx) // problems are the orchestrator's to log; the list is still usable
	for _, t := range tools {
		if t.Spec.Name != name {
			continue
		}
		switch {
		case t.Policy.Disabled:
			return nil, fmt.Errorf("tool %q is disabled by the configuration", name)
		case t.Policy.TakesControl:
			return nil, fmt.Errorf("%s hands the conversation over, so it cannot be called from code", name)
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown tool %q; %s finds the tools by what they do", name, host.SearchToolName)
}

// oneQuestionAtATime asks a script's approvals one at a time, as the loop does: a script that calls ten tools at
// once that need approval asks ten questions in turn, not ten at once.
type oneQuestionAtATime struct {
	host.Interactor
	turn chan struct{} // holds a token while a question is out
}

func (o *oneQuestionAtATime) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	select {
	case o.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-o.turn }()
	return o.Interactor.Approve(ctx, req)
}
