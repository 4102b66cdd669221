package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// askingTool asks whoever called the agent for input, as an upstream MCP server's elicitation does through
// mcpclients.
type askingTool struct{}

func (askingTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (askingTool) Call(ctx context.Context, _ json.RawMessage, call *host.Call) (*host.Result, error) {
	ia := call.Interactor()
	if ia == nil {
		return &host.Result{Text: "nobody to ask", IsError: true}, nil
	}
	res, err := ia.Elicit(ctx, &host.ElicitRequest{Message: "Your name?", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`), Source: "mcp:people"})
	if err != nil {
		return nil, err
	}
	if res.Action != host.ElicitAccept {
		return &host.Result{Text: "declined"}, nil
	}
	return &host.Result{Text: "hello " + res.Content["name"].(string)}, nil
}

func TestElicitationForwardedToTheCaller(t *testing.T) {
	forEachProtocol(t, testElicitationForwardedToTheCaller)
}

func testElicitationForwardedToTheCaller(t *testing.T, version string) {
	orch := host.New(testmodel.New(), host.NewToolManager([]host.Toolset{toolset{askingTool{}}}, nil), nil)
	s, err := New(t.Context(), orch, &Options{Name: "geo"})
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	cs := connectAt(t, s, version, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = req.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	res, text := agentText(t, cs, map[string]any{"prompt": "greet me"})
	if res.IsError || !strings.Contains(text, "greet: hello Ada") {
		t.Errorf("answer %q", text)
	}
	if asked != "Your name? (asked by mcp:people)" {
		t.Errorf("the caller was asked %q", asked)
	}
}
