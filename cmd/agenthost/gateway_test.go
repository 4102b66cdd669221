package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/internal/fakellm"
	"github.com/agenthost/agenthost/internal/peers"
)

// TestGatewayEverythingPrompts serves the gateway with the reference server-everything behind it: its prompts reach
// the official TypeScript SDK's client under the server's prefix, with their arguments, and are got from it.
func TestGatewayEverythingPrompts(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	config := serveConfig(t, dir, "gw", llm, fmt.Sprintf(`
[mcp.servers.everything]
command = %q
args = [%q, "stdio"]
prefix = "ev"

[serve]
expose_tools = true
`, peers.Node(t), peers.Bin(t, "mcp-server-everything")))
	url := startServeHTTP(t, config, "TEST_KEY=k")
	out := tsClient(t, true, "--url", url, "--action", "prompts", "--get-prompt", "ev_args-prompt",
		"--prompt-arg", "city=Lyon", "--prompt-arg", "state=Rhône")
	var names []string
	for _, p := range out.Prompts {
		names = append(names, p.Name)
		if p.Name == "ev_args-prompt" && (len(p.Arguments) != 2 || p.Arguments[0].Name != "city" || !p.Arguments[0].Required) {
			t.Errorf("ev_args-prompt's arguments %+v", p.Arguments)
		}
	}
	for _, want := range []string{"ev_simple-prompt", "ev_args-prompt", "ev_resource-prompt"} {
		if !slices.Contains(names, want) {
			t.Errorf("prompts %v lack %s", names, want)
		}
	}
	if p := out.Prompt; p == nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "What's weather in Lyon, Rhône?" {
		t.Errorf("ev_args-prompt got %+v", p)
	}
	// Without the gateway's prompts, the same server offers none.
	config = serveConfig(t, dir, "gw2", llm, fmt.Sprintf(`
[mcp.servers.everything]
command = %q
args = [%q, "stdio"]
prefix = "ev"

[serve]
expose_tools = true
expose_prompts = false
`, peers.Node(t), peers.Bin(t, "mcp-server-everything")))
	url = startServeHTTP(t, config, "TEST_KEY=k")
	if out := tsClient(t, true, "--url", url, "--action", "prompts"); len(out.Prompts) != 0 {
		t.Errorf("prompts with expose_prompts = false: %+v, want none", out.Prompts)
	}
}
