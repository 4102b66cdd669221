package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Validate checks every value and cross-field rule of c and reports every problem at once (see Error); the
// errors carry no file or line. Parse runs the same checks. A Config built in code must fill in the defaults
// itself (start from Default, DefaultMCPServer and DefaultA2APeer), and MCP.Order and A2A.Order must list
// every server and peer once.
//
// Validate also checks the files and directories the configuration names (see Parse), a relative path from the
// current directory.
func (c *Config) Validate() error {
	return append(c.check(), c.checkFiles("")...).join("", nil)
}

// checkFiles checks that the files and directories the configuration reads at start are there: the output schema
// (which must be JSON) and the roots of the enabled file tools and doc_search. A relative path is taken from dir,
// the config file's directory ("" for the current directory); each message names the absolute path tried.
func (c *Config) checkFiles(dir string) issues {
	var is issues
	if o := c.Agent.Output; o != nil && len(o.Schema) == 0 && o.SchemaFile != "" {
		checkSchemaFile(&is, []string{"agent", "output", "schema_file"}, o.SchemaFile, dir)
	}
	enabled := func(names ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(c.Builtin.Tools, n) })
	}
	roots := func(p []string, list []string) {
		for i, r := range list {
			if strings.TrimSpace(r) != "" && !strings.ContainsRune(r, 0) { // checkPaths reports the others
				checkDir(&is, p, fmt.Sprintf("%s[%d]", formatKey(p), i), r, dir)
			}
		}
	}
	if enabled("read_file", "list_dir", "search_files") {
		roots([]string{"builtin", "files", "roots"}, c.Builtin.Files.Roots)
	}
	if enabled("doc_search") {
		roots([]string{"builtin", "doc_search", "roots"}, c.Builtin.DocSearch.Roots)
	}
	return is
}

// resolvePath returns where p is looked for: from dir when it is relative, made absolute for messages.
func resolvePath(p, dir string) (path, shown string) {
	path = p
	if !filepath.IsAbs(p) && dir != "" {
		path = filepath.Join(dir, p)
	}
	shown = path
	if abs, err := filepath.Abs(path); err == nil {
		shown = abs
	}
	return path, shown
}

// tried says where a relative path p was looked for.
func tried(p, shown, dir string) string {
	if filepath.IsAbs(p) {
		return ""
	}
	from := "the config file's directory"
	if dir == "" {
		from = "the current directory"
	}
	return fmt.Sprintf(" (looked for %s: a relative path starts from %s)", shown, from)
}

// checkDir checks that p names an existing directory.
func checkDir(is *issues, path []string, key, p, dir string) {
	full, shown := resolvePath(p, dir)
	fi, err := os.Stat(full)
	switch {
	case err != nil:
		is.addKey(path, key, "cannot read %q: %s%s", p, pathReason(err), tried(p, shown, dir))
	case !fi.IsDir():
		is.addKey(path, key, "%q is a file, not a directory%s", p, tried(p, shown, dir))
	}
}

// checkSchemaFile checks that the output schema's file can be read and holds JSON; whether the JSON is a usable
// JSON Schema is checked when the schema is compiled.
func checkSchemaFile(is *issues, path []string, p, dir string) {
	full, shown := resolvePath(p, dir)
	data, err := os.ReadFile(full)
	if err != nil {
		is.add(path, "cannot read %q: %s%s", p, pathReason(err), tried(p, shown, dir))
		return
	}
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(data, se.Offset)
			is.add(path, "%s:%d:%d: not JSON: %v", shown, line, col, se)
			return
		}
		is.add(path, "%s: not JSON: %v", shown, err)
	}
}

// pathReason is why a path could not be opened, without the path the error repeats.
func pathReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// position returns the 1-based line and column (in bytes) of the byte before offset, where encoding/json reports a
// syntax error.
func position(data []byte, offset int64) (line, col int) {
	end := min(max(int(offset)-1, 0), len(data))
	before := data[:end]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, end - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// Enumerated values, in the order messages list them.
var (
	providers       = []string{ProviderAuto, ProviderOpenAI, ProviderTest, ProviderScripted, ProviderSampling}
	citationStyles  = []string{CitationMarkdown, CitationSup, CitationNone}
	transports      = []string{TransportStdio, TransportHTTP, TransportSSE}
	authModes       = []string{AuthNone, AuthOAuth, AuthClientCredentials}
	a2aVersions     = []string{"", "1.0", "0.3"}
	stateBackends   = []string{StateSQLite, StatePostgres, StateMemory}
	durableRuns     = []string{DurableAll, DurableTasks, DurableNone}
	toolSearchModes = []string{ToolSearchAuto, ToolSearchAlways, ToolSearchNever}

	mcpVersionPattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	executorIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

const namePattern = "^[a-zA-Z0-9_-]{1,64}$"

// validName reports whether name matches namePattern, the names that OpenAI-compatible APIs and MCP clients
// accept for tools.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (c *Config) check() issues {
	var is issues
	checkAgent(&is, &c.Agent)
	checkModel(&is, &c.Model)
	checkToolSearchEmbeddings(&is, &c.Agent.ToolSearch)

	for _, f := range []struct {
		key string
		n   int64
	}{{"requests", int64(c.Limits.Requests)}, {"total_tokens", c.Limits.TotalTokens}, {"tool_calls", int64(c.Limits.ToolCalls)}} {
		if f.n < 0 {
			is.add([]string{"limits", f.key}, "must not be negative; 0 means unlimited (got %d)", f.n)
		}
	}

	seen := make(map[string]bool)
	for i, name := range c.Builtin.Tools {
		key := fmt.Sprintf("builtin.tools[%d]", i)
		switch {
		case !validName(name):
			is.addKey([]string{"builtin", "tools"}, key, "must be a tool name matching %s (got %q)", namePattern, name)
		case seen[name]:
			is.addKey([]string{"builtin", "tools"}, key, "%q is listed twice", name)
		case !slices.Contains(BuiltinTools, name):
			is.addKey([]string{"builtin", "tools"}, key, "unknown built-in tool %q%s; the built-ins are %s",
				name, didYouMean(name, BuiltinTools), strings.Join(BuiltinTools, ", "))
		}
		seen[name] = true
	}

	checkBuiltin(&is, &c.Builtin)
	checkOrder(&is, "agents", "", c.Agents, c.AgentOrder)
	names := c.toolNames()
	checkAgents(&is, c.Agents, c.AgentOrder, names)

	for _, name := range sortedKeys(c.Tools) {
		if !validName(name) {
			is.add([]string{"tools", name}, "tool name must match %s", namePattern)
		} else if why := names.typo(name, ""); why != "" {
			is.add([]string{"tools", name}, "matches no tool%s", why)
		}
		checkChecks(&is, []string{"tools", name, "evaluation_checks"}, "tools."+name+".evaluation_checks", c.Tools[name].EvaluationChecks)
	}
	checkChecks(&is, []string{"eval", "checks"}, "eval.checks", c.Eval.Checks)
	if c.Eval.OnFailure != "" {
		checkEnum(&is, []string{"eval", "on_failure"}, c.Eval.OnFailure, []string{OnFailureWarn, OnFailureRetry})
	}
	for i, d := range c.Eval.Datasets {
		if _, err := filepath.Match(d, ""); err != nil || strings.TrimSpace(d) == "" {
			is.addKey([]string{"eval", "datasets"}, fmt.Sprintf("eval.datasets[%d]", i), "must be a file name or a glob such as \"evals/*.jsonl\" (got %q)", d)
		}
	}

	checkOrder(&is, "mcp", "servers", c.MCP.Servers, c.MCP.Order)
	for _, name := range sortedKeys(c.MCP.Servers) {
		checkServer(&is, []string{"mcp", "servers", name}, name, c.MCP.Servers[name])
	}
	checkOrder(&is, "a2a", "peers", c.A2A.Peers, c.A2A.Order)
	for _, name := range sortedKeys(c.A2A.Peers) {
		checkPeer(&is, []string{"a2a", "peers", name}, name, c.A2A.Peers[name])
	}
	checkEnum(&is, []string{"state", "backend"}, c.State.Backend, stateBackends)
	if !validEnvName(c.State.DSNEnv) {
		is.add([]string{"state", "dsn_env"}, "must be the name of an environment variable (got %q)", c.State.DSNEnv)
	}
	checkEnum(&is, []string{"state", "durable_runs"}, c.State.DurableRuns, durableRuns)
	if id := c.State.ExecutorID; id != "" && !executorIDPattern.MatchString(id) {
		is.add([]string{"state", "executor_id"}, "must match %s (got %q)", executorIDPattern, id)
	}
	checkServe(&is, &c.Serve)
	checkTelemetry(&is, &c.Telemetry)
	checkCodeMode(&is, &c.CodeMode, names, c.Agent.ToolTimeout)
	return is
}

// codeToolName is the name of code mode's tool (host.CodeToolName), which a program cannot call.
const codeToolName = "run_code"

// checkCodeMode checks [code_mode]: its tools as a sub-agent's are checked, and its bounds.
func checkCodeMode(is *issues, cm *CodeMode, names toolNames, toolTimeout Duration) {
	p := func(key string) []string { return []string{"code_mode", key} }
	if cm.Tools != nil && len(cm.Tools) == 0 {
		is.add(p("tools"), "must name at least one tool; leave it out for every tool the agent offers")
	}
	seen := map[string]bool{}
	for i, t := range cm.Tools {
		key := fmt.Sprintf("code_mode.tools[%d]", i)
		switch {
		case !validName(t):
			is.addKey(p("tools"), key, "must be a tool name matching %s (got %q)", namePattern, t)
		case t == codeToolName:
			is.addKey(p("tools"), key, "%q is code mode's own tool: a program cannot call it", t)
		case seen[t]:
			is.addKey(p("tools"), key, "%q is listed twice", t)
		default:
			if why := names.typo(t, ""); why != "" {
				is.addKey(p("tools"), key, "%q matches no tool%s", t, why)
			}
		}
		seen[t] = true
	}
	checkDuration(is, p("timeout"), cm.Timeout, "10m")
	// run_code is one tool call of its round, which [agent] tool_timeout bounds: a longer program would be cut off
	// there, without its log.
	if t := toolTimeout.Duration; t > 0 && cm.Timeout.Duration > t {
		is.add(p("timeout"), "must not exceed [agent] tool_timeout (%s), which bounds run_code as any tool call (got %s)", t, cm.Timeout.Duration)
	}
	checkRange(is, p("memory_limit"), cm.MemoryLimit, 1<<20, 1<<30)
	checkRange(is, p("max_tool_calls"), cm.MaxToolCalls, 1, 10000)
	checkRange(is, p("max_output_bytes"), cm.MaxOutputBytes, 1024, 10<<20)
}

// toolNames is what is known of the tool names before the MCP servers and A2A peers are reached: the built-ins,
// the sub-agents and the peers by name, and the MCP servers by the prefix of their tools' names.
//
// A tool policy or a sub-agent's tool whose name can be none of these but is within two edits of a known one is a
// typo: it would leave the tool it meant without its policy, or the sub-agent without the tool, in silence. A name
// like no known one may be an MCP tool, is harmless otherwise (a policy for no tool) and was accepted before: it is
// checked once the tools are listed, where agenthost check warns about a policy that matches no tool.
type toolNames struct {
	known    []string // built-ins, sub-agents and A2A peers
	prefixes []string // "<prefix>_" of each MCP server's tool names
	bare     bool     // an MCP server's tools keep their own names: any name may be one of them
}

func (c *Config) toolNames() toolNames {
	tn := toolNames{known: slices.Concat(BuiltinTools, sortedKeys(c.Agents), sortedKeys(c.A2A.Peers))}
	for _, name := range sortedKeys(c.MCP.Servers) {
		p := c.MCP.Servers[name].PrefixOrName(name)
		if p == "" {
			tn.bare = true
			continue
		}
		tn.prefixes = append(tn.prefixes, p+"_")
	}
	return tn
}

// maxToolName is the longest final tool name (host.MaxToolNameLen): a longer one is cut and ends in a hash, so that
// a name of this length may belong to any MCP server.
const maxToolName = 64

// typo returns "" when name may be a tool or is like no known one (self, a sub-agent's own name, left out), else
// the suggestion and why name is no tool.
func (tn toolNames) typo(name, self string) string {
	known := slices.DeleteFunc(slices.Clone(tn.known), func(k string) bool { return k == self })
	if slices.Contains(known, name) || tn.bare || len(tn.prefixes) > 0 && len(name) == maxToolName {
		return ""
	}
	for _, p := range tn.prefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return ""
		}
	}
	hint := didYouMean(name, known)
	if hint == "" {
		return ""
	}
	why := hint + ": it is not a built-in, a sub-agent or an A2A peer"
	if len(tn.prefixes) > 0 {
		quoted := make([]string, len(tn.prefixes))
		for i, p := range tn.prefixes {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		why += ", and the MCP servers' tool names begin with " + strings.Join(quoted, " or ")
	}
	return why
}

// didYouMean returns ` (did you mean "x"?)` for the name of known closest to name, or "". A name no longer than the
// distance is not taken for a typo of it.
func didYouMean(name string, known []string) string {
	best, dist := closest(name, known)
	if best == "" || dist >= len(name) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// checkChecks checks a list of evaluation check names.
func checkChecks(is *issues, p []string, key string, names []string) {
	seen := map[string]bool{}
	for i, n := range names {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case !slices.Contains(CheckNames, n):
			is.addKey(p, k, "must be one of %s (got %q)", strings.Join(CheckNames, ", "), n)
		case seen[n]:
			is.addKey(p, k, "%q is listed twice", n)
		}
		seen[n] = true
	}
}

func checkTelemetry(is *issues, t *Telemetry) {
	p := func(key string) []string { return []string{"telemetry", key} }
	if t.Exporter != "" { // "": as the environment says
		checkEnum(is, p("exporter"), t.Exporter, []string{ExporterOTLP, ExporterNone})
	}
	if t.Protocol != "" {
		checkEnum(is, p("protocol"), t.Protocol, []string{ProtocolHTTP, ProtocolGRPC})
	}
	if t.Endpoint != "" {
		checkURL(is, p("endpoint"), t.Endpoint)
	}
	checkHeaders(is, p("headers"), t.Headers)
	if strings.ContainsAny(t.ServiceName, "\r\n\x00") {
		is.add(p("service_name"), "must not contain line breaks or NUL")
	}
}

// Web search backends, in the order messages list them.
var webSearchBackends = []string{"searxng", "brave", "tavily"}

func checkBuiltin(is *issues, b *Builtin) {
	enabled := func(names ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(b.Tools, n) })
	}
	p := func(table, key string) []string { return []string{"builtin", table, key} }

	f := b.FetchURL
	checkPositive(is, p("fetch_url", "timeout"), f.Timeout)
	checkRange(is, p("fetch_url", "max_bytes"), f.MaxBytes, 1024, 1<<30)
	checkRange(is, p("fetch_url", "max_chars"), f.MaxChars, 100, 10_000_000)
	for i, h := range f.AllowHosts {
		if !validHostHeader(h) {
			is.addKey(p("fetch_url", "allow_hosts"), fmt.Sprintf("builtin.fetch_url.allow_hosts[%d]", i),
				"must be a host or host:port such as \"intranet.example\" or \"127.0.0.1:8080\" (got %q)", h)
		}
	}
	if strings.ContainsAny(f.UserAgent, "\r\n\x00") {
		is.add(p("fetch_url", "user_agent"), "must not contain line breaks or NUL")
	}

	w := b.WebSearch
	switch {
	case w.Backend == "" && enabled("web_search"):
		is.add(p("web_search", "backend"), "required when web_search is in builtin.tools: one of \"searxng\", \"brave\", \"tavily\"")
	case w.Backend != "":
		checkEnum(is, p("web_search", "backend"), w.Backend, webSearchBackends)
	}
	if w.URL != "" {
		checkURL(is, p("web_search", "url"), w.URL)
	} else if w.Backend == "searxng" {
		is.add(p("web_search", "url"), "required with backend \"searxng\": the URL of the SearXNG instance")
	}
	if w.APIKeyEnv != "" && !validEnvName(w.APIKeyEnv) {
		is.add(p("web_search", "api_key_env"), "must be the name of an environment variable (got %q)", w.APIKeyEnv)
	}
	checkRange(is, p("web_search", "max_results"), w.MaxResults, 1, 20)
	checkPositive(is, p("web_search", "timeout"), w.Timeout)

	fs := b.Files
	if len(fs.Roots) == 0 && enabled("read_file", "list_dir", "search_files") {
		is.add(p("files", "roots"), "required when read_file, list_dir or search_files is in builtin.tools: the directories they may read")
	}
	checkPaths(is, p("files", "roots"), fs.Roots)
	checkRange(is, p("files", "max_file_bytes"), fs.MaxFileBytes, 1, 1<<40)
	checkRange(is, p("files", "max_results"), fs.MaxResults, 1, 100_000)

	ds := b.DocSearch
	if len(ds.Roots) == 0 && enabled("doc_search") {
		is.add(p("doc_search", "roots"), "required when doc_search is in builtin.tools: the directories to index")
	}
	checkPaths(is, p("doc_search", "roots"), ds.Roots)
	for i, ext := range ds.Extensions {
		if !strings.HasPrefix(ext, ".") || len(ext) < 2 || strings.ContainsAny(ext, "/\\ ") {
			is.addKey(p("doc_search", "extensions"), fmt.Sprintf("builtin.doc_search.extensions[%d]", i),
				"must be a file extension with its dot, such as \".rst\" (got %q)", ext)
		}
	}
	if ds.RefreshInterval.Duration < 0 {
		is.add(p("doc_search", "refresh_interval"), "must not be negative; \"0s\" refreshes at start-up only (got %q)", ds.RefreshInterval.String())
	}
	checkRange(is, p("doc_search", "max_file_bytes"), ds.MaxFileBytes, 1, 1<<40)
	checkRange(is, p("doc_search", "max_results"), ds.MaxResults, 1, 50)

	checkRange(is, p("calculate", "precision"), b.Calculate.Precision, 1, 1000)
}

// checkPaths checks a list of directory paths for empty entries.
func checkPaths(is *issues, p []string, paths []string) {
	for i, dir := range paths {
		if strings.TrimSpace(dir) == "" || strings.ContainsRune(dir, 0) {
			is.addKey(p, fmt.Sprintf("%s[%d]", strings.Join(p, "."), i), "must be a directory path (got %q)", dir)
		}
	}
}

// checkAgents checks the sub-agents, and that no sub-agent reaches itself through the sub-agents it may use.
func checkAgents(is *issues, agents map[string]SubAgent, order []string, names toolNames) {
	for _, name := range sortedKeys(agents) {
		a := agents[name]
		p := func(key string) []string { return []string{"agents", name, key} }
		if !validName(name) {
			is.add([]string{"agents", name}, "sub-agent name must match %s, as it names the sub-agent's tool", namePattern)
		}
		checkRequired(is, p("description"), a.Description)
		checkRange(is, p("max_iterations"), a.MaxIterations, 1, 100)
		for _, f := range []struct {
			key string
			n   int64
		}{{"requests", int64(a.Limits.Requests)}, {"total_tokens", a.Limits.TotalTokens}, {"tool_calls", int64(a.Limits.ToolCalls)}} {
			if f.n < 0 {
				is.add([]string{"agents", name, "limits", f.key}, "must not be negative; 0 means unlimited (got %d)", f.n)
			}
		}
		seen := map[string]bool{}
		for i, t := range a.Tools {
			key := fmt.Sprintf("agents.%s.tools[%d]", name, i)
			switch {
			case !validName(t):
				is.addKey(p("tools"), key, "must be a tool name matching %s (got %q)", namePattern, t)
			case t == name:
				is.addKey(p("tools"), key, "a sub-agent cannot use itself")
			case seen[t]:
				is.addKey(p("tools"), key, "%q is listed twice", t)
			default:
				if why := names.typo(t, name); why != "" {
					is.addKey(p("tools"), key, "%q matches no tool%s", t, why)
				}
			}
			seen[t] = true
		}
	}
	// A cycle through other sub-agents: report it once, at the first sub-agent of the cycle in file order.
	reported := map[string]bool{}
	for _, start := range order {
		if cycle := agentCycle(agents, start); cycle != nil && !reported[cycle[0]] {
			for _, n := range cycle {
				reported[n] = true
			}
			is.add([]string{"agents", start, "tools"}, "sub-agents call each other in a cycle: %s", strings.Join(append(cycle, cycle[0]), " -> "))
		}
	}
}

// agentCycle returns the sub-agents of a cycle that start reaches and is part of, starting with start, or nil. A
// sub-agent naming itself is reported apart.
func agentCycle(agents map[string]SubAgent, start string) []string {
	var path []string
	onPath := map[string]bool{}
	done := map[string]bool{}
	var visit func(n string) []string
	visit = func(n string) []string {
		if onPath[n] {
			if n == start {
				return slices.Clone(path)
			}
			return nil
		}
		if done[n] {
			return nil
		}
		onPath[n] = true
		path = append(path, n)
		for _, t := range agents[n].Tools {
			if _, ok := agents[t]; ok && t != n {
				if c := visit(t); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		onPath[n] = false
		done[n] = true
		return nil
	}
	return visit(start)
}

func checkAgent(is *issues, a *Agent) {
	p := func(key string) []string { return []string{"agent", key} }
	if !validName(a.Name) {
		is.add(p("name"), "must match %s, as it names the agent's tool (got %q)", namePattern, a.Name)
	}
	checkRange(is, p("max_iterations"), a.MaxIterations, 1, 100)
	checkRange(is, p("max_tool_calls"), a.MaxToolCalls, 1, 100)
	checkPositive(is, p("tool_timeout"), a.ToolTimeout)
	checkRange(is, p("output_retries"), a.OutputRetries, 0, 10)
	if o := a.Output; o != nil {
		op := []string{"agent", "output"}
		switch {
		case len(o.Schema) > 0 && o.SchemaFile != "":
			is.add(append(op, "schema_file"), "conflicts with schema: give the schema inline or in a file, not both")
		case len(o.Schema) == 0 && o.SchemaFile == "":
			is.add(op, "needs schema (a TOML table) or schema_file")
		}
	}
	if t := a.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		is.add(p("temperature"), "must be between 0 and 2 (got %v)", *t)
	}
	checkEnum(is, p("citation_style"), a.CitationStyle, citationStyles)
	checkMin(is, p("max_conversations"), a.MaxConversations, 1)
	checkPositive(is, p("conversation_ttl"), a.ConversationTTL)
	checkToolSearch(is, &a.ToolSearch)
}

// checkToolSearch checks the mode and threshold of [agent.tool_search]; a mode given in the short form
// (`tool_search = "MODE"`) is reported at that line too.
func checkToolSearch(is *issues, ts *ToolSearch) {
	p := func(key string) []string { return []string{"agent", "tool_search", key} }
	if ts.Mode != "" && !slices.Contains(toolSearchModes, ts.Mode) {
		is.add(p("mode"), "must be one of \"auto\", \"always\", \"never\" (got %q)%s", ts.Mode, didYouMean(ts.Mode, toolSearchModes))
	}
	if ts.Threshold < 0 {
		is.add(p("threshold"), "must not be negative; 0 means 5%% of [model] context_tokens (got %d)", ts.Threshold)
	}
}

func checkModel(is *issues, m *Model) {
	p := func(key string) []string { return []string{"model", key} }
	checkEnum(is, p("provider"), m.Provider, providers)
	if m.Provider == ProviderOpenAI && m.Model == "" {
		is.add(p("model"), "required when provider is %q", ProviderOpenAI)
	}
	if m.BaseURL != "" {
		checkURL(is, p("base_url"), m.BaseURL)
	}
	if m.APIKeyEnv != "" && !validEnvName(m.APIKeyEnv) {
		is.add(p("api_key_env"), "must be the name of an environment variable (got %q)", m.APIKeyEnv)
	}
	checkPositive(is, p("request_timeout"), m.RequestTimeout)
	checkPositive(is, p("idle_timeout"), m.IdleTimeout)
	checkRange(is, p("max_retries"), m.MaxRetries, 0, 10)
	if m.MaxTokens < 0 {
		is.add(p("max_tokens"), "must not be negative; 0 leaves it to the provider (got %d)", m.MaxTokens)
	}
	checkMin(is, p("context_tokens"), m.ContextTokens, 1)
	switch {
	case m.Provider == ProviderScripted && m.Script == "":
		is.add(p("script"), "required when provider is %q", ProviderScripted)
	case m.Provider != ProviderScripted && m.Script != "" && slices.Contains(providers, m.Provider):
		is.add(p("script"), "only used with provider %q (provider is %q)", ProviderScripted, m.Provider)
	}
}

// checkToolSearchEmbeddings checks the embeddings API of [agent.tool_search] as checkModel checks [model]'s; its
// base_url and api_key_env mean nothing without embeddings_model.
func checkToolSearchEmbeddings(is *issues, ts *ToolSearch) {
	p := func(key string) []string { return []string{"agent", "tool_search", key} }
	if ts.BaseURL != "" {
		checkURL(is, p("base_url"), ts.BaseURL)
	}
	if ts.APIKeyEnv != "" && !validEnvName(ts.APIKeyEnv) {
		is.add(p("api_key_env"), "must be the name of an environment variable (got %q)", ts.APIKeyEnv)
	}
	if ts.EmbeddingsModel == "" {
		if ts.BaseURL != "" {
			is.add(p("base_url"), "only used with embeddings_model, which is not set")
		}
		if ts.APIKeyEnv != "" {
			is.add(p("api_key_env"), "only used with embeddings_model, which is not set")
		}
	}
}

// checkOrder checks that order lists each key of m exactly once.
func checkOrder[V any](is *issues, table, sub string, m map[string]V, order []string) {
	seen := make(map[string]bool, len(order))
	ok := len(order) == len(m)
	for _, name := range order {
		_, known := m[name]
		ok = ok && known && !seen[name]
		seen[name] = true
	}
	if !ok {
		p := []string{table, sub}
		if sub == "" {
			p = p[:1]
		}
		is.add(p, "the Order field must list each of the %d names exactly once (got %q)", len(m), order)
	}
}

// validEnvPattern reports whether p is an env_passthrough pattern: a portable variable name (letters, digits and _)
// in which * stands for any run of characters.
func validEnvPattern(p string) bool {
	return p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r == '_' || r == '*' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

func checkServer(is *issues, p []string, name string, s MCPServer) {
	k := func(key string) []string { return append(slices.Clip(p), key) }
	if !validName(name) {
		is.add(p, "server name must match %s", namePattern)
	}
	t := s.EffectiveTransport()
	switch {
	case s.Transport != "":
		checkEnum(is, k("transport"), s.Transport, transports)
	case s.Command != "" && s.URL != "":
		is.add(p, "set command (stdio) or url (http, sse), not both")
	case t == "":
		is.add(p, "needs command (stdio) or url (http, sse)")
	}
	// A field that the transport does not use is an error, not silently ignored.
	stdioFields := []struct {
		key string
		set bool
	}{{"command", s.Command != ""}, {"args", s.Args != nil}, {"env", s.Env != nil}, {"cwd", s.Cwd != ""},
		{"env_passthrough", s.EnvPassthrough != nil}}
	httpFields := []struct {
		key string
		set bool
	}{{"url", s.URL != ""}, {"headers", s.Headers != nil}, {"auth", s.Auth != ""}, {"client_id", s.ClientID != ""},
		{"client_secret_env", s.ClientSecretEnv != ""}, {"client_metadata_url", s.ClientMetadataURL != ""},
		{"scopes", s.Scopes != nil}, {"redirect_port", s.RedirectPort != 0}}
	switch t {
	case TransportStdio:
		if s.Command == "" {
			is.add(k("command"), "required with transport %q", t)
		}
		for _, f := range httpFields {
			if f.set {
				is.add(k(f.key), "not used with transport %q", t)
			}
		}
	case TransportHTTP, TransportSSE:
		if s.URL == "" {
			is.add(k("url"), "required with transport %q", t)
		} else {
			checkURL(is, k("url"), s.URL)
		}
		for _, f := range stdioFields {
			if f.set {
				is.add(k(f.key), "not used with transport %q", t)
			}
		}
		checkHeaders(is, k("headers"), s.Headers)
		checkServerAuth(is, k, s)
	}
	for envName := range s.Env {
		if envName == "" || strings.ContainsAny(envName, "=\x00") {
			is.add(append(k("env"), envName), "not a valid environment variable name")
		}
	}
	for i, pat := range s.EnvPassthrough {
		if !validEnvPattern(pat) {
			is.addKey(k("env_passthrough"), fmt.Sprintf("%s[%d]", formatKey(k("env_passthrough")), i),
				"must be a variable name, or a pattern in which * stands for any run of characters: letters, digits, _ and * (got %q)", pat)
		}
	}
	if s.ProtocolVersion != "" && !mcpVersionPattern.MatchString(s.ProtocolVersion) {
		is.add(k("protocol_version"), "must be an MCP protocol version such as \"2025-06-18\" (got %q)", s.ProtocolVersion)
	}
	checkPositive(is, k("connect_timeout"), s.ConnectTimeout)
	checkPositive(is, k("reconnect_wait"), s.ReconnectWait)
	for _, f := range []struct {
		key      string
		patterns []string
	}{{"include", s.Include}, {"exclude", s.Exclude}} {
		for i, pat := range f.patterns {
			if _, err := path.Match(pat, ""); err != nil {
				is.addKey(k(f.key), fmt.Sprintf("%s[%d]", formatKey(k(f.key)), i), "invalid pattern %q: %v", pat, err)
			}
		}
	}
	if s.Prefix != nil && *s.Prefix != "" && !validName(*s.Prefix) {
		is.add(k("prefix"), "must match %s, or be \"\" for bare tool names (got %q)", namePattern, *s.Prefix)
	}
	checkMin(is, k("sampling_max_tokens"), s.SamplingMaxTokens, 1)
	if s.Sampling != "" {
		checkEnum(is, k("sampling"), s.Sampling, []string{SamplingAgent, SamplingCaller})
	}
}

// checkServerAuth checks how agenthost authorizes itself to an http or sse server.
func checkServerAuth(is *issues, k func(string) []string, s MCPServer) {
	if s.Auth != "" {
		checkEnum(is, k("auth"), s.Auth, authModes)
	}
	staticAuth := false
	for name := range s.Headers {
		staticAuth = staticAuth || strings.EqualFold(name, "Authorization")
	}
	switch s.Auth {
	case AuthNone:
		for _, f := range []struct {
			key string
			set bool
		}{{"client_id", s.ClientID != ""}, {"client_secret_env", s.ClientSecretEnv != ""},
			{"client_metadata_url", s.ClientMetadataURL != ""}, {"scopes", s.Scopes != nil}, {"redirect_port", s.RedirectPort != 0}} {
			if f.set {
				is.add(k(f.key), "not used with auth = %q", AuthNone)
			}
		}
	case AuthOAuth, AuthClientCredentials:
		if staticAuth {
			is.add(k("auth"), "%q conflicts with the static Authorization header in headers: keep one", s.Auth)
		}
	}
	if s.Auth == AuthClientCredentials {
		if s.ClientID == "" {
			is.add(k("client_id"), "required with auth = %q", AuthClientCredentials)
		}
		if s.ClientSecretEnv == "" {
			is.add(k("client_secret_env"), "required with auth = %q", AuthClientCredentials)
		}
		if s.ClientMetadataURL != "" {
			is.add(k("client_metadata_url"), "not used with auth = %q", AuthClientCredentials)
		}
		if s.RedirectPort != 0 {
			is.add(k("redirect_port"), "not used with auth = %q: there is no redirect", AuthClientCredentials)
		}
	}
	if s.ClientSecretEnv != "" && s.ClientID == "" {
		is.add(k("client_secret_env"), "needs client_id: the secret is that client's")
	}
	if s.ClientSecretEnv != "" && !validEnvName(s.ClientSecretEnv) {
		is.add(k("client_secret_env"), "must be an environment variable name (got %q)", s.ClientSecretEnv)
	}
	if s.ClientMetadataURL != "" {
		if u, err := url.Parse(s.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			is.add(k("client_metadata_url"), "must be an https URL with a path, where the client ID metadata document is served (got %q)", s.ClientMetadataURL)
		}
	}
	for i, scope := range s.Scopes {
		if !validScope(scope) {
			is.addKey(k("scopes"), fmt.Sprintf("%s[%d]", formatKey(k("scopes")), i), "not a valid OAuth scope (got %q)", scope)
		}
	}
	if s.RedirectPort < 0 || s.RedirectPort > 65535 {
		is.add(k("redirect_port"), "must be a port, 1 to 65535, or 0 for a free one (got %d)", s.RedirectPort)
	}
}

func checkPeer(is *issues, p []string, name string, peer A2APeer) {
	k := func(key string) []string { return append(slices.Clip(p), key) }
	if !validName(name) {
		is.add(p, "peer name must match %s, as it names the peer's tool", namePattern)
	}
	if peer.URL == "" {
		is.add(k("url"), "required")
	} else {
		checkURL(is, k("url"), peer.URL)
	}
	checkHeaders(is, k("headers"), peer.Headers)
	checkPositive(is, k("timeout"), peer.Timeout)
	checkEnum(is, k("protocol_version"), peer.ProtocolVersion, a2aVersions)
	checkPositive(is, k("poll_interval"), peer.PollInterval)
}

// healthPath is the URL path of the health check of `agenthost serve --http`, which serve.path must leave free.
const healthPath = "/healthz"

func checkServe(is *issues, s *Serve) {
	p := func(key string) []string { return []string{"serve", key} }
	if s.ToolName != "" && !validName(s.ToolName) {
		is.add(p("tool_name"), "must match %s, or be \"\" for \"ask_<agent name>\" (got %q)", namePattern, s.ToolName)
	}
	checkListenAddr(is, p("http"), s.HTTP, "127.0.0.1:8765")
	checkListenAddr(is, p("a2a"), s.A2A, "127.0.0.1:8766")
	if s.A2APublicURL != "" && !validPublicURL(s.A2APublicURL) {
		is.add(p("a2a_public_url"), "must be an absolute http or https URL with a host and no query, fragment or user info, "+
			"such as \"https://agent.example.com/a2a\" (got %q)", s.A2APublicURL)
	}
	switch {
	case !validURLPath(s.Path):
		is.add(p("path"), "must be a URL path such as \"/mcp\": starting with \"/\", without spaces, ?, #, { or } (got %q)", s.Path)
	case s.Path == healthPath:
		is.add(p("path"), "%q is the health check's path", healthPath)
	}
	if s.AuthTokenEnv != "" && !validEnvName(s.AuthTokenEnv) {
		is.add(p("auth_token_env"), "must be the name of an environment variable (got %q)", s.AuthTokenEnv)
	}
	checkAuthTokensEnv(is, s)
	for i, h := range s.AllowedHosts {
		if !validHostHeader(h) {
			is.addKey(p("allowed_hosts"), fmt.Sprintf("serve.allowed_hosts[%d]", i),
				"must be a host or host:port such as \"agent.example.com\" or \"[::1]:8765\", without a scheme (got %q)", h)
		}
	}
	for i, o := range s.AllowedOrigins {
		if !validOrigin(o) {
			is.addKey(p("allowed_origins"), fmt.Sprintf("serve.allowed_origins[%d]", i),
				"must be an origin such as \"https://app.example.com\": http or https, a host, an optional port and no path (got %q)", o)
		}
	}
	checkRange(is, p("max_body_bytes"), s.MaxBodyBytes, 1024, 1<<30)
	if modes := []string{GatewayToolsAll, GatewayToolsSearch, GatewayToolsCode}; !slices.Contains(modes, s.GatewayTools) {
		is.add(p("gateway_tools"), "must be one of \"all\", \"search\", \"code\" (got %q)%s", s.GatewayTools, didYouMean(s.GatewayTools, modes))
	} else if s.GatewayTools != GatewayToolsAll {
		if !s.ExposeTools {
			is.add(p("gateway_tools"), "only used with expose_tools = true (gateway mode); expose_tools is false")
		}
		// The code form does not offer call_tool, but keeps its name free, so that switching forms renames nothing.
		if s.ToolName == "search_tools" || s.ToolName == "call_tool" || (s.GatewayTools == GatewayToolsCode && s.ToolName == "run_code") {
			is.add(p("tool_name"), "%q is a tool of gateway_tools = %q; name the agent tool otherwise", s.ToolName, s.GatewayTools)
		}
	}
	checkPositive(is, p("progress_interval"), s.ProgressInterval)
	checkPositive(is, p("input_timeout"), s.InputTimeout)
	checkRange(is, p("max_waiting_calls"), s.MaxWaitingCalls, 1, 100000)
	checkDuration(is, p("read_header_timeout"), s.ReadHeaderTimeout, "10m")
	checkDuration(is, p("read_body_timeout"), s.ReadBodyTimeout, "1h")
	checkDuration(is, p("idle_timeout"), s.IdleTimeout, "1h")
	checkRange(is, p("max_sessions"), s.MaxSessions, 1, 1000000)
	checkDuration(is, p("session_idle_timeout"), s.SessionIdleTimeout, "168h")
	checkRange(is, p("max_sessions_per_subject"), s.MaxSessionsPerSubject, 1, 1000000)
	checkRange(is, p("max_tasks_per_subject"), s.MaxTasksPerSubject, 1, 1000000)
	checkSkills(is, s.Skills)
	if s.OAuth != nil {
		checkServeOAuth(is, s)
	}
}

// checkServeOAuth checks [serve.oauth]: an issuer and a JWKS URL on https (http only on loopback), an audience,
// scopes that are scope tokens, and no static token besides.
func checkServeOAuth(is *issues, s *Serve) {
	o := s.OAuth
	p := func(key string) []string { return []string{"serve", "oauth", key} }
	checkRequired(is, p("issuer"), o.Issuer)
	if o.Issuer != "" && !secureURL(o.Issuer) {
		is.add(p("issuer"), "must be an https URL (http only on a loopback host) with no query or fragment, "+
			"such as \"https://login.example.com/\" (got %q)", o.Issuer)
	}
	checkRequired(is, p("audience"), o.Audience)
	if o.JWKSURL != "" && !secureURL(o.JWKSURL) {
		is.add(p("jwks_url"), "must be an https URL (http only on a loopback host) with no query or fragment (got %q)", o.JWKSURL)
	}
	for i, scope := range o.RequiredScopes {
		if !validScope(scope) {
			is.addKey(p("required_scopes"), fmt.Sprintf("serve.oauth.required_scopes[%d]", i),
				"must be a scope: printable, without spaces, quotes or backslashes (got %q)", scope)
		}
	}
	if s.AuthTokenEnv != "" {
		is.add([]string{"serve", "auth_token_env"}, "conflicts with [serve.oauth]: requests carry either the issuer's tokens or a static one; keep one")
	}
}

// validScope reports whether s is an OAuth scope token (RFC 6749 section 3.3): printable ASCII without spaces,
// quotes or backslashes.
func validScope(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' || r == '\\' }) < 0
}

// secureURL reports whether raw is an absolute https URL, or http on a loopback host, without query or fragment.
func secureURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || !validHTTPHost(u) {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// checkListenAddr checks a listen address: host:port with a decimal port, 0 for any free port.
func checkListenAddr(is *issues, p []string, addr, example string) {
	if _, port, err := net.SplitHostPort(addr); err != nil {
		is.add(p, "must be a listen address host:port such as %q (got %q)", example, addr)
	} else if _, ok := parsePort(port); !ok {
		is.add(p, "port must be a number between 0 and 65535, 0 for any free port (got %q)", addr)
	}
}

// checkSkills checks [[serve.skills]]: id, name and description set, and no id used twice.
func checkSkills(is *issues, skills []Skill) {
	first := make(map[string][]string, len(skills)) // id → path of the first skill with it
	for i, sk := range skills {
		p := []string{"serve", "skills", indexPart(i + 1)}
		k := func(key string) []string { return append(slices.Clip(p), key) }
		checkRequired(is, k("id"), sk.ID)
		checkRequired(is, k("name"), sk.Name)
		checkRequired(is, k("description"), sk.Description)
		if sk.ID == "" {
			continue
		}
		if prev, ok := first[sk.ID]; ok {
			is.add(k("id"), "%q is already the id of %s", sk.ID, formatKey(prev))
			continue
		}
		first[sk.ID] = p
	}
}

// checkRequired checks that a string is set to something other than white space.
func checkRequired(is *issues, p []string, v string) {
	switch {
	case v == "":
		is.add(p, "required")
	case strings.TrimSpace(v) == "":
		is.add(p, "must not be blank (got %q)", v)
	}
}

// parsePort parses a decimal TCP port, 0..65535.
func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	return uint16(n), err == nil
}

// validURLPath reports whether p can name an HTTP endpoint: an absolute path without the characters that would
// make it a different URL (?, #), a ServeMux wildcard ({, }) or not one token (spaces, control characters).
func validURLPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	return strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("?#{}", r) }) < 0
}

// validHostHeader reports whether h is a value of the Host header: a host name, an IPv4 address or an IPv6
// address in brackets, optionally followed by a port from 1 to 65535.
func validHostHeader(h string) bool {
	if host, port, err := net.SplitHostPort(h); err == nil {
		n, ok := parsePort(port)
		return ok && n > 0 && validHost(host)
	}
	if inner, ok := strings.CutPrefix(h, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		return ok && strings.Contains(inner, ":") && validHost(inner)
	}
	return !strings.Contains(h, ":") && validHost(h)
}

// validHost reports whether h is a host name, an IPv4 address or an IPv6 address without brackets.
func validHost(h string) bool {
	if strings.Contains(h, ":") {
		return net.ParseIP(h) != nil
	}
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// validOrigin reports whether o is a value of the Origin header: scheme://host[:port] with scheme http or https.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && validHTTPHost(u) && u.Path == "" && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" &&
		!strings.HasSuffix(o, "#")
}

// validPublicURL reports whether raw can be advertised as an endpoint: an absolute http or https URL with a host
// (and a port from 1 to 65535 if any), an optional path, and no user info, query or fragment.
func validPublicURL(raw string) bool {
	if strings.ContainsAny(raw, "?#") || strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return false
	}
	u, err := url.Parse(raw)
	return err == nil && validHTTPHost(u)
}

// validHTTPHost reports whether u is an absolute http or https URL without user info whose host is valid, with a
// port from 1 to 65535 if it has one.
func validHTTPHost(u *url.URL) bool {
	if u.Scheme != "http" && u.Scheme != "https" || u.Opaque != "" || u.User != nil || strings.HasSuffix(u.Host, ":") {
		return false
	}
	if port := u.Port(); port != "" {
		if n, ok := parsePort(port); !ok || n == 0 {
			return false
		}
	}
	return validHost(u.Hostname())
}

func checkRange[T int | int64](is *issues, p []string, n, lo, hi T) {
	if n < lo || n > hi {
		is.add(p, "must be between %d and %d (got %d)", lo, hi, n)
	}
}

func checkMin(is *issues, p []string, n, lo int) {
	if n < lo {
		is.add(p, "must be at least %d (got %d)", lo, n)
	}
}

func checkPositive(is *issues, p []string, d Duration) {
	if d.Duration <= 0 {
		is.add(p, "must be positive (got %q)", d.String())
	}
}

// checkDuration checks a duration that must be positive and at most hi, a Go duration such as "1h".
func checkDuration(is *issues, p []string, d Duration, hi string) {
	if max, _ := time.ParseDuration(hi); d.Duration <= 0 || d.Duration > max {
		is.add(p, "must be positive and at most %s (got %q)", hi, d.String())
	}
}

func checkEnum(is *issues, p []string, v string, allowed []string) {
	if slices.Contains(allowed, v) {
		return
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	is.add(p, "must be one of %s (got %q)", strings.Join(quoted, ", "), v)
}

func checkURL(is *issues, p []string, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		is.add(p, "must be an http or https URL (got %q)", raw)
	}
}

// checkHeaders checks HTTP header names (RFC 9110 tokens) and values (no line breaks), which may come from the
// environment.
func checkHeaders(is *issues, p []string, h map[string]string) {
	for _, name := range sortedKeys(h) {
		sub := append(slices.Clip(p), name)
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			is.add(sub, "not a valid HTTP header name")
		}
		if strings.ContainsAny(h[name], "\r\n\x00") {
			is.add(sub, "header value must not contain line breaks or NUL")
		}
	}
}

func isTokenChar(r rune) bool {
	return r < math.MaxInt8 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// checkAuthTokensEnv checks [serve] auth_tokens_env: names of environment variables, each once, and no other way
// of authenticating callers besides.
func checkAuthTokensEnv(is *issues, s *Serve) {
	p := []string{"serve", "auth_tokens_env"}
	seen := map[string]bool{}
	for i, name := range s.AuthTokensEnv {
		key := fmt.Sprintf("serve.auth_tokens_env[%d]", i)
		switch {
		case !validEnvName(name):
			is.addKey(p, key, "must be the name of an environment variable (got %q)", name)
		case seen[name]:
			is.addKey(p, key, "%s is named twice", name)
		}
		seen[name] = true
	}
	if len(s.AuthTokensEnv) > 0 && s.AuthTokenEnv != "" {
		is.add(p, "conflicts with auth_token_env: one token shared by every caller, or one per caller; keep one")
	}
	if len(s.AuthTokensEnv) > 0 && s.OAuth != nil {
		is.add(p, "conflicts with [serve.oauth]: requests carry either the issuer's tokens or static ones; keep one")
	}
}
