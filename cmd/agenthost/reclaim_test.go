package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/internal/wiring"
)

// TestServeReturnsSessionMemory: `agenthost serve --http` gives the memory back once reclaimEnded sessions have
// ended, and says so. They are closed by their client, so that all are open at once however long opening them
// takes (mcpserver's tests see the reclaim after sessions expire).
func TestServeReturnsSessionMemory(t *testing.T) {
	config := writeFile(t, t.TempDir(), "agent.toml", fmt.Sprintf(`[agent]
name = "reclaim"

[model]
provider = "test"

[builtin]
tools = []

[state]
backend = "memory"

[serve]
session_idle_timeout = "10m"
max_sessions = %d
`, wiring.ReclaimEnded+10))
	url, log := serveChild(t, nil, servingLine, "serve", "--log-level", "info", "--config", config, "--http", "127.0.0.1:0")
	ids := make(chan string, wiring.ReclaimEnded)
	sessions := func(method string) {
		t.Helper()
		var (
			wg     sync.WaitGroup
			next   = make(chan string, wiring.ReclaimEnded)
			mu     sync.Mutex
			failed error
		)
		for range wiring.ReclaimEnded {
			id := ""
			if method == http.MethodDelete {
				id = <-ids
			}
			next <- id
		}
		close(next)
		for range 8 {
			wg.Go(func() {
				for id := range next {
					id, err := session(url, method, id)
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					if method == http.MethodPost {
						ids <- id
					}
				}
			})
		}
		wg.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
	}
	sessions(http.MethodPost)
	if strings.Contains(log.String(), "returned the memory") {
		t.Fatalf("the server returned memory before any session ended:\n%s", log)
	}
	sessions(http.MethodDelete)
	want := fmt.Sprintf(`msg="returned the memory of ended sessions to the system" sessions=%d `, wiring.ReclaimEnded)
	testwait.Until(t, time.Minute, "the server returned the memory of the expired sessions", func() bool {
		return strings.Contains(log.String(), want)
	})
}

// session opens a session at url (POST, an initialize) and returns its id, or closes session id (DELETE).
func session(url, method, id string) (string, error) {
	body := ""
	if method == http.MethodPost {
		body = initializeBody
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := testHTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if method == http.MethodPost && (resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "") {
		return "", fmt.Errorf("initialize: %d %s", resp.StatusCode, raw)
	}
	if method == http.MethodDelete && resp.StatusCode != http.StatusNoContent {
		return "", fmt.Errorf("DELETE: %d %s", resp.StatusCode, raw)
	}
	return resp.Header.Get("Mcp-Session-Id"), nil
}
