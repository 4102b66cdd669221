package wiring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/llm/testmodel"
	"github.com/agenthost/agenthost/mcpserver"
)

// newModel builds the configured model. Options.Model "test" selects the offline test model; any other value
// replaces the configured model name. When the offline test model stands in for a model nobody configured (provider
// auto, no -model test), it is kept to the tools that only read by the returned guard, whose tools the caller sets
// once built; otherwise the guard is nil.
func (a *App) newModel(notices io.Writer) (llm.Model, string, *readOnlyGuard, error) {
	cfg, modelArg := a.cfg, a.modelArg
	m := cfg.Model
	provider := m.ResolveProvider(a.lookupEnv)
	if modelArg == "test" {
		provider = "test"
	} else if modelArg != "" {
		m.Model = modelArg
	}
	switch provider {
	case "test":
		if m.Provider == config.ProviderAuto && modelArg != "test" {
			fmt.Fprintf(notices, "agenthost: no model configured, using the offline test model (set %s, or [model] base_url and model in agent.toml, to use a real one)\n", orDefault(m.APIKeyEnv, "OPENAI_API_KEY"))
			guard := &readOnlyGuard{policies: cfg.Tools, notices: notices, told: map[string]bool{}}
			return testmodel.NewWith(&testmodel.Options{Callable: guard.callable, Skipped: guard.skipped}), provider, guard, nil
		}
		return testmodel.New(), provider, nil, nil
	case "scripted":
		s, err := testmodel.LoadScript(m.Script)
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w: %s: model.script: %w", ErrConfig, ConfigName(cfg), err)
		}
		return s, provider, nil, nil
	case "openai":
		if m.Model == "" {
			return nil, "", nil, fmt.Errorf("%w: %s: model.model: a model name is required for provider openai (or pass -model)", ErrConfig, ConfigName(cfg))
		}
		var key string
		if m.APIKeyEnv != "" {
			key = a.getenv(m.APIKeyEnv)
		}
		om, err := openai.New(a.openAIOptions(m, key))
		if err != nil {
			return nil, "", nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return om, provider, nil, nil
	}
	if provider == config.ProviderSampling {
		return callersModel{}, provider, nil, nil
	}
	return nil, "", nil, fmt.Errorf("%w: %s: model.provider: unknown provider %q", ErrConfig, ConfigName(cfg), provider)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// callersModel stands for provider "sampling": the model is the calling MCP client's, which Serve reaches per call.
// Anything else that reaches this model is told why it cannot work.
type callersModel struct{}

func (callersModel) Generate(context.Context, *llm.Request, func(llm.Delta)) (*llm.Response, error) {
	return nil, ErrSamplingOnlyServe
}

// ErrSamplingOnlyServe is why the model of provider "sampling" cannot answer outside `agenthost serve`.
var ErrSamplingOnlyServe = errors.New(`model provider "sampling" runs the loop on the calling MCP client's model: it works only with agenthost serve`)

// sampling says when Serve runs calls on the caller's model: always for provider "sampling", and, when no model is
// configured ("auto" found no key and no base_url), whenever the caller's client supports sampling.
func sampling(cfg *config.Config, provider, modelArg string) mcpserver.Sampling {
	switch {
	case provider == config.ProviderSampling:
		return mcpserver.SamplingAlways
	case provider == config.ProviderTest && cfg.Model.Provider == config.ProviderAuto && modelArg == "":
		return mcpserver.SamplingAuto
	}
	return mcpserver.SamplingOff
}

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
// ReadOnlyTool), a sub-agent (its run is on the same guarded model) or the structured answer's tool. The tools are
// listed once per request, not once per name.
func (g *readOnlyGuard) callable(ctx context.Context) func(name string) bool {
	allowed := map[string]bool{host.OutputToolName: true}
	if tm := g.tools.Load(); tm != nil {
		tools, _ := tm.Tools(ctx) // the list is usable even when a source failed to list
		for _, t := range tools {
			if t.Source == subAgentsSource || ReadOnlyTool(t.Spec, g.policies[t.Spec.Name]) {
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

// ReadOnlyTool reports whether a tool only reads: its source annotates it readOnlyHint (the built-ins that only
// read do, and MCP servers may), or the admin's policy says read_only.
func ReadOnlyTool(spec host.ToolSpec, policy config.ToolPolicy) bool {
	if policy.ReadOnly {
		return true
	}
	a := spec.Annotations
	return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
}
