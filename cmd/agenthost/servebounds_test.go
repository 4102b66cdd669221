package main

// `agenthost serve --http --a2a` bounded: a body never finished is cut, the MCP sessions and the unfinished A2A tasks
// share max_sessions, and [serve.oauth] caps what one subject holds.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/fakellm"
	"github.com/agenthost/agenthost/internal/testservers/jwtissuer"
	"github.com/agenthost/agenthost/internal/testwait"
)

func TestServeBounds(t *testing.T) {
	is := jwtissuer.New()
	t.Cleanup(is.Close)
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	mcpAddr, a2aAddr := freeAddr(t), freeAddr(t)
	audience := "http://" + mcpAddr + "/mcp"
	config := a2aConfig(t, t.TempDir(), "bounded", llm.URL, fmt.Sprintf(`
[serve]
read_body_timeout = "200ms"
max_sessions = 4

[serve.oauth]
issuer = %q
audience = %q
max_sessions_per_subject = 2
max_tasks_per_subject = 1
`, is.Issuer, audience))
	serveChild(t, []string{"TEST_KEY=k"}, regexp.MustCompile(`(`+a2aServing.String()+`)`), "serve", "--config", config,
		"--http", mcpAddr, "--a2a", a2aAddr)
	token := func(sub string) string { return is.Sign(is.Claims(sub, audience, nil, time.Hour)) }
	alice, bob, carol := token("alice"), token("bob"), token("carol")

	t.Run("half-sent body", func(t *testing.T) {
		// Well under the default read_body_timeout (30s), well over the configured one: the connection is cut by
		// the configured timeout, or not in time.
		const cutWithin = 10 * time.Second
		for _, endpoint := range []string{mcpAddr + "/mcp", a2aAddr + "/"} {
			addr, path, _ := strings.Cut(endpoint, "/")
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := fmt.Fprintf(conn, "POST /%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", path, addr, alice); err != nil {
				t.Fatal(err)
			}
			if err := conn.SetReadDeadline(time.Now().Add(cutWithin)); err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(conn)
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("%s: the connection of a body never finished is still open after %v", endpoint, cutWithin)
			}
		}
	})

	open := func(tok string) (*http.Response, string) {
		t.Helper()
		return authRequest(t, audience, tok, initializeBody, nil)
	}
	task := func(tok string) (*http.Response, string) {
		t.Helper()
		llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
		return authRequest(t, "http://"+a2aAddr+"/", tok, `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":`+
			`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"take your time"}]},"configuration":{"returnImmediately":true}}}`,
			map[string]string{"A2A-Version": "1.0"})
	}
	refused := func(what string, resp *http.Response, body string, status int, want string) {
		t.Helper()
		var msg struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != status || resp.Header.Get("Retry-After") == "" || json.Unmarshal([]byte(body), &msg) != nil ||
			msg.Error.Code != -32000 || !strings.Contains(msg.Error.Message, want) {
			t.Fatalf("%s: HTTP %d, Retry-After %q, %s; want %d with Retry-After and a JSON-RPC error saying %q",
				what, resp.StatusCode, resp.Header.Get("Retry-After"), body, status, want)
		}
	}
	accepted := func(what string, resp *http.Response, body string) {
		t.Helper()
		if resp.StatusCode != http.StatusOK || strings.Contains(body, `"error"`) {
			t.Fatalf("%s: HTTP %d %s", what, resp.StatusCode, body)
		}
	}

	r, b := open(alice)
	accepted("alice's first session", r, b)
	aliceSession := r.Header.Get("Mcp-Session-Id")
	r, b = open(alice)
	accepted("alice's second session", r, b)
	r, b = open(alice)
	refused("alice's third session", r, b, http.StatusTooManyRequests, "limit of 2 open sessions")
	r, b = open(bob)
	accepted("bob's session", r, b)
	r, b = task(alice)
	accepted("alice's task", r, b)
	r, b = task(alice)
	refused("alice's second task", r, b, http.StatusTooManyRequests, "limit of 1 open task")
	// Four places taken, on both listeners together.
	r, b = open(carol)
	refused("carol's session", r, b, http.StatusServiceUnavailable, "limit of 4")
	r, b = task(carol)
	refused("carol's task", r, b, http.StatusServiceUnavailable, "limit of 4")

	req, _ := http.NewRequestWithContext(testwait.Context(t, processLimit), http.MethodDelete, audience, nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Mcp-Session-Id", aliceSession)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE alice's session: %v %v", resp, err)
	}
	resp.Body.Close()
	testwait.Until(t, processLimit, "carol gets the place alice's closed session gave back", func() bool {
		r, _ := open(carol)
		return r.StatusCode == http.StatusOK
	})
}
