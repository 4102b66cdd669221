package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// namedTool is a tool of a given name with a schema the size of a typical MCP tool's.
type namedTool struct{ name string }

func (n namedTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: n.name, Description: "does " + n.name + " with the records of the service, in pages of fifty",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"page":{"type":"integer","minimum":1},"fields":{"type":"array","items":{"type":"string"}}},"required":["query"]}`)}
}

func (namedTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	return &host.Result{Text: "ok"}, nil
}

// changingTools is a source whose list the test replaces.
type changingTools struct {
	mu   sync.Mutex
	list []host.Tool
}

func (*changingTools) Name() string { return "changing" }

func (c *changingTools) Tools(context.Context) ([]host.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list, nil
}

func (c *changingTools) set(n int) {
	list := make([]host.Tool, n)
	for i := range list {
		list[i] = namedTool{fmt.Sprintf("tool_%03d", i)}
	}
	c.mu.Lock()
	c.list = list
	c.mu.Unlock()
}

// sessionConsole is a console over tools from src, whose tool search turns on above threshold tokens.
func sessionConsole(tb testing.TB, src host.Toolset, threshold int) *Console {
	tb.Helper()
	tm := host.NewToolManager([]host.Toolset{src}, nil)
	orch := host.New(nil, tm, &host.Options{Name: "bench", ToolSearch: host.ToolSearchOptions{Threshold: threshold}})
	c := New(&Options{Orchestrator: orch, Agent: Agent{Name: "bench"}})
	tb.Cleanup(c.Close)
	return c
}

func sessionToolSearch(tb testing.TB, h http.Handler) bool {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/session", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /api/session: %d %s", rec.Code, rec.Body)
	}
	var s struct {
		Features map[string]bool `json:"features"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		tb.Fatal(err)
	}
	return s.Features["tool_search"]
}

// TestSessionToolSearchFollowsTheTools: the session's tool_search, decided once per tool list, is decided again
// when the list changes.
func TestSessionToolSearchFollowsTheTools(t *testing.T) {
	src := &changingTools{}
	src.set(2)
	h := sessionConsole(t, src, 1000).Handler()
	if sessionToolSearch(t, h) || sessionToolSearch(t, h) {
		t.Fatal("tool_search on with 2 tools under a threshold of 1000 tokens")
	}
	src.set(500)
	if !sessionToolSearch(t, h) {
		t.Fatal("tool_search still off after the list grew to 500 tools")
	}
	src.set(1)
	if sessionToolSearch(t, h) {
		t.Fatal("tool_search still on after the list shrank to 1 tool")
	}
}

// BenchmarkSession is GET /api/session over 500 tools, as each page load asks it.
func BenchmarkSession(b *testing.B) {
	src := &changingTools{}
	src.set(500)
	h := sessionConsole(b, src, 0).Handler()
	b.ReportAllocs()
	for b.Loop() {
		sessionToolSearch(b, h)
	}
}

func toolsSearch(tb testing.TB, h http.Handler) (on bool, reason string) {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/tools", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /api/tools: %d %s", rec.Code, rec.Body)
	}
	var s struct {
		Search struct {
			On     bool   `json:"on"`
			Reason string `json:"reason"`
		} `json:"search"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		tb.Fatal(err)
	}
	return s.Search.On, s.Search.Reason
}

// TestToolsSearchFollowsTheTools: GET /api/tools says whether a run searches the tools and why, from the decision
// the session's tool_search keeps per tool list, decided again when the list changes.
func TestToolsSearchFollowsTheTools(t *testing.T) {
	src := &changingTools{}
	src.set(2)
	c := sessionConsole(t, src, 1000)
	h := c.Handler()
	if on, reason := toolsSearch(t, h); on || !strings.HasPrefix(reason, "auto: 2 tools") {
		t.Fatalf("search with 2 tools = %v, %q; want off, auto", on, reason)
	}
	src.set(500)
	if on, reason := toolsSearch(t, h); !on || !strings.HasPrefix(reason, "auto: 500 tools") {
		t.Fatalf("search with 500 tools = %v, %q; want on, auto", on, reason)
	}
	if on, _ := toolsSearch(t, h); !on || !sessionToolSearch(t, h) {
		t.Fatal("the tools and the session disagree on an unchanged list of 500 tools")
	}
	src.set(1)
	if on, reason := toolsSearch(t, h); on || !strings.HasPrefix(reason, "auto: 1 tools") {
		t.Fatalf("search with 1 tool = %v, %q; want off, auto", on, reason)
	}
}
