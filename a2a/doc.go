// Package a2a speaks the Agent2Agent protocol (A2A) over its JSON-RPC binding, version 1.0 with version 0.3 beside
// it, in both directions:
//
//   - Peers: remote A2A agents offered as tools (a host.Toolset per peer). Each peer's agent card is resolved at
//     start-up, its interface chosen (1.0 preferred), and a call sends the model's message, follows the task by
//     stream or by polling, relays its progress, keeps the peer's context per conversation, and cancels the task
//     when the call ends first.
//   - Server: the orchestrator served as an A2A agent, with its card, a bounded in-memory task store, streaming, and
//     approvals asked through the input-required state.
//
// A2A's wire types are unexported and stop here: host sees tools, results and events only. a2a imports host,
// telemetry (OpenTelemetry's API: neither its SDK nor the MCP SDK) and the standard library, with internal/httpedge
// (the HTTP edge it shares with mcpserver), internal/origin (a peer's headers go only to its origin) and
// internal/redact (for the errors it shows); it must not import mcpclients, mcpserver, config, builtin or a model
// SDK.
package a2a
