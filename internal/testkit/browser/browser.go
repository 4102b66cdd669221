// Package browser is test support: it drives a real, headless Chromium (Debian's chromium package, which `make
// test` installs) through chromedp, for the web console's end-to-end tests. Start launches a browser that lives as
// long as the test and dies with it, child processes included; each helper has a timeout and, when it fails, fails
// the test with what the page shows and the errors it logged. The page's console errors and uncaught exceptions are
// collected, for AssertNoErrors.
//
// No product package may import it (internal/testkit/deps), and chromedp is linked by nothing else.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// DefaultTimeout bounds each helper, until Browser.Timeout says otherwise.
const DefaultTimeout = 10 * time.Second

// startTimeout bounds launching the browser and opening its first tab.
const startTimeout = 60 * time.Second

// Browser is a tab of a headless Chromium. Its helpers fail the test they were started with; use it from the test's
// goroutine only.
type Browser struct {
	// Timeout bounds each helper; Start sets DefaultTimeout.
	Timeout time.Duration

	t      testing.TB
	ctx    context.Context // the tab's
	cancel context.CancelFunc
	proc   *process

	// root is the tab Start returned, whose context owns the browser.
	root bool

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions and error entries of the browser log, in order
}

// process is the browser process a Browser and its tabs share.
type process struct {
	dataDir     string
	cmd         *exec.Cmd // set by chromedp before it starts the browser
	allocCancel context.CancelFunc
	closeOnce   sync.Once
}

// ExecPath returns the Chromium binary the tests run: $AGENTHOST_CHROMIUM, else chromium on the PATH.
func ExecPath() (string, error) {
	if p := os.Getenv("AGENTHOST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("browser: AGENTHOST_CHROMIUM: %w", err)
		}
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("browser: %w", err)
	}
	return p, nil
}

// Start launches a headless Chromium for t, with a fresh profile in a temporary directory, and returns its first
// tab. The browser and every process it started are killed when the test ends (or at Close). Without Chromium the
// test fails: it is never skipped.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := ExecPath()
	if err != nil {
		t.Fatalf("%v: the browser tests need Chromium: run `make test` (it installs Debian's chromium package), or set AGENTHOST_CHROMIUM to a Chromium binary", err)
	}
	p := &process{dataDir: t.TempDir()}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root in CI, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(p.dataDir),
		chromedp.WindowSize(1400, 900),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, so that Close can kill the browser with every child it started; and killed if
			// the test binary dies first.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			p.cmd = cmd
		}),
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	p.allocCancel = allocCancel
	b := newTab(t, allocCtx, p)
	b.root = true
	t.Cleanup(b.closeProcess)

	// The first action starts the browser and must run under a context without a deadline (which would end the
	// browser with it): bound it from outside instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(b.ctx) }()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		err = fmt.Errorf("no tab after %s", startTimeout)
	}
	if err == nil {
		err = b.listen()
	}
	if err != nil {
		b.closeProcess()
		t.Fatalf("browser: starting %s: %v", path, err)
	}
	return b
}

// newTab returns a Browser over a new tab of parent's browser (its first when parent has none yet).
func newTab(t testing.TB, parent context.Context, p *process) *Browser {
	ctx, cancel := chromedp.NewContext(parent)
	return &Browser{Timeout: DefaultTimeout, t: t, ctx: ctx, cancel: cancel, proc: p}
}

// NewTab opens another tab of the same browser, with its own record of errors. It closes with the browser.
func (b *Browser) NewTab() *Browser {
	b.t.Helper()
	tab := newTab(b.t, b.ctx, b.proc)
	tab.Timeout = b.Timeout
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(tab.ctx) }() // the first action opens the tab: no deadline on its context
	var err error
	select {
	case err = <-opened:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		err = tab.listen()
	}
	if err != nil {
		b.t.Fatalf("browser: opening a tab: %v", err)
	}
	return tab
}

// listen collects the tab's errors. chromedp calls the function on the tab's reading goroutine before it reads the
// next message, so an error the page logs before an action returns is recorded when it returns.
func (b *Browser) listen() error {
	return chromedp.Listen(b.ctx, func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			problem = "uncaught: " + d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				problem += " " + d.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
				return
			}
			parts := make([]string, 0, len(ev.Args))
			for _, a := range ev.Args {
				parts = append(parts, describe(a))
			}
			problem = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		case *log.EventEntryAdded:
			// A page without an icon makes the browser ask for /favicon.ico on its own: not the page's error.
			if ev.Entry.Level != log.EntryLevelError || strings.HasSuffix(ev.Entry.URL, "/favicon.ico") {
				return
			}
			problem = "log: " + ev.Entry.Text
			if ev.Entry.URL != "" {
				problem += " (" + ev.Entry.URL + ")"
			}
		default:
			return
		}
		b.mu.Lock()
		b.problems = append(b.problems, problem)
		b.mu.Unlock()
	})
}

// describe renders an argument of a console call as the console would, roughly.
func describe(o *runtime.RemoteObject) string {
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	return o.Description
}

// Errors returns the console errors, uncaught exceptions and error entries of the browser log (a resource that
// failed to load, say; but not the icon the browser asks for on its own) the tab has had so far, in order.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// AssertNoErrors fails the test, listing them, when the tab has had console errors or uncaught exceptions.
func (b *Browser) AssertNoErrors() {
	b.t.Helper()
	if errs := b.Errors(); len(errs) > 0 {
		b.t.Errorf("browser: the page had errors (%d):\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
}

// do runs an action on the tab within the timeout, failing the test with the page's state when it fails.
func do[T any](b *Browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("not done after %s: %w", b.Timeout, err)
		}
		b.t.Fatalf("browser: %s: %v\n%s", what, err, b.dump())
	}
	return v
}

// dump describes the tab for a failure: its address, its text and its errors.
func (b *Browser) dump() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	var sb strings.Builder
	if url, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		fmt.Fprintf(&sb, "--- page %s\n", url)
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); err == nil {
		const max = 4000
		if len(text) > max {
			text = text[:max] + "…"
		}
		fmt.Fprintf(&sb, "--- text\n%s\n", text)
	}
	if errs := b.Errors(); len(errs) > 0 {
		fmt.Fprintf(&sb, "--- errors\n%s\n", strings.Join(errs, "\n"))
	}
	return sb.String()
}

// Visit loads url in the tab and waits for it to load.
func (b *Browser) Visit(url string) {
	b.t.Helper()
	do(b, "visit "+url, chromedp.Navigate(url))
}

// WaitVisible waits until an element matching the CSS selector is visible.
func (b *Browser) WaitVisible(selector string) {
	b.t.Helper()
	do(b, "wait for "+selector+" to be visible", chromedp.WaitVisible(chromedp.CSS(selector)))
}

// Click clicks the first element matching the CSS selector, once it is visible.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	do(b, "click "+selector, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// SendKeys types keys into the first element matching the CSS selector, once it is visible (kb.Enter and the other
// keys of github.com/chromedp/chromedp/kb type special keys).
func (b *Browser) SendKeys(selector, keys string) {
	b.t.Helper()
	do(b, "type into "+selector, chromedp.SendKeys(chromedp.CSS(selector), keys, chromedp.NodeVisible))
}

// Text returns the visible text of the first element matching the CSS selector, once there is one.
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	return do(b, "read the text of "+selector, chromedp.Text(chromedp.CSS(selector)))
}

// Count returns how many elements match the CSS selector now (it does not wait).
func (b *Browser) Count(selector string) int {
	b.t.Helper()
	expr := "document.querySelectorAll(" + strconv.Quote(selector) + ").length"
	return do(b, "count "+selector, chromedp.Evaluate[int](expr))
}

// Eval evaluates the JavaScript expression in the page (awaiting a promise) and decodes its JSON value into out (a
// pointer; nil ignores the value).
func (b *Browser) Eval(js string, out any) {
	b.t.Helper()
	raw := do(b, "evaluate "+js, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
	if out == nil {
		return
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("browser: evaluate %s: decoding %s: %v", js, raw, err)
	}
}

// Screenshot writes a PNG of the tab's viewport to name.png in the test's artifact directory (t.ArtifactDir: kept
// under the output directory with go test -artifacts -outputdir DIR, removed after the test otherwise) and returns
// its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png := do(b, "screenshot "+name, chromedp.CaptureScreenshot())
	path := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	return path
}

// Close closes the browser and kills every process it started; on a tab from NewTab, it closes that tab only. The
// test's cleanup calls it; calling it again does nothing.
func (b *Browser) Close() {
	if b.root {
		b.closeProcess()
		return
	}
	b.cancel()
}

// closeProcess closes the browser, gracefully for a moment, then kills its process group and every process left
// that has its profile directory (Chromium hands --user-data-dir to each child).
func (b *Browser) closeProcess() {
	b.proc.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		chromedp.Cancel(ctx) // closes the browser; its error (one already gone) changes nothing below
		cancel()
		b.cancel()
		b.proc.allocCancel() // kills the browser process if it is still there, and waits for it
		if c := b.proc.cmd; c != nil && c.Process != nil {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		// A child can fork as its parent dies: look again until a few passes find nothing.
		deadline := time.Now().Add(5 * time.Second)
		for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			pids := b.proc.processes()
			if len(pids) == 0 {
				quiet++
				continue
			}
			quiet = 0
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// processes returns the processes of the browser still alive: those of its process group and those that use its
// profile directory. A zombie, whose command line is empty, is not counted: it is dead and waits for its parent.
func (p *process) processes() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	group := 0
	if p.cmd != nil && p.cmd.Process != nil {
		group = p.cmd.Process.Pid
	}
	want := []byte("--user-data-dir=" + p.dataDir)
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		if slices.ContainsFunc(bytes.Split(cmdline, []byte{0}), func(arg []byte) bool { return bytes.Equal(arg, want) }) || group != 0 && pgid(pid) == group {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pgid returns the process group of pid, or 0.
func pgid(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so count from its last ")".
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(fields[2])
	return g
}
