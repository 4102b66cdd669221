// Package codemode is run_code: a JavaScript sandbox inside agenthost whose only door to the world is the tools API,
// and every call through it is a call of the run's ToolManager (host.ToolCaller). It implements host.CodeRunner.
//
// # Engine
//
// Scripts run on QuickJS (ES2023) as modernc.org/quickjs gives it: the C engine translated to pure Go, so the binary
// stays one static Go program. It was chosen over github.com/dop251/goja because QuickJS enforces a real memory cap
// (its allocator counts every byte and fails the allocation past MemoryLimit), bounds its own call depth, and takes
// an interrupt from another goroutine; goja has the interrupt and a call-stack cap but no memory limit at all, so
// "memory_limit" could only be approximated there. goja is faster (BENCHMARKS.md, "Code mode: the sandbox"), but
// QuickJS is well inside the budget of 2 ms per script. QuickJS compiled to WebAssembly on wazero would isolate
// as well, but needs a QuickJS .wasm built for WASI, which cannot be built here and which no Go module ships.
//
// # The sandbox
//
// Each script gets a fresh engine and sees the language's built-ins, tools and console, and nothing else: no module
// loading, no std or os module, no timers, no network, file system or environment. eval is removed and every
// function constructor (Function, and those of async and generator functions) throws, so no code is compiled from
// strings. Math.random and Date stay as QuickJS has them: the script may read the clock and draw numbers, which
// gives it nothing of the host's. This package must not import anything of agenthost but host.
package codemode

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"modernc.org/quickjs"

	"github.com/agenthost/agenthost/host"
)

// Defaults of Options, as [code_mode] documents them.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMemoryLimit    = 64 << 20
	DefaultMaxToolCalls   = 100
	DefaultMaxOutputBytes = 64 << 10
)

// Options bounds each script. A nil *Options means all defaults; zero fields mean their default.
type Options struct {
	// Timeout bounds a script's wall-clock time, its tool calls included.
	Timeout time.Duration
	// MemoryLimit bounds the memory the script's engine may allocate, in bytes. It bounds the tool calls' arguments
	// too, which Go holds outside the engine: one call's JSON may take MemoryLimit/16 bytes, and the calls in flight
	// MemoryLimit in all; a call past either is rejected with an Error and never made.
	MemoryLimit int64
	// MaxToolCalls bounds the tool calls of one script.
	MaxToolCalls int
	// MaxOutputBytes bounds what the model reads of a script's result: its value and its log.
	MaxOutputBytes int
}

// Runner runs scripts. It is safe for concurrent use.
type Runner struct {
	opts Options
}

var _ host.CodeRunner = (*Runner)(nil)

// New returns a Runner with opts.
func New(opts *Options) *Runner {
	r := &Runner{}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Timeout <= 0 {
		r.opts.Timeout = DefaultTimeout
	}
	if r.opts.MemoryLimit <= 0 {
		r.opts.MemoryLimit = DefaultMemoryLimit
	}
	if r.opts.MaxToolCalls <= 0 {
		r.opts.MaxToolCalls = DefaultMaxToolCalls
	}
	if r.opts.MaxOutputBytes <= 0 {
		r.opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return r
}

// Describe implements host.CodeRunner.
func (r *Runner) Describe(tools []*host.ManagedTool) string {
	return fmt.Sprintf("Runs a JavaScript program that calls the tools declared below, in one step: use it when a task needs "+
		"many tool calls, calls that depend on each other, loops, filtering or aggregation, and return only what matters. "+
		"The code is the body of an async function: use await, and `return` the result (any JSON value). "+
		"tools.<name>(args) returns a Promise of the tool's result (its structured content when it has one, else its text) "+
		"and rejects with an Error carrying the tool's error message. Start independent calls together with Promise.all. "+
		"console.log lines are shown to you with the result. There is no network, file system, module or timer: only the tools. "+
		"Limits: %s of time, %d tool calls, %d bytes of output.\n\n%s",
		r.opts.Timeout, r.opts.MaxToolCalls, r.opts.MaxOutputBytes, Declarations(tools))
}

// Run implements host.CodeRunner. A script that fails, runs out of time or memory, or awaits what can never settle
// is a Result with IsError; the Go error is for an engine that cannot start and for ctx ending.
func (r *Runner) Run(ctx context.Context, code string, tools host.ToolCaller) (*host.Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, errTimeout)
	defer cancel()
	// results has room for every call the script may make, so a call left behind never blocks on its send.
	s := &script{opts: &r.opts, code: code, tools: tools, results: make(chan callResult, r.opts.MaxToolCalls)}
	out, err := s.run(ctx, code)
	if err != nil {
		return nil, err
	}
	if out.cancelled != nil {
		return nil, fmt.Errorf("codemode: script stopped: %w", out.cancelled)
	}
	s.outOfMemory(out)
	return out.result(r.opts.MaxOutputBytes), nil
}

// errTimeout is the cause of a script's context when its Timeout ends it.
var errTimeout = errors.New("codemode: the script ran out of time")

// scriptHead opens the async function whose body is the script, scriptOffset lines above the script.
var scriptHead = "(async function () {" + strings.Repeat("\n", scriptOffset)

//go:embed prelude.js
var prelude string

// scriptOffset is how many lines down the engine sees the script's first line: past every line of the prelude, so
// that a line in a stack trace tells whose it is (the engine names both "<eval>").
const scriptOffset = 1000

// script is one run of one script: its engine, its calls in flight and what it reported. Only the goroutine in run
// touches the engine; the calls run on their own goroutines and come back through results.
type script struct {
	opts    *Options
	code    string
	tools   host.ToolCaller
	results chan callResult
	calls   int // started, in all
	pending int // started and not yet settled in the engine
	done    bool
	report  report
	log     []logLine
}

type callResult struct {
	id  int
	res *host.Result
	err error
}

type logLine struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// report is what the prelude's finish gives: the returned value (absent for undefined) or the error.
type report struct {
	Value json.RawMessage `json:"v,omitempty"`
	Error *scriptError    `json:"e,omitempty"`
}

type scriptError struct {
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

// callGrace is how long a script's end waits for its calls in flight, cancelled, to return; a call still running then
// is left behind, as the round leaves a tool that ignores its context: its goroutine ends when its tool returns, and
// its result, sent into a channel with room for every call, is dropped.
const callGrace = time.Second

// interruptEvery is how often a script whose ctx ended is interrupted again until it stops.
const interruptEvery = 5 * time.Millisecond

// drainBound is the engine's bound on the jobs of one drain (ExecutePendingJobs): past it the drain stops with an
// error though more jobs are queued, which for a script is no failure; the timeout bounds it.
const drainBound = 1 << 20

func (s *script) run(ctx context.Context, code string) (out *outcome, err error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("codemode: start the engine: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(s.opts.MemoryLimit))
	defer keepInterrupting(ctx, vm)()
	deadline, _ := ctx.Deadline()
	// enter comes before every call into the engine. The engine clears a pending interrupt at the start of each call
	// from Go, so an interrupt that came between calls is lost: the call is not made once ctx ended, and the engine's
	// own deadline, set to ctx's, ends it in time even if an interrupt were lost.
	enter := func() bool {
		if ctx.Err() != nil {
			return false
		}
		vm.SetEvalTimeout(max(time.Until(deadline), time.Nanosecond))
		return true
	}

	// The calls' context ends with the script: on return every call still in flight is cancelled and awaited, for
	// callGrace at most.
	callCtx, cancelCalls := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancelCalls()
		returned := make(chan struct{})
		go func() { wg.Wait(); close(returned) }()
		grace := time.NewTimer(callGrace)
		defer grace.Stop()
		select {
		case <-returned:
		case <-grace.C:
		}
	}()

	if err := s.register(vm, callCtx, &wg); err != nil {
		return nil, err
	}
	if !enter() {
		return s.failed(ctx, nil), nil
	}
	setup, err := vm.EvalValue(prelude, quickjs.EvalGlobal)
	if err != nil {
		if ctx.Err() != nil {
			return s.failed(ctx, nil), nil
		}
		return nil, fmt.Errorf("codemode: evaluate the prelude: %w", err)
	}
	defer setup.Free()
	if !enter() {
		return s.failed(ctx, nil), nil
	}
	ctl, err := setup.CallValue(quickjs.UndefinedValue, s.opts.MaxToolCalls, scriptOffset, s.opts.MemoryLimit/16, s.opts.MemoryLimit)
	if err != nil {
		if ctx.Err() != nil {
			return s.failed(ctx, nil), nil
		}
		return nil, fmt.Errorf("codemode: run the prelude: %w", err)
	}
	defer ctl.Free()

	if !enter() {
		return s.failed(ctx, nil), nil
	}
	fn, err := vm.EvalValue(scriptHead+code+"\n})", quickjs.EvalGlobal)
	if err != nil {
		return s.failed(ctx, err), nil
	}
	if !enter() {
		fn.Free()
		return s.failed(ctx, nil), nil
	}
	_, err = ctl.Call(quickjs.UndefinedValue, "start", fn)
	fn.Free()
	if err != nil {
		return s.failed(ctx, err), nil
	}
	for {
		if !enter() {
			return s.failed(ctx, nil), nil
		}
		n, err := vm.ExecutePendingJobs()
		if n >= drainBound && err != nil && strings.HasPrefix(err.Error(), "quickjs: aborted draining") {
			continue // more jobs are queued
		}
		if err != nil || ctx.Err() != nil {
			return s.failed(ctx, err), nil
		}
		if s.done && (s.report.Error != nil || s.pending == 0) {
			break
		}
		if s.pending == 0 {
			s.report.Error = &scriptError{Message: "the script awaits a promise that nothing can settle: no tool call is pending"}
			break
		}
		select {
		case c := <-s.results:
			s.pending--
			kind, payload := settlement(c.res, c.err)
			if !enter() {
				return s.failed(ctx, nil), nil
			}
			if _, err := ctl.Call(quickjs.UndefinedValue, "settle", c.id, kind, payload); err != nil {
				return s.failed(ctx, err), nil
			}
		case <-ctx.Done():
			return s.failed(ctx, nil), nil
		}
	}
	if s.report.Error == nil {
		if !enter() {
			return s.failed(ctx, nil), nil
		}
		u, err := ctl.Call(quickjs.UndefinedValue, "unhandled")
		if err != nil {
			return s.failed(ctx, err), nil
		}
		if text, _ := u.(string); text != "" {
			var r report
			if err := json.Unmarshal([]byte(text), &r); err == nil {
				s.report = r
			}
		}
	}
	return &outcome{report: s.report, log: s.log}, nil
}

// keepInterrupting interrupts vm from the moment ctx ends, again every interruptEvery, until stop is called: one
// interrupt can be lost, as the engine clears it at the start of every call from Go. stop returns once the
// goroutine it started has ended, so the engine can be closed.
func keepInterrupting(ctx context.Context, vm *quickjs.VM) (stop func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
		case <-quit:
			return
		}
		tick := time.NewTicker(interruptEvery)
		defer tick.Stop()
		for {
			vm.Interrupt()
			select {
			case <-tick.C:
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit); <-exited }
}

// outOfMemory reports the engine's failed allocation in the words of the limit the script ran into. When the engine
// cannot even allocate the error for it, it throws null, which reads as a script's own throw null: the two cannot be
// told apart, so that message names both.
func (s *script) outOfMemory(out *outcome) {
	e := out.report.Error
	switch {
	case e == nil:
	case strings.Contains(e.Message, "out of memory"):
		e.Message = fmt.Sprintf("the script ran out of its %s of memory", bytesText(s.opts.MemoryLimit))
		e.Line, e.Column = 0, 0
	case e.Message == "Uncaught null":
		e.Message = fmt.Sprintf("Uncaught null: the script threw null, or ran out of its %s of memory", bytesText(s.opts.MemoryLimit))
	}
}

// register puts the three host functions the prelude takes away from the global object: __call starts a tool call
// and returns its id (or -1 past MaxToolCalls), __log keeps a console line, __done takes the script's report.
func (s *script) register(vm *quickjs.VM, ctx context.Context, wg *sync.WaitGroup) error {
	logBytes := 0
	fns := map[string]quickjs.HostFunc{
		"__call": func(args []any) (any, error) {
			name, _ := arg(args, 0).(string)
			text, _ := arg(args, 1).(string)
			if s.calls >= s.opts.MaxToolCalls {
				return -1, nil
			}
			s.calls++
			s.pending++
			id := s.calls
			// Started here, on the engine's goroutine in the script's order, which numbers the call; only its
			// outcome is awaited elsewhere.
			wait := s.tools.StartTool(ctx, name, json.RawMessage(text))
			wg.Go(func() {
				res, err := wait()
				s.results <- callResult{id: id, res: res, err: err}
			})
			return id, nil
		},
		"__log": func(args []any) (any, error) {
			level, _ := arg(args, 0).(string)
			text, _ := arg(args, 1).(string)
			// Lines past the output bound are dropped here, so a script that logs without end grows no Go memory.
			if logBytes <= s.opts.MaxOutputBytes {
				logBytes += len(text) + 1
				s.log = append(s.log, logLine{Level: level, Text: text})
			} else if n := len(s.log); n == 0 || s.log[n-1].Level != "dropped" {
				s.log = append(s.log, logLine{Level: "dropped"})
			}
			return nil, nil
		},
		"__done": func(args []any) (any, error) {
			text, _ := arg(args, 0).(string)
			s.done = true
			if err := json.Unmarshal([]byte(text), &s.report); err != nil {
				s.report = report{Error: &scriptError{Message: "the script's report cannot be read: " + err.Error()}}
			}
			return nil, nil
		},
	}
	for _, name := range []string{"__call", "__log", "__done"} {
		if err := vm.RegisterHostFunc(name, fns[name]); err != nil {
			return fmt.Errorf("codemode: register %s: %w", name, err)
		}
	}
	return nil
}

func arg(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// settlement is how a call's result reaches the script: its structured content as JSON when it has some, else its
// text; a failure as its message.
func settlement(res *host.Result, err error) (kind, payload string) {
	switch {
	case err != nil:
		return "error", err.Error()
	case res == nil:
		return "text", ""
	case res.IsError:
		if res.Text == "" {
			return "error", "the tool failed"
		}
		return "error", res.Text
	case len(res.Structured) > 0 && json.Valid(res.Structured):
		return "json", string(res.Structured)
	default:
		return "text", res.Text
	}
}

// failed is the outcome of a script the engine stopped: by ctx (timeout or cancel), by memory, or by an exception
// that escaped the prelude's handlers (a syntax error).
func (s *script) failed(ctx context.Context, err error) *outcome {
	// The engine's own deadline is ctx's: it may stop the script an instant before ctx's timer ends ctx.
	if deadline, ok := ctx.Deadline(); ok && ctx.Err() == nil && !time.Now().Before(deadline) {
		<-ctx.Done()
	}
	out := &outcome{log: s.log}
	switch {
	case errors.Is(context.Cause(ctx), errTimeout):
		out.report.Error = &scriptError{Message: fmt.Sprintf("the script ran out of its %s", s.opts.Timeout)}
	case ctx.Err() != nil:
		out.cancelled = context.Cause(ctx)
	case err != nil:
		out.report.Error = &scriptError{Message: err.Error()}
		var qe *quickjs.Error
		if errors.As(err, &qe) {
			if qe.Name != "" {
				out.report.Error.Message = qe.Name + ": " + qe.Message
			}
			if qe.LineNumber > 0 {
				out.report.Error.Line = max(qe.LineNumber-scriptOffset, 1)
				out.report.Error.Column = qe.ColumnNumber
				// Past the end of the script is the wrapper's closing line: the script ended too soon.
				if lines := strings.Split(s.code, "\n"); out.report.Error.Line > len(lines) {
					out.report.Error.Line = len(lines)
					out.report.Error.Column = len(lines[len(lines)-1]) + 1
				}
			}
		}
	default:
		out.report.Error = &scriptError{Message: "the script stopped"}
	}
	return out
}
