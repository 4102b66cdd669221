package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// samplingServer serves an agent with one tool, lookup, whose own model is the offline test model: a call that ran
// on the caller's model shows it in what the caller's model was sent.
func samplingServer(t *testing.T, mode Sampling) *Server {
	t.Helper()
	lookup := &tool{spec: host.ToolSpec{Name: "lookup", Description: "Looks things up."}, fn: func(context.Context, json.RawMessage) (*host.Result, error) {
		return &host.Result{Text: "the capital is Paris"}, nil
	}}
	orch := host.New(testmodel.New(), host.NewToolManager([]host.Toolset{toolset{lookup}}, nil), &host.Options{Instructions: "Be brief."})
	s, err := New(t.Context(), orch, &Options{Name: "geo", Sampling: mode})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func connectTo(t *testing.T, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return (&setup{server: s}).connect(t, opts)
}

func agentText(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_geo", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Content[0].(*mcp.TextContent).Text
}

func TestSamplingWithTools(t *testing.T) { forEachProtocol(t, testSamplingWithTools) }

func testSamplingWithTools(t *testing.T, version string) {
	var mu sync.Mutex
	var requests []*mcp.CreateMessageWithToolsParams
	cs := connectAt(t, samplingServer(t, SamplingAlways), version, &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			mu.Lock()
			requests = append(requests, req.Params)
			n := len(requests)
			mu.Unlock()
			if n == 1 {
				return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "ide-model", StopReason: "toolUse",
					Content: []mcp.Content{&mcp.ToolUseContent{ID: "u1", Name: "lookup", Input: map[string]any{"q": "France"}}}}, nil
			}
			return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "ide-model", StopReason: "endTurn", Content: []mcp.Content{&mcp.TextContent{Text: "Paris."}}}, nil
		},
	})
	res, text := agentText(t, cs, map[string]any{"prompt": "Capital of France?"})
	if res.IsError || text != "Paris." {
		t.Fatalf("answer %q (error %v)", text, res.IsError)
	}
	if len(requests) != 2 {
		t.Fatalf("%d sampling requests, want 2", len(requests))
	}
	first, second := requests[0], requests[1]
	if !strings.HasPrefix(first.SystemPrompt, "Be brief.") || len(first.Tools) != 1 || first.Tools[0].Name != "lookup" || first.ToolChoice.Mode != "auto" || first.MaxTokens <= 0 {
		t.Errorf("first request: system %q, tools %v, choice %+v, max tokens %d", first.SystemPrompt, first.Tools, first.ToolChoice, first.MaxTokens)
	}
	// The second carries the tool use and its result.
	if len(second.Messages) != 3 {
		t.Fatalf("second request has %d messages", len(second.Messages))
	}
	use, ok := second.Messages[1].Content[0].(*mcp.ToolUseContent)
	if !ok || use.ID != "u1" || use.Name != "lookup" || use.Input["q"] != "France" {
		t.Errorf("tool use sent back: %+v", second.Messages[1].Content)
	}
	result, ok := second.Messages[2].Content[0].(*mcp.ToolResultContent)
	resultText := ""
	if ok && len(result.Content) > 0 {
		if tc, isText := result.Content[0].(*mcp.TextContent); isText {
			resultText = tc.Text
		}
	}
	inner, wrapped := llm.UnwrapToolOutput(resultText)
	if !ok || result.ToolUseID != "u1" || !wrapped || !strings.HasPrefix(resultText, `<tool_output id="`) || !strings.Contains(resultText, ` name="lookup">`) ||
		inner != "the capital is Paris" || second.Messages[2].Role != "user" {
		t.Errorf("tool result sent back: %+v", second.Messages[2])
	}
}

func TestSamplingWithoutTools(t *testing.T) { forEachProtocol(t, testSamplingWithoutTools) }

func testSamplingWithoutTools(t *testing.T, version string) {
	var asked []string
	cs := connectAt(t, samplingServer(t, SamplingAlways), version, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked = append(asked, req.Params.Messages[len(req.Params.Messages)-1].Content.(*mcp.TextContent).Text)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "ide-model", Content: &mcp.TextContent{Text: "Hello!"}}, nil
		},
	})
	// The agent has a tool, and the client cannot use tools through sampling: the error says why and what to do.
	res, text := agentText(t, cs, map[string]any{"prompt": "hi"})
	if !res.IsError || !strings.Contains(text, "does not support tools in sampling") || !strings.Contains(text, "disabled_tools") {
		t.Errorf("with tools: %q (error %v)", text, res.IsError)
	}
	// Without tools, the run works on the caller's model.
	res, text = agentText(t, cs, map[string]any{"prompt": "hi", "disabled_tools": []string{"lookup"}})
	if res.IsError || text != "Hello!" || len(asked) != 1 || asked[0] != "hi" {
		t.Errorf("tool-free run: %q (error %v), asked %q", text, res.IsError, asked)
	}
}

func TestSamplingModes(t *testing.T) {
	// Always, with a client that does not support sampling: a clear error.
	cs := connectTo(t, samplingServer(t, SamplingAlways), nil)
	res, text := agentText(t, cs, map[string]any{"prompt": "hi"})
	if !res.IsError || !strings.Contains(text, "this client does not support sampling") {
		t.Errorf("always, no sampling: %q", text)
	}
	// Auto, with such a client: the agent's own model (the offline test model) answers.
	cs = connectTo(t, samplingServer(t, SamplingAuto), nil)
	res, text = agentText(t, cs, map[string]any{"prompt": "hi"})
	if res.IsError || !strings.Contains(text, "lookup: the capital is Paris") {
		t.Errorf("auto, no sampling: %q", text)
	}
	// Auto, with a client that supports sampling: the caller's model answers.
	cs = connectTo(t, samplingServer(t, SamplingAuto), &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "ide-model", Content: []mcp.Content{&mcp.TextContent{Text: "from the IDE"}}}, nil
		},
	})
	if res, text = agentText(t, cs, map[string]any{"prompt": "hi"}); res.IsError || text != "from the IDE" {
		t.Errorf("auto, sampling: %q", text)
	}
}
