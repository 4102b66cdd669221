// Command catalog is an MCP stdio server for tests and benchmarks of tool search: it serves a deterministic
// catalogue of realistic tools for one theme (an issue tracker, a chat service, a cloud drive, ...), so that a host
// connected to a dozen of them faces hundreds of tools whose names and descriptions read like real servers'.
//
//	catalog [-theme github] [-tools 25]
//
// The flags default to the environment variables CATALOG_THEME and CATALOG_TOOLS, then to github and 25. -theme
// list prints the themes and how many tools each has, and exits. Each theme has at least 25 tools: create, list,
// get, update and delete for each of its kinds of record, and a few actions of its own (merge_pull_request,
// send_message, ...). -tools N serves the first N, taken from the kinds in turn so that a small catalogue still
// covers the theme. Each tool has a description of two or three sentences and an input schema of two to five typed
// parameters with descriptions and a required list. Names are unique within a theme; across themes they may recur
// (list_events, get_order), as they do across real servers, so a host must prefix them (agenthost's default).
//
// Every call returns one text content, "<theme>.<tool> called with <arguments as canonical JSON>", so a test can see
// which tool ran with what. A call without a required parameter is a tool error naming it.
//
// It exits when its stdin closes. It logs only failures, to stderr; stdout is the MCP channel. It imports the
// standard library and the MCP SDK only, and no package of this project: it stands for a server agenthost knows
// nothing about.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	theme := flag.String("theme", envOr("CATALOG_THEME", "github"), "the theme of the catalogue, or list")
	n, err := strconv.Atoi(envOr("CATALOG_TOOLS", "25"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog: CATALOG_TOOLS:", err)
		os.Exit(2)
	}
	flag.IntVar(&n, "tools", n, "how many tools to serve")
	flag.Parse()

	if *theme == "list" {
		for _, th := range themes {
			fmt.Printf("%s\t%d\n", th.name, len(th.tools()))
		}
		return
	}
	server, err := newServer(*theme, n)
	if err == nil {
		err = server.Run(context.Background(), &mcp.StdioTransport{})
		if errors.Is(err, io.EOF) {
			err = nil // stdin closed: a normal end
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// newServer returns a server of the first n tools of the named theme.
func newServer(name string, n int) (*mcp.Server, error) {
	th := themeNamed(name)
	if th == nil {
		names := make([]string, len(themes))
		for i, t := range themes {
			names[i] = t.name
		}
		return nil, fmt.Errorf("unknown theme %q (themes: %s)", name, strings.Join(names, ", "))
	}
	tools := th.tools()
	if n < 1 || n > len(tools) {
		return nil, fmt.Errorf("theme %s has 1 to %d tools, not %d", th.name, len(tools), n)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "catalog-" + th.name, Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: th.about, Capabilities: &mcp.ServerCapabilities{}})
	for _, t := range tools[:n] {
		server.AddTool(t.tool(), t.handler(th.name))
	}
	return server, nil
}

func themeNamed(name string) *theme {
	for i := range themes {
		if themes[i].name == name {
			return &themes[i]
		}
	}
	return nil
}

// A param is one parameter of a tool's input.
type param struct {
	name, typ, desc string
}

func p(name, typ, desc string) param { return param{name, typ, desc} }

// A kind is a kind of record of a theme, with the fields its create and update take and the filters its list takes.
type kind struct {
	one, many string // "pull_request", "pull_requests"
	what      string // what one is, after an article: "pull request in a GitHub repository"
	note      string // a sentence on creating one
	fields    []param
	filters   []param
}

// An action is a tool of a theme beyond the five per kind.
type action struct {
	name, desc string
	params     []param
	required   int // the first required params are required
}

// A theme is one catalogue.
type theme struct {
	name    string
	about   string // the server's instructions
	scope   param  // the parameter every tool takes, naming where it acts (a repository, a workspace)
	kinds   []kind
	actions []action
}

// A catalogTool is one tool of a theme, before it becomes an mcp.Tool.
type catalogTool struct {
	name, desc string
	params     []param
	required   []string
}

// tools returns the theme's tools in serving order: the kinds' tools verb by verb across the kinds, then the
// actions, interleaved so that the first n cover the theme.
func (th *theme) tools() []catalogTool {
	var out []catalogTool
	verbs := []func(k kind) catalogTool{th.list, th.create, th.get, th.update, th.del}
	for i, verb := range verbs {
		for _, k := range th.kinds {
			out = append(out, verb(k))
		}
		if i < len(th.actions) {
			out = append(out, th.action(th.actions[i]))
		}
	}
	for _, a := range th.actions[min(len(verbs), len(th.actions)):] {
		out = append(out, th.action(a))
	}
	return out
}

func (k kind) title() string { return strings.ReplaceAll(k.one, "_", " ") }
func (k kind) titles() string {
	return strings.ReplaceAll(k.many, "_", " ")
}

var idParam = func(k kind) param {
	return p(k.one+"_id", "string", "The id of the "+k.title()+", as list_"+k.many+" returns it.")
}

func (th *theme) list(k kind) catalogTool {
	params := append([]param{th.scope}, k.filters...)
	params = append(params, p("limit", "integer", "The most "+k.titles()+" to return, from 1 to 100; the default is 20."))
	return catalogTool{
		name:     "list_" + k.many,
		desc:     fmt.Sprintf("Lists the %s in the given %s, most recent first. The optional filters narrow the list; each %s comes with its id and a short summary.", k.titles(), th.scope.name, k.title()),
		params:   params,
		required: []string{th.scope.name},
	}
}

func (th *theme) create(k kind) catalogTool {
	return catalogTool{
		name:     "create_" + k.one,
		desc:     fmt.Sprintf("Creates a new %s. %s Returns the new %s's id.", k.what, k.note, k.title()),
		params:   append([]param{th.scope}, k.fields...),
		required: []string{th.scope.name, k.fields[0].name},
	}
}

func (th *theme) get(k kind) catalogTool {
	return catalogTool{
		name:     "get_" + k.one,
		desc:     fmt.Sprintf("Gets one %s by its id, with all of its fields. Use list_%s to find the id.", k.title(), k.many),
		params:   []param{th.scope, idParam(k)},
		required: []string{th.scope.name, k.one + "_id"},
	}
}

func (th *theme) update(k kind) catalogTool {
	params := append([]param{th.scope, idParam(k)}, k.fields...)
	return catalogTool{
		name:     "update_" + k.one,
		desc:     fmt.Sprintf("Changes the fields of an existing %s. Only the fields given change; the others keep their values.", k.title()),
		params:   params[:min(len(params), 5)],
		required: []string{th.scope.name, k.one + "_id"},
	}
}

func (th *theme) del(k kind) catalogTool {
	return catalogTool{
		name:     "delete_" + k.one,
		desc:     fmt.Sprintf("Deletes a %s permanently. This cannot be undone, and the id is no longer valid afterwards.", k.title()),
		params:   []param{th.scope, idParam(k)},
		required: []string{th.scope.name, k.one + "_id"},
	}
}

func (th *theme) action(a action) catalogTool {
	t := catalogTool{name: a.name, desc: a.desc, params: append([]param{th.scope}, a.params...)}
	t.required = []string{th.scope.name}
	for _, q := range a.params[:a.required] {
		t.required = append(t.required, q.name)
	}
	return t
}

// tool returns t as an MCP tool, with its input schema written out as JSON.
func (t catalogTool) tool() *mcp.Tool {
	props := map[string]any{}
	for _, q := range t.params {
		s := map[string]any{"type": q.typ, "description": q.desc}
		if q.typ == "array" {
			s["items"] = map[string]any{"type": "string"}
		}
		props[q.name] = s
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": t.required})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return &mcp.Tool{Name: t.name, Description: t.desc, InputSchema: json.RawMessage(schema)}
}

// handler returns the tool's handler: it names the tool and echoes the arguments, or names a missing one.
func (t catalogTool) handler(theme string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return toolError("invalid arguments: " + err.Error()), nil
			}
		}
		for _, r := range t.required {
			if _, ok := args[r]; !ok {
				return toolError(fmt.Sprintf("%s: missing required parameter %q", t.name, r)), nil
			}
		}
		echo, _ := json.Marshal(args) // sorted keys: canonical
		text := fmt.Sprintf("%s.%s called with %s", theme, t.name, echo)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
