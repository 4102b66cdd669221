package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// TestGatewayEverything serves the gateway with the reference server-everything behind it: its prompts reach the
// official TypeScript SDK's client under the server's prefix, with their arguments, are got and completed from it,
// and its resources and templates are listed and read.
func TestGatewayEverything(t *testing.T) {
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
	comp := tsClient(t, true, "--url", url, "--action", "prompts", "--get-prompt", "ev_completable-prompt",
		"--prompt-arg", "department=Sales", "--prompt-arg", "name=Bob", "--complete", "department=Ma")
	if comp.Completion == nil || !slices.Equal(comp.Completion.Values, []string{"Marketing"}) {
		t.Errorf("completion of department=Ma: %+v", comp.Completion)
	}
	res := tsClient(t, true, "--url", url, "--action", "resources")
	var docs []string
	for _, r := range res.Resources {
		if strings.HasPrefix(r.URI, "demo://resource/static/document/") {
			docs = append(docs, r.URI)
		}
	}
	if len(docs) == 0 || len(res.ResourceTemplates) < 2 {
		t.Fatalf("resources %+v, templates %+v: want server-everything's documents and templates", res.Resources, res.ResourceTemplates)
	}
	res = tsClient(t, true, "--url", url, "--action", "resources", "--read", docs[0], "--read", "demo://resource/dynamic/text/7")
	if len(res.Reads) != 2 || len(res.Reads[0].Contents) == 0 || res.Reads[0].Contents[0].URI != docs[0] || res.Reads[0].Contents[0].Text == "" ||
		len(res.Reads[1].Contents) == 0 || !strings.Contains(res.Reads[1].Contents[0].Text, "7") {
		t.Errorf("reads %+v", res.Reads)
	}
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
