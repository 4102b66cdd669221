// Package mcpauth authorizes agenthost to the MCP servers that require OAuth, on top of the MCP SDK's auth
// package: it keeps the grants (tokens, refresh tokens, dynamically registered clients) in a Store and refreshes
// them before they expire, runs the authorization-code login (a loopback redirect listener, a browser when there is
// one, a pasted redirect otherwise), and adds the same to transports that the SDK gives no OAuth handler
// (RoundTripper).
//
// There are two handlers. A login handler (NewLoginHandler) runs the whole flow when a server asks for
// authorization: `agenthost mcp login` and the conformance client use it. A running agent uses Handler, which sends
// the stored grant's token and, when the server still asks for authorization, fails with ErrNeedsLogin instead of
// prompting: a server never blocks start-up on a login.
package mcpauth
