package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// TestServeGatewaySearchTypeScript runs `agenthost serve` in gateway mode's search form over twelve catalog servers
// of 25 tools each (300 tools), and the official TypeScript SDK as its client over stdio: tools/list offers a
// handful, search_tools finds the tool a query describes with its full schema, and call_tool runs that tool.
func TestServeGatewaySearchTypeScript(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", catalog, "github.com/agenthost/agenthost/internal/testkit/testservers/catalog").CombinedOutput(); err != nil {
		t.Fatalf("building catalog: %v\n%s", err, out)
	}
	themes := []string{"github", "jira", "slack", "calendar", "drive", "crm", "billing", "weather", "maps", "email", "k8s", "music"}
	var servers strings.Builder
	for _, th := range themes {
		fmt.Fprintf(&servers, "\n[mcp.servers.%s]\ncommand = %q\nargs = [\"-theme\", %q, \"-tools\", \"25\"]\n", th, catalog, th)
	}
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := serveConfig(t, dir, "hub", llm, `
# A forced tool is pinned unless its policy says otherwise: offered by name.
[tools.weather_get_forecast]
forced = true

[serve]
expose_tools = true
gateway_tools = "search"
`+servers.String())

	peers.Dir(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "clients", "gateway-search.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{script}, stdioArgs(config, "TEST_KEY=sk-desktop")...)
	args = append(args, "--query", "merge a pull request", "--arguments", `{"repo":"acme/web","pull_request_id":"42","method":"squash"}`)
	cmd := exec.CommandContext(t.Context(), peers.Node(t), args...)
	cmd.Dir = dir
	cmd.Env = testEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		Tools  []string `json:"tools"`
		Search struct {
			StructuredContent struct {
				Tools []struct {
					Name        string          `json:"name"`
					Source      string          `json:"source"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			} `json:"structuredContent"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"search"`
		Call struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"call"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || runErr != nil || out.Error != "" {
		t.Fatalf("gateway-search: %v, %v, %s\nstdout: %s\nstderr: %s", err, runErr, out.Error, stdout.String(), stderr.String())
	}

	slices.Sort(out.Tools)
	if want := []string{"ask_hub", "call_tool", "search_tools", "weather_get_forecast"}; !slices.Equal(out.Tools, want) {
		t.Errorf("tools/list offers %v, want %v", out.Tools, want)
	}
	hits := out.Search.StructuredContent.Tools
	if len(hits) == 0 || hits[0].Name != "github_merge_pull_request" || hits[0].Source != "mcp:github" {
		t.Fatalf("search_tools found %+v", hits)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(hits[0].InputSchema, &schema); err != nil || schema.Properties["method"] == nil || !slices.Equal(schema.Required, []string{"repo", "pull_request_id"}) {
		t.Errorf("the schema found: %s (%v)", hits[0].InputSchema, err)
	}
	if len(out.Search.Content) == 0 || !strings.Contains(out.Search.Content[0].Text, "github_merge_pull_request (from mcp:github)") {
		t.Errorf("search_tools text %+v", out.Search.Content)
	}
	want := `github.merge_pull_request called with {"method":"squash","pull_request_id":"42","repo":"acme/web"}`
	if out.Call.IsError || len(out.Call.Content) == 0 || out.Call.Content[0].Text != want {
		t.Errorf("call_tool returned %+v, want %q", out.Call, want)
	}
	// What the gateway stood in front of: every server connected, 300 tools of theirs.
	r := agenthost(t, dir, "", []string{"TEST_KEY=sk-desktop"}, "tools", "--config", config)
	if r.code != 0 {
		t.Fatalf("agenthost tools over the same configuration: exit %d\n%s", r.code, r.stderr)
	}
	for _, th := range themes {
		if n := len(regexp.MustCompile(`(?m)^\S+ +mcp:`+th+` `).FindAllString(r.stdout, -1)); n != 25 {
			t.Errorf("agenthost tools over the same configuration lists %d tools of mcp:%s, want 25", n, th)
		}
	}
}
