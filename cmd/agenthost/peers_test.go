package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// TestA2APeers runs check, tools and run with a configuration naming an A2A peer on the JS SDK and one that cannot
// be reached.
func TestA2APeers(t *testing.T) {
	url := peers.A2AAgent(t, "task-agent")
	dir := t.TempDir()
	writeFile(t, dir, "script.jsonl", `{"tool_calls": [{"name": "tasker", "arguments": {"message": "hello world"}}]}
{"text": "The agent says hello [source 1]."}
`)
	writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[model]
provider = "scripted"
script = "script.jsonl"

[a2a.peers.tasker]
url = %q

[a2a.peers.gone]
url = "http://127.0.0.1:1"
`, url))

	r := agenthost(t, dir, "", nil, "check")
	if r.code != 1 || !strings.Contains(r.stderr, "A2A peers not reachable: gone") {
		t.Errorf("check: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"PEER    PROTOCOL  URL", "tasker  1.0       " + url + "/", "ready", "gone    -         -", "retrying"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}

	r = agenthost(t, dir, "", nil, "tools")
	if r.code != 0 || !strings.Contains(r.stdout, "tasker") || !strings.Contains(r.stdout, "a2a:tasker") {
		t.Errorf("tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "a2a:gone") {
		t.Errorf("tools lists the peer that is down:\n%s", r.stdout)
	}

	r = agenthost(t, dir, "", nil, "run", "--json", "ask the agent")
	var ans host.Answer
	if err := json.Unmarshal([]byte(r.stdout), &ans); r.code != 0 || err != nil {
		t.Fatalf("run: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK || ans.ToolCalls[0].Source != "a2a:tasker" {
		t.Errorf("tool calls %+v", ans.ToolCalls)
	}
	if len(ans.References) != 1 || ans.References[0].URI != "https://example.com/docs/hello" || ans.References[0].Title != "Doc about hello" {
		t.Errorf("references %+v (answer %q)", ans.References, ans.Text)
	}

	// A required peer that cannot be reached stops start-up.
	writeFile(t, dir, "agent.toml", "[a2a.peers.gone]\nurl = \"http://127.0.0.1:1\"\nrequired = true\n")
	r = agenthost(t, dir, "", nil, "run", "--model", "test", "x")
	if r.code == 0 || !strings.Contains(r.stderr, `required peer "gone"`) {
		t.Errorf("required peer: exit %d, stderr %q", r.code, r.stderr)
	}
}
