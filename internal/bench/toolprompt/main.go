// Command toolprompt measures what tool search saves on the first request of a run: a run over many tools from many
// MCP servers, with search off ([agent.tool_search] mode "never": every definition is sent) and at agenthost's
// default ("auto", which turns it on past the threshold), and the request bytes of each. It also checks that a
// scripted model, which searches and then calls the tool it found, completes the run with the right tool.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/toolprompt [-servers 20] [-tools 25]
//
// The product is built through the composition root (internal/wiring.Build) from agenthost's defaults, with no
// built-in tool, state in memory, the model internal/testkit/fakellm (recording each request's body), and -servers
// real stdio MCP servers: internal/testkit/testservers/catalog, each serving -tools tools of one theme (GitHub, Jira,
// Slack, a calendar...) with realistic descriptions and parameters. The run asks to put a meeting in the calendar;
// the right tool is calendar_create_event.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/bench/benchcfg"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/wiring"
)

func main() {
	benchcli.Main("toolprompt", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// catalogPackage is the stdio MCP server of realistic tools the runs connect to, one process per theme.
const catalogPackage = "github.com/agenthost/agenthost/internal/testkit/testservers/catalog"

// buildCatalog builds the catalog server into dir and returns its path.
func buildCatalog(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "catalog")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, catalogPackage)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", catalogPackage, err, b)
	}
	return out, nil
}

// themes returns the catalog's themes, in its order, as `catalog -theme list` prints them.
func themes(ctx context.Context, catalog string) ([]string, error) {
	out, err := exec.CommandContext(ctx, catalog, "-theme", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -theme list: %w", catalog, err)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if name, _, ok := strings.Cut(line, "\t"); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

// The run: what the user asks, the tool that does it, and what the scripted model searches for.
const (
	prompt     = "Put a meeting with the design team in the calendar for Friday at 10."
	target     = "calendar_create_event"
	query      = "create calendar event"
	answerText = "The meeting is in the calendar."
)

// measurement is one run's outcome.
type measurement struct {
	mode         string
	firstBytes   int      // the body of the first request
	firstTools   int      // the tools it offers
	firstTokens  int      // host.EstimateToolTokens of the tools it offers, as the threshold counts them
	requests     int      // model requests of the run
	calls        []string // the tool calls of the run, in order
	answered     bool     // the run ended with the scripted answer
	rightTool    bool     // the target was called and succeeded
	searchActive bool     // search_tools was offered on the first request
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolprompt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.Int("servers", 20, "MCP servers, one per theme of the catalog, in its order; at least 4, for the calendar")
	tools := fs.Int("tools", 25, "tools per server, 10..25 (the calendar's create_event is among the first 10)")
	catalog := fs.String("catalog", "", "the catalog server's binary; built with `go build` into a temporary directory when empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tools < 10 || *tools > 25 {
		return errors.New("-tools must be 10..25")
	}
	if *catalog == "" {
		dir, err := os.MkdirTemp("", "toolprompt-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stderr, "building the catalog server")
		if *catalog, err = buildCatalog(ctx, dir); err != nil {
			return err
		}
	}
	names, err := themes(ctx, *catalog)
	if err != nil {
		return err
	}
	if *servers < 4 || *servers > len(names) || !slices.Contains(names[:*servers], "calendar") {
		return fmt.Errorf("-servers must be 4..%d, so that the calendar is among them", len(names))
	}
	var ms []*measurement
	for _, mode := range []string{config.ToolSearchNever, config.ToolSearchAuto} {
		m, err := measure(ctx, *catalog, names[:*servers], *tools, mode)
		if err != nil {
			return fmt.Errorf("tool search %q: %w", mode, err)
		}
		ms = append(ms, m)
	}
	return write(stdout, *servers, *tools, ms)
}

// measure runs the scripted run once over a catalog server of tools tools for each theme, with [agent.tool_search]
// mode.
func measure(ctx context.Context, catalog string, themes []string, tools int, mode string) (*measurement, error) {
	fake := fakellm.New()
	defer fake.Close()
	fake.SetResponder(respond)

	cfg := benchcfg.Bare(fake.URL)
	cfg.Agent.ToolSearch.Mode = mode
	for _, theme := range themes {
		benchcfg.AddStdio(cfg, theme, catalog, "-theme", theme, "-tools", strconv.Itoa(tools))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Version: "toolprompt"})
	if err != nil {
		return nil, err
	}
	defer app.Close()
	offered, err := app.Tools().Tools(ctx)
	if err != nil {
		return nil, err
	}
	if len(offered) != len(themes)*tools {
		return nil, fmt.Errorf("%d tools listed, want %d", len(offered), len(themes)*tools)
	}

	ans, err := app.Orchestrator().Ask(ctx, &host.Request{Prompt: prompt}, nil)
	if err != nil {
		return nil, err
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		return nil, errors.New("no model request")
	}
	first := reqs[0]
	m := &measurement{mode: mode, firstBytes: len(first.Body), firstTools: len(first.Tools), requests: len(reqs),
		answered:     ans.StoppedBy == host.StopAnswered && ans.Text == answerText,
		searchActive: slices.Contains(first.ToolNames(), host.SearchToolName)}
	var firstSpecs []*host.ManagedTool
	for _, t := range first.Tools {
		firstSpecs = append(firstSpecs, &host.ManagedTool{Spec: host.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters}})
	}
	m.firstTokens = host.EstimateToolTokens(firstSpecs)
	for _, c := range ans.ToolCalls {
		m.calls = append(m.calls, c.Name)
		m.rightTool = m.rightTool || c.Name == target && c.OK
	}
	return m, nil
}

// respond is the scripted model: it calls the target once it is offered, searches for it when search_tools is
// offered instead, and answers once the target has run.
func respond(req *fakellm.Request) fakellm.Turn {
	searched := false
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			if c.Function.Name == target {
				return fakellm.Turn{Text: answerText}
			}
			searched = searched || c.Function.Name == host.SearchToolName
		}
	}
	names := req.ToolNames()
	switch {
	case slices.Contains(names, target):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: target, Arguments: `{"calendar_id": "primary", "summary": "Design review", "start": "2026-11-27T10:00:00Z", "end": "2026-11-27T11:00:00Z"}`}}}
	case slices.Contains(names, host.SearchToolName) && !searched:
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: host.SearchToolName, Arguments: `{"query": "` + query + `"}`}}}
	}
	return fakellm.Turn{Text: "I found no tool for that."}
}

// write prints the two runs side by side and what search saved.
func write(w io.Writer, servers, tools int, ms []*measurement) error {
	fmt.Fprintf(w, "first request of a run over %d tools from %d stdio MCP servers (%d each), no built-ins:\n\n", servers*tools, servers, tools)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tool_search\tsearch on\ttools offered\trequest bytes\test. tool tokens\trequests\ttool calls\tright tool\tanswered")
	for _, m := range ms {
		calls := "-"
		if len(m.calls) > 0 {
			calls = fmt.Sprint(m.calls)
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%d\t%s\t%v\t%v\n", m.mode, m.searchActive, m.firstTools, m.firstBytes, m.firstTokens, m.requests, calls, m.rightTool, m.answered)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	without, with := ms[0], ms[1]
	_, err := fmt.Fprintf(w, "\nwith search the first request is %.1f%% smaller (%d bytes instead of %d)\n", saving(without, with)*100, with.firstBytes, without.firstBytes)
	return err
}

// saving is the share of the first request's bytes that search saves.
func saving(without, with *measurement) float64 {
	return 1 - float64(with.firstBytes)/float64(without.firstBytes)
}
