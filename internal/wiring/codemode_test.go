package wiring

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// [code_mode] enabled offers run_code, whose program runs in the sandbox and calls the agent's tools through the
// loop: the product as configured, the real engine, and a scripted model over HTTP.
func TestCodeModeRuns(t *testing.T) {
	s := fakellm.New()
	t.Cleanup(s.Close)
	cfg, err := config.Parse("agent.toml", []byte(`[model]
provider = "openai"
model = "scripted"
base_url = "`+s.URL+`"
api_key_env = "MODEL_KEY"

[builtin]
tools = ["calculate", "current_time"]

[code_mode]
enabled = true
tools = ["calculate"]
max_tool_calls = 5
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if m := CodeMode(cfg); m.Runner == nil || !slices.Equal(m.Tools, []string{"calculate"}) {
		t.Fatalf("CodeMode = %+v", m)
	}
	app, err := Build(t.Context(), cfg, &Options{Getenv: func(k string) string { return map[string]string{"MODEL_KEY": "sk"}[k] }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	code := `const [a, b] = await Promise.all([tools.calculate({expression: "6*7"}), tools.calculate({expression: "2+3"})]);
console.log("parts", a.result, b.result);
return {sum: Number(a.result) + Number(b.result)};`
	args, _ := json.Marshal(map[string]string{"code": code})
	s.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: host.CodeToolName, Arguments: string(args)}}},
		fakellm.Turn{Text: "47."},
	)
	ans, err := app.Orchestrator().Ask(t.Context(), &host.Request{Prompt: "What is 6*7 + 2+3?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if got := reqs[0].ToolNames(); !slices.Contains(got, host.CodeToolName) {
		t.Fatalf("first request offers %v, want run_code", got)
	}
	var desc string
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == host.CodeToolName {
			desc = tl.Function.Description
		}
	}
	if !strings.Contains(desc, "calculate(args:") || strings.Contains(desc, "current_time(") {
		t.Errorf("run_code's description declares the wrong tools:\n%s", desc)
	}
	var result string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "c1" {
			result = m.Content
		}
	}
	if !strings.Contains(result, `{"sum":47}`) || !strings.Contains(result, "parts 42 5") {
		t.Errorf("run_code's result = %q, want the returned sum and the log", result)
	}
	var nested []string
	for _, c := range ans.ToolCalls {
		if c.Parent == "c1" {
			nested = append(nested, c.Name)
		}
	}
	if !slices.Equal(nested, []string{"calculate", "calculate"}) || ans.Text != "47." {
		t.Errorf("nested calls %v, answer %q", nested, ans.Text)
	}
}
