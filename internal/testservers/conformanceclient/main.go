// Command conformanceclient is the MCP client that the official conformance suite runs in its client mode: it
// connects to the suite's mock server through mcpclients, over streamable HTTP, and does what the scenario named by
// the environment variable MCP_CONFORMANCE_SCENARIO expects of a client.
//
//	conformanceclient [-v] URL
//
// The suite appends its mock server's URL as the last argument. Scenarios:
//   - initialize: connect (initialize, initialized, tools/list) and close.
//   - tools_call: call add_numbers.
//   - elicitation-sep1034-client-defaults: call test_client_elicitation_defaults and accept the elicitation the
//     server sends meanwhile with the defaults of its schema.
//   - sse-retry: call test_reconnection, whose response stream the server closes before answering; the answer
//     comes on the stream the client resumes.
//
// It works as agenthost does, through the mcpclients and host APIs only: the tools come from the server's
// host.Toolset and are called with host.Tool.Call, with a host.Call whose Interactor answers elicitations. It prints
// each tool's result on stdout and logs on stderr, and exits 1 when the scenario is unknown or a step fails.
//
// It imports mcpclients, host and the standard library; it must not import the MCP SDK, so that it exercises
// nothing but what agenthost itself uses.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/mcpclients"
)

// scenarioEnv names the scenario; the suite sets it for the command it runs.
const scenarioEnv = "MCP_CONFORMANCE_SCENARIO"

// runTimeout bounds a whole run. The suite kills a client after 30 seconds and fails the scenario; ending first
// leaves a log that says which step hung.
const runTimeout = 25 * time.Second

// scenario is what the client does for one of the suite's scenarios.
type scenario struct {
	// tool is the tool to call once connected; empty calls none.
	tool string
	args json.RawMessage
	// want is text the tool's result must contain: the mock servers answer some failures (an elicitation that was
	// not accepted) with a result that is not marked as an error.
	want string
}

var scenarios = map[string]scenario{
	"initialize": {},
	"tools_call": {tool: "add_numbers", args: json.RawMessage(`{"a":5,"b":3}`), want: "is 8"},
	"elicitation-sep1034-client-defaults": {
		tool: "test_client_elicitation_defaults", args: json.RawMessage(`{}`), want: "Elicitation completed",
	},
	"sse-retry": {tool: "test_reconnection", args: json.RawMessage(`{}`), want: "Reconnection test completed successfully"},
}

func main() {
	verbose := flag.Bool("v", false, "log debug messages")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s=<scenario> conformanceclient [-v] URL\n", scenarioEnv)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	url := flag.Arg(flag.NArg() - 1) // the suite appends it after whatever the command already had

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()

	name := os.Getenv(scenarioEnv)
	if err := run(ctx, logger, name, url, os.Stdout); err != nil {
		logger.Error("scenario failed", "scenario", name, "err", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// run connects to url and plays the scenario called name, printing the tool's result to out.
func run(ctx context.Context, logger *slog.Logger, name, url string, out io.Writer) error {
	sc, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("unknown scenario %q (set %s to one of %s)", name, scenarioEnv, strings.Join(scenarioNames(), ", "))
	}
	client, err := mcpclients.Connect(ctx, []mcpclients.ServerConfig{{
		Name:           "conformance",
		Transport:      mcpclients.TransportHTTP,
		URL:            url,
		Required:       true,
		ConnectTimeout: 10 * time.Second,
	}}, &mcpclients.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer client.Close()

	for _, st := range client.Status() {
		logger.Info("connected", "server", st.Name, "protocol", st.ProtocolVersion, "tools", st.Tools)
	}
	if sc.tool == "" {
		return nil
	}

	toolset := client.Toolsets()[0] // a required server that failed would have failed Connect
	tools, err := toolset.Tools(ctx)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	i := slices.IndexFunc(tools, func(t host.Tool) bool { return t.Spec().Name == sc.tool })
	if i < 0 {
		return fmt.Errorf("the server has no tool %q", sc.tool)
	}
	tool := tools[i]

	progress := func(p host.Progress) {
		logger.Info("progress", "tool", sc.tool, "progress", p.Progress, "total", p.Total, "message", p.Message)
	}
	call := host.NewCall("call-1", sc.tool, toolset.Name(), progress, &defaultsInteractor{logger: logger})
	res, err := tool.Call(ctx, sc.args, call)
	if err != nil {
		return fmt.Errorf("call %s: %w", sc.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("call %s: the tool failed: %s", sc.tool, res.Text)
	}
	if !strings.Contains(res.Text, sc.want) {
		return fmt.Errorf("call %s: result %q does not contain %q", sc.tool, res.Text, sc.want)
	}
	_, err = fmt.Fprintln(out, res.Text)
	return err
}

func scenarioNames() []string {
	var names []string
	for name := range scenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// defaultsInteractor stands for a person who accepts every form with the values it proposes: an elicitation is
// answered with the default of each property of its schema. When a required property has no default there is
// nothing to answer with, and the elicitation is declined.
type defaultsInteractor struct {
	logger *slog.Logger
}

var _ host.Interactor = (*defaultsInteractor)(nil)

// Approve refuses: no scenario asks for approval, and a client that cannot ask anyone must not grant it.
func (d *defaultsInteractor) Approve(_ context.Context, req *host.ApprovalRequest) (bool, error) {
	d.logger.Warn("approval refused: nobody to ask", "tool", req.Tool)
	return false, nil
}

func (d *defaultsInteractor) Elicit(_ context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	content, err := schemaDefaults(req.Schema)
	if err != nil {
		d.logger.Warn("elicitation declined", "source", req.Source, "message", req.Message, "err", err)
		return &host.ElicitResult{Action: host.ElicitDecline}, nil
	}
	d.logger.Info("elicitation accepted with the schema's defaults", "source", req.Source, "message", req.Message, "content", content)
	return &host.ElicitResult{Action: host.ElicitAccept, Content: content}, nil
}

// schemaDefaults returns the default of every property of an elicitation's schema that has one. It fails when a
// required property has none.
func schemaDefaults(schema json.RawMessage) (map[string]any, error) {
	content := map[string]any{}
	if len(schema) == 0 {
		return content, nil
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	for name, p := range s.Properties {
		if p.Default == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(p.Default, &v); err != nil {
			return nil, fmt.Errorf("default of %q: %w", name, err)
		}
		content[name] = v
	}
	var missing []error
	for _, name := range s.Required {
		if _, ok := content[name]; !ok {
			missing = append(missing, fmt.Errorf("required property %q has no default", name))
		}
	}
	return content, errors.Join(missing...)
}
