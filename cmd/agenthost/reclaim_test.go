package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// garbage keeps the allocation below from being optimized away before it is dropped.
var garbage [][]byte

// TestFreeSessionMemory: what the sessions' reclaim calls returns freed heap to the system at once, and says how
// much: 64 MiB allocated and dropped come back (the runtime's own scavenger would wait for a collection and for
// its monitor thread to wake it).
func TestFreeSessionMemory(t *testing.T) {
	for range 64 {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	var logs bytes.Buffer
	freeSessionMemory(slog.New(slog.NewTextHandler(&logs, nil)))(1234)
	m := regexp.MustCompile(`msg="returned the memory of ended sessions to the system" sessions=1234 released_mib=(\d+) took=`).FindSubmatch(logs.Bytes())
	if m == nil {
		t.Fatalf("log: %q; want the line saying what was released", &logs)
	}
	// Most of the 64 MiB: some may have been reused or released before.
	if mib, _ := strconv.Atoi(string(m[1])); mib < 32 {
		t.Fatalf("released %d MiB after 64 MiB were dropped; want at least 32: %s", mib, &logs)
	}
}

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
`, reclaimEnded+10))
	url, log := serveChild(t, nil, servingLine, "serve", "--log-level", "info", "--config", config, "--http", "127.0.0.1:0")
	ids := make(chan string, reclaimEnded)
	sessions := func(method string) {
		t.Helper()
		var (
			wg     sync.WaitGroup
			next   = make(chan string, reclaimEnded)
			mu     sync.Mutex
			failed error
		)
		for range reclaimEnded {
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
	want := fmt.Sprintf(`msg="returned the memory of ended sessions to the system" sessions=%d `, reclaimEnded)
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
