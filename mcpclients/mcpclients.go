package mcpclients

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/telemetry"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
	TransportSSE   = "sse"  // the legacy HTTP+SSE transport
)

// ServerConfig is one MCP server to connect.
type ServerConfig struct {
	// Name identifies the server in tool sources ("mcp:<name>"), logs and errors.
	Name string
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string
	// Command, Args, Env and Cwd start a stdio server. The server does not inherit agenthost's whole environment,
	// which holds its secrets: only the variables of InheritedEnv, those EnvPassthrough names, and Env, which wins.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// EnvPassthrough names more of agenthost's variables to pass to a stdio server: names, or patterns in which "*"
	// stands for any run of characters ("AWS_*"; "*" passes everything).
	EnvPassthrough []string
	// URL and Headers (sent on every request) reach an HTTP or SSE server.
	URL     string
	Headers map[string]string
	// OAuth, when set, returns the handler that authorizes the requests to an HTTP or SSE server. It is called for
	// each connection, so that a reconnection picks up a login done meanwhile.
	OAuth func(context.Context) (auth.OAuthHandler, error)
	// ProtocolVersion, when set, is the MCP protocol version asked for; empty asks for the latest.
	ProtocolVersion string
	// ConnectTimeout bounds connecting and listing the tools; 0 means 30 seconds.
	ConnectTimeout time.Duration
	// Required makes a failure to connect at start-up fail Connect; otherwise the server is skipped.
	Required bool
	// Include and Exclude are path.Match patterns on the server's own tool names: an empty Include keeps every tool,
	// Exclude applies after it.
	Include, Exclude []string
	// Prefix goes before each tool's name as "<prefix>_<tool>"; empty keeps the bare names.
	Prefix string
	// UseInstructions adds the server's instructions to the system prompt.
	UseInstructions bool
	// AllowSampling lets the server ask the host's model for completions.
	AllowSampling bool
	// SampleWithCaller puts the server's sampling requests to whoever called the tool the server is serving (a
	// gateway's caller, through host.Call's Relay) instead of the host's model.
	SampleWithCaller bool
	// SamplingMaxTokens caps the completions the server gets; 0 means its own request's maxTokens.
	SamplingMaxTokens int
	// ReconnectWait bounds how long a call made while the server reconnects waits for it, within the call's own
	// deadline; 0 means 10 seconds, and a negative value means the call fails at once.
	ReconnectWait time.Duration
	// RetryOnDisconnect names tools (the server's own names) whose call, in flight when the server went away, is
	// made again once it is back, as for tools annotated readOnlyHint or idempotentHint.
	RetryOnDisconnect []string
}

// Options configures Connect. A nil *Options means all defaults.
type Options struct {
	// Logger receives connection events and the stdio servers' stderr; nil discards them.
	Logger *slog.Logger
	// Sampler answers the servers' sampling requests; nil refuses them.
	Sampler llm.Model
	// Telemetry traces each request to a server and sends it the trace context in _meta, the server's sampling and
	// elicitation requests, and the model calls that answer its sampling; nil traces nothing.
	Telemetry *telemetry.Telemetry
	// RetryFailed keeps trying, in the background and with backoff, the optional servers that could not be
	// reached at start-up (or needed a login, which another process may make meanwhile): each is a tool source
	// from the start, with no tools until it connects, and says so when it does (host.Notifier). Without it such a
	// server is left out.
	RetryFailed bool
	// ClientName and ClientVersion identify agenthost to the servers; empty means "agenthost" and "dev".
	ClientName, ClientVersion string
	// MinBackoff and MaxBackoff bound the delay between reconnection attempts; 0 means 500ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Gateway also lists each server's prompts, resources and resource templates, at each connection and on their
	// list_changed, for a gateway that offers them (see Server.Prompts and Server.Resources); without it they stay
	// empty.
	Gateway bool

	// dial, when set, replaces the configured transport: tests connect in-memory servers with it. It is called for
	// every connection, reconnections included.
	dial func(ServerConfig) (mcp.Transport, error)
}

// Client is the set of configured MCP servers.
type Client struct {
	servers []*Server // in configuration order, failed ones included
}

// Connect connects every server concurrently, each under its own ConnectTimeout, and returns when all have
// connected or failed. A server that fails is logged and skipped, unless it is Required: then Connect fails with its
// reason (and closes the others). The returned Client must be closed.
func Connect(ctx context.Context, configs []ServerConfig, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	c := &Client{}
	for _, cfg := range configs {
		c.servers = append(c.servers, newServer(cfg, opts))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.servers))
	for i, s := range c.servers {
		wg.Go(func() { errs[i] = s.start(ctx) })
	}
	wg.Wait()
	var required []error
	var retry []*Server
	for i, s := range c.servers {
		switch {
		case errs[i] == nil:
		case s.cfg.Required:
			required = append(required, fmt.Errorf("mcpclients: required server %q: %w%s", s.cfg.Name, errs[i], s.explain()))
		case opts.RetryFailed:
			s.logger.Warn("MCP server not reached at start-up; retrying in the background", s.why(errs[i])...)
			retry = append(retry, s)
		case errors.Is(errs[i], mcpauth.ErrNeedsLogin):
			s.logger.Warn("MCP server skipped: it needs a login", "err", errs[i])
		default:
			s.logger.Warn("MCP server skipped: it could not be reached at start-up", s.why(errs[i])...)
		}
	}
	if len(required) > 0 {
		c.Close()
		return nil, errors.Join(required...)
	}
	for _, s := range retry {
		s.mu.Lock()
		s.retrying = true
		s.mu.Unlock()
		s.wg.Go(s.retryStart)
	}
	return c, nil
}

// Toolsets returns the connected servers, and those retried in the background, as tool sources, in configuration
// order.
func (c *Client) Toolsets() []host.Toolset {
	var out []host.Toolset
	for _, s := range c.servers {
		if s.started() {
			out = append(out, s)
		}
	}
	return out
}

// Servers returns every configured server, connected or not, in configuration order.
func (c *Client) Servers() []*Server {
	return append([]*Server(nil), c.servers...)
}

// Status returns the state of every configured server, in configuration order.
func (c *Client) Status() []Status {
	out := make([]Status, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Status()
	}
	return out
}

// Close closes every session and stops every child process, and waits for the servers' goroutines. It is safe to
// call more than once.
func (c *Client) Close() error {
	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Go(s.close)
	}
	wg.Wait()
	return nil
}

// State is a server's connection state.
type State string

const (
	StateConnected    State = "connected"
	StateReconnecting State = "reconnecting" // it was connected and went away; calls fail until it is back
	StateFailed       State = "failed"       // it could not be reached at start-up and was skipped
	StateNeedsLogin   State = "needs login"  // it asks for an OAuth login that was not done: skipped too
	StateClosed       State = "closed"
)

// Status describes a server for `agenthost check` and health endpoints. It holds no secrets: no headers, no
// environment, and Error's URLs are redacted (internal/redact).
type Status struct {
	Name            string `json:"name"`
	Transport       string `json:"transport"`
	State           State  `json:"state"`
	ProtocolVersion string `json:"protocol_version,omitempty"`
	Tools           int    `json:"tools"`
	Error           string `json:"error,omitempty"`
	// Cause is, when the server is not connected, the root cause of Error and what to do about it, as a sentence
	// (see Cause); "" when nothing more is known than Error says.
	Cause string `json:"-"`
	// Stderr is, when a stdio server is not connected, the last lines its last child wrote to stderr (redacted),
	// oldest first: a server that fails at start says why there.
	Stderr []string `json:"-"`
}
