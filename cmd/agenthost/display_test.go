package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// subAgentSetup writes agent.toml for an agent with one sub-agent, clock, on a model of its own, and scripts a run
// in which the agent hands clock a task and clock calls current_time; the model answers each run the same way.
func subAgentSetup(t *testing.T) (*fakellm.Server, string) {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	calls := map[string]int{}
	srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		mu.Lock()
		defer mu.Unlock()
		// Each run asks each model twice: first for the tool call, then, with its result, for the answer.
		turn := map[string][]fakellm.Turn{
			"main-model": {
				{ToolCalls: []fakellm.ToolCall{{ID: "p1", Name: "clock", Arguments: `{"task":"What time is it in Tokyo?"}`}}},
				{Text: "The clock says it is evening."},
			},
			"clock-model": {
				{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`}}},
				{Text: "It is evening in Tokyo."},
			},
		}[req.Model]
		if len(turn) == 0 {
			return fakellm.Turn{Status: 500, ErrorMessage: "unscripted call of " + req.Model}
		}
		i := calls[req.Model] % 2
		calls[req.Model]++
		return turn[i]
	})
	dir := t.TempDir()
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[agent]
name = "helper"

[model]
provider = "openai"
model = "main-model"
base_url = %q
api_key_env = "TEST_KEY"
max_retries = 0

[builtin]
tools = ["current_time"]

[agents.clock]
description = "Tells the time anywhere."
model = "clock-model"
tools = ["current_time"]
`, srv.URL))
	return srv, dir
}

// TestSubAgentProgressOverMCP: the progress an MCP caller of the agent tool gets names a sub-agent once.
func TestSubAgentProgressOverMCP(t *testing.T) {
	_, dir := subAgentSetup(t)
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		}})
	cmd := exec.Command(binary, "serve")
	cmd.Dir = dir
	cmd.Env = append(testEnv(), "TEST_KEY=k")
	session, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools %v (%v)", tools, err)
	}
	params := &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{"prompt": "What time is it in Tokyo?"}}
	params.SetProgressToken("p")
	res, err := session.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(progress, "\n")
	if !strings.Contains(all, "clock (agents): calling current_time") || strings.Contains(all, "clock: clock") {
		t.Errorf("progress:\n%s", all)
	}
}

// TestRunJSONArguments: --json shows each tool call with its arguments.
func TestRunJSONArguments(t *testing.T) {
	_, dir := subAgentSetup(t)
	r := agenthost(t, dir, "", []string{"TEST_KEY=k"}, "run", "--json", "What time is it in Tokyo?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var ans struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	var args bytes.Buffer
	if len(ans.ToolCalls) == 1 {
		json.Compact(&args, ans.ToolCalls[0].Arguments)
	}
	if len(ans.ToolCalls) != 1 || ans.ToolCalls[0].Name != "clock" || args.String() != `{"task":"What time is it in Tokyo?"}` {
		t.Errorf("tool calls %+v\n%s", ans.ToolCalls, r.stdout)
	}
}

// TestEvalSummaryOfOneCase: "1 case", not "1 cases".
func TestEvalSummaryOfOneCase(t *testing.T) {
	_, dir := subAgentSetup(t)
	writeFile(t, dir, "one.jsonl", `{"name": "tokyo", "prompt": "What time is it in Tokyo?", "expect": {"contains": ["evening"]}}`+"\n")
	r := agenthost(t, dir, "", []string{"TEST_KEY=k"}, "eval", "one.jsonl")
	if r.code != 0 || !strings.Contains(r.stdout, "\n1 case: 1 passed, 0 failed (") {
		t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
