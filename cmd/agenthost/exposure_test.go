package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestA2ACardToolNames: the agent card, served to anyone without a token, does not name the agent's tools unless
// [serve] card_lists_tools asks for it.
func TestA2ACardToolNames(t *testing.T) {
	for _, list := range []bool{false, true} {
		dir := t.TempDir()
		config := filepath.Join(dir, "agent.toml")
		extra := ""
		if list {
			extra = "card_lists_tools = true\n"
		}
		writeFile(t, dir, "agent.toml", `
[model]
provider = "test"

[builtin]
tools = ["current_time", "calculate"]

[serve]
`+extra)
		srv := startServeA2A(t, nil, "serve", "--config", config, "--a2a", "127.0.0.1:0")
		resp, err := testHTTP.Get(srv.base + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(raw), `"skills"`) {
			t.Fatalf("card: HTTP %d, %v\n%s", resp.StatusCode, err, raw)
		}
		for _, name := range []string{"current_time", "calculate"} {
			if got := strings.Contains(string(raw), name); got != list {
				t.Errorf("card_lists_tools %v: the card names %s: %v\n%s", list, name, got, raw)
			}
		}
	}
}

// TestCheckWarnsOfWebAndWrites: check warns when a tool that reads the web is enabled with MCP tools that may write
// and run without approval, naming them, and not once those ask for approval or are marked read-only.
func TestCheckWarnsOfWebAndWrites(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := func(builtins, policies string) string {
		return fmt.Sprintf(`
[model]
provider = "test"

[builtin]
tools = [%s]

[builtin.files]
roots = [%q]

[mcp.servers.fixture]
command = %q
env = { %s = "1" }
prefix = "fx"
include = ["note", "shout"]
%s`, builtins, dir, self, fixtureEnv, policies)
	}
	const warning = "tools that read the web (fetch_url) are enabled with tools that may write and run without approval (fx_note, fx_shout)"
	const filesWarning = "tools that read the web and run without approval (fetch_url) are enabled with tools that read your files (read_file, list_dir, search_files)"
	const writesApproved = "[tools.\"fx_note\"]\nrequire_approval = true\n[tools.\"fx_shout\"]\nrequire_approval = true\n"
	tests := []struct {
		name, builtins, policies string
		warn, warnFiles          bool
	}{
		{"fetch_url with writes", `"fetch_url"`, "", true, false},
		{"no web", `"current_time", "read_file", "list_dir", "search_files"`, "", false, false},
		{"writes need approval", `"fetch_url"`, writesApproved, false, false},
		{"writes marked read-only", `"fetch_url"`, "[tools.\"fx_note\"]\nread_only = true\n[tools.\"fx_shout\"]\nread_only = true\n", false, false},
		{"fetch_url with file tools", `"fetch_url", "read_file", "list_dir", "search_files"`, writesApproved, false, true},
		{"fetch_url needs approval", `"fetch_url", "read_file", "list_dir", "search_files"`, writesApproved + "[tools.\"fetch_url\"]\nrequire_approval = true\n", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, dir, "agent.toml", config(tt.builtins, tt.policies))
			r := agenthost(t, dir, "", nil, "check")
			if r.code != 0 {
				t.Fatalf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got := strings.Contains(r.stderr, warning); got != tt.warn {
				t.Errorf("warned of writes %v, want %v:\n%s", got, tt.warn, r.stderr)
			}
			if got := strings.Contains(r.stderr, filesWarning); got != tt.warnFiles {
				t.Errorf("warned of file tools %v, want %v:\n%s", got, tt.warnFiles, r.stderr)
			}
		})
	}
}

// TestServeCallerTokens: with [serve] auth_tokens_env, each caller's token is a subject of its own: an A2A task is
// its caller's only, and an MCP session is bound to the token that opened it; a request without one of the tokens
// is refused.
func TestServeCallerTokens(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", `
[agent]
name = "shared"

[model]
provider = "test"

[serve]
auth_tokens_env = ["ALICE_TOKEN", "BOB_TOKEN"]
`)
	const alice, bob = "alice-s3cret-token", "bob-s3cret-token"
	mcpAddr := freeAddr(t)
	srv := startServeA2A(t, []string{"ALICE_TOKEN=" + alice, "BOB_TOKEN=" + bob},
		"serve", "--config", config, "--http", mcpAddr, "--a2a", "127.0.0.1:0")
	rpc := func(token, method, params string) (int, string) {
		resp, body := authRequest(t, srv.base+"/", token, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`,
			map[string]string{"A2A-Version": "1.0"})
		return resp.StatusCode, body
	}

	code, body := rpc(alice, "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"Hi."}]}}`)
	var sent struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &sent); code != http.StatusOK || err != nil || sent.Result.Task.ID == "" {
		t.Fatalf("alice's SendMessage: HTTP %d, %v: %s", code, err, body)
	}
	id := sent.Result.Task.ID
	get := `{"id":"` + id + `"}`
	if _, body := rpc(bob, "GetTask", get); !strings.Contains(body, `"code":-32001`) {
		t.Errorf("bob's GetTask of alice's task: %s", body)
	}
	if _, body := rpc(bob, "ListTasks", `{}`); !strings.Contains(body, `"totalSize":0`) || strings.Contains(body, id) {
		t.Errorf("bob's ListTasks: %s", body)
	}
	if _, body := rpc(alice, "ListTasks", `{}`); !strings.Contains(body, id) {
		t.Errorf("alice's ListTasks: %s", body)
	}
	for _, token := range []string{"", "wrong"} {
		if code, body := rpc(token, "ListTasks", `{}`); code != http.StatusUnauthorized {
			t.Errorf("ListTasks with token %q: HTTP %d: %s", token, code, body)
		}
	}

	mcpURL := "http://" + mcpAddr + "/mcp"
	resp, body := authRequest(t, mcpURL, alice, initializeBody, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("alice's initialize: HTTP %d, session %q: %s", resp.StatusCode, session, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	hdr := map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
	if resp, body := authRequest(t, mcpURL, bob, list, hdr); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's token on alice's MCP session: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, body := authRequest(t, mcpURL, alice, list, hdr); resp.StatusCode != http.StatusOK || !strings.Contains(body, "ask_shared") {
		t.Errorf("alice's token on her session: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp, _ := authRequest(t, mcpURL, "", initializeBody, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize without a token: HTTP %d", resp.StatusCode)
	}

	// The agent tool's conversations are their caller's too.
	as := func(token string, args ...string) clientOutput {
		return tsClient(t, true, append([]string{"--url", mcpURL, "--header", "Authorization: Bearer " + token,
			"--action", "ask", "--tool", "ask_shared"}, args...)...)
	}
	first := as(alice, "--prompt", "Remember plum.")
	conv := first.Calls[0].Result.StructuredContent.ConversationID
	if !strings.Contains(conv, "@") {
		t.Fatalf("alice's conversation id %q does not say whose it is", conv)
	}
	other := as(bob, "--conversation", conv, "--prompt", "What did alice ask you?")
	if res := other.Calls[0].Result; !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "unknown conversation id") {
		t.Errorf("bob continuing alice's conversation: %+v", res)
	}
	again := as(alice, "--conversation", conv, "--prompt", "What did I ask you?")
	if res := again.Calls[0].Result; res.IsError || res.StructuredContent == nil || res.StructuredContent.ConversationID != conv {
		t.Errorf("alice's follow-up: %+v", res)
	}
}
