// Package runlog keeps the recent runs of a process, step by step, for a console to list and replay live: each run
// (from any front end: the console, MCP, A2A, the CLI, a durable run resumed) with its model calls, tool calls,
// nested sub-agent runs, progress, checks and answer, timed from the run's start.
//
// A Recorder is a host.EventObserver: it is fed by the same stream as the front ends and telemetry, and installed
// only when a console is served, so that runs cost nothing more otherwise. It keeps a bounded number of runs and
// of entries per run in memory; nothing is written to disk.
//
// It imports host and llm, and the standard library.
package runlog

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// Options configures a Recorder. The zero value keeps 200 runs of at most 20,000 entries each, and the content of
// the console's own runs only.
type Options struct {
	// MaxRuns is how many runs are kept, the oldest finished ones dropped first; 0 means 200.
	MaxRuns int
	// MaxEntries is how many entries a run keeps; later ones are counted, not kept (the run says how many were
	// dropped). 0 means 20,000.
	MaxEntries int
	// Content says whether the content of runs from origin (prompts, messages, arguments, results, text, answers)
	// is recorded. nil means: only the runs of the console ("console"), whose caller typed it. Without content an
	// entry keeps sizes, names, timings, usage and errors.
	Content func(origin string) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Recorder records runs. It is safe for concurrent use. It starts no goroutine of its own.
type Recorder struct {
	opts      Options
	lateGrace time.Duration

	mu      sync.Mutex
	runs    []*record // in start order, oldest first
	byID    map[string]*record
	running int // runs in runs that have not ended

	watchers atomic.Pointer[[]*watcher] // copied on write: read on every change of a run
}

var _ host.EventObserver = (*Recorder)(nil)

// New returns a Recorder.
func New(opts *Options) *Recorder {
	r := &Recorder{byID: map[string]*record{}, lateGrace: lateGrace}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.MaxRuns <= 0 {
		r.opts.MaxRuns = 200
	}
	if r.opts.MaxEntries <= 0 {
		r.opts.MaxEntries = 20000
	}
	if r.opts.Content == nil {
		r.opts.Content = func(origin string) bool { return origin == "console" }
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	return r
}

// Status is where a run is: "running", or its host.StopReason once ended.
type Status string

// StatusRunning is the Status of a run that has not ended.
const StatusRunning Status = "running"

// StatusGone is the Status Watch reports for a run that is no longer kept (past Options.MaxRuns): a list showing it
// drops it. Runs and Run never give it.
const StatusGone Status = "gone"

// Summary is a run as a list shows it.
type Summary struct {
	ID     string `json:"id"`
	Origin string `json:"origin"`
	// Subject is the caller the run was made for (host.Subject), "" when its front end does not tell callers
	// apart; a console shows the run only to its subject.
	Subject string `json:"-"`
	Agent   string `json:"agent"`
	// Prompt is the start of the prompt (at most 200 characters), "" without content.
	Prompt         string     `json:"prompt,omitempty"`
	ConversationID string     `json:"conversation_id,omitempty"`
	Model          string     `json:"model,omitempty"`
	Started        time.Time  `json:"started"`
	Ended          *time.Time `json:"ended,omitempty"`
	Status         Status     `json:"status"`
	Error          string     `json:"error,omitempty"`
	Usage          llm.Usage  `json:"usage"`
	ModelCalls     int        `json:"model_calls"`
	ToolCalls      int        `json:"tool_calls"`
	// Entries counts the entries recorded, Dropped those past Options.MaxEntries.
	Entries int  `json:"entries"`
	Dropped int  `json:"dropped,omitempty"`
	Content bool `json:"content"`
}

// Kind says what an Entry reports.
type Kind string

const (
	KindRunStart   Kind = "run_start"   // a run (the root, or a sub-agent's nested one) starts: Span is the run's
	KindRunEnd     Kind = "run_end"     // it ends: StoppedBy, Error, Usage, DurationMS
	KindIteration  Kind = "iteration"   // an iteration of the loop starts: Iteration
	KindModelStart Kind = "model_start" // a model call starts: Span is the call's; Model, Iteration, Messages, Tools
	KindModelEnd   Kind = "model_end"   // it ends: Usage, FinishReason, Error, Text, ToolCalls, DurationMS
	// KindModelRetry: an attempt of the model call failed and is retried: Attempt, Error and DelayMS.
	KindModelRetry   Kind = "model_retry"
	KindText         Kind = "text"       // a piece of the model's text as it streams: Text
	KindToolStart    Kind = "tool_start" // a tool call starts: Span is the call's; Name, Source, CallID, Arguments
	KindToolProgress Kind = "tool_progress"
	KindToolEnd      Kind = "tool_end" // it ends: OK, Error, Result, DurationMS, Info
	KindCheck        Kind = "check"    // an evaluation check of the answer: Check
	KindAnswer       Kind = "answer"   // the run's answer: Answer
	// KindApproval and KindApprovalDone: a console run waits for the person at the console to approve a tool call
	// or answer an elicitation (see Waiting), and the answer.
	KindApproval     Kind = "approval"
	KindApprovalDone Kind = "approval_done"
)

// Entry is one recorded step of a run. Which fields are set depends on Kind; the content fields (Prompt, Messages,
// Text, Arguments, Result, Answer's text) are set only for runs whose content is recorded.
type Entry struct {
	Seq  int  `json:"seq"` // 1, 2, ... within the run
	Kind Kind `json:"kind"`
	// AtMS is the time since the run started, in milliseconds.
	AtMS float64 `json:"at_ms"`
	// Span is the run, model call or tool call the entry starts, ends or belongs to; Parent the one it nests in
	// ("" for the root run). Spans are "r1", "m2", "t3", ... within a run.
	Span   string `json:"span"`
	Parent string `json:"parent,omitempty"`

	Agent          string `json:"agent,omitempty"`
	Prompt         string `json:"prompt,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	Model          string `json:"model,omitempty"`
	Iteration      int    `json:"iteration,omitempty"`

	// Messages are the messages sent to the model (model_start); Tools how many tools were offered.
	Messages     []llm.Message    `json:"messages,omitempty"`
	Tools        int              `json:"tools,omitempty"`
	Usage        *llm.Usage       `json:"usage,omitempty"`
	FinishReason llm.FinishReason `json:"finish_reason,omitempty"`
	// ToolCalls are the calls the model asked for (model_end).
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`

	Name      string          `json:"name,omitempty"`
	Source    string          `json:"source,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Bytes is the size of what the content fields would hold (arguments, result, text) when they are not kept.
	Bytes    int            `json:"bytes,omitempty"`
	Progress *host.Progress `json:"progress,omitempty"`
	OK       *bool          `json:"ok,omitempty"`
	Result   string         `json:"result,omitempty"` // the result's text, clipped to 64 KiB
	// Peer names the A2A peer agent a tool_end's call went to, and PeerCalls are the tool calls that peer reported
	// in its answer's details (an agenthost peer does), as it reported them: the steps of the peer's own run, as far
	// as the peer shows them.
	Peer      string                 `json:"peer,omitempty"`
	PeerCalls []host.ToolCallSummary `json:"peer_calls,omitempty"`
	Info      *host.ToolCallInfo     `json:"info,omitempty"`
	Check     *host.CheckResult      `json:"check,omitempty"`
	Answer    *host.Answer           `json:"answer,omitempty"`
	Approval  *Waiting               `json:"approval,omitempty"`
	Answered  *ApprovalAnswer        `json:"answered,omitempty"`
	Text      string                 `json:"text,omitempty"`

	// Attempt is the number of the attempt that failed (model_retry), DelayMS the wait before the next one, and
	// Retries how many times the call was retried in all (model_end).
	Attempt int     `json:"attempt,omitempty"`
	DelayMS float64 `json:"delay_ms,omitempty"`
	Retries int     `json:"retries,omitempty"`

	StoppedBy  host.StopReason `json:"stopped_by,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationMS float64         `json:"duration_ms,omitempty"`
}

// Waiting is a question a console run waits on: a tool call to approve, or an elicitation to answer.
type Waiting struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"` // "approval" or "elicitation"
	Tool      string          `json:"tool,omitempty"`
	Source    string          `json:"source,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Message   string          `json:"message,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
}

// ApprovalAnswer is how a Waiting was answered.
type ApprovalAnswer struct {
	ID       string `json:"id"`
	Approved bool   `json:"approved,omitempty"`
	// Action is the elicitation's answer: accept, decline or cancel.
	Action string `json:"action,omitempty"`
}

// Waiting records, in the run ctx belongs to, that the run waits on w, and Answered how it was answered: a
// console's Interactor calls them, so that the question and its answer are part of the run's record.
func (r *Recorder) Waiting(ctx context.Context, w *Waiting) {
	r.approval(ctx, &Entry{Kind: KindApproval, Approval: w})
}

func (r *Recorder) Answered(ctx context.Context, a *ApprovalAnswer) {
	r.approval(ctx, &Entry{Kind: KindApprovalDone, Answered: a})
}
