package main

// Browser tests of the console's runs, evals and tasks views (console/web/runs.js, views.js, app.js): each starts
// the real binary with a fakellm model and the fixture MCP server and drives Chromium, as console_e2e_test.go does.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"github.com/agenthost/agenthost/internal/testkit/browser"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// viewsConsole starts `agenthost ui` for an agent named name whose model is llm, with the fixture server and extra
// appended to its configuration, and a browser on it.
func viewsConsole(t *testing.T, name string, llm *fakellm.Server, extra string) (*consoleChild, *browser.Browser, string) {
	t.Helper()
	config := agentConfig(t, t.TempDir(), name, llm.URL, "", extra)
	c := startConsole(t, []string{"TEST_KEY=k"}, "ui", "--config", config, "--addr", "127.0.0.1:0")
	return c, browser.Start(t), config
}

// chatAndWait types message in the chat and waits for the latest answer to hold want.
func chatAndWait(t *testing.T, b *browser.Browser, message, want string) {
	t.Helper()
	b.WaitVisible(sel("chat-input"))
	b.SendKeys(sel("chat-input"), message+kb.Enter)
	waitFor(t, b, "the answer "+want, `document.querySelector('[data-testid="answer"]')?.textContent.includes(`+quoteJS(want)+`)`)
}

func quoteJS(s string) string { q, _ := json.Marshal(s); return string(q) }

// TestConsoleViewsRunsListLive: while a run changes every 100ms, the runs list keeps each run's row (its cells
// painted again only when they change), so a click on another run's row opens it; the rows are reached and opened
// with the keyboard, and so are the timeline's bars (arrow keys move, Enter opens the details).
func TestConsoleViewsRunsListLive(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: "First answer."})
	for i := range 150 {
		llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "fx_shout", Arguments: fmt.Sprintf(`{"text":"round %d"}`, i)}}, Latency: 100 * time.Millisecond})
	}
	llm.Enqueue(fakellm.Turn{Text: "Long answer."})
	c, b, _ := viewsConsole(t, "lively", llm, "")
	b.Visit(c.url + "#/chat")
	chatAndWait(t, b, "first", "First answer.")
	b.SendKeys(sel("chat-input"), "go long"+kb.Enter)

	b.Eval(`location.hash = '#/runs'`, nil)
	ended, running := sel("run-row", `[data-status="answered"]`), sel("run-row", `[data-status="running"]`)
	waitFor(t, b, "the ended run and the running one", `document.querySelector('`+ended+`') && document.querySelector('`+running+`')`)
	var id string
	b.Eval(`(() => { const r = document.querySelector('`+ended+`'); window.keptRow = r; window.keptCell = r.cells[0].firstChild;
		window.callsAt = +document.querySelector('`+running+`').cells[6].textContent; return r.dataset.id; })()`, &id)
	waitFor(t, b, "three more tool calls of the running run", `+document.querySelector('`+running+`').cells[6].textContent >= window.callsAt + 3`)
	var kept bool
	b.Eval(`window.keptRow === document.querySelector('`+ended+`') && window.keptRow.isConnected && window.keptRow.cells[0].firstChild === window.keptCell`, &kept)
	if !kept {
		t.Errorf("the ended run's row or its cells were built again by the running run's updates")
	}
	b.Click(ended)
	waitFor(t, b, "the run's page", `location.hash === '#/runs/' + `+quoteJS(id)+` && document.querySelector('[data-testid="timeline-bar"][data-kind="model"]')`)

	// The timeline: one tab stop; ArrowDown moves to the model call's bar, Enter opens its details.
	var stops int
	b.Eval(`document.querySelectorAll('[data-testid="timeline"] .vrow[tabindex="0"]').length`, &stops)
	if stops != 1 {
		t.Errorf("%d timeline rows in the tab order, want 1 (a roving tabindex)", stops)
	}
	b.SendKeys(`[data-testid="timeline"] .vrow[tabindex="0"]`, kb.ArrowDown)
	waitFor(t, b, "the model bar focused", `document.activeElement?.querySelector('[data-testid="timeline-bar"]')?.dataset.kind === 'model'`)
	b.SendKeys(`[data-testid="timeline"] .vrow[tabindex="0"]`, kb.Enter)
	waitFor(t, b, "the model call's details", `document.querySelector('.detail-pane:not([hidden]) h2')?.textContent.startsWith('model')`)
	b.SendKeys(`[data-testid="timeline"] .vrow[tabindex="0"]`, kb.ArrowUp)
	waitFor(t, b, "the run bar focused", `document.activeElement?.querySelector('[data-testid="timeline-bar"]')?.dataset.kind === 'run'`)

	// The runs table: each row is a tab stop, Enter opens it.
	b.Eval(`location.hash = '#/runs'`, nil)
	waitFor(t, b, "the runs list", `document.querySelector('`+ended+`')`)
	var tabbable bool
	b.Eval(`[...document.querySelectorAll('[data-testid="run-row"]')].every((r) => r.tabIndex === 0)`, &tabbable)
	if !tabbable {
		t.Errorf("a run row is not reached by Tab")
	}
	b.SendKeys(ended, kb.Enter)
	waitFor(t, b, "the run opened with Enter", `location.hash === '#/runs/' + `+quoteJS(id))
	b.AssertNoErrors()
}
