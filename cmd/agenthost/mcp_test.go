package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/testservers/oauthserver"
)

// tokenPattern matches the access and refresh tokens oauthserver issues.
var tokenPattern = regexp.MustCompile(`(at|rt)-[A-Z2-7]{26}`)

// TestMCPLogin logs in to an MCP server that requires OAuth, with the real binary: before the login the server is
// reported as needing one, with the command to run; `agenthost mcp login` registers a client, follows the
// authorization server's redirect and saves the grant; the next start uses the token, and refreshes it when it is
// about to expire; a second login reuses the registered client; logout forgets it all. No token is ever printed,
// even at debug level.
func TestMCPLogin(t *testing.T) {
	srv := oauthserver.New()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	config := writeFile(t, dir, "agent.toml", fmt.Sprintf(`
[agent]
name = "oauth-test"

[state]
path = "oauth-state.db"

[mcp.servers.remote]
url = %q
`, srv.URL))
	var printed strings.Builder
	run := func(args ...string) result {
		t.Helper()
		r := agenthost(t, dir, "", nil, append(args, "-config", config)...)
		printed.WriteString(r.stdout + r.stderr)
		return r
	}

	r := run("check")
	if !regexp.MustCompile(`remote\s+http\s+needs login`).MatchString(r.stdout) || !strings.Contains(r.stdout+r.stderr, "agenthost mcp login remote") {
		t.Errorf("check before the login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("mcp", "auth")
	if r.code != 0 || !regexp.MustCompile(`remote\s+auto\s+not logged in`).MatchString(r.stdout) {
		t.Errorf("mcp auth before the login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	srv.SetTokenLifetime(2 * time.Second) // refreshed in its last quarter: after 1.5 s
	r = run("mcp", "login", "remote", "-no-browser", "-log-level", "debug")
	if r.code != 0 || !strings.Contains(r.stdout, "Logged in to remote") || !strings.Contains(r.stdout, "refreshed before") {
		t.Fatalf("mcp login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if c := srv.Counts(); c.Registrations != 1 || c.Authorizations != 1 || c.Tokens != 1 {
		t.Errorf("after the login: %+v", c)
	}
	r = run("mcp", "auth")
	if !regexp.MustCompile(`remote\s+auto\s+logged in\s`).MatchString(r.stdout) {
		t.Errorf("mcp auth after the login:\n%s", r.stdout)
	}

	// The next start refreshes the token about to expire, and lists the server's tools with it.
	srv.SetTokenLifetime(time.Hour)
	time.Sleep(1600 * time.Millisecond)
	r = run("tools", "-log-level", "debug")
	if r.code != 0 || !strings.Contains(r.stdout, "remote_whoami") {
		t.Errorf("tools after the login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if c := srv.Counts(); c.Refreshes != 1 {
		t.Errorf("refreshes: %+v, want 1", c)
	}

	// A second login reuses the client registered by the first.
	srv.SetTokenLifetime(time.Hour)
	if r = run("mcp", "login", "remote", "-no-browser"); r.code != 0 {
		t.Fatalf("second login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if c := srv.Counts(); c.Registrations != 1 || c.Authorizations != 2 {
		t.Errorf("after the second login: %+v, want the client registered once", c)
	}
	if r = run("tools"); r.code != 0 || !strings.Contains(r.stdout, "remote_whoami") {
		t.Errorf("tools after the second login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Revoked tokens: the server needs a login again, and says so.
	srv.Revoke()
	r = run("check")
	if !regexp.MustCompile(`remote\s+http\s+needs login`).MatchString(r.stdout) {
		t.Errorf("check with revoked tokens: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = run("mcp", "logout", "remote")
	if r.code != 0 || !strings.Contains(r.stdout, "Logged out of remote") {
		t.Errorf("logout: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run("mcp", "logout", "remote"); !strings.Contains(r.stdout, "remote had no login") {
		t.Errorf("second logout: %s", r.stdout)
	}
	if tok := tokenPattern.FindString(printed.String()); tok != "" {
		t.Errorf("a token was printed: %s", tok)
	}
}
