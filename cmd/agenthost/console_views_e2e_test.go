package main

// Browser tests of the console's runs, evals and tasks views (console/web/runs.js, views.js, app.js): each starts
// the real binary with a fakellm model and the fixture MCP server and drives Chromium, as console_e2e_test.go does.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// fetchesIn is how many requests the page makes to URLs holding path in the next ms milliseconds (its resource
// timing entries, cleared first).
func fetchesIn(b *browser.Browser, path string, ms int) int {
	var n int
	b.Eval(`(async () => { performance.clearResourceTimings(); await new Promise((r) => setTimeout(r, `+strconv.Itoa(ms)+`));
		return performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname.startsWith(`+quoteJS(path)+`)).length; })()`, &n)
	return n
}

// TestConsoleViewsEvalCancel: a running eval run is cancelled from the Evals view, which shows it cancelled; the
// view polls the run it shows only while it is shown, with one poller whichever way it was left and opened again.
func TestConsoleViewsEvalCancel(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	for range 2 {
		llm.Enqueue(fakellm.Turn{Text: "Slowly.", Latency: time.Minute})
	}
	c, b, config := viewsConsole(t, "evaluated", llm, "\n[eval]\ndatasets = [\"evals/*.jsonl\"]\n")
	if err := os.Mkdir(filepath.Join(filepath.Dir(config), "evals"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(config), "evals/slow.jsonl", `{"name": "slow", "prompt": "Take your time.", "expect": {"contains": ["Slowly"]}}
`)
	b.Visit(c.url + "#/evals")
	b.Click(sel("eval-run", `[data-name="slow"]`))
	waitFor(t, b, "the eval run going, with Cancel", `document.querySelector('[data-testid="eval-status"][data-status="running"]') && document.querySelector('[data-testid="eval-cancel"]')`)
	b.Click(sel("eval-cancel"))
	waitFor(t, b, "the eval run cancelled", `document.querySelector('[data-testid="eval-status"]')?.dataset.status === 'cancelled' && !document.querySelector('[data-testid="eval-cancel"]')`)
	if n := fetchesIn(b, "/api/evals/runs/", 1500); n != 0 {
		t.Errorf("%d polls of the eval run after it ended, want 0", n)
	}

	// Run again; leave the view while it goes: no poll. Open it again, twice: one poller.
	waitFor(t, b, "Run enabled again", `!document.querySelector('[data-testid="eval-run"][data-name="slow"]').disabled`)
	b.Click(sel("eval-run", `[data-name="slow"]`))
	waitFor(t, b, "the second eval run going", `document.querySelector('[data-testid="eval-status"][data-status="running"]')`)
	b.Eval(`location.hash = '#/chat'`, nil)
	waitFor(t, b, "the chat", `document.querySelector('[data-testid="chat-input"]')?.offsetParent`)
	if n := fetchesIn(b, "/api/evals/runs/", 2500); n != 0 {
		t.Errorf("%d polls of the eval run while the Evals view was hidden, want 0", n)
	}
	for range 3 {
		b.Eval(`location.hash = '#/evals'`, nil)
		waitFor(t, b, "the Evals view", `document.querySelector('[data-testid="eval-status"]')?.offsetParent`)
		b.Eval(`location.hash = '#/chat'`, nil)
		waitFor(t, b, "the chat", `document.querySelector('[data-testid="chat-input"]')?.offsetParent`)
	}
	b.Eval(`location.hash = '#/evals'`, nil)
	waitFor(t, b, "the Evals view", `document.querySelector('[data-testid="eval-status"][data-status="running"]')?.offsetParent`)
	// One poller asks once a second: at most 4 times in 3.2 s; two would ask at least 6 times.
	if n := fetchesIn(b, "/api/evals/runs/", 3200); n < 1 || n > 4 {
		t.Errorf("%d polls of the eval run in 3.2 s after the view was opened again four times, want 1 to 4 (one poller)", n)
	}
	b.Click(sel("eval-cancel"))
	waitFor(t, b, "the second eval run cancelled", `document.querySelector('[data-testid="eval-status"]')?.dataset.status === 'cancelled'`)
	b.AssertNoErrors()
}

// TestConsoleViewsServersStopPolling: the Servers view polls /api/servers only while it is shown, and not at all
// once the page has signed out (its session gone, the sign-in card shown).
func TestConsoleViewsServersStopPolling(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	const token = "views-test-token"
	config := agentConfig(t, t.TempDir(), "polled", llm.URL, "", "\n[serve]\nauth_token_env = \"UI_TEST_TOKEN\"\n")
	c := startConsole(t, []string{"TEST_KEY=k", "UI_TEST_TOKEN=" + token}, "ui", "--config", config, "--addr", "127.0.0.1:0")
	b := browser.Start(t)
	b.Visit(c.url + "#/servers")
	b.SendKeys(sel("login-token"), token)
	b.Click(sel("login-submit"))
	b.WaitVisible(sel("server-row", `[data-name="fixture"]`))
	if n := fetchesIn(b, "/api/servers", 3500); n < 1 {
		t.Fatalf("%d fetches of /api/servers in 3.5 s while the Servers view is shown, want a poll every 3 s", n)
	}

	b.Eval(`location.hash = '#/chat'`, nil)
	waitFor(t, b, "the chat", `document.querySelector('[data-testid="chat-input"]')?.offsetParent`)
	if n := fetchesIn(b, "/api/servers", 3500); n != 0 {
		t.Errorf("%d fetches of /api/servers in 3.5 s after leaving the Servers view, want 0", n)
	}

	// The session ends behind the page's back: the next poll meets a 401 and the page shows the sign-in card.
	b.Eval(`location.hash = '#/servers'`, nil)
	waitFor(t, b, "the Servers view", `document.querySelector('[data-testid="server-row"]')?.offsetParent`)
	b.Eval(`fetch('/api/session').then((r) => r.json()).then((s) => fetch('/api/logout', { method: 'POST', headers: { 'X-CSRF-Token': s.csrf } })).then((r) => r.status)`, nil)
	waitFor(t, b, "the sign-in card", `document.querySelector('[data-testid="login-token"]')`)
	if n := fetchesIn(b, "/api/servers", 3500); n != 0 {
		t.Errorf("%d fetches of /api/servers in 3.5 s after the page signed out, want 0", n)
	}
}

// a2aAndConsole matches the lines of `serve --a2a --ui` once both are written, in either order.
var a2aAndConsole = regexp.MustCompile(`(?s)(serving A2A at \S+ .*agenthost: console at \S+|agenthost: console at \S+.*serving A2A at \S+ \(card)`)

// consoleWithTask starts `serve --a2a --ui` for the agent name, whose model answers answer, and sends it prompt
// over A2A: it returns the console and the task's id.
func consoleWithTask(t *testing.T, name, prompt, answer string) (*consoleChild, string) {
	t.Helper()
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: answer})
	config := agentConfig(t, t.TempDir(), name, llm.URL, "", "")
	c := startConsoleUntil(t, a2aAndConsole, []string{"TEST_KEY=k"}, "serve", "--config", config, "--a2a", "127.0.0.1:0", "--ui", "127.0.0.1:0")
	m := a2aServing.FindStringSubmatch(c.log.String())
	if m == nil {
		t.Fatalf("no A2A address in:\n%s", c.log.String())
	}
	msg, _ := json.Marshal(prompt)
	resp, body := authRequest(t, m[2]+"/", "", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":`+string(msg)+`}]}}}`,
		map[string]string{"A2A-Version": "1.0"})
	var sent struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &sent); resp.StatusCode != 200 || err != nil || sent.Result.Task.ID == "" {
		t.Fatalf("SendMessage: HTTP %d, %v: %s", resp.StatusCode, err, body)
	}
	return c, sent.Result.Task.ID
}

// TestConsoleViewsTaskDetails: a task served over A2A opens from its row in the Conversations view (Enter on the
// row), shows its state and its messages with the answer, and Escape closes it. Deleting a conversation there tells
// the page (agenthost:conversation-deleted).
func TestConsoleViewsTaskDetails(t *testing.T) {
	c, id := consoleWithTask(t, "tasked", "Say bonjour.", "Bonjour from the task.")

	b := browser.Start(t)
	b.Visit(c.url + "#/conversations")
	row := sel("task-row", `[data-task=`+quoteJS(id)+`]`)
	b.WaitVisible(row)
	b.SendKeys(row, kb.Enter)
	waitFor(t, b, "the task's answer in its details", `[...document.querySelectorAll('[data-testid="task-artifact"], [data-testid="task-message"]')].some((m) => m.textContent.includes('Bonjour from the task.'))`)
	if got := b.Text(sel("task-state")); got != "completed" {
		t.Errorf("the task's state reads %q, want completed", got)
	}
	if got := b.Text(sel("task-message")); !strings.Contains(got, "Say bonjour.") {
		t.Errorf("the task's messages read %q, want the request too", got)
	}
	b.SendKeys(`.detail-pane:not([hidden]) button`, kb.Escape)
	waitFor(t, b, "the details closed", `document.querySelector('.detail-pane[aria-label="Conversation"]').hidden`)

	// The A2A exchange kept a conversation: delete it; the page hears of it.
	b.Eval(`window.deleted = []; document.addEventListener('agenthost:conversation-deleted', (e) => window.deleted.push(e.detail.id)); true`, nil)
	b.Click(sel("conversation-row"))
	var conv string
	b.Eval(`document.querySelector('[data-testid="conversation-row"]').dataset.id`, &conv)
	b.Click(sel("conversation-delete"))
	b.Click(sel("confirm-delete"))
	waitFor(t, b, "the event of the deletion", `window.deleted.length === 1 && window.deleted[0] === `+quoteJS(conv))
	b.AssertNoErrors()
}

// TestConsoleViewsPaneFocusReturns: a details pane opened from a row with the keyboard gives the focus back to that
// row when Escape or its close button closes it, as a dialog gives it back to its opener: an A2A task's row, a
// conversation's, a tool's and a run's timeline row.
func TestConsoleViewsPaneFocusReturns(t *testing.T) {
	c, taskID := consoleWithTask(t, "focused", "Answer.", "Focus answer.")
	b := browser.Start(t)
	focusOn := func(what, selector string) {
		t.Helper()
		waitFor(t, b, "the focus back on "+what, `document.querySelector('.detail-pane:not([hidden])') === null && document.activeElement?.matches(`+quoteJS(selector)+`)`)
	}
	const closeBtn = `.detail-pane:not([hidden]) .detail-head button`

	// A task: Enter on its row opens it (the focus goes to the pane's button); Escape there closes it.
	b.Visit(c.url + "#/conversations")
	task := sel("task-row", `[data-task=`+quoteJS(taskID)+`]`)
	b.WaitVisible(task)
	b.SendKeys(task, kb.Enter)
	waitFor(t, b, "the task's details, focused", `document.querySelector('[data-testid="task-state"]') && document.activeElement?.closest('.detail-pane')`)
	b.SendKeys(closeBtn, kb.Escape)
	focusOn("the task's row", task)

	// A conversation: Enter opens it (the focus goes to Continue); the close button closes it.
	conv := sel("conversation-row")
	b.SendKeys(conv, kb.Enter)
	waitFor(t, b, "the conversation's details, focused", `document.activeElement?.dataset.testid === 'conversation-continue'`)
	b.Click(closeBtn)
	focusOn("the conversation's row", conv)

	// A tool: Enter opens it; Escape in the pane closes it.
	b.Eval(`location.hash = '#/tools'`, nil)
	tool := sel("tool-row", `[data-name="fx_cite"]`)
	b.WaitVisible(tool)
	b.SendKeys(tool, kb.Enter)
	b.WaitVisible(closeBtn)
	b.SendKeys(closeBtn, kb.Escape)
	focusOn("the tool's row", tool)

	// A run's timeline: ArrowDown to the model call's row, Enter opens it; Escape in the pane closes it.
	b.Eval(`location.hash = '#/runs'`, nil)
	b.WaitVisible(sel("run-row"))
	b.SendKeys(sel("run-row"), kb.Enter)
	waitFor(t, b, "the run's model bar", `document.querySelector('[data-testid="timeline-bar"][data-kind="model"]')`)
	row := `[data-testid="timeline"] .vrow[tabindex="0"]`
	b.SendKeys(row, kb.ArrowDown)
	waitFor(t, b, "the model bar focused", `document.activeElement?.querySelector('[data-testid="timeline-bar"]')?.dataset.kind === 'model'`)
	b.SendKeys(row, kb.Enter)
	waitFor(t, b, "the model call's details", `document.querySelector('.detail-pane:not([hidden]) h2')?.textContent.startsWith('model')`)
	b.SendKeys(closeBtn, kb.Escape)
	focusOn("the model call's timeline row", `.vrow:has([data-testid="timeline-bar"][data-kind="model"])`)
	b.AssertNoErrors()
}
