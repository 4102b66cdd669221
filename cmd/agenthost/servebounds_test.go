package main

// `agenthost serve --http --a2a` bounded: a body never finished is cut, the MCP sessions and the unfinished A2A tasks
// share max_sessions, and what one subject holds is capped, under [serve.oauth] and with auth_tokens_env.

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

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testservers/jwtissuer"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
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
max_sessions_per_subject = 2
max_tasks_per_subject = 1

[serve.oauth]
issuer = %q
audience = %q
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
			answer, err := io.ReadAll(conn)
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("%s: the connection of a body never finished is still open after %v", endpoint, cutWithin)
			}
			// The caller is told, where it is still there to read: MCP (the SDK) answers 400, A2A 408.
			if status, _, _ := strings.Cut(string(answer), "\r\n"); status != "HTTP/1.1 400 Bad Request" && status != "HTTP/1.1 408 Request Timeout" {
				t.Errorf("%s: a body never finished was answered %q, want 400 or 408", endpoint, status)
			}
		}
	})

	c := boundsClient{t: t, llm: llm, mcpURL: audience, a2aURL: "http://" + a2aAddr + "/"}
	r, b := c.open(alice)
	c.accepted("alice's first session", r, b)
	aliceSession := r.Header.Get("Mcp-Session-Id")
	r, b = c.open(alice)
	c.accepted("alice's second session", r, b)
	r, b = c.open(alice)
	c.refused("alice's third session", r, b, http.StatusTooManyRequests, "limit of 2 open sessions")
	r, b = c.open(bob)
	c.accepted("bob's session", r, b)
	r, b = c.task(alice)
	c.accepted("alice's task", r, b)
	r, b = c.task(alice)
	c.refused("alice's second task", r, b, http.StatusTooManyRequests, "limit of 1 open task")
	// Four places taken, on both listeners together.
	r, b = c.open(carol)
	c.refused("carol's session", r, b, http.StatusServiceUnavailable, "limit of 4")
	r, b = c.task(carol)
	c.refused("carol's task", r, b, http.StatusServiceUnavailable, "limit of 4")

	req, _ := http.NewRequestWithContext(testwait.Context(t, processLimit), http.MethodDelete, audience, nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Mcp-Session-Id", aliceSession)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE alice's session: %v %v", resp, err)
	}
	resp.Body.Close()
	testwait.Until(t, processLimit, "carol gets the place alice's closed session gave back", func() bool {
		r, _ := c.open(carol)
		return r.StatusCode == http.StatusOK
	})
}

// TestServeBoundsCallerTokens: with auth_tokens_env, each token's caller has its own caps, so that one token holder
// cannot take the places all share: past its cap it gets 429, while another token still gets in.
func TestServeBoundsCallerTokens(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	mcpAddr, a2aAddr := freeAddr(t), freeAddr(t)
	config := a2aConfig(t, t.TempDir(), "bounded", llm.URL, `
[serve]
auth_tokens_env = ["ALICE_TOKEN", "BOB_TOKEN"]
max_sessions = 10
max_sessions_per_subject = 1
max_tasks_per_subject = 1
`)
	const alice, bob = "alice-s3cret-token", "bob-s3cret-token"
	serveChild(t, []string{"TEST_KEY=k", "ALICE_TOKEN=" + alice, "BOB_TOKEN=" + bob},
		regexp.MustCompile(`(`+a2aServing.String()+`)`), "serve", "--config", config, "--http", mcpAddr, "--a2a", a2aAddr)
	c := boundsClient{t: t, llm: llm, mcpURL: "http://" + mcpAddr + "/mcp", a2aURL: "http://" + a2aAddr + "/"}

	r, b := c.open(alice)
	c.accepted("alice's session", r, b)
	r, b = c.open(alice)
	c.refused("alice's second session", r, b, http.StatusTooManyRequests, "limit of 1 open session")
	r, b = c.open(bob)
	c.accepted("bob's session", r, b)
	r, b = c.task(alice)
	c.accepted("alice's task", r, b)
	r, b = c.task(alice)
	c.refused("alice's second task", r, b, http.StatusTooManyRequests, "limit of 1 open task")
	r, b = c.task(bob)
	c.accepted("bob's task", r, b)
}

// boundsClient opens MCP sessions and A2A tasks on a running `agenthost serve --http --a2a`.
type boundsClient struct {
	t              *testing.T
	llm            *fakellm.Server
	mcpURL, a2aURL string
}

// open initializes an MCP session with tok.
func (c boundsClient) open(tok string) (*http.Response, string) {
	c.t.Helper()
	return authRequest(c.t, c.mcpURL, tok, initializeBody, nil)
}

// task starts an A2A task with tok whose model turn never ends, so that the task stays unfinished.
func (c boundsClient) task(tok string) (*http.Response, string) {
	c.t.Helper()
	c.llm.Enqueue(fakellm.Turn{HangAfter: fakellm.Immediately})
	return authRequest(c.t, c.a2aURL, tok, `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":`+
		`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"take your time"}]},"configuration":{"returnImmediately":true}}}`,
		map[string]string{"A2A-Version": "1.0"})
}

// refused fails the test unless resp is a refusal with status, Retry-After and a JSON-RPC error that says want.
func (c boundsClient) refused(what string, resp *http.Response, body string, status int, want string) {
	c.t.Helper()
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != status || resp.Header.Get("Retry-After") == "" || json.Unmarshal([]byte(body), &msg) != nil ||
		msg.Error.Code != -32000 || !strings.Contains(msg.Error.Message, want) {
		c.t.Fatalf("%s: HTTP %d, Retry-After %q, %s; want %d with Retry-After and a JSON-RPC error saying %q",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), body, status, want)
	}
}

// accepted fails the test unless resp is a success.
func (c boundsClient) accepted(what string, resp *http.Response, body string) {
	c.t.Helper()
	if resp.StatusCode != http.StatusOK || strings.Contains(body, `"error"`) {
		c.t.Fatalf("%s: HTTP %d %s", what, resp.StatusCode, body)
	}
}
