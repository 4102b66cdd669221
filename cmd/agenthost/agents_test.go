package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// TestSubAgents runs a configuration with a sub-agent on a model of its own through the binary: tools and check show
// it, and a run hands it a task over the OpenAI wire, its tool's progress and usage reaching the agent's answer.
func TestSubAgents(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	var mu sync.Mutex
	script := map[string][]fakellm.Turn{
		"main-model": {
			{ToolCalls: []fakellm.ToolCall{{ID: "p1", Name: "clock", Arguments: `{"task":"What time is it in Tokyo?"}`}}},
			{Text: "The clock says it is evening."},
		},
		"clock-model": {
			{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "current_time", Arguments: `{"timezone":"Asia/Tokyo"}`}}},
			{Text: "It is evening in Tokyo."},
		},
	}
	srv.SetModels("main-model", "clock-model") // check lists them
	srv.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		mu.Lock()
		defer mu.Unlock()
		q := script[req.Model]
		if len(q) == 0 {
			return fakellm.Turn{Status: 500, ErrorMessage: "unscripted call of " + req.Model}
		}
		script[req.Model] = q[1:]
		return q[0]
	})
	dir := t.TempDir()
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
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
instructions = "You tell the time."
model = "clock-model"
tools = ["current_time", "no_such_tool"]
max_iterations = 3
`, srv.URL))
	env := []string{"TEST_KEY=k"}

	r := agenthost(t, dir, "", env, "tools")
	if r.code != 0 || !strings.Contains(r.stdout, "clock         agents   -      Tells the time anywhere.") {
		t.Errorf("tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = agenthost(t, dir, "", env, "check")
	if r.code != 0 || !strings.Contains(r.stdout, "AGENT  MODEL        MAX ITERATIONS  TOOLS\nclock  clock-model  3               current_time, no_such_tool\n") ||
		!strings.Contains(r.stderr, "agents.clock.tools: no_such_tool matches no tool") {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = agenthost(t, dir, "", env, "run", "--json", "What time is it in Tokyo?")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Text != "The clock says it is evening." || ans.Usage.Requests != 4 || len(ans.ToolCalls) != 1 || ans.ToolCalls[0].Source != "agents" {
		t.Errorf("answer %+v", ans)
	}
	var toolMsg string
	for _, req := range srv.Requests() {
		if req.Model != "main-model" {
			continue
		}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				toolMsg = m.ToolOutput()
			}
		}
	}
	if toolMsg != "It is evening in Tokyo." {
		t.Errorf("the agent read %q from the sub-agent", toolMsg)
	}
	var subTools []string
	for _, req := range srv.Requests() {
		if req.Model == "clock-model" {
			subTools = req.ToolNames()
			break
		}
	}
	if strings.Join(subTools, ",") != "current_time" {
		t.Errorf("the sub-agent was offered %v", subTools)
	}

	// A cycle among sub-agents is a configuration error with its line.
	writeFile(t, dir, "cycle.toml", `
[agents.a]
description = "a"
tools = ["b"]

[agents.b]
description = "b"
tools = ["a"]
`)
	r = agenthost(t, dir, "", nil, "check", "--config", "cycle.toml")
	if r.code != 2 || !strings.Contains(r.stderr, "cycle.toml:4: agents.a.tools: sub-agents call each other in a cycle: a -> b -> a") {
		t.Errorf("cycle: exit %d\n%s", r.code, r.stderr)
	}
}
