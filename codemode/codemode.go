// Package codemode is run_code: a JavaScript sandbox inside agenthost whose only door to the world is the tools API,
// and every call through it is a call of the run's ToolManager (host.ToolCaller). It implements host.CodeRunner.
package codemode

import (
	"context"
	"errors"
	"time"

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
	// MemoryLimit bounds the memory the script's engine may allocate, in bytes.
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
	return r
}

// Describe implements host.CodeRunner.
func (r *Runner) Describe(tools []*host.ManagedTool) string {
	return Declarations(tools)
}

// Run implements host.CodeRunner.
func (r *Runner) Run(ctx context.Context, code string, tools host.ToolCaller) (*host.Result, error) {
	return nil, errors.New("codemode: not written yet")
}
