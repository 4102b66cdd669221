package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// mcpRequest sends one MCP request over HTTP as token, in session id ("" for none), and returns the response with
// its body read.
func mcpRequest(t *testing.T, method, url, token, id, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// open initializes a session as token and returns its id, failing the test when it is refused.
func open(t *testing.T, url, token string) string {
	t.Helper()
	resp, body := mcpRequest(t, http.MethodPost, url, token, "", initializeBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q, session %q; want 200 with a session", resp.StatusCode, body, id)
	}
	return id
}

// checkRefused checks that a new session is refused with status, Retry-After and a JSON-RPC error saying want, for
// the request's id.
func checkRefused(t *testing.T, url, token string, status int, want string) {
	t.Helper()
	checkRefusedBody(t, url, token, initializeBody, "1", status, want)
}

// checkRefusedBody checks that the request body, which would open a new session, is refused with status,
// Retry-After and a JSON-RPC error saying want, for id (JSON).
func checkRefusedBody(t *testing.T, url, token, reqBody, id string, status int, want string) {
	t.Helper()
	resp, body := mcpRequest(t, http.MethodPost, url, token, "", reqBody)
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("refused initialize: %d %q is not JSON: %v", resp.StatusCode, body, err)
	}
	if resp.StatusCode != status || resp.Header.Get("Retry-After") != "10" || msg.JSONRPC != "2.0" || msg.Error.Code != httpedge.CodeServerBusy ||
		!strings.Contains(msg.Error.Message, want) || resp.Header.Get("Mcp-Session-Id") != "" || string(msg.ID) != id {
		t.Fatalf("refused initialize: %d, Retry-After %q, session %q, %q; want %d, Retry-After 10 and a JSON-RPC error for id %s saying %q",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Mcp-Session-Id"), body, status, id, want)
	}
}

// TestHTTPMaxSessions: past the cap, a new session gets 503 with Retry-After and a JSON-RPC error; a session closed
// by its client gives its place back, and requests that create no session take none.
func TestHTTPMaxSessions(t *testing.T) {
	st := newSetup(t, nil)
	sessions := httpedge.NewSessions(3)
	ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Token: "t", Sessions: sessions}))
	defer ts.Close()
	url := ts.URL + "/mcp"
	// A request without a session that is not an initialize creates none, and keeps no place.
	for range 5 {
		resp, body := mcpRequest(t, http.MethodPost, url, "t", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if resp.StatusCode == http.StatusServiceUnavailable {
			t.Fatalf("tools/list without a session: %d %q", resp.StatusCode, body)
		}
	}
	testwait.Until(t, 10*time.Second, "the requests without a session gave their places back", func() bool { return sessions.Len() == 0 })
	ids := []string{open(t, url, "t"), open(t, url, "t"), open(t, url, "t")}
	checkRefused(t, url, "t", http.StatusServiceUnavailable, "limit of 3 open sessions")
	// The sessions that were let in still work.
	if resp, body := mcpRequest(t, http.MethodPost, url, "t", ids[0], `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping in an open session: %d %q", resp.StatusCode, body)
	}
	if resp, body := mcpRequest(t, http.MethodDelete, url, "t", ids[1], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %q", resp.StatusCode, body)
	}
	testwait.Until(t, 10*time.Second, "the closed session gave its place back", func() bool { return sessions.Len() == 2 })
	open(t, url, "t")
	checkRefused(t, url, "t", http.StatusServiceUnavailable, "limit of 3")
	// The refusal answers the request's id, whatever its type; null only when the body does not say it.
	checkRefusedBody(t, url, "t", strings.Replace(initializeBody, `"id":1`, `"id":"init-7"`, 1), `"init-7"`, http.StatusServiceUnavailable, "limit of 3")
	checkRefusedBody(t, url, "t", `{"jsonrpc":"2.0","id":`, "null", http.StatusServiceUnavailable, "limit of 3")
	checkRefusedBody(t, url, "t", `{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}`, "null", http.StatusServiceUnavailable, "limit of 3")
}

// TestHTTPSessionIdleTimeout: a session that receives no request for the idle timeout is closed and gives its place
// back; a later request in it gets 404, as the MCP specification says of a session the server ended.
func TestHTTPSessionIdleTimeout(t *testing.T) {
	st := newSetup(t, nil)
	sessions := httpedge.NewSessions(1)
	ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Token: "t", Sessions: sessions, SessionIdleTimeout: 200 * time.Millisecond}))
	defer ts.Close()
	url := ts.URL + "/mcp"
	id := open(t, url, "t")
	testwait.Until(t, 30*time.Second, "the idle session was closed", func() bool { return sessions.Len() == 0 })
	if resp, body := mcpRequest(t, http.MethodPost, url, "t", id, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("ping in the expired session: %d %q; want 404", resp.StatusCode, body)
	}
	open(t, url, "t")
}

// TestHTTPSessionsPerSubject: one subject cannot hold more than its cap of sessions (429), while another still
// opens its own.
func TestHTTPSessionsPerSubject(t *testing.T) {
	st := newSetup(t, nil)
	// The token names its subject, as a verified JWT's "sub" does.
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Auth: auth.RequireBearerToken(verify, nil),
		Sessions: httpedge.NewSessions(10), MaxSessionsPerSubject: 2}))
	defer ts.Close()
	url := ts.URL + "/mcp"
	alice := open(t, url, "alice")
	open(t, url, "alice")
	checkRefused(t, url, "alice", http.StatusTooManyRequests, "limit of 2 open sessions")
	open(t, url, "bob")
	if resp, _ := mcpRequest(t, http.MethodDelete, url, "alice", alice, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	testwait.Until(t, 10*time.Second, "alice's closed session made room for another", func() bool {
		resp, _ := mcpRequest(t, http.MethodPost, url, "alice", "", initializeBody)
		return resp.StatusCode == http.StatusOK
	})
}

// TestHTTPSessionsEndedReclaim: once the sessions expire, nothing of theirs keeps running (the goroutines are back
// to where they were before any session), and the sessions' reclaim runs, told how many ended: what `agenthost
// serve` gives the memory back to the system with.
func TestHTTPSessionsEndedReclaim(t *testing.T) {
	st := newSetup(t, nil)
	sessions := httpedge.NewSessions(100)
	reclaimed := make(chan int, 10)
	sessions.Reclaim(8, time.Millisecond, time.Hour, func(ended int) { reclaimed <- ended })
	ts := httptest.NewServer(st.server.Handler(&HTTPOptions{Token: "t", Sessions: sessions, SessionIdleTimeout: 200 * time.Millisecond}))
	defer ts.Close()
	url := ts.URL + "/mcp"
	before := runtime.NumGoroutine()
	for range 10 {
		open(t, url, "t")
	}
	if n := sessions.Len(); n != 10 {
		t.Fatalf("%d sessions open; want 10", n)
	}
	http.DefaultClient.CloseIdleConnections()
	testwait.Until(t, 30*time.Second, "the sessions expired", func() bool { return sessions.Len() == 0 })
	select {
	case ended := <-reclaimed:
		if ended < 8 {
			t.Fatalf("reclaim told %d sessions ended; want at least 8", ended)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no reclaim 30s after 10 sessions ended")
	}
	testwait.Until(t, 30*time.Second, fmt.Sprintf("the goroutines were back to the %d before the sessions", before),
		func() bool { return runtime.NumGoroutine() <= before })
}
