package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/wiring"
)

// warnWebAndWrites warns when tools that read the web are enabled together with tools that may write and run
// without approval: a page the model reads can carry instructions, and a tool that writes (or sends) is how they
// would do harm, so the writes should wait for a person. A tool reads the web when it is annotated openWorldHint
// explicitly true (the built-ins fetch_url and web_search are, and MCP servers may say so); a tool may write when it
// comes from an MCP server and is not read-only (see wiring.ReadOnlyTool).
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
		if strings.HasPrefix(t.Source, "mcp:") && !t.Policy.RequireApproval && !wiring.ReadOnlyTool(t.Spec, cfg.Tools[t.Spec.Name]) {
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
