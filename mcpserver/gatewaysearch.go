package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// This file is gateway mode's search form (Options.GatewayTools = GatewayToolsSearch): for clients that cap the
// tools they accept, or whose model should not read hundreds of definitions, the gateway offers the agent tool, the
// pinned tools, search_tools and call_tool, and every other enabled tool is found with search_tools and called
// through call_tool, by the same path as a direct call.

// What gateway mode offers (Options.GatewayTools).
const (
	// GatewayToolsAll offers every enabled tool under its final name.
	GatewayToolsAll = "all"
	// GatewayToolsSearch offers the pinned tools, search_tools and call_tool.
	GatewayToolsSearch = "search"
	// GatewayToolsCode offers the pinned tools, search_tools and run_code (gatewaycode.go).
	GatewayToolsCode = "code"
)

// CallToolName is the tool of the search form that calls any enabled tool by its gateway name.
const CallToolName = "call_tool"

// maxSearchResults bounds max_results and names of search_tools, as the loop's search_tools does.
const maxSearchResults = host.MaxSearchResults

// searchInput is search_tools' input, as the loop's search_tools takes it.
type searchInput struct {
	Query      string   `json:"query"`
	Names      []string `json:"names"`
	MaxResults *int     `json:"max_results"`
}

// foundTool is one tool of search_tools' result.
type foundTool struct {
	Name        string          `json:"name"`
	Source      string          `json:"source"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// searchOutput is search_tools' structured result.
type searchOutput struct {
	Tools   []foundTool `json:"tools"`
	Unknown []string    `json:"unknown,omitempty"`
}

var (
	searchToolDef = &mcp.Tool{
		Name: host.SearchToolName,
		Description: "Finds the tools of this gateway that fit a task, best first, with their full input schemas; " +
			"call one with " + CallToolName + ". Give a query in words (what you want to do), or names to get " +
			"tools you already know by their exact names.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"What the tool should do, in a few words."},`+
			`"names":{"type":"array","items":{"type":"string"},"maxItems":%[1]d,"description":"Exact tool names to get, at most %[1]d."},`+
			`"max_results":{"type":"integer","minimum":1,"maximum":%[1]d,"description":"The most tools to return; the default is %[2]d."}},`+
			`"additionalProperties":false}`, maxSearchResults, host.DefaultSearchResults)),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"tools":{"type":"array","items":{"type":"object","properties":{` +
			`"name":{"type":"string"},"source":{"type":"string"},"description":{"type":"string"},"inputSchema":{"type":"object"}},` +
			`"required":["name","source","description","inputSchema"]}},` +
			`"unknown":{"type":"array","items":{"type":"string"},"description":"Names asked for that no enabled tool has."}},` +
			`"required":["tools"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}
	callToolDef = &mcp.Tool{
		Name: CallToolName,
		Description: "Calls a tool of this gateway by its name, as " + host.SearchToolName + " returns it, with " +
			"arguments that match its input schema. The result is the tool's own.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name."},` +
			`"arguments":{"type":"object","description":"The tool's arguments."}},` +
			`"required":["name"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}
)

// offerSearch adds search_tools and call_tool, or in the code form search_tools as it is there (run_code is added by
// sync, since its description follows the merged list). They do not change with the merged list, so they are added
// once.
func (g *gateway) offerSearch() {
	if g.code != nil {
		g.mcp.AddTool(searchCodeToolDef, g.searchTools)
		return
	}
	g.mcp.AddTool(searchToolDef, g.searchTools)
	g.mcp.AddTool(callToolDef, g.callTool)
}

// offered reports whether gateway mode offers t under its own name; the others are found through search_tools.
func (g *gateway) offered(t *host.ManagedTool) bool {
	return !g.search || t.Pinned()
}

// reserved reports whether name is taken by a tool the gateway itself offers.
func (g *gateway) reserved(name string) bool {
	switch {
	case name == g.agentTool:
		return true
	case g.code != nil:
		return name == host.SearchToolName || name == host.CodeToolName
	}
	return g.search && (name == host.SearchToolName || name == CallToolName)
}

// searchable reports whether search_tools returns t: in the code form, only the tools a script may call.
func (g *gateway) searchable(t *host.ManagedTool) bool {
	return !g.reserved(t.Spec.Name) && (g.code == nil || !t.Policy.TakesControl)
}

// searchTools serves search_tools: the tools named, then the best matches of the query, each with its full input
// schema, as text for a model and as structured content.
func (g *gateway) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in searchInput
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return toolError("%s: invalid arguments: %v", host.SearchToolName, err), nil
		}
	}
	in.Query = strings.TrimSpace(in.Query)
	if in.Query == "" && len(in.Names) == 0 {
		return toolError("%s: give a query, or the names of tools", host.SearchToolName), nil
	}
	if len(in.Names) > maxSearchResults {
		return toolError("%s: at most %d names at a time (got %d)", host.SearchToolName, maxSearchResults, len(in.Names)), nil
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > maxSearchResults) {
		return toolError("%s: max_results must be between 1 and %d (got %d)", host.SearchToolName, maxSearchResults, *in.MaxResults), nil
	}
	limit := host.DefaultSearchResults
	if in.MaxResults != nil {
		limit = *in.MaxResults
	}
	out := searchOutput{Tools: []foundTool{}}
	seen := map[string]bool{}
	add := func(t *host.ManagedTool) {
		if seen[t.Spec.Name] {
			return
		}
		seen[t.Spec.Name] = true
		schema := t.Spec.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, foundTool{Name: t.Spec.Name, Source: t.Source, Description: t.Spec.Description, InputSchema: schema})
	}
	for _, name := range in.Names {
		if t := g.find(ctx, name); t != nil && (g.code == nil || g.searchable(t)) {
			add(t)
		} else {
			out.Unknown = append(out.Unknown, name)
		}
	}
	if in.Query != "" {
		hits, err := g.tools.Search(ctx, in.Query, &host.SearchOptions{MaxResults: limit, Allow: g.searchable})
		if err != nil {
			return toolError("%s: %v", host.SearchToolName, err), nil
		}
		for _, h := range hits {
			add(h.Tool)
		}
	}
	how := fmt.Sprintf("Call these with %s {name, arguments}:", CallToolName)
	if g.code != nil {
		how = fmt.Sprintf("Call these from the code of %s, as tools.<name>(arguments):", host.CodeToolName)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: searchText(in.Query, how, out)}}, StructuredContent: out}, nil
}

// searchText writes a search's result for a model: how to call the tools, then each tool's name, source and
// description, and its schema.
func searchText(query, how string, out searchOutput) string {
	var b strings.Builder
	switch {
	case len(out.Tools) == 0 && query != "":
		fmt.Fprintf(&b, "No tool matches %q; try other words.\n", query)
	case len(out.Tools) > 0:
		b.WriteString(how + "\n")
	}
	for _, t := range out.Tools {
		fmt.Fprintf(&b, "\n%s (from %s): %s\ninput schema: %s\n", t.Name, t.Source, t.Description, t.InputSchema)
	}
	if len(out.Unknown) > 0 {
		fmt.Fprintf(&b, "\nNo enabled tool is named %s.\n", strings.Join(out.Unknown, ", "))
	}
	return strings.TrimSpace(b.String())
}

// callInput is call_tool's input.
type callInput struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callTool serves call_tool: the call goes to the named tool as a direct call of it would, with the same policy,
// progress, questions, cancellation and result. A retry that carries the answers of an earlier round is resumed as
// such: the round belongs to this call_tool request, its name and arguments.
func (g *gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in callInput
	if err := json.Unmarshal(cmpRaw(req.Params.Arguments), &in); err != nil {
		return toolError("%s: invalid arguments: %v", CallToolName, err), nil
	}
	if req.Params.RequestState == "" {
		if msg := g.notCallable(ctx, in.Name); msg != "" {
			return toolError("%s: %s", CallToolName, msg), nil
		}
	}
	return g.call(ctx, in.Name, in.Arguments, req)
}

// notCallable says why call_tool cannot call name, or "" when it can.
func (g *gateway) notCallable(ctx context.Context, name string) string {
	switch {
	case name == "":
		return "give the name of the tool to call"
	case name == g.agentTool:
		return fmt.Sprintf("call the agent tool %s directly", name)
	case name == host.SearchToolName || name == CallToolName:
		if g.find(ctx, name) == nil {
			return fmt.Sprintf("call %s directly", name)
		}
		return ""
	}
	tools, _ := g.tools.Tools(ctx)
	for _, t := range tools {
		if t.Spec.Name == name {
			if t.Policy.Disabled {
				return fmt.Sprintf("the tool %s is disabled", name)
			}
			return ""
		}
	}
	return fmt.Sprintf("no tool is named %s; %s finds the tools by what they do", name, host.SearchToolName)
}

// cmpRaw returns raw, or an empty object for none.
func cmpRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
