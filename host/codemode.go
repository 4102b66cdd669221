package host

import (
	"context"
	"encoding/json"
)

// This file is code mode's seam: a run offers run_code, whose script calls the run's tools; the script runs in a
// CodeRunner (package codemode), and every call it makes comes back here, to be made as the run makes the model's.

// CodeToolName is the name of the tool that runs a script calling the run's tools.
const CodeToolName = "run_code"

// CodeRunner runs run_code's scripts. Implementations must be safe for concurrent use.
type CodeRunner interface {
	// Describe returns run_code's description for a run that may call tools: how to write a script, and the typed
	// declarations of tools.
	Describe(tools []*ManagedTool) string
	// Run runs code, whose tool calls go through tools, and returns what the model reads: the script's value, its
	// log, and its error if any. A script that fails is a Result with IsError; a Go error means it could not run.
	// Run returns promptly once ctx ends.
	Run(ctx context.Context, code string, tools ToolCaller) (*Result, error)
}

// ToolCaller makes tool calls for a script, each one as the run makes the model's: policy, approval, de-duplication,
// timeout, progress, references numbered in the run, debug info and spans.
//
// What a runner must do: call StartTool in the script's order, from one goroutine (the one running the script), and
// wait for the outcomes anywhere. A call's number (its id, "c1/3", and the name of its durable step) is the order in
// which StartTool was entered, and a durable run resumed mid-script hands each call the outcome recorded under its
// number: calls started from several goroutines at once would be numbered as they happen to come, and on resume one
// call could get another's outcome. The waits may be called from any goroutine, in any order, concurrently.
type ToolCaller interface {
	// StartTool begins a call of the tool name with args (a JSON object) on the caller's goroutine, in the script's
	// order: it checks, numbers and records the call's start there (approval included, which may block while the
	// user decides), and returns the function that waits for its outcome, which may be called from any goroutine.
	// The call runs whether or not its outcome is awaited, and ends when ctx does. A tool that ran and failed is a
	// Result with IsError; a Go error means the call could not happen (unknown tool, invalid arguments, refused,
	// cancelled).
	StartTool(ctx context.Context, name string, args json.RawMessage) (wait func() (*Result, error))
}

// CodeModeOptions turns on run_code (Options.CodeMode).
type CodeModeOptions struct {
	// Runner runs the scripts; nil leaves code mode off.
	Runner CodeRunner
	// Tools names the tools a script may call; empty means every tool the run may offer but run_code itself. Tools
	// that take control are never called from a script (see coderun.go).
	Tools []string
}
