package mcpserver

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// origins is an Observer that records the origin of each run it sees start.
type origins struct {
	mu   sync.Mutex
	seen []string
}

func (o *origins) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	o.mu.Lock()
	o.seen = append(o.seen, run.Origin)
	o.mu.Unlock()
	return ctx, func(*host.Answer, error) {}
}

func (o *origins) StartModelCall(ctx context.Context, _ *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

func (o *origins) StartToolCall(ctx context.Context, _ *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return ctx, func(*host.Result, error) {}
}

// The runs of the agent tool come from "mcp".
func TestAgentRunOrigin(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	obs := &origins{}
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
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.seen, []string{"mcp"}) {
		t.Errorf("origins = %q; want mcp", obs.seen)
	}
}
