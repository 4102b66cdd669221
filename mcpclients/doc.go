// Package mcpclients connects agenthost to the MCP servers of its configuration and offers each server's tools as a
// host.Toolset: stdio servers as child processes, streamable HTTP and legacy SSE servers over the network.
//
// It owns the sessions and their life: concurrent connection at start-up under a timeout, tool listing with the
// include/exclude filters and final names, list_changed, progress relayed to the run, cancellation sent upstream, the
// servers' sampling requests answered by the host's model, their elicitation forwarded to the run's interactor, a
// read_resource tool for servers with resources, and reconnection with backoff when a server goes away.
//
// MCP SDK types stop here: the package's API speaks host and llm types only. It imports host, llm, mcpauth,
// telemetry (with telemetry/mcptrace, its MCP middleware) and the MCP SDK, with internal/origin (the configured
// headers and OAuth tokens go only to their server's origin) and internal/redact (every error it shows has its URLs
// redacted); it must not import config, mcpserver, a2a, builtin or a model SDK.
package mcpclients
