package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// namedTools is a Toolset of tools that answer with their name.
type namedTools []string

func (namedTools) Name() string { return "test" }
func (n namedTools) Tools(context.Context) ([]host.Tool, error) {
	out := make([]host.Tool, len(n))
	for i, name := range n {
		out[i] = namedTool(name)
	}
	return out, nil
}

type namedTool string

func (t namedTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: string(t), Description: "the " + string(t) + " tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (t namedTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	return &host.Result{Text: string(t)}, nil
}

// TestLoadedToolsOutliveTheProcess: a conversation continued by another orchestrator on the same database offers,
// from its first request, the tools a search loaded in it.
func TestLoadedToolsOutliveTheProcess(t *testing.T) {
	backends(t, Options{}, func(t *testing.T, db *DB) {
		srv := fakellm.New()
		t.Cleanup(srv.Close)
		newOrch := func() *host.Orchestrator {
			model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model"})
			if err != nil {
				t.Fatal(err)
			}
			tools := host.NewToolManager([]host.Toolset{namedTools{"alpha", "beta", "gamma"}}, nil)
			return host.New(model, tools, &host.Options{Conversations: db, ToolSearch: host.ToolSearchOptions{Mode: host.ToolSearchAlways}})
		}
		srv.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "s", Name: host.SearchToolName, Arguments: `{"names":["gamma","beta"]}`}}},
			fakellm.Turn{Text: "loaded"},
			fakellm.Turn{Text: "again"},
		)
		ans, err := newOrch().Ask(t.Context(), &host.Request{Prompt: "load"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newOrch().Ask(t.Context(), &host.Request{Prompt: "more", ConversationID: ans.ConversationID}, nil); err != nil {
			t.Fatal(err)
		}
		want := []string{host.SearchToolName, "gamma", "beta"}
		if got := srv.LastRequest().ToolNames(); !slices.Equal(got, want) {
			t.Errorf("the continued conversation offers %v, want %v", got, want)
		}
		if conv, err := db.Peek(t.Context(), ans.ConversationID); err != nil || !slices.Equal(conv.Tools, []string{"gamma", "beta"}) {
			t.Errorf("the conversation's tools = %q, %v", conv.Tools, err)
		}
	})
}
