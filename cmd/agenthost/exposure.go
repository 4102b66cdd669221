package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// warnWebAndWrites warns when tools that read the web are enabled together with tools that may write and run
// without approval: a page the model reads can carry instructions, and a tool that writes (or sends) is how they
// would do harm, so the writes should wait for a person. A tool reads the web when it is annotated openWorldHint
// explicitly true (the built-ins fetch_url and web_search are, and MCP servers may say so); a tool may write when it
// comes from an MCP server and is not read-only (see readOnlyTool).
//
// It warns too when such tools run without approval beside the built-ins that read the user's files (read_file,
// list_dir, search_files, doc_search): a web tool sends what it is given, in a URL or a query, so the same page could
// have the agent read a file and send it away; then it is the web tool that should wait for a person.
//
// The MCP specification's default for an omitted openWorldHint is true, but most servers give no hints at all:
// counting an omitted hint would warn on nearly every configuration with an MCP server, and a warning always given
// is one nobody reads. So only an explicit openWorldHint counts, and the README says so.
func warnWebAndWrites(w io.Writer, cfg *config.Config, tools []*host.ManagedTool) {
	var web, webUnapproved, writes, files []string
	for _, t := range tools {
		if t.Policy.Disabled {
			continue
		}
		if a := t.Spec.Annotations; a != nil && a.OpenWorldHint != nil && *a.OpenWorldHint {
			web = append(web, t.Spec.Name)
			if !t.Policy.RequireApproval {
				webUnapproved = append(webUnapproved, t.Spec.Name)
			}
		}
		if strings.HasPrefix(t.Source, "mcp:") && !t.Policy.RequireApproval && !readOnlyTool(t.Spec, cfg.Tools[t.Spec.Name]) {
			writes = append(writes, t.Spec.Name)
		}
		if t.Source == builtinSource && fileReaders[t.Spec.Name] {
			files = append(files, t.Spec.Name)
		}
	}
	if len(web) > 0 && len(writes) > 0 {
		fmt.Fprintf(w, "agenthost: warning: %s: tools that read the web (%s) are enabled with tools that may write and run without approval (%s): "+
			"a page the agent reads could have it change or send your data; set [tools.\"NAME\"] require_approval = true on those, "+
			"or read_only = true on a tool that only reads\n", configName(cfg), strings.Join(web, ", "), strings.Join(writes, ", "))
	}
	if len(webUnapproved) > 0 && len(files) > 0 {
		fmt.Fprintf(w, "agenthost: warning: %s: tools that read the web and run without approval (%s) are enabled with tools that read your files (%s): "+
			"a page the agent reads could have it send a file's content away in a URL or a query; set [tools.\"NAME\"] require_approval = true on the web tools\n",
			configName(cfg), strings.Join(webUnapproved, ", "), strings.Join(files, ", "))
	}
}

// builtinSource is the source name of the built-in tools (builtin.Toolset).
const builtinSource = "builtin"

// fileReaders are the built-ins that read the user's files.
var fileReaders = map[string]bool{"read_file": true, "list_dir": true, "search_files": true, "doc_search": true}

// readOnlyGuard keeps the offline test model, when it stands in for a model nobody configured, to the tools that
// only read: it calls every tool it is offered, and a tool that writes (an MCP filesystem server's write_file) would
// change the user's files on a prompt nobody meant for it. Asked for by name (provider "test", -model test), the
// model calls every tool.
type readOnlyGuard struct {
	// tools is the app's tool manager, set once it is built; until then no tool is callable.
	tools    atomic.Pointer[host.ToolManager]
	policies map[string]config.ToolPolicy
	notices  io.Writer

	mu   sync.Mutex
	told map[string]bool // tools already named on notices
}

// callable returns, for one model request, whether the model may call a named tool: one that only reads (see
// readOnlyTool), a sub-agent (its run is on the same guarded model) or the structured answer's tool. The tools are
// listed once per request, not once per name.
func (g *readOnlyGuard) callable(ctx context.Context) func(name string) bool {
	allowed := map[string]bool{host.OutputToolName: true}
	if tm := g.tools.Load(); tm != nil {
		tools, _ := tm.Tools(ctx) // the list is usable even when a source failed to list
		for _, t := range tools {
			if t.Source == subAgentsSource || readOnlyTool(t.Spec, g.policies[t.Spec.Name]) {
				allowed[t.Spec.Name] = true
			}
		}
	}
	return func(name string) bool { return allowed[name] }
}

// skipped names on notices, once each, the tools the model left alone.
func (g *readOnlyGuard) skipped(names []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var fresh []string
	for _, n := range names {
		if !g.told[n] {
			g.told[n] = true
			fresh = append(fresh, n)
		}
	}
	if len(fresh) > 0 {
		fmt.Fprintf(g.notices, "agenthost: the offline test model calls only read-only tools; it left alone: %s (set [model] provider = \"test\" or pass -model test to call every tool, or mark a tool [tools.\"NAME\"] read_only = true)\n", strings.Join(fresh, ", "))
	}
}

// subAgentsSource is the source name of the sub-agents' tools (host.SubAgents).
const subAgentsSource = "agents"

// readOnlyTool reports whether a tool only reads: its source annotates it readOnlyHint (the built-ins that only
// read do, and MCP servers may), or the admin's policy says read_only.
func readOnlyTool(spec host.ToolSpec, policy config.ToolPolicy) bool {
	if policy.ReadOnly {
		return true
	}
	a := spec.Annotations
	return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
}
