// Package config owns the agent.toml schema: plain structs with their defaults, Load and Parse (environment
// variable expansion, unknown keys rejected, every problem reported at once with its line) and Validate.
//
// config imports the standard library and the TOML decoder only. It must not import any other package of the
// project: the command wires the structs into the packages that use them.
package config

import (
	"encoding/json"
	"fmt"
	"time"
)

// Config is the whole of agent.toml.
type Config struct {
	// Path is the file the configuration was loaded from (the name given to Parse), "" for built-in defaults.
	Path    string
	Agent   Agent
	Model   Model
	Limits  Limits
	Builtin Builtin
	// Tools holds the admin's policy per final tool name, from [tools."<final name>"].
	Tools map[string]ToolPolicy
	MCP   MCP
	A2A   A2A
	// Agents holds the local sub-agents, from [agents.<name>].
	Agents map[string]SubAgent
	// AgentOrder lists every name of Agents once, in file order. Validate checks it.
	AgentOrder []string
	State      State
	Serve      Serve
	Telemetry  Telemetry
	Eval       Eval
	CodeMode   CodeMode
}

// CodeMode is the [code_mode] table: run_code, a tool that takes a short JavaScript program calling the agent's
// tools (tools.<name>(args)), runs it in a sandbox inside agenthost and returns its result, so that many dependent
// calls cost one model round trip. Every call from the program is a tool call of the run, with its policy.
type CodeMode struct {
	// Enabled offers run_code; default false.
	Enabled bool
	// Tools names the tools a program may call; nil (default) means every tool the agent offers. A list, when
	// set, is not empty.
	Tools []string
	// Timeout bounds one program's wall-clock time, its tool calls included: positive, at most 10m, default 30s.
	Timeout Duration
	// MemoryLimit bounds the memory one program may allocate, in bytes: 1 MiB..1 GiB, default 64 MiB.
	MemoryLimit int64
	// MaxToolCalls bounds the tool calls of one program: 1..10000, default 100.
	MaxToolCalls int
	// MaxOutputBytes bounds what the model reads of a program's result, its value and its log: 1024..10 MiB,
	// default 64 KiB.
	MaxOutputBytes int
}

// Eval is the [eval] table: the evaluation checks of every answer, and the eval datasets.
type Eval struct {
	// Checks every answer must pass: "citations", "complete", "schema", "grounded". Default none.
	Checks []string
	// OnFailure is what a failed check does: "warn" (default: reported with the answer) or "retry" (the model is
	// told what failed and answers again, once).
	OnFailure string
	// Model is the model of the grounded check, on the agent's API; "" means the agent's model.
	Model string
	// Datasets are the eval datasets the web console lists and runs: file names or filepath.Match globs. Parse
	// makes a relative one relative to the configuration file's directory. Default none.
	Datasets []string
}

// The check names, and the values of Eval.OnFailure.
var CheckNames = []string{"citations", "complete", "schema", "grounded"}

const (
	OnFailureWarn  = "warn"
	OnFailureRetry = "retry"
)

// Agent is the [agent] table: who the agent is and how its loop runs.
type Agent struct {
	// Name is the agent's name; default "agenthost". The tool that `agenthost serve` offers is named after it
	// unless Serve.ToolName is set.
	Name string
	// Description tells callers what the agent does; default DefaultDescription.
	Description string
	// Instructions is the system prompt text; empty means no instructions beyond the tools' guidance.
	Instructions string
	// MaxIterations bounds the model calls of one run: 1..100, default 10.
	MaxIterations int
	// MaxToolCalls bounds the distinct tool calls executed per round: 1..100, default 10.
	MaxToolCalls int
	// ToolTimeout bounds one tool call: positive, default 2m.
	ToolTimeout Duration
	// Temperature is the sampling temperature, 0..2; nil leaves it to the provider.
	Temperature *float64
	// CitationStyle is how citations are written: "markdown" (default), "sup" or "none".
	CitationStyle string
	// MaxConversations bounds the history store: at least 1, default 1000.
	MaxConversations int
	// ConversationTTL is the idle time after which a conversation is dropped: positive. Its default depends on
	// State.Backend (see DefaultConversationTTL): Parse sets it when the file leaves the key out.
	ConversationTTL Duration
	// Output, from [agent.output], gives the JSON Schema every answer must match; nil for answers in prose.
	Output *Output
	// OutputRetries is how many answers that do not match the output schema go back to the model before the run
	// stops: 0..10, default 2.
	OutputRetries int
	// ToolSearch, from [agent.tool_search] or the short form `tool_search = "MODE"`, is when runs offer
	// search_tools in place of many tools, and how they rank.
	ToolSearch ToolSearch
}

// ToolSearch is the [agent.tool_search] table. `[agent] tool_search = "always"` is short for its mode alone.
// Sub-agents search as the agent does, over the tools they may use.
type ToolSearch struct {
	// Mode is "auto" (default: on when the offered tools' definitions pass Threshold), "always" or "never".
	Mode string
	// Threshold is the estimated tokens of the offered tools' definitions above which "auto" turns search on:
	// at least 0; 0 means 5% of [model] context_tokens, the top of the 1–5% of the context window past which the
	// MCP client guidance says to stop sending every definition up front.
	Threshold int
	// EmbeddingsModel, when set, ranks searches by meaning too, with vectors from an OpenAI-compatible
	// /v1/embeddings endpoint.
	EmbeddingsModel string
	// BaseURL is the embeddings API's URL; empty means [model]'s.
	BaseURL string
	// APIKeyEnv names the environment variable holding its API key; empty means [model]'s, which is sent only to
	// [model]'s base URL: an embeddings API elsewhere gets no key unless this names one.
	APIKeyEnv string
}

// Output is the [agent.output] table: the shape of the agent's answers.
type Output struct {
	// Schema is the JSON Schema, written inline as a TOML table.
	Schema json.RawMessage
	// SchemaFile is a file holding the JSON Schema; Parse makes a relative path relative to the configuration
	// file's directory. Exactly one of Schema and SchemaFile is set.
	SchemaFile string
}

// Model is the [model] table: the chat model the loop calls.
type Model struct {
	// Provider is "auto" (default), "openai", "test", "scripted" or "sampling" (the loop runs on the model of
	// the MCP client that calls `agenthost serve`, through MCP sampling). See Model.ResolveProvider for "auto".
	Provider string
	// Model is the model name, e.g. "gpt-4o-mini"; required when the provider is (or resolves to) "openai".
	Model string
	// BaseURL is the http(s) URL of an OpenAI-compatible API; empty means the provider's default.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; default "OPENAI_API_KEY", empty for none.
	APIKeyEnv string
	// RequestTimeout bounds one model call: positive, default 5m.
	RequestTimeout Duration
	// IdleTimeout bounds the silence between two streamed chunks: positive, default 60s.
	IdleTimeout Duration
	// MaxRetries is how often a failed model call is retried: 0..10, default 4 (with one request in five failing,
	// 99.95% of two-call runs succeed; see BENCHMARKS.md).
	MaxRetries int
	// MaxTokens caps the completion; 0 leaves it to the provider.
	MaxTokens int
	// ContextTokens is the context budget in tokens: at least 1, default 128000.
	ContextTokens int
	// Script is the JSON-lines script of provider "scripted". Parse makes a relative path relative to the
	// configuration file's directory.
	Script string
	// StructuredOutput says whether the API takes an output schema as response_format json_schema; without it, a
	// structured answer is asked for through a final_answer tool. nil means true for OpenAI's own API only.
	StructuredOutput *bool
}

// Limits is the [limits] table: usage bounds per run. Zero means unlimited.
type Limits struct {
	// Requests bounds the model calls; default 50.
	Requests int
	// TotalTokens bounds prompt plus completion tokens; default 0 (unlimited).
	TotalTokens int64
	// ToolCalls bounds the executed tool calls; default 0 (unlimited).
	ToolCalls int
}

// BuiltinTools names every built-in tool, in the order package builtin lists them (builtin.Available; a test of
// the composition root keeps the two lists equal). Parse checks builtin.tools and the tool names of policies and
// sub-agents against it, so that a misspelt name is reported with the others, with its line.
var BuiltinTools = []string{"current_time", "calculate", "fetch_url", "web_search", "read_file", "list_dir", "search_files", "doc_search"}

// Builtin is the [builtin] table.
type Builtin struct {
	// Tools names the built-in tools to offer; default ["current_time"]. Empty offers none.
	Tools []string
	// FetchURL is [builtin.fetch_url].
	FetchURL FetchURL
	// WebSearch is [builtin.web_search].
	WebSearch WebSearch
	// Files is [builtin.files], shared by read_file, list_dir and search_files.
	Files Files
	// DocSearch is [builtin.doc_search].
	DocSearch DocSearch
	// Calculate is [builtin.calculate].
	Calculate Calculate
}

// FetchURL is the [builtin.fetch_url] table.
type FetchURL struct {
	// Timeout bounds a fetch, redirects included: positive, default 30s.
	Timeout Duration
	// MaxBytes caps the body read: at least 1024, default 5 MiB.
	MaxBytes int64
	// MaxChars is the default length of the text returned: at least 100, default 20000.
	MaxChars int
	// AllowPrivate lets fetch_url reach loopback, private, link-local and other non-public addresses.
	AllowPrivate bool
	// AllowHosts are hosts or host:port pairs exempt from the address check.
	AllowHosts []string
	// UserAgent replaces the default User-Agent.
	UserAgent string
}

// WebSearch is the [builtin.web_search] table.
type WebSearch struct {
	// Backend is "searxng", "brave" or "tavily"; required when web_search is enabled.
	Backend string
	// URL is the SearXNG instance (required for searxng), or replaces the API endpoint of brave or tavily.
	URL string
	// APIKeyEnv names the variable holding the API key; default BRAVE_API_KEY for brave, TAVILY_API_KEY for
	// tavily.
	APIKeyEnv string
	// MaxResults is the default number of results: 1..20, default 5.
	MaxResults int
	// Timeout bounds one search: positive, default 15s.
	Timeout Duration
}

// Files is the [builtin.files] table.
type Files struct {
	// Roots are the directories the file tools may read; required when one of them is enabled. A relative root is
	// relative to the configuration file's directory.
	Roots []string
	// MaxFileBytes is the size above which a file is refused: at least 1, default 10 MiB.
	MaxFileBytes int64
	// MaxResults caps search_files matches and list_dir entries: at least 1, default 200.
	MaxResults int
}

// DocSearch is the [builtin.doc_search] table.
type DocSearch struct {
	// Roots are the directories indexed; required when doc_search is enabled. A relative root is relative to the
	// configuration file's directory.
	Roots []string
	// Extensions are the file extensions indexed; default .md, .markdown, .txt, .html, .htm.
	Extensions []string
	// Index is the database file; default "<agent>.docsearch.db" in agenthost's state directory.
	Index string
	// RefreshInterval is how often the index is updated in the background: default 5m; "0s" updates it at
	// start-up only.
	RefreshInterval Duration
	// MaxFileBytes is the size above which a document is skipped: at least 1, default 10 MiB.
	MaxFileBytes int64
	// MaxResults is the default number of results: 1..50, default 5.
	MaxResults int
}

// Calculate is the [builtin.calculate] table.
type Calculate struct {
	// Precision is the number of significant digits of inexact results: 1..1000, default 50.
	Precision int
}

// SubAgent is an [agents.<name>] table: a local sub-agent offered to the agent as the tool <name>.
type SubAgent struct {
	// Description tells the parent's model when to hand a task to the sub-agent; required.
	Description string
	// Instructions are the sub-agent's system prompt.
	Instructions string
	// Model replaces [model].model for the sub-agent; empty means the same model.
	Model string
	// Tools names the tools of the parent the sub-agent may use (other sub-agents included); default none.
	Tools []string
	// MaxIterations bounds the sub-agent's loop: 1..100, default 10.
	MaxIterations int
	// Limits bound each run of the sub-agent; default no limit but [limits] requests' default.
	Limits Limits
}

// ToolPolicy is the admin's policy for one tool, from [tools."<final name>"].
type ToolPolicy struct {
	// Enabled offers the tool; nil means true. Use IsEnabled.
	Enabled *bool
	// Exclusive makes the tool, when offered, the only tool offered and the only one that may run.
	Exclusive bool
	// Forced makes the model call the tool in the first iteration.
	Forced bool
	// TakesControl makes the tool's result the answer; the model must call it alone.
	TakesControl bool
	// RequireApproval asks the caller before each call.
	RequireApproval bool
	// Prompt is added to the system prompt while the tool is offered.
	Prompt string
	// FormatPrompt is added to the system prompt once the tool was used in the run.
	FormatPrompt string
	// RetryOnDisconnect makes a call of an MCP tool, in flight when its server went away, be made again once the
	// server is back, as for tools annotated readOnlyHint or idempotentHint.
	RetryOnDisconnect bool
	// ReadOnly says the tool only reads, as if its source annotated it readOnlyHint: the offline test model chosen
	// for want of a configured one calls it, and `agenthost check` does not count it as a tool that writes.
	ReadOnly bool
	// EvaluationChecks are the checks an answer must pass when the tool ran in its run (see Eval).
	EvaluationChecks []string
	// Pinned says whether the tool is offered from the first request when tool search is on ([agent.tool_search]):
	// true always, false only once a search loaded it; nil means pinned when forced or takes_control, or a
	// sub-agent.
	Pinned *bool
}

// IsEnabled reports whether the tool is offered: Enabled, or true when unset.
func (p ToolPolicy) IsEnabled() bool { return p.Enabled == nil || *p.Enabled }

// MCP is the [mcp] table.
type MCP struct {
	// Servers holds [mcp.servers.<name>].
	Servers map[string]MCPServer
	// Order lists every name of Servers once, in file order. Validate checks it.
	Order []string
}

// MCPServer is one [mcp.servers.<name>] table.
type MCPServer struct {
	// Transport is "stdio", "http" (streamable HTTP) or "sse" (legacy). When empty it is inferred: command
	// means stdio, url means http. Parse fills it in; see EffectiveTransport.
	Transport string

	// Command, Args, Env and Cwd start a stdio server. Env is added to the little of agenthost's environment that a
	// server inherits (mcpclients.InheritedEnv) and to EnvPassthrough's.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// EnvPassthrough names more of agenthost's environment variables to pass to a stdio server: names, or patterns
	// in which "*" stands for any run of characters ("AWS_*"; "*" passes the whole environment).
	EnvPassthrough []string

	// URL and Headers reach an http or sse server.
	URL     string
	Headers map[string]string

	// Auth is how agenthost authorizes itself to an http or sse server: AuthNone, AuthOAuth (the authorization code
	// flow with PKCE, run by `agenthost mcp login`), AuthClientCredentials, or "" (the default): OAuth when the
	// server answers 401 with a WWW-Authenticate challenge, unless a static Authorization header is set.
	Auth string
	// ClientID and ClientSecretEnv (the variable that holds the secret) are a client registered with the
	// authorization server beforehand; ClientMetadataURL is a client ID metadata document (an https URL). With none
	// of them, the client registers itself dynamically when the server offers it.
	ClientID          string
	ClientSecretEnv   string
	ClientMetadataURL string
	// Scopes are asked for; empty means those the server names.
	Scopes []string
	// RedirectPort is the port of the login's loopback redirect listener on 127.0.0.1; 0 means a free one.
	RedirectPort int

	// ProtocolVersion pins the MCP protocol version (a date such as "2025-06-18"); empty negotiates.
	ProtocolVersion string
	// ConnectTimeout bounds connecting and listing tools at start-up: positive, default 30s.
	ConnectTimeout Duration
	// ReconnectWait bounds how long a call made while the server reconnects waits for it: positive, default 10s.
	ReconnectWait Duration
	// Required makes a failure to connect a start-up error instead of a skipped server.
	Required bool
	// Include and Exclude are path.Match patterns on the server's own tool names. An empty Include keeps
	// every tool; Exclude is applied after Include.
	Include []string
	Exclude []string
	// Prefix is put before the server's tool names as "<prefix>_<tool>"; nil means the server's name and ""
	// means bare names. See PrefixOrName.
	Prefix *string
	// UseInstructions adds the server's instructions to the system prompt; nil means true.
	UseInstructions *bool
	// AllowSampling lets the server ask the host's model for completions; nil means true.
	AllowSampling *bool
	// Sampling says whose model answers the server's sampling requests: "agent" (default, "" too) agenthost's own,
	// "caller" the model of whoever called the tool, when a gateway's caller can sample (else the request fails).
	Sampling string
	// SamplingMaxTokens caps one sampling completion: at least 1, default 1024.
	SamplingMaxTokens int
}

// The values of MCPServer.Auth.
const (
	AuthNone              = "none"
	AuthOAuth             = "oauth"
	AuthClientCredentials = "client_credentials"
)

// The values of MCPServer.Sampling.
const (
	SamplingAgent  = "agent"
	SamplingCaller = "caller"
)

// PrefixOrName returns the prefix of the server's tool names: Prefix when set (possibly ""), else name.
func (s MCPServer) PrefixOrName(name string) string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return name
}

// InstructionsEnabled reports whether the server's instructions go into the system prompt.
func (s MCPServer) InstructionsEnabled() bool { return s.UseInstructions == nil || *s.UseInstructions }

// SamplingAllowed reports whether the server may ask the host's model for completions.
func (s MCPServer) SamplingAllowed() bool { return s.AllowSampling == nil || *s.AllowSampling }

// EffectiveTransport returns Transport, or when it is empty the transport inferred from the fields set:
// "stdio" for a command, "http" for a url, "" when neither or both are set.
func (s MCPServer) EffectiveTransport() string {
	if s.Transport != "" {
		return s.Transport
	}
	switch {
	case s.Command != "" && s.URL == "":
		return TransportStdio
	case s.URL != "" && s.Command == "":
		return TransportHTTP
	}
	return ""
}

// A2A is the [a2a] table.
type A2A struct {
	// Peers holds [a2a.peers.<name>]; each peer becomes a tool of that name.
	Peers map[string]A2APeer
	// Order lists every name of Peers once, in file order. Validate checks it.
	Order []string
}

// A2APeer is one [a2a.peers.<name>] table: a remote A2A agent offered as a tool.
type A2APeer struct {
	// URL is the peer's base URL or the URL of its agent card.
	URL string
	// Description overrides the description taken from the agent card when not empty.
	Description string
	// Headers are sent with every request to the peer.
	Headers map[string]string
	// Timeout bounds one task on the peer: positive, default 5m.
	Timeout Duration
	// Required makes a failure to resolve the peer a start-up error instead of a skipped peer.
	Required bool
	// ProtocolVersion is "" (detect from the agent card), "1.0" or "0.3".
	ProtocolVersion string
	// PollInterval is how often a task the peer has not finished is polled with GetTask (tasks/get on v0.3
	// peers) when the peer does not stream: positive, default 1s.
	PollInterval Duration
}

// Telemetry is the [telemetry] table: OpenTelemetry traces and metrics. What it leaves empty comes from the
// standard OTEL_* environment variables.
type Telemetry struct {
	// Exporter is "otlp" or "none"; "" reads OTEL_TRACES_EXPORTER, and means "none" without it.
	Exporter string
	// Protocol is "http/protobuf" or "grpc"; "" reads OTEL_EXPORTER_OTLP_PROTOCOL, and means "http/protobuf"
	// without it.
	Protocol string
	// Endpoint is the collector's base URL; "" reads OTEL_EXPORTER_OTLP_ENDPOINT, and means
	// http://localhost:4318 (4317 for gRPC) without it.
	Endpoint string
	// Headers are sent with every export (an API key, say), besides OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// ServiceName names the service, over OTEL_SERVICE_NAME; without either it is "agenthost".
	ServiceName string
	// CaptureContent records prompts, answers, messages, tool arguments and tool results on the spans. Off by
	// default: they may hold what users would not want in a tracing backend.
	CaptureContent bool
}

// The values of Telemetry.Exporter and Telemetry.Protocol.
const (
	ExporterNone = "none"
	ExporterOTLP = "otlp"
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// State is the [state] table: where conversations, served A2A tasks and runs waiting for input are kept.
type State struct {
	// Backend is "sqlite" (default: one file), "postgres" (shared by replicas) or "memory" (lost on exit).
	Backend string
	// Path is the SQLite file; "" means "<agent name>.db" in agenthost's state directory. Parse makes a relative
	// path relative to the configuration file's directory.
	Path string
	// DSNEnv names the environment variable holding the Postgres connection string; default "DATABASE_URL".
	DSNEnv string
	// DurableRuns says which runs of `agenthost serve` survive a crash, resumed from their last finished step when
	// it starts again: "all", "tasks" (A2A tasks; the default) or "none". It needs a database backend.
	DurableRuns string
	// ExecutorID names this replica among those sharing a Postgres database: a restarted replica resumes the runs
	// of its own id. "" means the host name with Postgres, "local" with SQLite.
	ExecutorID string
}

// The values of ToolSearch.Mode; "" means ToolSearchAuto.
const (
	ToolSearchAuto   = "auto"
	ToolSearchAlways = "always"
	ToolSearchNever  = "never"
)

// The values of State.DurableRuns.
const (
	DurableAll   = "all"
	DurableTasks = "tasks"
	DurableNone  = "none"
)

// The state backends.
const (
	StateSQLite   = "sqlite"
	StatePostgres = "postgres"
	StateMemory   = "memory"
)

// Serve is the [serve] table: how `agenthost serve` offers the agent as an MCP server, over stdio or
// streamable HTTP, and as an A2A agent with --a2a. The HTTP fields matter only with --http, except AuthTokenEnv,
// AllowedHosts, AllowedOrigins and MaxBodyBytes, which apply to the A2A listener too.
type Serve struct {
	// ToolName is the name of the agent's tool; "" means "ask_" and the agent's name, which the command
	// computes (and shortens to a valid tool name). When set it must match ^[a-zA-Z0-9_-]{1,64}$.
	ToolName string
	// HTTP is the default listen address of `agenthost serve --http`, host:port with a port from 0 to 65535
	// (0 picks a free port); default "127.0.0.1:8765".
	HTTP string
	// A2A is the default listen address of `agenthost serve --a2a`, checked like HTTP; default "127.0.0.1:8766".
	A2A string
	// A2APublicURL is the URL the A2A agent card advertises for the JSON-RPC endpoint, for a server behind a
	// proxy: an absolute http or https URL with a host and no query, fragment or user info. "" (default) means
	// http://<listen address>/.
	A2APublicURL string
	// Skills are the skills the A2A agent card lists, from [[serve.skills]]; none (default) means one skill
	// derived from the agent.
	Skills []Skill
	// CardListsTools names the agent's tools in the skill derived for the A2A agent card. The card is served
	// without a token, so false (default) keeps the tool names off it.
	CardListsTools bool
	// Path is the MCP endpoint's URL path: it starts with "/" and is not "/healthz"; default "/mcp".
	Path string
	// Stateless serves HTTP without sessions, so that any instance behind a load balancer can answer any
	// request; default false.
	Stateless bool
	// AuthTokenEnv names the environment variable that holds the bearer token HTTP requests must carry; ""
	// (default) requires none. Only the name is checked here: the command reads the variable.
	AuthTokenEnv string
	// AuthTokensEnv names environment variables that each hold one caller's bearer token, for callers kept apart:
	// the variable's name is the caller's subject, which owns its A2A tasks and conversations as a token's subject
	// does under [serve.oauth]. Default none; it excludes AuthTokenEnv and OAuth.
	AuthTokensEnv []string
	// AllowedHosts lists Host header values accepted besides the loopback names (localhost, 127.0.0.1, [::1])
	// and the listen address: host or host:port, no scheme. Default none.
	AllowedHosts []string
	// AllowedOrigins lists Origin header values accepted, as scheme://host[:port] with scheme http or https.
	// Default none: only requests without an Origin, or from a loopback origin, are accepted.
	AllowedOrigins []string
	// MaxBodyBytes caps the body of one HTTP request: 1024..1<<30, default 4 MiB.
	MaxBodyBytes int64
	// ExposeTools also offers every merged tool besides the agent's tool (gateway mode); default false.
	ExposeTools bool
	// GatewayTools shapes what gateway mode offers: GatewayToolsAll (default) every enabled tool by name,
	// GatewayToolsSearch the agent's tool, the pinned tools, search_tools and call_tool, for clients that cap the
	// tools they take; GatewayToolsCode the same with run_code in place of call_tool, whose script calls the tools.
	// It matters only with ExposeTools.
	GatewayTools string
	// ExposePrompts offers the MCP servers' prompts too in gateway mode, named as their tools are; nil (default)
	// means true. It matters only with ExposeTools.
	ExposePrompts *bool
	// ExposeResources offers the MCP servers' resources and resource templates too in gateway mode; nil (default)
	// means true. It matters only with ExposeTools.
	ExposeResources *bool
	// ProgressInterval is the least time between two progress notifications that carry streamed text:
	// positive, default 250ms.
	ProgressInterval Duration
	// InputTimeout is how long a call waits for a caller on protocol 2026-07-28 or later to come back with the
	// answers it was asked for (approvals, elicitation, sampling) before the run is cancelled, and how long an A2A
	// task waits in INPUT_REQUIRED for its caller's answer before it is canceled: positive, default 10m.
	InputTimeout Duration
	// MaxWaitingCalls bounds the calls that wait for such callers' answers: 1..100000, default 100.
	MaxWaitingCalls int
	// ReadHeaderTimeout is how long the headers of a request to the HTTP or A2A listener may take to arrive before
	// its connection is closed: positive, at most 10m, default 10s.
	ReadHeaderTimeout Duration
	// ReadBodyTimeout is how long a request's body may take to arrive, from the end of its headers, before its
	// connection is closed: positive, at most 1h, default 30s. It bounds reading only: responses (SSE streams)
	// may last longer.
	ReadBodyTimeout Duration
	// IdleTimeout is how long a kept-alive connection may wait for its next request before it is closed: positive,
	// at most 1h, default 2m.
	IdleTimeout Duration
	// MaxSessions bounds what callers hold open on the two listeners together: the MCP sessions of --http and the
	// unfinished tasks of --a2a. Past it a new session or task is refused with HTTP 503 and Retry-After:
	// 1..1000000, default 10000.
	MaxSessions int
	// SessionIdleTimeout closes an MCP session that has received no request for this long, and frees what it
	// holds: positive, at most 168h, default 30m.
	SessionIdleTimeout Duration
	// MaxSessionsPerSubject bounds the MCP sessions one caller holds open when callers are told apart (OAuth, where
	// the caller is the "sub" of its tokens, or AuthTokensEnv, where it is its token's variable); past it a new one
	// is refused with HTTP 429, so that one caller cannot take all of MaxSessions: 1..1000000, default 100.
	MaxSessionsPerSubject int
	// MaxTasksPerSubject bounds the unfinished A2A tasks of one such caller; past it a new one is refused with
	// HTTP 429: 1..1000000, default 100.
	MaxTasksPerSubject int
	// OAuth, from [serve.oauth], makes the HTTP and A2A listeners an OAuth protected resource that accepts only
	// bearer JWTs from one issuer; nil (default) leaves them to AuthTokenEnv. The two exclude each other.
	OAuth *ServeOAuth
}

// ServeOAuth is the [serve.oauth] table: the identity provider whose access tokens `agenthost serve --http` and
// --a2a accept.
type ServeOAuth struct {
	// Issuer is the authorization server's issuer identifier, the exact "iss" of its tokens: an https URL (http only
	// on a loopback host); required.
	Issuer string
	// Audience is the resource identifier the tokens must name in "aud"; required. MCP clients expect the public URL
	// of the MCP endpoint, such as "https://agent.example.com/mcp".
	Audience string
	// JWKSURL is where the issuer publishes its signing keys, checked like Issuer; "" (default) means the jwks_uri of
	// the issuer's metadata (RFC 8414, else OpenID Connect discovery).
	JWKSURL string
	// RequiredScopes are the scopes every token must carry; default none.
	RequiredScopes []string
}

// ResourcesExposed reports whether gateway mode offers the MCP servers' resources (expose_resources, default true).
func (s Serve) ResourcesExposed() bool {
	return s.ExposeTools && (s.ExposeResources == nil || *s.ExposeResources)
}

// PromptsExposed reports whether gateway mode offers the MCP servers' prompts (expose_prompts, default true).
func (s Serve) PromptsExposed() bool {
	return s.ExposeTools && (s.ExposePrompts == nil || *s.ExposePrompts)
}

// Skill is one [[serve.skills]] table: a skill the A2A agent card lists.
type Skill struct {
	// ID identifies the skill; required and unique among the skills.
	ID string
	// Name is the skill's name for people; required.
	Name string
	// Description says what the skill does; required.
	Description string
	// Tags are keywords for the skill; default none.
	Tags []string
	// Examples are requests the skill handles; default none.
	Examples []string
}

// Duration is a time.Duration written in TOML as a string such as "30s", "2m" or "1h30m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a value like \"30s\" or \"2m\")", text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration in Go's notation, e.g. "2m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Enumerations of the schema.
const (
	ProviderAuto     = "auto"
	ProviderOpenAI   = "openai"
	ProviderTest     = "test"
	ProviderScripted = "scripted"
	ProviderSampling = "sampling"

	CitationMarkdown = "markdown"
	CitationSup      = "sup"
	CitationNone     = "none"

	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// DefaultDescription is the default Agent.Description.
const DefaultDescription = "An assistant that answers a request using the tools it has been given."

// Default returns the configuration used without a file: every default, Path "".
func Default() *Config {
	return &Config{
		Agent: Agent{
			Name:             "agenthost",
			Description:      DefaultDescription,
			MaxIterations:    10,
			MaxToolCalls:     10,
			ToolTimeout:      Duration{2 * time.Minute},
			CitationStyle:    CitationMarkdown,
			MaxConversations: 1000,
			ConversationTTL:  Duration{DefaultConversationTTL(StateSQLite)},
			OutputRetries:    2,
		},
		Model: Model{
			Provider:       ProviderAuto,
			APIKeyEnv:      "OPENAI_API_KEY",
			RequestTimeout: Duration{5 * time.Minute},
			IdleTimeout:    Duration{60 * time.Second},
			MaxRetries:     4,
			ContextTokens:  128000,
		},
		Limits: Limits{Requests: 50},
		Builtin: Builtin{
			Tools:     []string{"current_time"},
			FetchURL:  FetchURL{Timeout: Duration{30 * time.Second}, MaxBytes: 5 << 20, MaxChars: 20000},
			WebSearch: WebSearch{MaxResults: 5, Timeout: Duration{15 * time.Second}},
			Files:     Files{MaxFileBytes: 10 << 20, MaxResults: 200},
			DocSearch: DocSearch{
				Extensions:      []string{".md", ".markdown", ".txt", ".html", ".htm"},
				RefreshInterval: Duration{5 * time.Minute},
				MaxFileBytes:    10 << 20,
				MaxResults:      5,
			},
			Calculate: Calculate{Precision: 50},
		},
		Tools:  map[string]ToolPolicy{},
		MCP:    MCP{Servers: map[string]MCPServer{}},
		A2A:    A2A{Peers: map[string]A2APeer{}},
		Agents: map[string]SubAgent{},
		State:  State{Backend: StateSQLite, DSNEnv: "DATABASE_URL", DurableRuns: DurableTasks},
		Serve: Serve{
			HTTP:             "127.0.0.1:8765",
			A2A:              "127.0.0.1:8766",
			Path:             "/mcp",
			MaxBodyBytes:     4 << 20,
			ProgressInterval: Duration{250 * time.Millisecond},
			InputTimeout:     Duration{10 * time.Minute},
			MaxWaitingCalls:  100,
			GatewayTools:     GatewayToolsAll,

			ReadHeaderTimeout:  Duration{10 * time.Second},
			ReadBodyTimeout:    Duration{30 * time.Second},
			IdleTimeout:        Duration{2 * time.Minute},
			MaxSessions:        10000,
			SessionIdleTimeout: Duration{30 * time.Minute},

			MaxSessionsPerSubject: 100,
			MaxTasksPerSubject:    100,
		},
		CodeMode: CodeMode{Timeout: Duration{30 * time.Second}, MemoryLimit: 64 << 20, MaxToolCalls: 100, MaxOutputBytes: 64 << 10},
	}
}

// DefaultConversationTTL returns the default Agent.ConversationTTL of the state backend: an hour in memory, where
// conversations end with the process anyway, and 30 days in a database, which is kept so that a user can come back
// to a conversation the next day or the next week.
func DefaultConversationTTL(backend string) time.Duration {
	if backend == StateMemory {
		return time.Hour
	}
	return 30 * 24 * time.Hour
}

// DefaultSubAgent returns a SubAgent with every default set.
func DefaultSubAgent() SubAgent {
	return SubAgent{MaxIterations: 10, Limits: Limits{Requests: 50}, Tools: []string{}}
}

// DefaultMCPServer returns an MCPServer with every default set and no transport fields.
func DefaultMCPServer() MCPServer {
	return MCPServer{ConnectTimeout: Duration{30 * time.Second}, ReconnectWait: Duration{10 * time.Second}, SamplingMaxTokens: 1024}
}

// DefaultA2APeer returns an A2APeer with every default set and no URL.
func DefaultA2APeer() A2APeer {
	return A2APeer{Timeout: Duration{5 * time.Minute}, PollInterval: Duration{time.Second}}
}

// ResolveProvider returns the provider to build: Provider itself unless it is "auto", which becomes "openai"
// when base_url is set or the API key variable named by APIKeyEnv is set and not empty, and "test" otherwise.
// env looks a variable up; nil means no variable is set.
func (m Model) ResolveProvider(env func(string) (string, bool)) string {
	if m.Provider != ProviderAuto {
		return m.Provider
	}
	if m.BaseURL != "" {
		return ProviderOpenAI
	}
	if env != nil && m.APIKeyEnv != "" {
		if v, ok := env(m.APIKeyEnv); ok && v != "" {
			return ProviderOpenAI
		}
	}
	return ProviderTest
}

// Values of [serve] gateway_tools.
const (
	GatewayToolsAll    = "all"
	GatewayToolsSearch = "search"
	GatewayToolsCode   = "code"
)
