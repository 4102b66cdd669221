package wiring

import (
	"cmp"
	"fmt"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/origin"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
)

// EmbeddingsModel returns the [model] table that [agent.tool_search] embeddings_model is reached with: [model]'s
// timeouts and retries, the embeddings model's name, and its base_url and api_key_env, [model]'s when unset. The
// key of [model] goes only to [model]'s origin: with a base_url elsewhere and no api_key_env, no key is sent.
func EmbeddingsModel(cfg *config.Config) config.Model {
	ts, m := cfg.Agent.ToolSearch, cfg.Model
	m.Model = ts.EmbeddingsModel
	if ts.BaseURL != "" && !sameOrigin(ts.BaseURL, cmp.Or(m.BaseURL, openai.DefaultBaseURL)) {
		m.APIKeyEnv = ""
	}
	if ts.BaseURL != "" {
		m.BaseURL = ts.BaseURL
	}
	if ts.APIKeyEnv != "" {
		m.APIKeyEnv = ts.APIKeyEnv
	}
	return m
}

// sameOrigin reports whether URLs a and b have one origin (scheme, host and port); false when either does not parse.
func sameOrigin(a, b string) bool {
	oa, errA := origin.Parse(a)
	ob, errB := origin.Parse(b)
	return errA == nil && errB == nil && oa == ob
}

// embedder returns the embedder of [agent.tool_search] embeddings_model, or nil when none is set. It makes no
// request.
func (a *App) embedder() (llm.Embedder, error) {
	if a.cfg.Agent.ToolSearch.EmbeddingsModel == "" {
		return nil, nil
	}
	m := EmbeddingsModel(a.cfg)
	var key string
	if m.APIKeyEnv != "" {
		key = a.getenv(m.APIKeyEnv)
	}
	e, err := openai.NewEmbedder(a.openAIOptions(m, key))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: agent.tool_search: %w", ErrConfig, ConfigName(a.cfg), err)
	}
	return e, nil
}

// toolManagerOptions returns the options of the app's tool manager: the policies of cfg, and the embedder of tool
// search with the state database as its cache when one is open.
func (a *App) toolManagerOptions(observer host.Observer) (*host.ToolManagerOptions, error) {
	opts := &host.ToolManagerOptions{Policies: Policies(a.cfg.Tools), Logger: a.logger, Observer: observer}
	var err error
	if opts.Embedder, err = a.embedder(); err != nil {
		return nil, err
	}
	if opts.Embedder != nil && a.state != nil {
		opts.EmbeddingCache = a.state
	}
	return opts, nil
}
