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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/llm/testmodel"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/mcpclients"
	"github.com/agenthost/agenthost/mcpserver"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/telemetry"
	"github.com/agenthost/agenthost/telemetry/otlp"
)

// errFlagHelp is returned when -h was asked for: the usage was printed and the exit code is 0.
var errFlagHelp = errors.New("help requested")

// common holds the flags every configuration-reading command shares.
type common struct {
	configPath string
	logLevel   string
	model      string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "config", "agent.toml", "configuration `file`; when the default is missing, built-in defaults apply")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.model, "model", "", "model name to use instead of the configured one; \"test\" for the offline test model")
}

// parseFlags parses args into fs, mapping -h and bad flags to errFlagHelp and errUsage.
func parseFlags(fs *flag.FlagSet, args []string, w io.Writer) error {
	fs.SetOutput(w)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errFlagHelp
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// logger returns the stderr logger at the flag's level.
func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("%w: -log-level: %v", errUsage, err)
	}
	// Every line is redacted: a URL's userinfo and query values never reach the log (see internal/redact).
	return slog.New(redact.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))), nil
}

// loadConfig reads the configuration. A missing file at the default path means the built-in defaults; a missing file
// that was named explicitly is an error.
func (c *common) loadConfig(fs *flag.FlagSet) (*config.Config, error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(c.configPath)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return config.Default(), nil
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return cfg, nil
}

// app is everything a command needs, built from the configuration.
type app struct {
	cfg    *config.Config
	logger *slog.Logger
	model  llm.Model
	// provider is the provider actually used, after "auto" and -model were resolved.
	provider string
	builtins *builtin.Toolset
	mcp      *mcpclients.Client
	peers    *a2a.Peers
	tools    *host.ToolManager
	orch     *host.Orchestrator
	// state is the database of [state], when the app keeps state in one.
	state *store.DB
	// grantsCloser closes what grantStore opened for the OAuth grants.
	grantsCloser io.Closer
	// tel traces and measures the runs, when [telemetry] or OTEL_* turn it on; nil otherwise.
	tel *telemetry.Telemetry
	// outputSchema is [agent.output]'s schema, nil without one.
	outputSchema json.RawMessage
}

// grantStore returns where the OAuth grants to MCP servers are kept, or nil when no server may need one. A command
// that opened no state database opens it for them.
func (a *app) grantStore(ctx context.Context) (mcpauth.Store, error) {
	if !slices.ContainsFunc(a.cfg.MCP.Order, func(name string) bool { return wiring.UsesOAuth(a.cfg.MCP.Servers[name]) }) {
		return nil, nil
	}
	if a.state != nil || a.cfg.State.Backend == config.StateMemory {
		return wiring.GrantStore(a.cfg, a.state, a.logger)
	}
	s, closer, err := wiring.OpenGrantStore(ctx, a.cfg, os.Getenv, a.logger)
	if err != nil {
		return nil, err
	}
	a.grantsCloser = closer
	return s, nil
}

// buildMode says what a command builds the app for.
type buildMode int

const (
	// forRunning runs the agent (run, serve): required servers must connect, and state is kept as [state] says.
	forRunning buildMode = iota
	// forListing lists the tools (tools): required servers must connect; no state is opened.
	forListing
	// forChecking reports on everything (check): no server is required; no state is opened.
	forChecking
	// forEvaluating runs the agent on an eval dataset (eval): as forRunning, but its conversations are kept in
	// memory only, so that evaluating leaves the state as it was.
	forEvaluating
)

// close stops what build started: MCP sessions and child processes, A2A peer calls and retries, the built-ins'
// background work.
func (a *app) close() {
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

// mcpServers converts the configured MCP servers, in file order. With honourRequired false, no server is required.
// The servers that may need OAuth are authorized with the grants in grants (nil when none does).
func mcpServers(cfg *config.Config, honourRequired bool, grants mcpauth.Store, logger *slog.Logger) []mcpclients.ServerConfig {
	var out []mcpclients.ServerConfig
	for _, name := range cfg.MCP.Order {
		s := cfg.MCP.Servers[name]
		var oauth func(context.Context) (auth.OAuthHandler, error)
		if grants != nil && wiring.UsesOAuth(s) {
			oauth = func(ctx context.Context) (auth.OAuthHandler, error) {
				oc, err := wiring.OAuthConfig(cfg, name, grants, os.Getenv, logger)
				if err != nil {
					return nil, err
				}
				return mcpauth.New(ctx, oc)
			}
		}
		out = append(out, mcpclients.ServerConfig{
			OAuth:             oauth,
			Name:              name,
			Transport:         s.EffectiveTransport(),
			Command:           s.Command,
			Args:              s.Args,
			Env:               s.Env,
			Cwd:               s.Cwd,
			EnvPassthrough:    s.EnvPassthrough,
			URL:               s.URL,
			Headers:           s.Headers,
			ProtocolVersion:   s.ProtocolVersion,
			ConnectTimeout:    s.ConnectTimeout.Duration,
			ReconnectWait:     s.ReconnectWait.Duration,
			RetryOnDisconnect: retryOnDisconnect(cfg.Tools, s.PrefixOrName(name)),
			Required:          s.Required && honourRequired,
			Include:           s.Include,
			Exclude:           s.Exclude,
			Prefix:            s.PrefixOrName(name),
			UseInstructions:   s.InstructionsEnabled(),
			AllowSampling:     s.SamplingAllowed(),
			SampleWithCaller:  s.Sampling == config.SamplingCaller,
			SamplingMaxTokens: s.SamplingMaxTokens,
		})
	}
	return out
}

// retryOnDisconnect returns the server's own names of the tools whose policy says retry_on_disconnect: the policies
// name tools by their final names, "<prefix>_<tool>" (or the bare name without a prefix).
func retryOnDisconnect(policies map[string]config.ToolPolicy, prefix string) []string {
	var out []string
	for name, p := range policies {
		if !p.RetryOnDisconnect {
			continue
		}
		if prefix == "" {
			out = append(out, name)
		} else if own, ok := strings.CutPrefix(name, prefix+"_"); ok {
			out = append(out, own)
		}
	}
	slices.Sort(out)
	return out
}

// build wires the configuration into a model, the tool sources and the orchestrator. It connects the MCP servers and
// resolves the A2A peers, concurrently: a required one that cannot be reached fails it, except for check (which
// reports every server and peer instead). The app must be closed.
func build(ctx context.Context, cfg *config.Config, modelFlag string, logger *slog.Logger, notices io.Writer, mode buildMode) (*app, error) {
	allRequired := mode != forChecking
	a := &app{cfg: cfg, logger: logger}
	opts := wiring.HostOptions(cfg, logger)
	var err error
	if mode == forRunning || mode == forEvaluating {
		if a.tel, err = otlp.Setup(ctx, wiring.Telemetry(cfg, version, os.Getenv)); err != nil {
			return nil, fmt.Errorf("%w: %s: telemetry: %w", errUsage, configName(cfg), err)
		}
		opts.Observer = a.tel.Observer()
	}
	if mode == forRunning {
		if opts.Conversations, a.state, err = wiring.OpenState(ctx, cfg, os.Getenv, logger); err != nil {
			a.close()
			return nil, fmt.Errorf("%s: %w", configName(cfg), err)
		}
	}
	var guard *readOnlyGuard
	if a.model, a.provider, guard, err = newModel(cfg, modelFlag, notices, logger, a.tel); err != nil {
		a.close()
		return nil, err
	}
	if opts.OutputSchema, err = wiring.OutputSchema(cfg); err != nil {
		a.close()
		return nil, fmt.Errorf("%w: %s: %w", errUsage, configName(cfg), err)
	}
	a.outputSchema = opts.OutputSchema
	if a.provider != config.ProviderOpenAI {
		opts.OutputMode = host.OutputTool // only an API can take a response format
	}
	if a.builtins, err = builtin.New(cfg.Builtin.Tools, wiring.BuiltinOptions(cfg, version, logger)); err != nil {
		a.close()
		return nil, fmt.Errorf("%w: %s: builtin.tools: %w", errUsage, configName(cfg), err)
	}
	grants, err := a.grantStore(ctx)
	if err != nil {
		a.close()
		return nil, fmt.Errorf("%s: %w", configName(cfg), err)
	}
	var mcpErr, a2aErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		a.mcp, mcpErr = mcpclients.Connect(ctx, mcpServers(cfg, allRequired, grants, logger), &mcpclients.Options{Logger: logger, Sampler: a.model, Telemetry: a.tel, RetryFailed: mode == forRunning,
			ClientName: "agenthost", ClientVersion: version, Gateway: mode == forRunning && (cfg.Serve.PromptsExposed() || cfg.Serve.ResourcesExposed())})
	})
	wg.Go(func() {
		a.peers, a2aErr = a2a.Connect(ctx, wiring.Peers(cfg, allRequired), &a2a.Options{Logger: logger, Telemetry: a.tel})
	})
	wg.Wait()
	if err := errors.Join(mcpErr, a2aErr); err != nil {
		a.close()
		return nil, err
	}
	// Tool sources in DESIGN's order: built-ins, MCP servers in configuration order, A2A peers, then sub-agents.
	sets := append([]host.Toolset{a.builtins}, a.mcp.Toolsets()...)
	sets = append(sets, a.peers.Toolsets()...)
	agents := &host.SubAgents{}
	sets = append(sets, agents)
	a.tools = host.NewToolManager(sets, &host.ToolManagerOptions{Policies: wiring.Policies(cfg.Tools), Logger: logger, Observer: opts.Observer})
	if guard != nil {
		guard.tools.Store(a.tools)
	}
	for _, name := range cfg.AgentOrder {
		sa := cfg.Agents[name]
		model, err := a.subAgentModel(sa, logger)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("%w: %s: agents.%s.model: %w", errUsage, configName(cfg), name, err)
		}
		sopts := wiring.SubAgentOptions(cfg, sa, logger)
		sopts.Name, sopts.Description, sopts.Observer = name, sa.Description, opts.Observer
		agents.Add(name, sa.Description, host.New(model, a.tools.Restrict(sa.Tools), sopts))
	}
	if opts.Grader, err = a.graderModel(logger); err != nil {
		a.close()
		return nil, fmt.Errorf("%w: %s: eval.model: %w", errUsage, configName(cfg), err)
	}
	a.orch = host.New(a.model, a.tools, opts)
	return a, nil
}

// graderModel is the model of the grounded check: [eval] model on the agent's API, or nil for the agent's own.
func (a *app) graderModel(logger *slog.Logger) (llm.Model, error) {
	if a.cfg.Eval.Model == "" {
		return nil, nil
	}
	return a.subAgentModel(config.SubAgent{Model: a.cfg.Eval.Model}, logger)
}

// subAgentModel is the model of a sub-agent: the agent's, or, with an OpenAI-compatible provider, the same API with
// the sub-agent's model name. The offline and scripted models serve every model name alike.
func (a *app) subAgentModel(sa config.SubAgent, logger *slog.Logger) (llm.Model, error) {
	if sa.Model == "" || a.provider != config.ProviderOpenAI {
		return a.model, nil
	}
	m := a.cfg.Model
	m.Model = sa.Model
	var key string
	if m.APIKeyEnv != "" {
		key = os.Getenv(m.APIKeyEnv)
	}
	return openai.New(openAIOptions(m, key, logger, a.tel))
}

// openAIOptions are the model's options, sending the trace context with each request when tel is on.
func openAIOptions(m config.Model, key string, logger *slog.Logger, tel *telemetry.Telemetry) *openai.Options {
	o := wiring.OpenAIOptions(m, key, logger)
	if tel != nil {
		o.Headers = tel.InjectHTTP
	}
	return o
}

func configName(cfg *config.Config) string {
	if cfg.Path == "" {
		return "built-in defaults"
	}
	return cfg.Path
}

// newModel builds the configured model. modelFlag "test" selects the offline test model; any other value replaces
// the configured model name. When the offline test model stands in for a model nobody configured (provider auto,
// no -model test), it is kept to the tools that only read by the returned guard, whose tools the caller sets once
// built; otherwise the guard is nil.
func newModel(cfg *config.Config, modelFlag string, notices io.Writer, logger *slog.Logger, tel *telemetry.Telemetry) (llm.Model, string, *readOnlyGuard, error) {
	m := cfg.Model
	provider := m.ResolveProvider(os.LookupEnv)
	if modelFlag == "test" {
		provider = "test"
	} else if modelFlag != "" {
		m.Model = modelFlag
	}
	switch provider {
	case "test":
		if m.Provider == config.ProviderAuto && modelFlag != "test" {
			fmt.Fprintf(notices, "agenthost: no model configured, using the offline test model (set %s, or [model] base_url and model in agent.toml, to use a real one)\n", orDefault(m.APIKeyEnv, "OPENAI_API_KEY"))
			guard := &readOnlyGuard{policies: cfg.Tools, notices: notices, told: map[string]bool{}}
			return testmodel.NewWith(&testmodel.Options{Callable: guard.callable, Skipped: guard.skipped}), provider, guard, nil
		}
		return testmodel.New(), provider, nil, nil
	case "scripted":
		s, err := testmodel.LoadScript(m.Script)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w: %s: model.script: %w", errUsage, configName(cfg), err)
		}
		return s, provider, nil, nil
	case "openai":
		if m.Model == "" {
			return nil, "", nil, fmt.Errorf("%w: %s: model.model: a model name is required for provider openai (or pass -model)", errUsage, configName(cfg))
		}
		var key string
		if m.APIKeyEnv != "" {
			key = os.Getenv(m.APIKeyEnv)
		}
		om, err := openai.New(openAIOptions(m, key, logger, tel))
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return om, provider, nil, nil
	}
	if provider == config.ProviderSampling {
		return callersModel{}, provider, nil, nil
	}
	return nil, "", nil, fmt.Errorf("%w: %s: model.provider: unknown provider %q", errUsage, configName(cfg), provider)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// callersModel stands for provider "sampling": the model is the calling MCP client's, which `agenthost serve` reaches
// per call. Anything else that reaches this model is told why it cannot work.
type callersModel struct{}

func (callersModel) Generate(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
	return nil, errSamplingOnlyServe
}

var errSamplingOnlyServe = errors.New(`model provider "sampling" runs the loop on the calling MCP client's model: it works only with agenthost serve`)

// sampling says when serve runs calls on the caller's model: always for provider "sampling", and, when no model is
// configured ("auto" found no key and no base_url), whenever the caller's client supports sampling.
func sampling(cfg *config.Config, provider, modelFlag string) mcpserver.Sampling {
	switch {
	case provider == config.ProviderSampling:
		return mcpserver.SamplingAlways
	case provider == config.ProviderTest && cfg.Model.Provider == config.ProviderAuto && modelFlag == "":
		return mcpserver.SamplingAuto
	}
	return mcpserver.SamplingOff
}
