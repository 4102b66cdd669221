// Command conformanceclient is the MCP client that the official conformance suite runs in its client mode: it
// connects to the suite's mock server through mcpclients, over streamable HTTP, and does what the scenario named by
// the environment variable MCP_CONFORMANCE_SCENARIO expects of a client.
//
// Test support: the client that mcpclients' conformance test puts under the suite.
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
//   - auth/*: connect to a server that requires OAuth, authorizing as `agenthost mcp login` does (mcpauth's login
//     handler, whose flow follows the mock authorization server's immediate redirect), list the tools and call the
//     first. The client credentials scenarios use the client of MCP_CONFORMANCE_CONTEXT, as auth =
//     "client_credentials" does; pre-registration uses it as a configured client_id; basic-cimd uses the suite's
//     client ID metadata document URL, as client_metadata_url does.
//
// It works as agenthost does, through the mcpclients and host APIs only: the tools come from the server's
// host.Toolset and are called with host.Tool.Call, with a host.Call whose Interactor answers elicitations. It prints
// each tool's result on stdout and logs on stderr, and exits 1 when the scenario is unknown or a step fails.
//
// It imports mcpclients, mcpauth, host and the standard library, and of the MCP SDK only the auth package's
// handler interface: it exercises nothing but what agenthost itself uses.
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
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/mcpclients"
)

// scenarioEnv names the scenario; the suite sets it for the command it runs. contextEnv holds the scenario's
// credentials, as JSON.
const (
	scenarioEnv = "MCP_CONFORMANCE_SCENARIO"
	contextEnv  = "MCP_CONFORMANCE_CONTEXT"
)

// cimdURL is the client ID metadata document the basic-cimd scenario expects the client to use.
const cimdURL = "https://conformance-test.local/client-metadata.json"

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
	// firstTool calls the server's first tool, if it has one, with no arguments.
	firstTool bool
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
	server := mcpclients.ServerConfig{
		Name:           "conformance",
		Transport:      mcpclients.TransportHTTP,
		URL:            url,
		Required:       true,
		ConnectTimeout: 20 * time.Second,
	}
	sc, ok := scenarios[name]
	if strings.HasPrefix(name, "auth/") {
		sc, ok = scenario{firstTool: true}, true
		oauth, cleanup, err := authFor(ctx, name, url, logger)
		if err != nil {
			return err
		}
		defer cleanup()
		server.OAuth = oauth
	}
	if !ok {
		return fmt.Errorf("unknown scenario %q (set %s to one of %s, or auth/...)", name, scenarioEnv, strings.Join(scenarioNames(), ", "))
	}
	client, err := mcpclients.Connect(ctx, []mcpclients.ServerConfig{server}, &mcpclients.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer client.Close()

	for _, st := range client.Status() {
		logger.Info("connected", "server", st.Name, "protocol", st.ProtocolVersion, "tools", st.Tools)
	}
	if sc.tool == "" && !sc.firstTool {
		return nil
	}

	toolset := client.Toolsets()[0] // a required server that failed would have failed Connect
	tools, err := toolset.Tools(ctx)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	if sc.firstTool {
		if len(tools) == 0 {
			return nil
		}
		sc.tool, sc.args = tools[0].Spec().Name, json.RawMessage(`{}`)
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

// authFor returns how the client authorizes itself in the auth scenario name, and what to clean up after.
func authFor(ctx context.Context, name, url string, logger *slog.Logger) (func(context.Context) (auth.OAuthHandler, error), func(), error) {
	var creds struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if raw := os.Getenv(contextEnv); raw != "" {
		if err := json.Unmarshal([]byte(raw), &creds); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", contextEnv, err)
		}
	}
	dir, err := os.MkdirTemp("", "conformance-grants-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	cfg := &mcpauth.Config{Server: "conformance", URL: url, Mode: mcpauth.ModeOAuth, Store: &mcpauth.FileStore{Path: filepath.Join(dir, "grants.json")}, Logger: logger}
	switch {
	case strings.HasPrefix(name, "auth/client-credentials"):
		cfg.Mode, cfg.ClientID, cfg.ClientSecret = mcpauth.ModeClientCredentials, creds.ClientID, creds.ClientSecret
		return func(ctx context.Context) (auth.OAuthHandler, error) { return mcpauth.New(ctx, cfg) }, cleanup, nil
	case name == "auth/pre-registration":
		cfg.ClientID, cfg.ClientSecret = creds.ClientID, creds.ClientSecret
	case name == "auth/basic-cimd":
		cfg.ClientMetadataURL = cimdURL
	}
	flow, err := mcpauth.NewFlow(ctx, cfg, &mcpauth.LoginOptions{Out: os.Stderr})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	h, err := mcpauth.NewLoginHandler(ctx, cfg, flow)
	if err != nil {
		flow.Close()
		cleanup()
		return nil, nil, err
	}
	return func(context.Context) (auth.OAuthHandler, error) { return h, nil }, func() { flow.Close(); cleanup() }, nil
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
