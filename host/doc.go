// Package host is the core of agenthost: tools and their sources (Tool, Toolset), the admin's and the caller's tool
// policy (ToolManager), the tool-calling loop (Orchestrator), conversation history, references and citations, debug
// info, usage limits and the event stream every front-end consumes.
//
// host imports package llm, the standard library and, for tool search's index, the Snowball stemmer only. It must
// not import the edges (mcpclients, mcpserver, a2a, builtin, config), any MCP or A2A SDK, or openai-go: edges
// convert their types into these at their border.
package host
