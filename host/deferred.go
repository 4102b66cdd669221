package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/llm"
)

// This file is tool search in the loop: a run whose tools are too many offers the pinned ones and search_tools, and
// each search loads the tools it finds, which are offered from the next request on, appended after those already
// offered, so that the start of the tools array (and a provider's prompt cache of it) stays the same within a run.
//
// Loading is durable-safe: what a search loaded is in its recorded Result (Structured), and what a call of a tool
// not loaded yet loads follows from the model's recorded response, so the loop derives the loaded set from the
// round's outcomes and a resumed run gets the same set.

// SearchToolSource is the Source of a run's search_tools, in debug info and to an Observer.
const SearchToolSource = "search"

// MaxSearchResults bounds search_tools' max_results, and the names one call may load (searchInput says it too).
const MaxSearchResults = 20

// searchInput is search_tools' input schema.
var searchInput = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What you need a tool for, in a few words."},` +
	`"names":{"type":"array","items":{"type":"string"},"maxItems":20,"description":"Exact names of tools to load, at most 20."},` +
	`"max_results":{"type":"integer","minimum":1,"maximum":20,"description":"How many tools a query may find; 5 by default."}},` +
	`"anyOf":[{"required":["query"]},{"required":["names"]}],"additionalProperties":false}`)

// Pinned reports whether t is offered from the first request when tool search is on (and in a gateway's search
// mode). A forced tool always is, even when its policy says Pinned false: the run calls it on its first iteration,
// and the model can only call a tool it was offered. Otherwise the policy's Pinned says, and when it says nothing,
// tools that take control and sub-agents are pinned.
func (t *ManagedTool) Pinned() bool {
	if t.Policy.Forced {
		return true
	}
	if t.Policy.Pinned != nil {
		return *t.Policy.Pinned
	}
	return t.Policy.TakesControl || t.Source == subAgentsSource
}

// subAgentsSource is the name of the sub-agents' Toolset (SubAgents.Name).
const subAgentsSource = "agents"

// SearchDecision is whether a run offers search_tools in place of the tools it would otherwise offer, and why.
type SearchDecision struct {
	On bool
	// Why is "never", "always", "auto", "tools chosen" (the caller chose the tools), "exclusive tool", "every
	// tool pinned" or "a tool is named search_tools".
	Why string
	// Tools and Tokens are how many tools the run would offer without search, and EstimateToolTokens of them.
	Tools, Tokens int
	// Threshold is the threshold of ToolSearchAuto.
	Threshold int
}

// SearchDecision is what a run with selection sel over tools decides of tool search: never with tool_choices or an
// exclusive tool, nor when every tool is pinned; always in ToolSearchAlways mode; in ToolSearchAuto mode, when the
// definitions of the tools it would offer are estimated above the threshold.
func (o *Orchestrator) SearchDecision(tools []*ManagedTool, sel Selection) SearchDecision {
	return o.searchDecision(newOffer(tools, sel), sel)
}

// searchDecision is SearchDecision over base, the tools the run would offer without search.
func (o *Orchestrator) searchDecision(base *offer, sel Selection) SearchDecision {
	opts := o.opts.ToolSearch
	d := SearchDecision{Tools: len(base.tools), Tokens: EstimateToolTokens(base.tools), Threshold: opts.Threshold}
	if d.Threshold <= 0 {
		d.Threshold = DefaultToolSearchThreshold(o.opts.ContextTokens)
	}
	switch {
	case opts.Mode == ToolSearchNever:
		d.Why = "never"
	case len(sel.ToolChoices) > 0:
		d.Why = "tools chosen"
	case slices.ContainsFunc(base.tools, func(t *ManagedTool) bool { return t.Policy.Exclusive }):
		d.Why = "exclusive tool"
	case !slices.ContainsFunc(base.tools, func(t *ManagedTool) bool { return !t.Pinned() }):
		d.Why = "every tool pinned"
	case base.byName[SearchToolName] != nil:
		d.Why = "a tool is named " + SearchToolName // offering both would give the model two tools of one name
	case opts.Mode == ToolSearchAlways:
		d.On, d.Why = true, "always"
	default:
		d.On, d.Why = d.Tokens > d.Threshold, "auto"
	}
	return d
}

// decideSearch decides, once per run, whether it offers search_tools, over the tools of its first iteration. The
// decision is a step: a durable run resumed after the tool list changed keeps the decision its recorded model calls
// were made under. With search configured off there is nothing to decide, and no step.
func (r *run) decideSearch(ctx context.Context, tools []*ManagedTool) error {
	if r.search != nil {
		return nil
	}
	on := false
	if r.o.opts.ToolSearch.Mode != ToolSearchNever {
		var err error
		on, err = stepJSON(ctx, r.steps, "tool search decision", func(context.Context) (bool, error) {
			return r.o.searchDecision(newOffer(tools, r.req.Selection), r.req.Selection).On, nil
		})
		if err != nil {
			return err
		}
	}
	r.search = &on
	return nil
}

// offer returns what the run offers of tools: newOffer's set with run_code (in code mode) and final_answer, or, when
// search is on (decideSearch), the pinned tools, search_tools, run_code, final_answer and the loaded tools in load
// order.
func (r *run) offer(tools []*ManagedTool) *offer {
	base := newOffer(tools, r.req.Selection)
	if !*r.search {
		if !r.codeOn(base) {
			return r.output.offer(base)
		}
		return r.output.offer(base.withTool(r.newCodeTool(base, tools, base.tools, false)))
	}
	var offered []*ManagedTool
	for _, t := range base.tools {
		// A source's own search_tools keeps search off (SearchDecision), unless the decision was made before it
		// came, or recorded: then it is not offered, rather than twice under one name.
		if t.Pinned() && t.Spec.Name != SearchToolName {
			offered = append(offered, t)
		}
	}
	tool := &ManagedTool{Spec: ToolSpec{Name: SearchToolName, Description: "Search the tools that are not offered yet, " +
		"by what you need them for (query) or by exact name (names). The tools found are loaded: you can call them from your next turn.",
		InputSchema: searchInput}, Source: SearchToolSource}
	offered = append(offered, tool)
	var code *ManagedTool
	if r.codeOn(base) {
		code = &ManagedTool{} // made below, once the offered tools it declares are known
		offered = append(offered, code)
	}
	if r.output != nil && r.output.tool != nil {
		offered = append(offered, r.output.tool)
	}
	for _, name := range r.toolsLoaded {
		if t, ok := base.byName[name]; ok && !slices.Contains(offered, t) {
			offered = append(offered, t)
		}
	}
	if code != nil {
		*code = *r.newCodeTool(base, tools, offered, true)
	}
	off := &offer{tools: offered, byName: make(map[string]*ManagedTool, len(offered)), forced: base.forced,
		specs: make([]llm.ToolSpec, 0, len(offered)), deferred: map[string]*ManagedTool{}}
	for _, t := range offered {
		off.byName[t.Spec.Name] = t
		off.specs = append(off.specs, llm.ToolSpec{Name: t.Spec.Name, Description: t.Spec.Description, Parameters: t.Spec.InputSchema,
			Final: r.output != nil && t == r.output.tool})
	}
	for _, t := range base.tools {
		if off.byName[t.Spec.Name] == nil {
			off.deferred[t.Spec.Name] = t
		}
	}
	tool.Tool = &searchTool{m: r.o.tools, off: off}
	return off
}

// loadTools adds the names not loaded yet to the run's loaded tools, in order.
func (r *run) loadTools(names []string) {
	for _, n := range names {
		if !slices.Contains(r.toolsLoaded, n) {
			r.toolsLoaded = append(r.toolsLoaded, n)
		}
	}
}

// searchPrompt is what the system prompt says of the tools not offered: how many, and from which sources.
func searchPrompt(off *offer) string {
	if len(off.deferred) == 0 {
		return ""
	}
	var sources []string
	for _, t := range off.deferred {
		if !slices.Contains(sources, t.Source) {
			sources = append(sources, t.Source)
		}
	}
	slices.Sort(sources)
	return fmt.Sprintf("More tools are available than those offered: %d more, from %s. To use one, first call %s with a query "+
		"saying what you need it for (or with the exact names of tools to load); the tools it finds are offered to you from your next turn.",
		len(off.deferred), strings.Join(sources, ", "), SearchToolName)
}

// searchTool is search_tools in one offer: it searches and loads that offer's deferred tools.
type searchTool struct {
	m   *ToolManager
	off *offer
}

func (t *searchTool) Spec() ToolSpec { return t.off.byName[SearchToolName].Spec }

// searchLoad is search_tools' Result.Structured: the names a call loaded, which the loop reads back.
type searchLoad struct {
	Loaded []string `json:"loaded"`
}

func (t *searchTool) Call(ctx context.Context, args json.RawMessage, _ *Call) (*Result, error) {
	var in struct {
		Query      string   `json:"query"`
		Names      []string `json:"names"`
		MaxResults *int     `json:"max_results"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return &Result{Text: fmt.Sprintf("the arguments of %s cannot be read: %v", SearchToolName, err), IsError: true}, nil
	}
	switch {
	case strings.TrimSpace(in.Query) == "" && len(in.Names) == 0:
		return &Result{Text: fmt.Sprintf(`%s needs a query or names: call it with {"query": "what you need a tool for"} or {"names": ["tool_name"]}`, SearchToolName), IsError: true}, nil
	case len(in.Names) > MaxSearchResults:
		return &Result{Text: fmt.Sprintf("at most %d names at a time (got %d)", MaxSearchResults, len(in.Names)), IsError: true}, nil
	case in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > MaxSearchResults):
		return &Result{Text: fmt.Sprintf("max_results must be between 1 and %d (got %d)", MaxSearchResults, *in.MaxResults), IsError: true}, nil
	}
	var loaded []*ManagedTool
	var lines, notFound, already []string
	for _, name := range in.Names {
		switch tool, ok := t.off.deferred[name]; {
		case ok:
			if !slices.Contains(loaded, tool) {
				loaded = append(loaded, tool)
			}
		case t.off.byName[name] != nil:
			already = append(already, name)
		default:
			notFound = append(notFound, name)
		}
	}
	if q := strings.TrimSpace(in.Query); q != "" {
		max := DefaultSearchResults
		if in.MaxResults != nil {
			max = *in.MaxResults
		}
		// By name: the manager's list may have been merged again since the offer was made (a source changed, or
		// one fails to list), with new *ManagedTool values for the same tools.
		hits, err := t.m.Search(ctx, q, &SearchOptions{MaxResults: max, Allow: func(c *ManagedTool) bool { return t.off.deferred[c.Spec.Name] != nil }})
		if err != nil {
			return nil, fmt.Errorf("searching the tools: %w", err)
		}
		for _, h := range hits {
			if tool := t.off.deferred[h.Tool.Spec.Name]; !slices.Contains(loaded, tool) {
				loaded = append(loaded, tool)
			}
		}
	}
	names := make([]string, len(loaded))
	for i, tool := range loaded {
		names[i] = tool.Spec.Name
		line := fmt.Sprintf("- %s: %s", tool.Spec.Name, firstLine(tool.Spec.Description))
		if params := paramSummary(tool.Spec.InputSchema); params != "" {
			line += "\n  Parameters: " + params
		}
		lines = append(lines, line)
	}
	var text []string
	switch {
	case len(loaded) > 0:
		text = append(text, fmt.Sprintf("Loaded %d tools; you can call them from your next turn:\n%s", len(loaded), strings.Join(lines, "\n")))
	case in.Query != "":
		text = append(text, fmt.Sprintf("No tool that is not offered yet matches %q. Try other words.", in.Query))
	}
	if len(already) > 0 {
		text = append(text, "Already offered (call them directly): "+strings.Join(already, ", ")+".")
	}
	if len(notFound) > 0 {
		text = append(text, "Not found (unknown, or not available to you): "+strings.Join(notFound, ", ")+".")
	}
	structured, _ := json.Marshal(searchLoad{Loaded: names}) // strings only: cannot fail
	debug := map[string]any{"loaded": names}
	if in.Query != "" {
		debug["query"] = in.Query
	}
	if len(in.Names) > 0 {
		debug["names"] = in.Names
	}
	if len(notFound) > 0 {
		debug["not_found"] = notFound
	}
	return &Result{Text: strings.Join(text, "\n"), Structured: structured, Debug: debug}, nil
}

// isSearchTool reports whether t is a run's search_tools.
func isSearchTool(t *ManagedTool) bool {
	_, ok := t.Tool.(*searchTool)
	return ok
}

// searchLoaded returns the names a search_tools result says it loaded.
func searchLoaded(res *Result) []string {
	if res == nil || res.IsError {
		return nil
	}
	var l searchLoad
	if json.Unmarshal(res.Structured, &l) != nil {
		return nil
	}
	return l.Loaded
}

// paramSummary is a one-line summary of a tool's parameters, the required ones first:
// `city: string (required), units: "c"|"f"`.
func paramSummary(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := slices.Index(s.Required, names[i]), slices.Index(s.Required, names[j])
		switch {
		case ri >= 0 && rj >= 0:
			return ri < rj
		case ri >= 0 || rj >= 0:
			return ri >= 0
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + typeSummary(s.Properties[n], 0)
		if slices.Contains(s.Required, n) {
			parts[i] += " (required)"
		}
	}
	return strings.Join(parts, ", ")
}

// typeSummary is a property schema's type in a few characters: its enum's values, its type or types, "array of T".
func typeSummary(schema json.RawMessage, depth int) string {
	var p struct {
		Type  any               `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
		Items json.RawMessage   `json:"items"`
	}
	if json.Unmarshal(schema, &p) != nil {
		return "any"
	}
	switch {
	case len(p.Enum) > 0:
		vals := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			vals[i] = string(v)
		}
		return strings.Join(vals, "|")
	case len(p.Const) > 0:
		return string(p.Const)
	}
	types := schemaTypes(p.Type)
	if len(types) == 0 {
		return "any"
	}
	if len(types) == 1 && types[0] == "array" && len(p.Items) > 0 && depth < 2 {
		return "array of " + typeSummary(p.Items, depth+1)
	}
	return strings.Join(types, "|")
}
