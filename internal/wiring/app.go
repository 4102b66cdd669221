package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/mcpclients"
	"github.com/agenthost/agenthost/runlog"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/telemetry/otlp"
)

// ErrConfig marks the errors of Build and Serve that are the user's to fix: the configuration, or how the product
// was asked to run (an address in use). Its text is "usage", the word agenthost's messages for them begin with.
var ErrConfig = errors.New("usage")

// Purpose says what an App is built for.
type Purpose int

const (
	// Running runs the agent (run, serve): required servers must connect, and state is kept as [state] says.
	Running Purpose = iota
	// Listing lists the tools: required servers must connect; no state is opened and telemetry is off.
	Listing
	// Checking reports on everything: no server is required; no state is opened and telemetry is off.
	Checking
	// Evaluating runs the agent on an eval dataset: as Running, but its conversations are kept in memory only, so
	// that evaluating leaves the state as it was.
	Evaluating
)

// Options are Build's options. The zero value (or nil) is usable.
type Options struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// Notices receives the lines meant for the user of a terminal: that the offline test model stands in for a model
	// nobody configured, and the tools it left alone. Nil discards them.
	Notices io.Writer
	// Getenv reads the environment variables the configuration names (API keys, tokens, the Postgres connection
	// string, OTEL_*); nil means os.Getenv.
	Getenv func(string) string
	// Version is the version the product reports (MCP client and server, A2A card, telemetry); "" means "dev".
	Version string
	// Model replaces the configured model: "test" is the offline test model, any other name replaces [model] model
	// on the configured API; "" keeps the configuration's.
	Model string
	// Purpose is what the App is built for; the zero value is Running.
	Purpose Purpose
	// RecordRuns keeps the recent runs, step by step, for the web console (App.Runs); off, the runs cost nothing
	// more than the front ends and telemetry.
	RecordRuns bool
}

// App is the product built from a configuration: the model, the tool sources, the tool manager and the
// orchestrator, with the state and telemetry they use. Serve serves it. Close it when done.
type App struct {
	cfg    *config.Config
	logger *slog.Logger
	getenv func(string) string
	// lookupEnv is os.LookupEnv, or, with Options.Getenv, a variable set when it is not empty.
	lookupEnv func(string) (string, bool)
	version   string
	modelArg  string
	model     llm.Model
	provider  string
	builtins  *builtin.Toolset
	mcp       *mcpclients.Client
	peers     *a2a.Peers
	tools     *host.ToolManager
	orch      *host.Orchestrator
	// state is the database of [state], when the app keeps state in one.
	state *store.DB
	// grantsCloser closes what grantStore opened for the OAuth grants.
	grantsCloser io.Closer
	// tel traces and measures the runs, when [telemetry] or OTEL_* turn it on; nil otherwise.
	tel          *telemetry.Telemetry
	outputSchema json.RawMessage
	// runs records the runs for the console, with Options.RecordRuns; nil otherwise.
	runs      *runlog.Recorder
	closeOnce sync.Once
}

// Config is the configuration the app was built from.
func (a *App) Config() *config.Config { return a.cfg }

// Logger is the app's logger, never nil.
func (a *App) Logger() *slog.Logger { return a.logger }

// Model is the agent's model.
func (a *App) Model() llm.Model { return a.model }

// Provider is the model provider actually used, after "auto" and Options.Model were resolved.
func (a *App) Provider() string { return a.provider }

// Orchestrator runs the agent.
func (a *App) Orchestrator() *host.Orchestrator { return a.orch }

// Tools is the tool manager over every tool source.
func (a *App) Tools() *host.ToolManager { return a.tools }

// Builtins are the built-in tools.
func (a *App) Builtins() *builtin.Toolset { return a.builtins }

// MCP is the client of the configured MCP servers.
func (a *App) MCP() *mcpclients.Client { return a.mcp }

// Peers are the configured A2A peers.
func (a *App) Peers() *a2a.Peers { return a.peers }

// State is the state database, nil when the app keeps none (state in memory, or a purpose other than Running).
func (a *App) State() *store.DB { return a.state }

// Telemetry traces and measures the runs; nil when it is off.
func (a *App) Telemetry() *telemetry.Telemetry { return a.tel }

// Runs records the runs for the web console; nil unless built with Options.RecordRuns.
func (a *App) Runs() *runlog.Recorder { return a.runs }

// OutputSchema is [agent.output]'s schema, nil without one.
func (a *App) OutputSchema() json.RawMessage { return a.outputSchema }

// ConfigName names cfg in messages: its path, or "built-in defaults".
func ConfigName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "built-in defaults"
	}
	return cfg.Path
}

// Build wires cfg into a model, the tool sources and the orchestrator. It connects the MCP servers and resolves the
// A2A peers, concurrently: a required one that cannot be reached fails it, except when Checking (which reports
// every server and peer instead). The errors that are the configuration's wrap ErrConfig. The App must be closed.
func Build(ctx context.Context, cfg *config.Config, opts *Options) (*App, error) {
	if opts == nil {
		opts = &Options{}
	}
	a := &App{cfg: cfg, logger: opts.Logger, getenv: opts.Getenv, version: opts.Version, modelArg: opts.Model}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.lookupEnv = os.LookupEnv; a.getenv == nil {
		a.getenv = os.Getenv
	} else {
		a.lookupEnv = func(name string) (string, bool) {
			v := a.getenv(name)
			return v, v != ""
		}
	}
	if a.version == "" {
		a.version = "dev"
	}
	notices := opts.Notices
	if notices == nil {
		notices = io.Discard
	}
	mode, logger := opts.Purpose, a.logger
	allRequired := mode != Checking
	hopts := HostOptions(cfg, logger)
	var err error
	if mode == Running || mode == Evaluating {
		if a.tel, err = otlp.Setup(ctx, Telemetry(cfg, a.version, a.getenv)); err != nil {
			return nil, fmt.Errorf("%w: %s: telemetry: %w", ErrConfig, ConfigName(cfg), err)
		}
		hopts.Observer = a.tel.Observer()
	}
	if opts.RecordRuns {
		// The console's runs were typed at it; the others' content is recorded where telemetry records it too.
		capture := cfg.Telemetry.CaptureContent
		a.runs = runlog.New(&runlog.Options{Content: func(origin string) bool { return capture || origin == "console" }})
		hopts.Observer = runlog.Tee(hopts.Observer, a.runs)
	}
	if mode == Running {
		if hopts.Conversations, a.state, err = OpenState(ctx, cfg, a.getenv, logger); err != nil {
			a.Close()
			return nil, fmt.Errorf("%s: %w", ConfigName(cfg), err)
		}
	}
	var guard *readOnlyGuard
	if a.model, a.provider, guard, err = a.newModel(notices); err != nil {
		a.Close()
		return nil, err
	}
	if hopts.OutputSchema, err = OutputSchema(cfg); err != nil {
		a.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, ConfigName(cfg), err)
	}
	a.outputSchema = hopts.OutputSchema
	if a.provider != config.ProviderOpenAI {
		hopts.OutputMode = host.OutputTool // only an API can take a response format
	}
	if a.builtins, err = builtin.New(cfg.Builtin.Tools, BuiltinOptions(cfg, a.version, a.getenv, logger)); err != nil {
		a.Close()
		return nil, fmt.Errorf("%w: %s: builtin.tools: %w", ErrConfig, ConfigName(cfg), err)
	}
	grants, err := a.grantStore(ctx)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", ConfigName(cfg), err)
	}
	var mcpErr, a2aErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		copts := clientOptions(a.version, logger)
		copts.Sampler, copts.Telemetry, copts.RetryFailed = a.model, a.tel, mode == Running
		copts.Gateway = mode == Running && (cfg.Serve.PromptsExposed() || cfg.Serve.ResourcesExposed())
		a.mcp, mcpErr = mcpclients.Connect(ctx, MCPServers(cfg, allRequired, grants, a.getenv, logger), copts)
	})
	wg.Go(func() {
		a.peers, a2aErr = a2a.Connect(ctx, Peers(cfg, allRequired), &a2a.Options{Logger: logger, Telemetry: a.tel})
	})
	wg.Wait()
	if err := errors.Join(mcpErr, a2aErr); err != nil {
		a.Close()
		return nil, err
	}
	// Tool sources in DESIGN's order: built-ins, MCP servers in configuration order, A2A peers, then sub-agents.
	sets := append([]host.Toolset{a.builtins}, a.mcp.Toolsets()...)
	sets = append(sets, a.peers.Toolsets()...)
	agents := &host.SubAgents{}
	sets = append(sets, agents)
	topts, err := a.toolManagerOptions(hopts.Observer)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.tools = host.NewToolManager(sets, topts)
	if guard != nil {
		guard.tools.Store(a.tools)
	}
	for _, name := range cfg.AgentOrder {
		sa := cfg.Agents[name]
		model, err := a.subAgentModel(sa)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("%w: %s: agents.%s.model: %w", ErrConfig, ConfigName(cfg), name, err)
		}
		sopts := SubAgentOptions(cfg, sa, logger)
		sopts.Name, sopts.Description, sopts.Observer = name, sa.Description, hopts.Observer
		agents.Add(name, sa.Description, host.New(model, a.tools.Restrict(sa.Tools), sopts))
	}
	if hopts.Grader, err = a.graderModel(); err != nil {
		a.Close()
		return nil, fmt.Errorf("%w: %s: eval.model: %w", ErrConfig, ConfigName(cfg), err)
	}
	a.orch = host.New(a.model, a.tools, hopts)
	return a, nil
}

// grantStore returns where the OAuth grants to MCP servers are kept, or nil when no server may need one. An app
// that opened no state database opens it for them.
func (a *App) grantStore(ctx context.Context) (mcpauth.Store, error) {
	if !slices.ContainsFunc(a.cfg.MCP.Order, func(name string) bool { return UsesOAuth(a.cfg.MCP.Servers[name]) }) {
		return nil, nil
	}
	if a.state != nil || a.cfg.State.Backend == config.StateMemory {
		return GrantStore(a.cfg, a.state, a.logger)
	}
	s, closer, err := OpenGrantStore(ctx, a.cfg, a.getenv, a.logger)
	if err != nil {
		return nil, err
	}
	a.grantsCloser = closer
	return s, nil
}

// Close stops what Build started: MCP sessions and child processes, A2A peer calls and retries, the built-ins'
// background work; it closes the state database and flushes the telemetry. It may be called more than once.
func (a *App) Close() {
	a.closeOnce.Do(a.close)
}

func (a *App) close() {
	if a.mcp != nil {
		a.mcp.Close()
	}
	if a.peers != nil {
		a.peers.Close()
	}
	if a.builtins != nil {
		if err := a.builtins.Close(); err != nil {
			a.logger.Warn("closing the built-in tools", "err", err)
		}
	}
	if a.grantsCloser != nil {
		if err := a.grantsCloser.Close(); err != nil {
			a.logger.Warn("closing the state database", "err", err)
		}
	}
	if a.state != nil {
		if err := a.state.Close(); err != nil {
			a.logger.Warn("closing the state database", "err", err)
		}
	}
	if a.tel != nil {
		// Last, so that the spans of the shutdown are flushed too.
		ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
		defer cancel()
		if err := a.tel.Shutdown(ctx); err != nil {
			a.logger.Warn("telemetry: flushing spans and metrics", "err", err)
		}
	}
}

// telemetryFlushTimeout bounds flushing telemetry at exit: a collector that is down must not hold the exit.
const telemetryFlushTimeout = 5 * time.Second

// graderModel is the model of the grounded check: [eval] model on the agent's API, or nil for the agent's own.
func (a *App) graderModel() (llm.Model, error) {
	if a.cfg.Eval.Model == "" {
		return nil, nil
	}
	return a.subAgentModel(config.SubAgent{Model: a.cfg.Eval.Model})
}

// subAgentModel is the model of a sub-agent: the agent's, or, with an OpenAI-compatible provider, the same API with
// the sub-agent's model name. The offline and scripted models serve every model name alike.
func (a *App) subAgentModel(sa config.SubAgent) (llm.Model, error) {
	if sa.Model == "" || a.provider != config.ProviderOpenAI {
		return a.model, nil
	}
	m := a.cfg.Model
	m.Model = sa.Model
	var key string
	if m.APIKeyEnv != "" {
		key = a.getenv(m.APIKeyEnv)
	}
	return openai.New(a.openAIOptions(m, key))
}

// openAIOptions are the model's options, sending the trace context with each request when telemetry is on.
func (a *App) openAIOptions(m config.Model, key string) *openai.Options {
	o := OpenAIOptions(m, key, a.logger)
	if a.tel != nil {
		o.Headers = a.tel.InjectHTTP
	}
	return o
}
