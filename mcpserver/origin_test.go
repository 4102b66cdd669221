package mcpserver

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/runstarts"
	"github.com/agenthost/agenthost/llm/openai"
)

// The runs of the agent tool come from "mcp".
func TestAgentRunOrigin(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	obs := &runstarts.Observer{}
	orch := host.New(model, host.NewToolManager(nil, nil), &host.Options{Observer: obs})
	server, err := New(t.Context(), orch, &Options{Name: "helper bot"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectAt(t, server, classicProtocol, nil)
	srv.Enqueue(fakellm.Turn{Text: "hello"})
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_helper_bot", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	if !slices.Equal(obs.Origins(), []string{"mcp"}) {
		t.Errorf("origins = %q; want mcp", obs.Origins())
	}
}
