// Package benchcfg is the configuration the tool-level benchmarks of internal/bench build the product from: the
// defaults, with a scripted model, no built-in tool, state in memory, and the stdio MCP servers they measure.
//
// A load and benchmark tool's support (see BENCHMARKS.md): nothing in agenthost imports it.
package benchcfg

import "github.com/agenthost/agenthost/config"

// Bare returns the defaults with the model at modelURL (an OpenAI-compatible scripted server, no key), no built-in
// tool and state in memory.
func Bare(modelURL string) *config.Config {
	cfg := config.Default()
	cfg.Model.Provider, cfg.Model.BaseURL, cfg.Model.Model, cfg.Model.APIKeyEnv = config.ProviderOpenAI, modelURL, "fake-model", ""
	cfg.Builtin.Tools = []string{}
	cfg.State.Backend = config.StateMemory
	return cfg
}

// AddStdio adds to cfg the required stdio MCP server name, which runs command with args, after those it has.
func AddStdio(cfg *config.Config, name, command string, args ...string) {
	s := config.DefaultMCPServer()
	s.Transport, s.Command, s.Args, s.Required = config.TransportStdio, command, args, true
	cfg.MCP.Servers[name] = s
	cfg.MCP.Order = append(cfg.MCP.Order, name)
}
