package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/llm"
)

// ToolPolicy is the admin's policy for one tool, by final name.
type ToolPolicy struct {
	// Disabled removes the tool from every run.
	Disabled bool
	// Exclusive makes the tool, when offered, the only tool offered and the only one that may run.
	Exclusive bool
	// Forced makes the model call the tool on the first iteration when the caller chose no tools.
	Forced bool
	// TakesControl makes the tool's result the answer: the run stops after it ran. It must be called alone.
	TakesControl bool
	// RequireApproval makes every call wait for the caller's approval; with nobody to ask, the call is refused.
	RequireApproval bool
	// Prompt is guidance added to the system prompt while the tool is offered; empty means the tool's own
	// (ToolSpec.Prompt).
	Prompt string
	// FormatPrompt is added to the system prompt once the tool was used in the run.
	FormatPrompt string
	// EvaluationChecks are the checks (CheckCitations, ...) that every answer of a run in which the tool ran must
	// pass, besides those the tool names itself (EvaluationChecker).
	EvaluationChecks []string
	// Pinned says whether the tool is offered from the first request when tool search is on: true always, false
	// only once a search loaded it, nil by default (pinned when it takes control or is a sub-agent). A forced tool
	// is pinned whatever this says (see ManagedTool.Pinned).
	Pinned *bool
}

// EvaluationChecker is a Tool that names the checks an answer must pass when it ran: a search tool asks for
// citations, say.
type EvaluationChecker interface {
	EvaluationChecks() []string
}

// Flags returns the names of the policy's flags that are set, in a fixed order.
func (p ToolPolicy) Flags() []string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{p.Disabled, "disabled"}, {p.Exclusive, "exclusive"}, {p.Forced, "forced"}, {p.TakesControl, "takes_control"}, {p.RequireApproval, "require_approval"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// ToolManagerOptions configures a ToolManager. A nil *ToolManagerOptions means all defaults.
type ToolManagerOptions struct {
	// Policies maps final tool names to the admin's policy. A tool with no entry has the zero policy (enabled, no
	// flags).
	Policies map[string]ToolPolicy
	// Logger receives warnings about sources that fail to list and tools dropped for their names. Nil discards.
	Logger *slog.Logger
	// Observer watches each tool call; nil watches nothing.
	Observer Observer
	// Embedder, when set, ranks tool searches by meaning as well as by words (see Search); nil ranks by words.
	Embedder llm.Embedder
	// EmbeddingCache keeps the tools' vectors by content, so that a restart does not embed them again; nil keeps
	// them in memory only.
	EmbeddingCache EmbeddingCache
}

// ToolManager merges the tools of several sources under the admin's policy and runs them safely.
// It is safe for concurrent use.
type ToolManager struct {
	sets     []Toolset
	policies map[string]ToolPolicy
	logger   *slog.Logger
	observer Observer

	// parent and only make a restricted view (Restrict): the parent's tools named in only.
	parent *ToolManager
	only   []string

	schemas schemaCache

	search toolSearch

	listMu   sync.Mutex
	lastSets [][]Tool       // what each source returned last time
	last     []*ManagedTool // the merged list built from lastSets
	// lastParent is the parent's list that last was filtered from, for a restricted view.
	lastParent []*ManagedTool
	lastErr    error

	mu     sync.Mutex
	warned map[string]bool // problems already logged, so a persistent one is logged once
}

// ManagedTool is a tool with its source and policy.
type ManagedTool struct {
	Tool   Tool
	Spec   ToolSpec
	Source string
	Policy ToolPolicy
}

// NewToolManager returns a ToolManager over sets, taken in order: the order is the source order of DESIGN's tool
// policy (built-in, MCP servers in config order, A2A peers, sub-agents).
func NewToolManager(sets []Toolset, opts *ToolManagerOptions) *ToolManager {
	if opts == nil {
		opts = &ToolManagerOptions{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ToolManager{sets: slices.Clone(sets), policies: opts.Policies, logger: logger, observer: opts.Observer, warned: map[string]bool{},
		search: toolSearch{embedder: opts.Embedder, vectors: newVectorCache(opts.EmbeddingCache)}}
}

// Restrict returns a ToolManager offering only the tools of m named in names, under m's policies, in m's order: the
// tools a sub-agent may use. Names that match no tool are ignored, so a source that comes later adds its tools then.
func (m *ToolManager) Restrict(names []string) *ToolManager {
	return &ToolManager{sets: m.sets, policies: m.policies, logger: m.logger, observer: m.observer, warned: map[string]bool{}, parent: m, only: slices.Clone(names),
		search: toolSearch{embedder: m.search.embedder, vectors: m.search.vectors}}
}

// Toolsets returns the sources, in order.
func (m *ToolManager) Toolsets() []Toolset { return slices.Clone(m.sets) }

// sources returns the tool sources, a restricted view's being its parent's.
func (m *ToolManager) sources() []Toolset {
	for m.parent != nil {
		m = m.parent
	}
	return m.sets
}

// Notifies reports whether every source implements Notifier, so that Watch sees every change of the list; when it
// does not, the others' changes are seen only by calling Tools.
func (m *ToolManager) Notifies() bool {
	for _, set := range m.sources() {
		if _, ok := set.(Notifier); !ok {
			return false
		}
	}
	return true
}

// Watch calls changed once for each source that implements Notifier as it starts watching it, then each time the
// source says its list changed, until ctx ends; then it returns, once nothing of it runs any more. The first calls
// cover a change made before the watch began. changed runs on a goroutine of the source's, and may run concurrently
// with itself; Tools called after it returns the new list.
func (m *ToolManager) Watch(ctx context.Context, changed func()) {
	var wg sync.WaitGroup
	for _, set := range m.sources() {
		if n, ok := set.(Notifier); ok {
			wg.Go(func() { Follow(ctx, n.Changed, changed) })
		}
	}
	wg.Wait()
}

// Tools returns every tool of every source in source order, disabled ones included. Problems (a source that fails to
// list, an invalid final name, two tools with one final name) are returned joined in err; the list is still usable
// and holds, for a name claimed twice, the first claimant only. Start-up treats err as fatal; a run logs it.
//
// The returned slice is shared: callers must not modify it. While every source returns the same slice, so does Tools.
func (m *ToolManager) Tools(ctx context.Context) ([]*ManagedTool, error) {
	if m.parent != nil {
		return m.restricted(ctx)
	}
	lists := make([][]Tool, len(m.sets))
	errs := make([]error, len(m.sets))
	for i, set := range m.sets {
		lists[i], errs[i] = set.Tools(ctx)
	}
	m.listMu.Lock()
	defer m.listMu.Unlock()
	if m.last != nil && errors.Join(errs...) == nil && slices.EqualFunc(lists, m.lastSets, sameSlice) {
		return m.last, m.lastErr
	}
	out, err := m.merge(lists, errs)
	m.lastSets, m.last, m.lastErr = lists, out, err
	if errors.Join(errs...) != nil {
		m.lastSets, m.last = nil, nil // a failing source may recover: build again next time
	}
	return out, err
}

// restricted is Tools for a restricted view: the parent's list, filtered, rebuilt only when the parent's changed.
func (m *ToolManager) restricted(ctx context.Context) ([]*ManagedTool, error) {
	all, err := m.parent.Tools(ctx)
	m.listMu.Lock()
	defer m.listMu.Unlock()
	if m.last != nil && len(all) > 0 && len(m.lastParent) == len(all) && &m.lastParent[0] == &all[0] {
		return m.last, err
	}
	out := make([]*ManagedTool, 0, len(m.only))
	for _, t := range all {
		if slices.Contains(m.only, t.Spec.Name) {
			out = append(out, t)
		}
	}
	m.lastParent, m.last = all, out
	return out, err
}

// sameSlice reports whether a and b are the same slice: same length over the same array.
func sameSlice(a, b []Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// merge builds the merged list from what each source returned.
func (m *ToolManager) merge(lists [][]Tool, listErrs []error) ([]*ManagedTool, error) {
	var (
		out   []*ManagedTool
		owner = map[string]string{}
		errs  []error
	)
	for i, set := range m.sets {
		if err := listErrs[i]; err != nil {
			errs = append(errs, fmt.Errorf("tools of %s: %w", set.Name(), err))
			continue
		}
		for _, t := range lists[i] {
			spec := t.Spec()
			if !ValidToolName(spec.Name) {
				errs = append(errs, fmt.Errorf("tool %q of %s: invalid name (must match ^[a-zA-Z0-9_-]{1,64}$)", spec.Name, set.Name()))
				continue
			}
			if first, dup := owner[spec.Name]; dup {
				errs = append(errs, fmt.Errorf("tool name %q is used by both %s and %s: rename one (prefix, or the tool's name)", spec.Name, first, set.Name()))
				continue
			}
			owner[spec.Name] = set.Name()
			policy := m.policies[spec.Name]
			if strings.TrimSpace(policy.Prompt) == "" {
				policy.Prompt = spec.Prompt
			}
			if ec, ok := t.(EvaluationChecker); ok {
				policy.EvaluationChecks = append(slices.Clip(policy.EvaluationChecks), ec.EvaluationChecks()...)
			}
			out = append(out, &ManagedTool{Tool: t, Spec: spec, Source: set.Name(), Policy: policy})
		}
	}
	return out, errors.Join(errs...)
}

// UnknownPolicies returns the policy names that match no tool, sorted: likely typos in the configuration.
func (m *ToolManager) UnknownPolicies(tools []*ManagedTool) []string {
	var out []string
	for name := range m.policies {
		if !slices.ContainsFunc(tools, func(t *ManagedTool) bool { return t.Spec.Name == name }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// currentTools is Tools for a run: problems are logged once each instead of failing the run.
func (m *ToolManager) currentTools(ctx context.Context) []*ManagedTool {
	tools, err := m.Tools(ctx)
	if err != nil {
		msg := err.Error()
		m.mu.Lock()
		seen := m.warned[msg]
		m.warned[msg] = true
		m.mu.Unlock()
		if !seen {
			m.logger.Warn("tool sources have problems", "err", err)
		}
	}
	return tools
}

// Selection is the caller's choice of tools for one run.
type Selection struct {
	// ToolChoices, when not empty, restricts the run to these tools and forces them on the first iteration.
	ToolChoices []string
	// DisabledTools are removed from the run.
	DisabledTools []string
}

// checkSelection reports names in sel that are not tools the caller may choose.
func checkSelection(tools []*ManagedTool, sel Selection) error {
	available := make([]string, 0, len(tools))
	byName := make(map[string]*ManagedTool, len(tools))
	for _, t := range tools {
		byName[t.Spec.Name] = t
		if !t.Policy.Disabled {
			available = append(available, t.Spec.Name)
		}
	}
	var errs []error
	check := func(field string, names []string) {
		for _, n := range names {
			t, ok := byName[n]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: unknown tool %q; available tools: %s", field, n, listOrNone(available)))
			case t.Policy.Disabled:
				errs = append(errs, fmt.Errorf("%s: tool %q is disabled by the configuration; available tools: %s", field, n, listOrNone(available)))
			}
		}
	}
	check("tool_choices", sel.ToolChoices)
	check("disabled_tools", sel.DisabledTools)
	return errors.Join(errs...)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// offer is the set of tools offered in one model call.
type offer struct {
	tools  []*ManagedTool
	byName map[string]*ManagedTool
	forced []*ManagedTool
	specs  []llm.ToolSpec
	// deferred are the tools the run may offer and does not yet, by name, when tool search is on: search_tools
	// finds and loads them.
	deferred map[string]*ManagedTool
}

// newOffer applies DESIGN's offered-set rules to the current tools:
//  1. drop disabled tools and the caller's disabled_tools;
//  2. with tool_choices, keep only the chosen tools;
//  3. if an exclusive tool remains, keep only the first (the caller's first chosen exclusive tool, else the first in
//     source order);
//  4. forced tools are the chosen tools, or when none were chosen those with the forced flag.
func newOffer(tools []*ManagedTool, sel Selection) *offer {
	disabled := make(map[string]bool, len(sel.DisabledTools))
	for _, n := range sel.DisabledTools {
		disabled[n] = true
	}
	kept := make([]*ManagedTool, 0, len(tools))
	for _, t := range tools {
		if t.Policy.Disabled || disabled[t.Spec.Name] {
			continue
		}
		kept = append(kept, t)
	}
	if len(sel.ToolChoices) > 0 {
		// Keep the caller's order: it decides the forced order and which exclusive tool wins.
		byName := make(map[string]*ManagedTool, len(kept))
		for _, t := range kept {
			byName[t.Spec.Name] = t
		}
		var chosen []*ManagedTool
		for _, n := range sel.ToolChoices {
			if t, ok := byName[n]; ok && !slices.Contains(chosen, t) {
				chosen = append(chosen, t)
			}
		}
		kept = chosen
	}
	if i := slices.IndexFunc(kept, func(t *ManagedTool) bool { return t.Policy.Exclusive }); i >= 0 {
		kept = []*ManagedTool{kept[i]}
	}
	o := &offer{tools: kept, byName: make(map[string]*ManagedTool, len(kept)), specs: make([]llm.ToolSpec, 0, len(kept))}
	for _, t := range kept {
		o.byName[t.Spec.Name] = t
		if len(sel.ToolChoices) > 0 || t.Policy.Forced {
			o.forced = append(o.forced, t)
		}
		o.specs = append(o.specs, llm.ToolSpec{Name: t.Spec.Name, Description: t.Spec.Description, Parameters: t.Spec.InputSchema})
	}
	return o
}

func (o *offer) names() []string {
	out := make([]string, len(o.tools))
	for i, t := range o.tools {
		out[i] = t.Spec.Name
	}
	return out
}

// errApprovalDenied and errNoApprover are the two ways a require_approval call is refused.
var (
	errApprovalDenied = errors.New("the call was denied by the user; do not retry it unless the user asks")
	errNoApprover     = errors.New("this tool requires the user's approval, and there is no way to ask for it in this session; tell the user the tool needs approval")
)

// Invoke runs one tool call under the tool's policy: approval first when required, then the call under timeout
// (0 = no timeout of its own) with a panic recovered. It returns a Result when the tool was reached or refused, and a
// Go error when the call itself failed (the tool returned one, panicked or timed out). approval is "", "approved",
// "denied" or "unavailable". Invoke returns when the tool does: a tool must honour ctx.
func (m *ToolManager) Invoke(ctx context.Context, t *ManagedTool, args json.RawMessage, call *Call, timeout time.Duration) (res *Result, approval string, err error) {
	refusal, approval, err := m.approve(ctx, t, args, call)
	if refusal != nil || err != nil {
		return refusal, approval, err
	}
	res, err = m.run(ctx, t, args, call, timeout)
	return res, approval, err
}

// approve asks for approval when the tool's policy requires it. It returns a refusal Result when the call must not
// run, and an error only when ctx ended while asking.
func (m *ToolManager) approve(ctx context.Context, t *ManagedTool, args json.RawMessage, call *Call) (refusal *Result, approval string, err error) {
	if !t.Policy.RequireApproval {
		return nil, "", nil
	}
	ia := call.Interactor()
	if ia == nil {
		return &Result{Text: errNoApprover.Error(), IsError: true}, "unavailable", nil
	}
	ok, err := ia.Approve(ctx, &ApprovalRequest{Tool: t.Spec.Name, Source: t.Source, Arguments: args})
	switch {
	case ctx.Err() != nil:
		return nil, "", ctx.Err()
	case err != nil:
		return &Result{Text: fmt.Sprintf("asking the user for approval failed (%v); the call did not run", err), IsError: true}, "unavailable", nil
	case !ok:
		return &Result{Text: errApprovalDenied.Error(), IsError: true}, "denied", nil
	}
	return nil, "approved", nil
}

// run calls the tool under timeout with a panic turned into an error, which is logged with its stack.
func (m *ToolManager) run(ctx context.Context, t *ManagedTool, args json.RawMessage, call *Call, timeout time.Duration) (res *Result, err error) {
	if m.observer != nil {
		var end func(*Result, error)
		start := &ToolCallStart{Tool: t.Spec.Name, Source: t.Source, Description: t.Spec.Description, Arguments: args}
		if call != nil {
			start.CallID, start.ConversationID, start.ParentCallID = call.ID, call.ConversationID, call.parent
		}
		ctx, end = m.observer.StartToolCall(ctx, start)
		defer func() { end(res, err) }() // deferred first, so it runs last: after a panic was turned into err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			m.logger.Error("tool panicked", "tool", t.Spec.Name, "source", t.Source, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = nil, &panicError{value: p}
		}
	}()
	res, err = t.Tool.Call(ctx, args, call)
	if err != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = timeoutError(timeout)
	}
	if err == nil && res == nil {
		res = &Result{}
	}
	return res, err
}

func timeoutError(timeout time.Duration) error {
	return fmt.Errorf("the tool did not finish within %s", timeout)
}

// cancelGrace is how long a round waits, after its context ended or its tools' timeout passed, for calls to return.
// A tool that honours its context returns well within it, so cancellation leaves nothing running; one that does not
// is abandoned then, and cannot hold the run.
const cancelGrace = 2 * time.Second

// panicError is a recovered panic. Its message, which the model reads, leaves the stack out; the stack is logged.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("the tool crashed (panic: %v)", e.value) }
