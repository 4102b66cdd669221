package main

// Helpers of the web console's browser tests (console_e2e_test.go): a console child process that a test can stop
// and start again, a wait on the page's state, and the screenshots.

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/browser"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "copy the console's chat and timeline screenshots to docs/")

// docScreenshots are the screenshots -update-screenshots copies to the repository's docs folder, by name.
var docScreenshots = map[string]string{"console-chat": "console-chat.png", "console-timeline": "console-timeline.png"}

// consoleChild is a running agenthost that serves the console.
type consoleChild struct {
	t      *testing.T
	url    string // the console's base URL, ending in "/"
	log    *watchedLog
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	done   bool
}

// startConsole starts the binary with args, which must make it serve the console, with env added to the test's
// environment, and waits for the line that says where. The test's cleanup stops it, if the test did not.
func startConsole(t *testing.T, env []string, args ...string) *consoleChild {
	t.Helper()
	return startConsoleUntil(t, consoleLineWhole, env, args...)
}

// consoleLineWhole is consoleLine, its submatch the whole line.
var consoleLineWhole = regexp.MustCompile(`(agenthost: console at http://\S+/)`)

// servingBoth matches the lines of `serve --http --ui` once both are written, in either order.
var servingBoth = regexp.MustCompile(`(?s)(serving MCP at \S+.*agenthost: console at \S+|agenthost: console at \S+.*serving MCP at \S+)`)

// startConsoleUntil is startConsole, which waits until the process's stderr matches re: its first submatch must hold
// the console's line.
func startConsoleUntil(t *testing.T, re *regexp.Regexp, env []string, args ...string) *consoleChild {
	t.Helper()
	const limit = 30 * time.Second
	c := &consoleChild{t: t, exited: make(chan struct{})}
	c.cmd = exec.Command(binary, args...)
	c.cmd.Env = append(testEnv(), env...)
	c.log = &watchedLog{found: make(chan string, 1), re: re}
	c.cmd.Stderr = c.log
	c.cmd.WaitDelay = 10 * time.Second
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("agenthost %s stderr:\n%s", args, c.log.String())
		}
	})
	select {
	case match := <-c.log.found:
		m := consoleLine.FindStringSubmatch(match)
		if m == nil {
			t.Fatalf("agenthost %s: no console address in %q", args, match)
		}
		c.url = m[1]
		return c
	case <-c.exited:
		t.Fatalf("agenthost %s exited before it served: %v\n%s", args, c.err, c.log.String())
	case <-time.After(limit):
		t.Fatalf("agenthost %s did not say where it serves within %v", args, limit)
	}
	return nil
}

// stop interrupts the process and waits for it, which must exit with code 0.
func (c *consoleChild) stop() {
	c.t.Helper()
	if c.done {
		return
	}
	c.done = true
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Errorf("interrupting agenthost: %v", err)
	}
	select {
	case <-c.exited:
		if c.err != nil {
			c.t.Errorf("agenthost exited with %v after SIGINT", c.err)
		}
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
		c.t.Errorf("agenthost did not exit within 30s of SIGINT")
	}
}

// waitFor waits until the JavaScript expression cond is true in the page, polling it there; it fails the test with
// what when the browser's timeout passes first.
func waitFor(t *testing.T, b *browser.Browser, what, cond string) {
	t.Helper()
	limit := int((b.Timeout - time.Second) / time.Millisecond)
	js := `new Promise((resolve) => { const t0 = Date.now(); const f = () => { let ok = false; try { ok = !!(` + cond + `); } catch (e) {}
		if (ok) return resolve(true); if (Date.now() - t0 > ` + strconv.Itoa(limit) + `) return resolve(false); setTimeout(f, 20); }; f(); })`
	var ok bool
	b.Eval(js, &ok)
	if !ok {
		var text string
		b.Eval(`document.body ? document.body.innerText : ""`, &text)
		t.Fatalf("the page never showed %s (%s); it shows:\n%s\nerrors: %q", what, cond, text, b.Errors())
	}
}

// sel returns the CSS selector of a data-testid, with more appended.
func sel(testid string, more ...string) string {
	s := `[data-testid="` + testid + `"]`
	for _, m := range more {
		s += m
	}
	return s
}

// shot writes a screenshot of the tab to the test's artifacts; with -update-screenshots, the chat and timeline
// screenshots are copied to docs/ too.
func shot(t *testing.T, b *browser.Browser, name string) {
	t.Helper()
	// Let the page settle: fonts, the last frame's layout.
	b.Eval(`document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))))`, nil)
	path := b.Screenshot(name)
	doc, ok := docScreenshots[name]
	if !ok || !*updateScreenshots {
		return
	}
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", doc), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/%s", doc)
}

// setTheme sets the page's theme to "light" or "dark" with the rail's toggle.
func setTheme(t *testing.T, b *browser.Browser, theme string) {
	t.Helper()
	setThemeWith(t, b, "theme-toggle", theme)
}

// setThemeWith sets the page's theme to "light" or "dark" with the toggle of that data-testid.
func setThemeWith(t *testing.T, b *browser.Browser, testid, theme string) {
	t.Helper()
	for range 3 {
		var cur string
		b.Eval(`document.documentElement.dataset.theme || ''`, &cur)
		if cur != "light" && cur != "dark" {
			t.Fatalf("the page's theme is %q: theme.js sets the chosen or the system's before the first paint", cur)
		}
		if cur == theme {
			return
		}
		b.Click(sel(testid))
	}
	t.Fatalf("the theme toggle never made the page %s", theme)
}
