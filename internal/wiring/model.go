package wiring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/llm/testmodel"
	"github.com/agenthost/agenthost/mcpclients"
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

// ModelProbeTimeout bounds CheckModel's one attempt.
const ModelProbeTimeout = 10 * time.Second

// ModelCheck is what CheckModel found of the model API.
type ModelCheck struct {
	// Model is the model name; Endpoint the API's base URL, redacted; both "-" when there is nothing to contact.
	Model, Endpoint string
	// Status says what was found, in a few words: "ok", "not listed", "unreachable", "key refused" ...
	Status string
	// Detail says why and what to do, "" when all is well.
	Detail string
	// Err is non-nil when the model cannot be used as configured.
	Err error
}

// CheckModel contacts the model API once, without retries, under ModelProbeTimeout: it lists the models (or, on a
// server without a list, asks for one token) and reports whether the API is reachable, takes the key and serves the
// model, and, when it lists its models, the sub-agents' and the grader's. The providers that have no API to contact
// (test, scripted, sampling) are reported as such.
func (a *App) CheckModel(ctx context.Context) []ModelCheck {
	if a.provider != config.ProviderOpenAI {
		return []ModelCheck{{Model: "-", Endpoint: "-", Status: "nothing to contact (provider " + a.provider + ")"}}
	}
	m := a.cfg.Model
	if a.modelArg != "" && a.modelArg != "test" {
		m.Model = a.modelArg
	}
	var key string
	if m.APIKeyEnv != "" {
		key = a.getenv(m.APIKeyEnv)
	}
	opts := a.openAIOptions(m, key)
	opts.MaxRetries = -1
	model, err := openai.New(opts)
	endpoint := redact.URL(orDefault(m.BaseURL, openai.DefaultBaseURL))
	if err != nil {
		return []ModelCheck{{Model: m.Model, Endpoint: endpoint, Status: "misconfigured", Err: err}}
	}
	ctx, cancel := context.WithTimeout(ctx, ModelProbeTimeout)
	defer cancel()
	probed, err := model.Probe(ctx)
	if err != nil {
		c := ModelCheck{Model: m.Model, Endpoint: endpoint, Err: redact.Error(err)}
		host := endpoint
		if u, perr := url.Parse(orDefault(m.BaseURL, openai.DefaultBaseURL)); perr == nil {
			host = u.Host
		}
		switch code := openai.StatusCode(err); {
		case errors.Is(err, openai.ErrNotAPI):
			c.Status = "not an OpenAI API"
			c.Detail = "what answers at [model] base_url is not an OpenAI-compatible API: base_url usually ends in the API's version, as in http://localhost:11434/v1"
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			c.Status = "key refused"
			if m.APIKeyEnv != "" && key == "" {
				c.Detail = fmt.Sprintf("the API wants a key and %s is not set: set it, or [model] api_key_env", m.APIKeyEnv)
			} else {
				c.Detail = fmt.Sprintf("the API answered %d to the key of %s: set a valid key", code, orDefault(m.APIKeyEnv, "api_key_env (none set)"))
			}
		case code == http.StatusNotFound:
			c.Status = "model not found"
			c.Detail = fmt.Sprintf("the API does not serve %q: correct [model] model", m.Model)
		case code != 0:
			c.Status = fmt.Sprintf("error %d", code)
			c.Detail = "the API answered with an error; see below"
		case errors.Is(err, context.DeadlineExceeded):
			c.Status = "unreachable"
			c.Detail = fmt.Sprintf("timed out: %s did not answer within %s; check [model] base_url and that the server runs", host, ModelProbeTimeout)
		default:
			c.Status = "unreachable"
			c.Detail = mcpclients.NetCause(err, host)
		}
		c.Detail = strings.ReplaceAll(c.Detail, "correct url", "correct [model] base_url")
		return []ModelCheck{c}
	}
	names := []string{m.Model}
	for _, name := range a.cfg.AgentOrder {
		if sa := a.cfg.Agents[name]; sa.Model != "" && !slices.Contains(names, sa.Model) {
			names = append(names, sa.Model)
		}
	}
	if e := a.cfg.Eval.Model; e != "" && !slices.Contains(names, e) {
		names = append(names, e)
	}
	var out []ModelCheck
	for i, name := range names {
		c := ModelCheck{Model: name, Endpoint: endpoint, Status: "ok"}
		switch {
		case !probed.Listed && i > 0:
			c.Status = "not checked"
			c.Detail = "the API lists no models; only the agent's model was tried"
		case probed.Has(name) && probed.Listed:
			c.Status = fmt.Sprintf("ok (listed among %d models)", len(probed.Models))
		case probed.Has(name):
			c.Status = "ok (answered)"
		default:
			// Some servers list other names than those they answer to (Azure's deployments): ask the model itself.
			nm := m
			nm.Model = name
			o := a.openAIOptions(nm, key)
			o.MaxRetries = -1
			if other, err := openai.New(o); err == nil && other.Answer(ctx) == nil {
				c.Status = "ok (answered; not in the API's list)"
				break
			}
			c.Status = "not listed"
			c.Detail = fmt.Sprintf("the API lists %d models and not %q, nor does it answer to it: correct the model name", len(probed.Models), name)
			c.Err = fmt.Errorf("model %q is not among the models %s lists", name, endpoint)
		}
		out = append(out, c)
	}
	return out
}
