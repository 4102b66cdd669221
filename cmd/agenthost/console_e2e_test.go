package main

// The web console's end-to-end tests: each starts the real binary (`agenthost ui`, or `serve --http --ui`) with a
// fakellm model and the fixture MCP server, drives Debian's Chromium through internal/testkit/browser, and checks
// what a person sees. Each test ends with no page errors, and writes screenshots of its views to its artifacts
// (go test -artifacts -outputdir DIR keeps them); -update-screenshots also copies the chat and timeline ones to
// docs/.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"github.com/agenthost/agenthost/internal/testkit/browser"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// consoleEnv is the console child's environment: the model's API key.
var consoleEnv = []string{"TEST_KEY=k"}

// uiConsole starts `agenthost ui` for an agent named name whose model is llm, with the fixture server (tools fx_*)
// and extra appended to its configuration, and a browser on the console.
func uiConsole(t *testing.T, name string, llm *fakellm.Server, extra string, env ...string) (*consoleChild, *browser.Browser, string) {
	t.Helper()
	config := agentConfig(t, t.TempDir(), name, llm.URL, "", extra)
	c := startConsole(t, append(consoleEnv, env...), "ui", "--config", config, "--addr", "127.0.0.1:0")
	b := browser.Start(t)
	return c, b, config
}

// send types message into the chat and presses Enter.
func send(t *testing.T, b *browser.Browser, message string) {
	t.Helper()
	b.WaitVisible(sel("chat-input"))
	b.SendKeys(sel("chat-input"), message+kb.Enter)
}

// apiGet reads a console API path with the browser's own session (fetch from the page), decoding its JSON into out.
func apiGet(t *testing.T, b *browser.Browser, path string, out any) {
	t.Helper()
	var raw string
	b.Eval(`fetch(`+jsString(path)+`).then((r) => r.text())`, &raw)
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, raw)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// TestConsoleChat: a message typed in the chat reaches the model, which calls the fixture's cite tool and then
// streams an answer that cites its document; the page shows the answer, the citation and the source, and the tool's
// step with its arguments and result.
func TestConsoleChat(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	const answer = "The document says hello [1]. It was written for this test, and it greets whoever reads it."
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "c1", Name: "fx_cite", Arguments: `{}`},
			{ID: "c2", Name: "fx_shout", Arguments: `{"text":"greetings"}`},
		}},
		fakellm.Turn{Text: answer, ChunkSize: 6},
	)
	c, b, config := uiConsole(t, "chatty", llm, "\n[eval]\ndatasets = [\"evals/*.jsonl\"]\n")
	// Listed again at each visit of Evals: written after the start.
	if err := os.Mkdir(filepath.Join(filepath.Dir(config), "evals"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(config), "evals/greetings.jsonl", `{"name": "cites", "prompt": "What does the document say?", "expect": {"tools_called": ["fx_cite"], "min_sources": 1}}
{"name": "shouts", "prompt": "Shout hello.", "expect": {"contains": ["HELLO"]}}
`)
	b.Visit(c.url + "#/chat")
	send(t, b, "What does the document say?")

	waitFor(t, b, "the answer with its sources", `document.querySelector('[data-testid="answer"]') && document.querySelector('[data-testid="sources"]')`)
	got := b.Text(sel("answer"))
	if !strings.Contains(got, "The document says hello") || !strings.Contains(got, "greets whoever reads it.") {
		t.Errorf("the answer reads %q", got)
	}
	if n := b.Count(sel("answer") + ` ` + sel("citation", `[data-ref="1"]`)); n != 1 {
		t.Errorf("%d citations [1] in the answer, want 1", n)
	}
	if src := b.Text(sel("sources") + ` li[data-n="1"]`); !strings.Contains(src, "The test document") || !strings.Contains(src, fixtureDocURI) {
		t.Errorf("source 1 reads %q", src)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 || !reqs[1].Stream {
		t.Fatalf("%d model requests (streamed: %v), want 2 streamed", len(reqs), len(reqs) == 2 && reqs[1].Stream)
	}
	if last := reqs[0].Messages[len(reqs[0].Messages)-1]; last.Role != "user" || last.Content != "What does the document say?" {
		t.Errorf("the model was asked %q", last.Content)
	}

	// The tool steps: done, with its arguments and its result once expanded.
	waitFor(t, b, "the cite step done", `document.querySelector('[data-testid="tool-step"][data-name="fx_cite"][data-state="ok"]')`)
	step := sel("tool-step", `[data-name="fx_shout"]`)
	waitFor(t, b, "the shout step done", `document.querySelector('`+step+`[data-state="ok"]')`)
	b.Click(step + ` summary`)
	b.WaitVisible(step + ` .step-body pre`)
	body := b.Text(step + ` .step-body`)
	if !strings.Contains(body, `"greetings"`) || !strings.Contains(body, "\nGREETINGS") {
		t.Errorf("the expanded step lacks the argument or the result:\n%s", body)
	}
	for _, want := range []string{"ARGUMENTS", `"TEXT"`, "GREETINGS", "RESULT"} { // the labels are upper-cased by CSS
		if !strings.Contains(strings.ToUpper(body), want) {
			t.Errorf("the expanded step lacks %q:\n%s", want, body)
		}
	}
	shot(t, b, "console-chat")
	setTheme(t, b, "dark")
	shot(t, b, "console-chat-dark")
	setTheme(t, b, "light")

	// The answer reached the page in several pieces: the run's record has them.
	var rec struct {
		Entries []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"entries"`
	}
	apiGet(t, b, "/api/runs/"+latestRunID(t, b), &rec)
	var pieces []string
	for _, e := range rec.Entries {
		if e.Kind == "text" {
			pieces = append(pieces, e.Text)
		}
	}
	if len(pieces) < 2 || !strings.HasPrefix(strings.Join(pieces, ""), answer) {
		t.Errorf("the answer was streamed as %q, want it in several pieces", pieces)
	}

	// The run's timeline, from the chat's link: the run, two model calls, the two tools; a tool's details.
	b.Click(`a[href="#/runs/` + latestRunID(t, b) + `"]`)
	b.WaitVisible(sel("timeline"))
	waitFor(t, b, "the run's five bars", `document.querySelectorAll('[data-testid="timeline-bar"]').length === 5`)
	for kind, want := range map[string]int{"run": 1, "model": 2, "tool": 2} {
		if n := b.Count(sel("timeline-bar", `[data-kind="`+kind+`"]`)); n != want {
			t.Errorf("%d %s bars, want %d", n, kind, want)
		}
	}
	b.Click(`.vrow:has([data-testid="timeline-bar"][data-kind="tool"][title^="fx_shout"])`)
	waitFor(t, b, "the tool's details", `document.querySelector('.detail-pane:not([hidden])')?.innerText.includes('GREETINGS')`)
	// The bars' labels are all in view, though the details pane narrows the track, and narrower still.
	assertLabelsInView(t, b, "with the details open")
	b.Eval(`Object.assign(document.querySelector('.split > .list-pane').style, { flex: 'none', width: '440px' }), true`, nil)
	assertLabelsInView(t, b, "in a 440px list")
	b.Eval(`document.querySelector('.split > .list-pane').removeAttribute('style'), true`, nil)
	assertLabelsInView(t, b, "with the details open again")
	shot(t, b, "console-timeline")

	// The other views, as they look for this agent.
	b.Click(sel("nav-tools"))
	waitFor(t, b, "the fixture's tools", `document.querySelector('[data-testid="tool-row"][data-name="fx_cite"]')`)
	shot(t, b, "console-tools")
	b.Click(sel("nav-servers"))
	waitFor(t, b, "the fixture server connected", `document.querySelector('[data-testid="server-row"][data-name="fixture"][data-state="connected"]')`)
	shot(t, b, "console-servers")
	b.Click(sel("nav-evals"))
	b.WaitVisible(sel("eval-dataset"))
	if got := b.Text(sel("eval-dataset")); !strings.Contains(got, "greetings") {
		t.Errorf("the dataset reads %q", got)
	}
	shot(t, b, "console-evals")
	b.AssertNoErrors()
}

// assertLabelsInView checks, once the page has laid the timeline out again, that every bar's label is whole within
// its row's track (not clipped by the timeline's right edge, not over the names' column).
func assertLabelsInView(t *testing.T, b *browser.Browser, when string) {
	t.Helper()
	var out []string
	b.Eval(`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(() => {
		const tl = document.querySelector('[data-testid="timeline"]'), box = tl.getBoundingClientRect();
		const right = box.left + tl.clientWidth, bad = [];
		for (const d of tl.querySelectorAll('.tl-d')) {
			const track = d.closest('.tl-track').getBoundingClientRect(), l = d.getBoundingClientRect();
			if (l.left < track.left - 0.5 || l.right > right + 0.5) bad.push(d.textContent + ' at ' + Math.round(l.left) + '..' + Math.round(l.right) + ' of ' + Math.round(track.left) + '..' + Math.round(right));
		}
		r(bad.length ? bad : [String(tl.querySelectorAll('.tl-d').length)]);
	}))))`, &out)
	if len(out) != 1 || out[0] != "5" {
		t.Errorf("%s, the timeline's labels are clipped: %q", when, out)
	}
}

// runSummary is what GET /api/runs/{id} says of a run.
type runSummary struct {
	Run struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		Origin    string `json:"origin"`
		Entries   int    `json:"entries"`
		ToolCalls int    `json:"tool_calls"`
	} `json:"run"`
}

// latestRunID returns the id of the run the chat's latest turn links to ("View run").
func latestRunID(t *testing.T, b *browser.Browser) string {
	t.Helper()
	waitFor(t, b, "the link to the run", `[...document.querySelectorAll('a[href^="#/runs/"]')].length > 0`)
	var href string
	b.Eval(`[...document.querySelectorAll('a[href^="#/runs/"]')].pop().getAttribute('href')`, &href)
	return strings.TrimPrefix(href, "#/runs/")
}

// TestConsoleApproval: a tool that needs approval waits for the person at the console: Approve runs it and the
// answer arrives; in the next turn Deny refuses it, and the model is told so.
func TestConsoleApproval(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "fx_shout", Arguments: `{"text":"approved"}`}}},
		// Slow, so that the page shows the run working again between the approval and the answer.
		fakellm.Turn{Text: "The fixture shouted APPROVED.", Latency: 3 * time.Second},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a2", Name: "fx_shout", Arguments: `{"text":"denied"}`}}},
		fakellm.Turn{Text: "I was not allowed to shout."},
	)
	c, b, _ := uiConsole(t, "careful", llm, "[tools.\"fx_shout\"]\nrequire_approval = true\n")
	b.Visit(c.url + "#/chat")

	send(t, b, "Shout approved.")
	b.WaitVisible(sel("approve"))
	if n := llm.RequestCount(); n != 1 {
		t.Fatalf("%d model requests while the approval waits, want 1", n)
	}
	if n := b.Count(sel("tool-step", `[data-state="ok"]`)); n != 0 {
		t.Errorf("%d tool steps done before the approval", n)
	}
	// While the approval waits for the person nothing works: no spinner, the turn says it waits.
	waitFor(t, b, "the run waiting", `document.querySelector('[data-testid="run-state"][data-state="waiting"]')`)
	if n := b.Count(`.turn .meta .spinner`); n != 0 {
		t.Errorf("%d spinners under the waiting approval", n)
	}
	if got := b.Text(sel("run-state")); !strings.Contains(got, "Waiting for your answer") || strings.Contains(got, "Thinking") {
		t.Errorf("the waiting run's state reads %q", got)
	}
	shot(t, b, "console-approval")
	b.Click(sel("approve"))
	// Once answered, the run works again: the spinner is back until the answer.
	waitFor(t, b, "the run thinking again", `document.querySelector('.approval.answered') && document.querySelector('[data-testid="run-state"][data-state="thinking"] .spinner')`)
	waitFor(t, b, "the answer after the approval", `document.querySelector('[data-testid="answer"]')?.textContent.includes('shouted APPROVED')`)
	waitFor(t, b, "the approved step done", `document.querySelector('[data-testid="tool-step"][data-name="fx_shout"][data-state="ok"]')`)
	if out := llm.Requests()[1].Messages; out[len(out)-1].ToolOutput() != "APPROVED" {
		t.Errorf("the model got %q from the approved tool", out[len(out)-1].Content)
	}

	send(t, b, "Shout denied.")
	waitFor(t, b, "the second approval", `document.querySelectorAll('[data-testid="deny"]').length === 1`)
	b.Click(sel("deny"))
	waitFor(t, b, "the answer after the denial", `document.querySelector('[data-testid="answer"]')?.textContent.includes('not allowed to shout')`)
	reqs := llm.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	msgs := reqs[3].Messages
	if out := msgs[len(msgs)-1]; out.Role != "tool" || strings.Contains(out.Content, "DENIED") {
		t.Errorf("the model got %s %q from the denied tool", out.Role, out.Content)
	}
	if n := b.Count(sel("tool-step", `[data-name="fx_shout"][data-state="ok"]`)); n != 1 {
		t.Errorf("%d shout steps ok, want only the approved one", n)
	}
	b.AssertNoErrors()
}

// TestConsoleStop: Stop ends a run whose tool blocks: the page and the API say cancelled, the tool's call is
// cancelled, and the model is not asked again.
func TestConsoleStop(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	waitLog := filepath.Join(t.TempDir(), "wait.log")
	args, _ := json.Marshal(map[string]string{"file": waitLog})
	llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "w1", Name: "fx_wait", Arguments: string(args)}}})
	c, b, _ := uiConsole(t, "patient", llm, "")
	b.Visit(c.url + "#/chat")
	send(t, b, "Wait for it.")
	waitFor(t, b, "the wait step running", `document.querySelector('[data-testid="tool-step"][data-name="fx_wait"][data-state="running"]')`)
	b.Click(sel("chat-stop"))
	waitFor(t, b, "the run cancelled", `[...document.querySelectorAll('.chip')].some((c) => c.textContent === 'cancelled')`)
	id := latestRunID(t, b)
	var run runSummary
	apiGet(t, b, "/api/runs/"+id, &run)
	if run.Run.Status != "cancelled" {
		t.Errorf("GET /api/runs/%s: status %q, want cancelled", id, run.Run.Status)
	}
	if n := llm.RequestCount(); n != 1 {
		t.Errorf("%d model requests, want 1: the model was asked again after Stop", n)
	}
	if n := llm.Unscripted(); n != 0 {
		t.Errorf("%d unscripted model requests", n)
	}
	if b.Count(sel("chat-stop")+`:not([hidden])`) != 0 {
		t.Errorf("Stop is still shown after the run ended")
	}
	b.AssertNoErrors()
}

// TestConsoleMCPRunTimeline: a run started by the TypeScript SDK over MCP is in the console's runs, with its
// origin, and its timeline shows the run, its model calls and its tool call.
func TestConsoleMCPRunTimeline(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_shout", Arguments: `{"text":"hello"}`}}},
		fakellm.Turn{Text: "The fixture shouted HELLO.", ChunkSize: 5},
	)
	config := serveConfig(t, t.TempDir(), "helper", llm, "")
	c := startConsoleUntil(t, servingBoth, consoleEnv, "serve", "--log-level", "info", "--config", config, "--http", "127.0.0.1:0", "--ui", "127.0.0.1:0")
	m := servingLine.FindStringSubmatch(c.log.String())
	if m == nil {
		t.Fatalf("serve --http --ui did not say where it serves MCP:\n%s", c.log.String())
	}
	out := tsClient(t, true, "--url", m[1], "--action", "ask", "--tool", "ask_helper", "--prompt", "Shout hello.")
	if len(out.Calls) != 1 {
		t.Fatalf("calls %+v", out.Calls)
	}

	b := browser.Start(t)
	b.Visit(c.url + "#/runs")
	row := sel("run-row", `[data-origin="mcp"]`)
	waitFor(t, b, "the MCP run ended", `document.querySelector('`+row+`[data-status="answered"]')`)
	shot(t, b, "console-runs")
	b.Click(row)
	b.WaitVisible(sel("timeline"))
	for _, kind := range []string{"run", "model", "tool"} {
		waitFor(t, b, "a "+kind+" bar", `document.querySelector('[data-testid="timeline-bar"][data-kind="`+kind+`"]')`)
	}
	if n := b.Count(sel("timeline-bar", `[data-kind="model"]`)); n != 2 {
		t.Errorf("%d model bars, want 2", n)
	}
	shot(t, b, "console-timeline-mcp")
	b.AssertNoErrors()
}

// TestConsoleContinueAfterRestart: a conversation of the console is kept in the SQLite state; after a restart on
// the same file, Conversations lists it, Continue opens it, and the next message reaches the model with the earlier
// ones.
func TestConsoleContinueAfterRestart(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: "Nice to meet you, Ada."}, fakellm.Turn{Text: "Your name is Ada."})
	dir := t.TempDir()
	config := agentConfig(t, dir, "memo", llm.URL, "", "")
	first := startConsole(t, consoleEnv, "ui", "--config", config, "--addr", "127.0.0.1:0")
	b := browser.Start(t)
	b.Visit(first.url + "#/chat")
	send(t, b, "I am Ada.")
	waitFor(t, b, "the first answer", `document.querySelector('[data-testid="answer"]')?.textContent.includes('Nice to meet you')`)
	first.stop()
	if _, err := os.Stat(filepath.Join(dir, "memo-state.db")); err != nil {
		t.Fatalf("the state database: %v", err)
	}

	second := startConsole(t, consoleEnv, "ui", "--config", config, "--addr", "127.0.0.1:0")
	b.Visit(second.url + "#/conversations")
	b.WaitVisible(sel("conversation-row"))
	if n := b.Count(sel("conversation-row")); n != 1 {
		t.Errorf("%d conversations listed, want 1", n)
	}
	if row := b.Text(sel("conversation-row")); !strings.Contains(row, "I am Ada.") {
		t.Errorf("the conversation's row reads %q", row)
	}
	shot(t, b, "console-conversations")
	b.Click(sel("conversation-row"))
	b.Click(sel("conversation-continue"))
	waitFor(t, b, "the earlier answer in the chat", `document.body.innerText.includes('Nice to meet you, Ada.')`)
	send(t, b, "What is my name?")
	waitFor(t, b, "the new answer", `document.querySelector('[data-testid="answer"]')?.textContent.includes('Your name is Ada.')`)
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	checkMessages(t, reqs[1].Messages, "user:I am Ada.", "assistant:Nice to meet you, Ada.", "user:What is my name?")
	b.AssertNoErrors()
}

// TestConsoleLongRun: a run of more than a thousand entries (540 tool calls over nine rounds) keeps the timeline
// virtualized: only the bars in view are in the DOM, and scrolling to the end shows the last. The frame times while
// scrolling are logged, not asserted.
func TestConsoleLongRun(t *testing.T) {
	const rounds, perRound = 9, 60
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	for r := range rounds {
		calls := make([]fakellm.ToolCall, perRound)
		for i := range calls {
			calls[i] = fakellm.ToolCall{Name: "fx_shout", Arguments: fmt.Sprintf(`{"text":"r%d c%d"}`, r, i)}
		}
		llm.Enqueue(fakellm.Turn{ToolCalls: calls})
	}
	llm.Enqueue(fakellm.Turn{Text: "All shouted."})
	dir := t.TempDir()
	config := agentConfig(t, dir, "busy", llm.URL, "", "")
	// The agent may make this many calls: its [agent] table is written again with the limits.
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	limits := strings.Replace(string(raw), "[agent]\n", fmt.Sprintf("[agent]\nmax_tool_calls = %d\nmax_iterations = %d\n", perRound, rounds+1), 1)
	if err := os.WriteFile(config, []byte(limits), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startConsole(t, consoleEnv, "ui", "--config", config, "--addr", "127.0.0.1:0")
	b := browser.Start(t)
	b.Timeout = 30 * time.Second // the run itself: 540 calls to a stdio server under -race
	b.Visit(c.url + "#/chat")
	send(t, b, "Shout everything.")
	waitFor(t, b, "the answer", `document.querySelector('[data-testid="answer"]')?.textContent.includes('All shouted.')`)
	b.Timeout = browser.DefaultTimeout
	id := latestRunID(t, b)
	var run runSummary
	apiGet(t, b, "/api/runs/"+id, &run)
	if run.Run.Entries < 1000 || run.Run.ToolCalls != rounds*perRound {
		t.Fatalf("the run has %d entries and %d tool calls, want 1000+ and %d", run.Run.Entries, run.Run.ToolCalls, rounds*perRound)
	}
	total := 1 + (rounds + 1) + rounds*perRound // the run, its model calls, its tool calls

	b.Visit(c.url + "#/runs/" + id)
	b.WaitVisible(sel("timeline-bar"))
	inDOM := b.Count(sel("timeline-bar"))
	if inDOM == 0 || inDOM > total/5 {
		t.Errorf("%d timeline bars in the DOM of %d spans, want a bounded window", inDOM, total)
	}
	// Scroll to the end a step at a time, one frame each, measuring the frames.
	var frames []float64
	b.Eval(`new Promise((resolve) => {
		const tl = document.querySelector('[data-testid="timeline"]');
		const times = []; let last = performance.now();
		const step = () => {
			const now = performance.now(); times.push(now - last); last = now;
			if (tl.scrollTop + tl.clientHeight >= tl.scrollHeight - 1) return resolve(times);
			tl.scrollTop += tl.clientHeight / 2;
			requestAnimationFrame(step);
		};
		requestAnimationFrame(step);
	})`, &frames)
	// The last span, the final model call, is in view: the lowest bar (the list reuses its rows, so the DOM's order
	// is not the screen's).
	waitFor(t, b, "the last bar", `(() => { const tl = document.querySelector('[data-testid="timeline"]'); const v = tl.getBoundingClientRect();
		const bars = [...tl.querySelectorAll('[data-testid="timeline-bar"]')].filter((x) => x.getBoundingClientRect().height > 0);
		bars.sort((x, y) => x.getBoundingClientRect().top - y.getBoundingClientRect().top);
		const last = bars[bars.length - 1]; if (!last || last.dataset.kind !== 'model' || !last.title.includes('call `+fmt.Sprint(rounds+1)+`')) return false;
		const a = last.getBoundingClientRect(); return a.top >= v.top && a.bottom <= v.bottom + 1; })()`)
	if n := b.Count(sel("timeline-bar")); n == 0 || n > total/5 {
		t.Errorf("%d timeline bars in the DOM at the end, of %d spans", n, total)
	}
	slices.Sort(frames)
	if len(frames) > 0 {
		t.Logf("%d bars in the DOM of %d spans; scrolling %d frames: median %.1f ms, worst %.1f ms", inDOM, total, len(frames), frames[len(frames)/2], frames[len(frames)-1])
	}
	b.AssertNoErrors()
}

// TestConsoleLogin: with [serve] auth_token_env the page asks for the token; a wrong one is refused, the right one
// opens the console, and the token is nowhere the page can read: not its URL, its storage, nor any API answer.
func TestConsoleLogin(t *testing.T) {
	const token = "s3cret-console-token-4711"
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	c, b, _ := uiConsole(t, "guarded", llm, "\n[serve]\nauth_token_env = \"UI_TEST_TOKEN\"\n", "UI_TEST_TOKEN="+token)
	b.Visit(c.url)
	b.WaitVisible(sel("login-token"))
	if n := b.Count(sel("chat-input")); n != 0 {
		t.Errorf("the chat is shown before the login")
	}
	shot(t, b, "console-login")
	// The sign-in card has its own theme toggle (the rail's is hidden), which the page remembers.
	setThemeWith(t, b, "login-theme-toggle", "dark")
	shot(t, b, "console-login-dark")
	var stored string
	b.Eval(`localStorage.getItem('agenthost.theme') || ''`, &stored)
	if stored != "dark" {
		t.Errorf("the sign-in's theme toggle stored %q, want dark", stored)
	}
	setThemeWith(t, b, "login-theme-toggle", "light")
	// Asking how to log in is no failure: the page has logged nothing yet.
	b.AssertNoErrors()

	b.SendKeys(sel("login-token"), "not-the-token")
	b.Click(sel("login-submit"))
	waitFor(t, b, "the refusal", `document.querySelector('.login-card [role="alert"]')?.textContent.includes('not accepted')`)
	if n := b.Count(sel("chat-input")); n != 0 {
		t.Errorf("the chat is shown after a wrong token")
	}
	b.Eval(`document.querySelector('[data-testid="login-token"]').value = ''`, nil)
	b.SendKeys(sel("login-token"), token)
	b.Click(sel("login-submit"))
	b.WaitVisible(sel("chat-input"))

	var where struct {
		URL     string
		Storage string
		Cookie  string
		API     []string
	}
	b.Eval(`(async () => {
		const api = [];
		for (const p of ['/api/session', '/api/runs', '/api/tools', '/api/servers', '/api/conversations']) {
			const r = await fetch(p); api.push(p + ' ' + r.status + ' ' + await r.text());
		}
		return { URL: location.href, Storage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }), Cookie: document.cookie, API: api };
	})()`, &where)
	for what, v := range map[string]string{"URL": where.URL, "storage": where.Storage, "cookie": where.Cookie, "API": strings.Join(where.API, "\n")} {
		if strings.Contains(v, token) {
			t.Errorf("the token is in the page's %s: %s", what, v)
		}
	}
	if !strings.Contains(where.API[0], "/api/session 200") {
		t.Errorf("after the login: %s", where.API[0])
	}
	// The wrong token's refusal is a real failure, a 401 that Chromium logs as a failed load: the only error the
	// page may have had.
	errs := b.Errors()
	if len(errs) != 1 || !loginRefusal.MatchString(errs[0]) {
		t.Errorf("the page's errors: %q, want only the wrong token's refusal", errs)
	}
}

// loginRefusal is how Chromium logs the 401 answer of POST /api/login with a wrong token.
var loginRefusal = regexp.MustCompile(`^log: Failed to load resource: the server responded with a status of 401 \(Unauthorized\) \(http://127\.0\.0\.1:\d+/api/login\)$`)

// TestConsoleMarkdownIsInert: hostile markdown in the answer and a hostile reference title from a tool render as
// inert text and links: every element of the answer carries only the allowed attributes, every link is http(s),
// and the page logged no CSP violation. Only real citations ([1], of the one source) become citation links, and
// the host's "Sources:" list is cut though the title holds "Sources:" too.
func TestConsoleMarkdownIsInert(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	title, _ := json.Marshal(map[string]string{"title": "\x000\x00\"><img src=x onerror=document.title='pwned'> Sources: evil"})
	const answer = "https://x[a](https://y/onmouseover=document.title='pwned'//) and [b](https://z/onmouseover=document.title='pwned'//) [1].\n" +
		"[c](javascript:alert(1)) [d](data:text/html,<script>alert(1)</script>) \"><img src=x onerror=document.title='pwned'>\n" +
		"[e [f](https://w/)](https://v/) &amp; &lt;b&gt;x&lt;/b&gt; `&amp;` arr[0] see [2] <sup>1</sup>"
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: string(title)}}},
		fakellm.Turn{Text: answer},
	)
	c, b, _ := uiConsole(t, "inert", llm, "")
	b.Visit(c.url + "#/chat")
	b.Eval(`window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)), true`, nil)
	send(t, b, "Render this.")
	waitFor(t, b, "the answer with its sources", `document.querySelector('[data-testid="answer"]') && document.querySelector('[data-testid="sources"]') && document.querySelector('.chip')`)
	var bad []string
	b.Eval(`(() => {
		const allowed = new Set(['href', 'title', 'class', 'data-testid', 'data-ref', 'target', 'rel']), bad = [];
		for (const el of document.querySelector('[data-testid="answer"]').querySelectorAll('*')) {
			for (const a of el.attributes) if (!allowed.has(a.name)) bad.push(el.tagName + ' ' + a.name + '=' + a.value);
			if (el.tagName !== 'A' && el.tagName !== 'P' && el.tagName !== 'SUP' && el.tagName !== 'CODE' && el.tagName !== 'BR') bad.push('element ' + el.tagName);
			const href = el.getAttribute('href');
			if (href != null && !/^https?:\/\//.test(href) && !(href === '#' && el.dataset.testid === 'citation')) bad.push('href ' + href);
		}
		if (document.title.includes('pwned')) bad.push('title ' + document.title);
		return bad.concat(window.__csp);
	})()`, &bad)
	if len(bad) > 0 {
		t.Errorf("the answer is not inert:\n%s\n%s", strings.Join(bad, "\n"), b.Text(sel("answer")))
	}
	got := b.Text(sel("answer"))
	for _, want := range []string{"javascript:alert(1)", "<img src=x onerror=", "& <b>x</b> &amp; arr[0] see [2]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the answer lacks %q as text:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Sources:") {
		t.Errorf("the host's Sources list is in the answer:\n%s", got)
	}
	if n := b.Count(sel("answer") + ` ` + sel("citation")); n != 2 {
		t.Errorf("%d citation links, want 2 (the [1] and the <sup>1</sup> of the one source)", n)
	}
	b.AssertNoErrors()
}

// lateAnswer is a script for Browser.OnNewDocument: the run's answer entry, the entries after it (so that they keep
// their order) and the end reach the page 600 ms late, as on a slow network. window.__refs says when the page was
// handed the answer (and its references).
const lateAnswer = `(() => {
	window.__refs = false;
	let hold = false;
	const add = EventSource.prototype.addEventListener;
	EventSource.prototype.addEventListener = function (type, fn, ...rest) {
		const late = (m) => setTimeout(() => { window.__refs = true; fn.call(this, m); }, 600);
		const wrapped = type === 'end' ? late : type === 'entry' ? (m) => { if (JSON.parse(m.data).kind === 'answer') hold = true; return hold ? late(m) : fn.call(this, m); } : fn;
		return add.call(this, type, wrapped, ...rest);
	};
})()`

// streamLateAnswer runs, in the console of the agent name, a chat whose model calls fx_cite, then streams answer in
// deltas of chunk runes every 60 ms, with the answer entry and what follows it late (lateAnswer). While it runs,
// snapshot (statements, with `a` the answer's element) is run at each change of the chat and may push to
// window.__seen. It returns once the run ended.
func streamLateAnswer(t *testing.T, name, answer string, chunk int, snapshot string) *browser.Browser {
	t.Helper()
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}},
		fakellm.Turn{Text: answer, ChunkSize: chunk, ChunkDelay: 60 * time.Millisecond},
	)
	c, b, _ := uiConsole(t, name, llm, "")
	b.OnNewDocument(lateAnswer)
	b.Visit(c.url + "#/chat")
	b.WaitVisible(sel("chat-input"))
	b.Eval(`window.__seen = []; new MutationObserver(() => {
		const a = document.querySelector('[data-testid="answer"]'); if (!a) return;
		`+snapshot+`
	}).observe(document.querySelector('.chat-col'), { childList: true, subtree: true, characterData: true }), true`, nil)
	send(t, b, "What does it say?")
	waitFor(t, b, "the run ended", `document.querySelector('.chip')`)
	return b
}

// TestConsoleStreams: the answer grows on the page in steps as the model streams it, each a prefix of the final
// text; the text the host sends after the model call (here the held-back "(like this)") continues the paragraph
// and never shows as a paragraph of its own.
func TestConsoleStreams(t *testing.T) {
	const answer = "The fixture says hello, and this answer goes on for a while so that it streams in steps (like this)"
	// The answer entry and the end arrive late, so that the page shows what it streamed after the model call (the
	// host's " (like this)", under the root run) before the final answer replaces it.
	b := streamLateAnswer(t, "streamer", answer, 8, `const s = a.textContent + '|' + a.querySelectorAll('p').length;
		if (window.__seen[window.__seen.length - 1] !== s) window.__seen.push(s);`)
	final := b.Text(sel("answer"))
	if final != answer {
		t.Fatalf("the answer reads %q, want %q", final, answer)
	}
	var seen []string
	b.Eval(`window.__seen`, &seen)
	steps := 0
	for _, s := range seen {
		text, paras, _ := strings.Cut(s, "|")
		if paras != "1" && text != "" {
			t.Errorf("the answer showed %s paragraphs: %q", paras, text)
		}
		if !strings.HasPrefix(answer, text) {
			t.Errorf("the page showed %q, not a prefix of the answer", text)
		}
		if text != "" && len(text) < len(answer) {
			steps++
		}
	}
	if steps < 3 {
		t.Errorf("the answer grew in %d visible steps before it was complete, want 3 or more: %q", steps, seen)
	}
	b.AssertNoErrors()
}

// TestConsoleStopWhileApprovalWaits: Stop while an approval waits ends the run; the card's buttons go and it says
// the run ended before an answer.
func TestConsoleStopWhileApprovalWaits(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "fx_shout", Arguments: `{"text":"never"}`}}})
	c, b, _ := uiConsole(t, "halted", llm, "[tools.\"fx_shout\"]\nrequire_approval = true\n")
	b.Visit(c.url + "#/chat")
	send(t, b, "Shout never.")
	b.WaitVisible(sel("approve"))
	b.Click(sel("chat-stop"))
	waitFor(t, b, "the run cancelled", `[...document.querySelectorAll('.chip')].some((c) => c.textContent === 'cancelled')`)
	waitFor(t, b, "the approval marked ended", `document.querySelector('.approval [data-testid="approval-ended"]')`)
	if n := b.Count(sel("approve")) + b.Count(sel("deny")); n != 0 {
		t.Errorf("%d approval buttons left after the run ended", n)
	}
	if got := b.Text(sel("run-state")); strings.Contains(got, "Waiting") {
		t.Errorf("the run's state reads %q after it ended", got)
	}
	b.AssertNoErrors()
}

// TestConsoleChatKeyboard: the History menu moves with the arrow keys, Enter picks, Escape closes it and gives the
// focus back to its button; the Options drawer keeps Tab within itself and gives the focus back when closed.
func TestConsoleChatKeyboard(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: "First."}, fakellm.Turn{Text: "Second."})
	c, b, _ := uiConsole(t, "keys", llm, "")
	b.Visit(c.url + "#/chat")
	for _, m := range []string{"one", "two"} {
		send(t, b, m)
		waitFor(t, b, "the answer", `document.querySelector('.chip') && !document.querySelector('[data-testid="chat-stop"]:not([hidden])')`)
		b.Click(sel("chat-new"))
	}
	key := func(k string) {
		b.Eval(`document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: `+jsString(k)+`, bubbles: true, cancelable: true })), true`, nil)
	}
	focused := func() string {
		var s string
		b.Eval(`(() => { const a = document.activeElement; const items = [...document.querySelectorAll('.popover [role="menuitem"]')];
			return items.includes(a) ? 'item' + items.indexOf(a) : a.closest('.drawer') ? 'drawer' : a.textContent.trim() || a.tagName; })()`, &s)
		return s
	}
	b.Click(`button[aria-haspopup="true"]`)
	waitFor(t, b, "two conversations in History", `document.querySelectorAll('.popover [role="menuitem"]').length === 2`)
	for _, step := range []struct{ key, want string }{{"ArrowDown", "item1"}, {"ArrowDown", "item0"}, {"ArrowUp", "item1"}, {"Escape", "History"}} {
		key(step.key)
		if got := focused(); got != step.want {
			t.Errorf("after %s the focus is on %q, want %q", step.key, got, step.want)
		}
	}
	b.Click(`button[aria-haspopup="true"]`)
	waitFor(t, b, "History open again", `document.activeElement.getAttribute('role') === 'menuitem'`)
	key("Enter")
	waitFor(t, b, "the picked conversation", `document.querySelector('.popover').hidden && document.querySelector('.chat-col').textContent.includes('.')`)

	b.Click(`button[aria-controls="chat-options"]`)
	waitFor(t, b, "the drawer's tools", `document.querySelector('#chat-options input[type="checkbox"]')`)
	// Tab is dispatched; unless the page takes it, the focus moves on in document order, as the browser would.
	for i := range 40 {
		b.Eval(`(() => { const e = new KeyboardEvent('keydown', { key: 'Tab', bubbles: true, cancelable: true }); document.activeElement.dispatchEvent(e);
			if (!e.defaultPrevented) { const f = [...document.querySelectorAll('button, input, textarea, select, a[href]')].filter((x) => x.offsetParent !== null);
			f[(f.indexOf(document.activeElement) + 1) % f.length].focus(); } return true; })()`, nil)
		if got := focused(); got != "drawer" {
			t.Fatalf("after %d Tabs the focus left the drawer for %q", i+1, got)
		}
	}
	key("Escape")
	if got := focused(); got != "Options" {
		t.Errorf("after Escape the focus is on %q, want the Options button", got)
	}
	b.AssertNoErrors()
}

// TestConsolePeerSteps: a call to an A2A peer that is another agenthost shows, nested under its step, the tool calls
// of the peer's own run, as the peer's answer reported them.
func TestConsolePeerSteps(t *testing.T) {
	modelB := fakellm.New()
	t.Cleanup(modelB.Close)
	modelB.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "b1", Name: "fx_shout", Arguments: `{"text":"peer"}`}}},
		fakellm.Turn{Text: "B shouted PEER."},
	)
	peer := startServeA2A(t, []string{"TEST_KEY=sk-b"}, "serve", "--config", a2aConfig(t, t.TempDir(), "b", modelB.URL, ""), "--a2a", "127.0.0.1:0")
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "b", Arguments: `{"message":"Shout peer."}`}}},
		fakellm.Turn{Text: "B shouted for us."},
	)
	c, b, _ := uiConsole(t, "caller", llm, fmt.Sprintf("\n[a2a.peers.b]\nurl = %q\nrequired = true\n", peer.base))
	b.Visit(c.url + "#/chat")
	send(t, b, "Ask B to shout.")
	waitFor(t, b, "the peer's own call nested under its step",
		`document.querySelector('[data-testid="tool-step"][data-name="b"][data-state="ok"] [data-testid="peer-step"][data-name="fx_shout"][data-state="ok"]')`)
	waitFor(t, b, "the answer", `document.querySelector('[data-testid="answer"]')?.textContent.includes('B shouted for us')`)
	if got := b.Text(sel("tool-step", `[data-name="b"] .step-sub`)); !strings.Contains(got, "peer b ran 1 tool call") {
		t.Errorf("the peer step's label reads %q", got)
	}
	shot(t, b, "console-peer")
	b.AssertNoErrors()
}

// TestConsoleChatPendingCitations: while an answer that cites a tool's reference streams, its marker shows as a
// pending citation (no link, no href) as soon as it streams, and becomes the citation link once the answer's
// references arrive; no citation is a link before they do.
func TestConsoleChatPendingCitations(t *testing.T) {
	const answer = "The document says hello [1]. It was written for this test, and it greets whoever reads it, slowly."
	// The answer entry (with the references) and the end arrive late: the page shows the streamed marker before it
	// knows the source.
	b := streamLateAnswer(t, "pending", answer, 6, `const pending = [...a.querySelectorAll('[data-testid="citation-pending"]')];
		window.__seen.push({ Refs: window.__refs, Links: a.querySelectorAll('a').length, Pending: pending.length,
			Linked: pending.some((p) => p.closest('a') || p.querySelector('a') || p.hasAttribute('href')), Ref: pending.map((p) => p.dataset.ref).join(',') });`)
	var seen []struct {
		Refs, Linked   bool
		Links, Pending int
		Ref            string
	}
	b.Eval(`window.__seen`, &seen)
	pendingSeen := false
	for _, s := range seen {
		if !s.Refs && s.Links > 0 {
			t.Errorf("the answer held %d links before its references arrived: %+v", s.Links, s)
		}
		if s.Linked {
			t.Errorf("a pending citation is a link: %+v", s)
		}
		if s.Pending > 0 && !s.Refs {
			pendingSeen = true
			if s.Ref != "1" {
				t.Errorf("pending citations %q, want the one [1]", s.Ref)
			}
		}
	}
	if !pendingSeen {
		t.Errorf("the streamed [1] never showed as a pending citation before the references arrived: %+v", seen)
	}
	if n := b.Count(sel("answer") + ` ` + sel("citation", `[data-ref="1"][href="#"]`)); n != 1 {
		t.Errorf("%d citation links [1] in the final answer, want 1", n)
	}
	if n := b.Count(sel("answer") + ` ` + sel("citation-pending")); n != 0 {
		t.Errorf("%d pending citations left in the final answer", n)
	}
	if got := b.Text(sel("answer")); got != strings.Replace(answer, " [1]", "1", 1) {
		t.Errorf("the answer reads %q", got)
	}
	b.AssertNoErrors()
}

// TestConsoleChatStreamClosed: the chat's event stream of a run that goes is closed by the page itself when the view
// is left (and followed again, to the answer, when it is shown again), and at once when the page signs out: the
// stream is closed, not refused by the server.
func TestConsoleChatStreamClosed(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: "Answered after the view came back.", Latency: 2 * time.Second}, fakellm.Turn{Text: "Never shown.", Latency: 3 * time.Second})
	const token = "chat-stream-token"
	c, b, _ := uiConsole(t, "streamed", llm, "\n[serve]\nauth_token_env = \"UI_TEST_TOKEN\"\n", "UI_TEST_TOKEN="+token)
	// Every EventSource the page makes, with the errors it saw.
	b.OnNewDocument(`(() => {
		const ES = window.EventSource; window.__es = [];
		window.EventSource = class extends ES {
			constructor(url, init) { super(url, init); const rec = { url: String(url), es: this, errors: 0 }; window.__es.push(rec); this.addEventListener('error', () => rec.errors++); }
		};
	})()`)
	b.Visit(c.url + "#/chat")
	b.SendKeys(sel("login-token"), token)
	b.Click(sel("login-submit"))
	const runStreams = `window.__es.filter((r) => /\/api\/runs\/[^/]+\/events/.test(r.url))`
	send(t, b, "first")
	waitFor(t, b, "the run's stream open", runStreams+`.some((r) => r.es.readyState === 1)`)
	b.Eval(`location.hash = '#/runs'`, nil)
	waitFor(t, b, "the runs view", `document.querySelector('[data-testid="run-row"]')?.offsetParent`)
	var open int
	b.Eval(runStreams+`.filter((r) => r.es.readyState !== 2).length`, &open)
	if open != 0 {
		t.Errorf("%d chat event streams still open after the view was left, want 0", open)
	}
	b.Eval(`location.hash = '#/chat'`, nil)
	waitFor(t, b, "the answer, followed again", `document.querySelector('[data-testid="answer"]')?.textContent.includes('Answered after the view came back.') && document.querySelector('.chip')`)

	send(t, b, "second")
	waitFor(t, b, "the second run's stream open", runStreams+`.some((r) => r.es.readyState === 1 && r.url.includes('after=0'))`)
	// The session ends behind the page's back; the History menu's request meets the 401 and the page signs out.
	b.Eval(`fetch('/api/session').then((r) => r.json()).then((s) => fetch('/api/logout', { method: 'POST', headers: { 'X-CSRF-Token': s.csrf } })).then((r) => r.status)`, nil)
	b.Click(`button[aria-haspopup="true"]`)
	waitFor(t, b, "the sign-in card", `document.querySelector('[data-testid="login-token"]')`)
	var streams []struct {
		URL    string
		State  int
		Errors int
	}
	b.Eval(runStreams+`.map((r) => ({ URL: r.url, State: r.es.readyState, Errors: r.errors }))`, &streams)
	if len(streams) == 0 {
		t.Fatal("the page made no run event stream")
	}
	for _, s := range streams {
		if s.State != 2 || s.Errors != 0 {
			t.Errorf("the stream %s is in state %d with %d errors once the page signed out, want closed (2) by the page, with none", s.URL, s.State, s.Errors)
		}
	}
	for _, e := range b.Errors() {
		if !strings.Contains(e, "status of 401") {
			t.Errorf("the page logged %q", e)
		}
	}
}

// TestConsoleChatLeftWhileSending: a message whose POST /api/chat is still on its way when the Chat view is left
// opens no event stream while the view is hidden, and is followed once it is shown again; a run the server no
// longer keeps by the time the view comes back (answered 404, as a run dropped past the runs kept is) ends its turn
// with a note, and the chat takes the next message.
func TestConsoleChatLeftWhileSending(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	llm.Enqueue(fakellm.Turn{Text: "Sent while away."}, fakellm.Turn{Text: "Gone meanwhile.", Latency: 2 * time.Second}, fakellm.Turn{Text: "Third."})
	c, b, _ := uiConsole(t, "away", llm, "")
	// The page's requests: POST /api/chat waits for window.__release while window.__hold is set; with window.__gone
	// set, the reads of a run and its event stream go to a run the server does not know. Each EventSource is
	// recorded with the view shown when it was made.
	b.OnNewDocument(`(() => {
		const f = window.fetch;
		window.fetch = async (u, init) => {
			if (window.__hold && String(u).endsWith('/api/chat')) await new Promise((r) => { window.__release = r; });
			if (window.__gone && /\/api\/runs\/[^/?]+$/.test(String(u))) u = '/api/runs/no-such-run';
			return f(u, init);
		};
		const ES = window.EventSource; window.__es = [];
		window.EventSource = class extends ES {
			constructor(url, init) {
				if (window.__gone && /\/api\/runs\/[^/]+\/events/.test(String(url))) url = '/api/runs/no-such-run/events';
				super(url, init);
				window.__es.push({ url: String(url), es: this, view: location.hash });
			}
		};
	})()`)
	b.Visit(c.url + "#/chat")
	const runStreams = `window.__es.filter((r) => /\/api\/runs\/[^/]+\/events/.test(r.url))`
	b.Eval(`window.__hold = true`, nil)
	send(t, b, "first")
	waitFor(t, b, "the message on its way", `typeof window.__release === 'function'`)
	b.Eval(`location.hash = '#/runs'`, nil)
	waitFor(t, b, "the runs view", `[...document.querySelectorAll('.view-head h1')].some((h) => h.offsetParent && h.textContent === 'Runs')`)
	b.Eval(`window.__hold = false; window.__release(); true`, nil)
	// The page has the run's id once the turn streams; with the view hidden it must not follow it yet.
	waitFor(t, b, "the turn given its run, the view hidden", `document.querySelector('[data-testid="answer"]')?.classList.contains('streaming')`)
	waitFor(t, b, "the first run's end on the server", `fetch('/api/runs').then((r) => r.json()).then((j) => j.runs?.length === 1 && j.runs[0].status !== 'running')`)
	var hidden []string
	b.Eval(runStreams+`.map((r) => r.url)`, &hidden)
	if len(hidden) != 0 {
		t.Errorf("event streams opened while the Chat view was hidden: %q", hidden)
	}
	b.Eval(`location.hash = '#/chat'`, nil)
	waitFor(t, b, "the answer, followed once the view is back", `document.querySelector('[data-testid="answer"]')?.textContent.includes('Sent while away.') && document.querySelector('.chip')`)

	send(t, b, "second")
	waitFor(t, b, "the second run's stream open", runStreams+`.some((r) => r.es.readyState === 1 && r.url.includes('after=0'))`)
	b.Eval(`location.hash = '#/runs'`, nil)
	waitFor(t, b, "the runs view again", `document.querySelector('[data-testid="run-row"]')?.offsetParent`)
	b.Eval(`window.__gone = true`, nil)
	b.Eval(`location.hash = '#/chat'`, nil)
	waitFor(t, b, "the turn ended with a note", `[...document.querySelectorAll('.error-note')].some((n) => n.textContent.includes('no longer kept')) && document.querySelector('[data-testid="chat-stop"]').hidden`)
	b.Eval(`window.__gone = false`, nil)
	send(t, b, "third")
	waitFor(t, b, "the next message answered", `document.querySelector('[data-testid="answer"]')?.textContent.includes('Third.')`)
	for _, e := range b.Errors() {
		if !strings.Contains(e, "status of 404") {
			t.Errorf("the page logged %q", e)
		}
	}
}

// TestConsoleChatDroppedAtSignOut: the Chat view the page drops when it signs out stops listening to the page's
// events: after signing in again, one chat hears of a deleted conversation, not the dropped one too.
func TestConsoleChatDroppedAtSignOut(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	const token = "chat-dropped-token"
	c, b, _ := uiConsole(t, "dropped", llm, "\n[serve]\nauth_token_env = \"UI_TEST_TOKEN\"\n", "UI_TEST_TOKEN="+token)
	// The listeners of conversation deletions the page keeps on document.
	b.OnNewDocument(`(() => {
		window.__deleted = new Set();
		const add = document.addEventListener, remove = document.removeEventListener;
		document.addEventListener = function (type, fn, ...rest) { if (type === 'agenthost:conversation-deleted') window.__deleted.add(fn); return add.call(this, type, fn, ...rest); };
		document.removeEventListener = function (type, fn, ...rest) { if (type === 'agenthost:conversation-deleted') window.__deleted.delete(fn); return remove.call(this, type, fn, ...rest); };
	})()`)
	login := func() {
		t.Helper()
		b.SendKeys(sel("login-token"), token)
		b.Click(sel("login-submit"))
		b.WaitVisible(sel("chat-input"))
	}
	b.Visit(c.url + "#/chat")
	login()
	var n int
	if b.Eval(`window.__deleted.size`, &n); n != 1 {
		t.Fatalf("%d listeners of deletions with one chat, want 1", n)
	}
	// The session ends behind the page's back; the History menu's request meets the 401 and the page signs out.
	b.Eval(`fetch('/api/session').then((r) => r.json()).then((s) => fetch('/api/logout', { method: 'POST', headers: { 'X-CSRF-Token': s.csrf } })).then((r) => r.status)`, nil)
	b.Click(`button[aria-haspopup="true"]`)
	waitFor(t, b, "the sign-in card", `document.querySelector('[data-testid="login-token"]')`)
	login()
	if b.Eval(`window.__deleted.size`, &n); n != 1 {
		t.Errorf("%d listeners of deletions after signing in again, want 1: the dropped chat still listens", n)
	}
}
