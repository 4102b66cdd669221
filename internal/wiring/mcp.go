package wiring

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/mcpclients"
)

// MCPServers converts the configured MCP servers, in file order. With honourRequired false, no server is required.
// The servers that may need OAuth are authorized with the grants in grants (nil when none does), their client
// secrets read with getenv.
func MCPServers(cfg *config.Config, honourRequired bool, grants mcpauth.Store, getenv func(string) string, logger *slog.Logger) []mcpclients.ServerConfig {
	var out []mcpclients.ServerConfig
	for _, name := range cfg.MCP.Order {
		s := cfg.MCP.Servers[name]
		var oauth func(context.Context) (auth.OAuthHandler, error)
		if grants != nil && UsesOAuth(s) {
			oauth = func(ctx context.Context) (auth.OAuthHandler, error) {
				oc, err := OAuthConfig(cfg, name, grants, getenv, logger)
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

// clientOptions are the options agenthost connects to MCP servers with.
func clientOptions(version string, logger *slog.Logger) *mcpclients.Options {
	return &mcpclients.Options{Logger: logger, ClientName: "agenthost", ClientVersion: version}
}

// ConnectMCP connects to servers (see MCPServers) as agenthost of version does, for a command that only looks at
// them (lists them, or logs in to one). The client must be closed.
func ConnectMCP(ctx context.Context, servers []mcpclients.ServerConfig, version string, logger *slog.Logger) (*mcpclients.Client, error) {
	return mcpclients.Connect(ctx, servers, clientOptions(version, logger))
}
