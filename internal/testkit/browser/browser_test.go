package browser

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

const page = `<!doctype html>
<html><head><title>harness</title></head>
<body>
<p id="status">waiting</p>
<button id="go" onclick="document.getElementById('status').textContent = 'clicked ' + document.getElementById('name').value">Go</button>
<input id="name">
<ul><li>a</li><li>b</li><li>c</li></ul>
</body></html>`

const broken = `<!doctype html>
<html><body><p id="ok">loaded</p>
<script>console.error("the console says no"); setTimeout(() => { throw new Error("boom") }, 0);</script>
</body></html>`

func server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			io.WriteString(w, page)
		case "/broken":
			io.WriteString(w, broken)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowser drives a page through every helper, and records a second page's console error and uncaught
// exception, which the first page does not have. It also measures Start: the first launch of this test process
// (cold) and a second one (warm).
func TestBrowser(t *testing.T) {
	srv := server(t)
	began := time.Now()
	b := Start(t)
	cold := time.Since(began)

	b.Visit(srv.URL)
	b.WaitVisible("#go")
	if got := b.Text("#status"); got != "waiting" {
		t.Errorf("status %q before the click", got)
	}
	b.SendKeys("#name", "Ada")
	b.Click("#go")
	if got := b.Text("#status"); got != "clicked Ada" {
		t.Errorf("status %q after the click", got)
	}
	if n := b.Count("li"); n != 3 {
		t.Errorf("Count(li) = %d", n)
	}
	var title string
	b.Eval(`document.title`, &title)
	var sum int
	b.Eval(`new Promise(resolve => setTimeout(() => resolve(20 + 22), 1))`, &sum)
	if title != "harness" || sum != 42 {
		t.Errorf("Eval: title %q, sum %d", title, sum)
	}
	path := b.Screenshot("harness")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if size := img.Bounds().Size(); size.X != 1400 || size.Y < 700 {
		t.Errorf("screenshot %v, want the 1400-wide window", size)
	}
	if !strings.HasPrefix(path, t.ArtifactDir()) {
		t.Errorf("screenshot at %s, not in the artifact directory %s", path, t.ArtifactDir())
	}
	b.AssertNoErrors()

	tab := b.NewTab()
	tab.Visit(srv.URL + "/broken")
	tab.WaitVisible("#ok")
	var errs []string
	for range 100 { // the exception is thrown by a timer after the load: give it its turn
		if errs = tab.Errors(); len(errs) >= 2 {
			break
		}
		tab.Eval(`new Promise(resolve => setTimeout(resolve, 10))`, nil)
	}
	if len(errs) != 2 || errs[0] != "console.error: the console says no" || !strings.Contains(errs[1], "uncaught") || !strings.Contains(errs[1], "Error: boom") {
		t.Errorf("the broken page's errors: %q", errs)
	}
	if got := b.Errors(); len(got) != 0 {
		t.Errorf("the first tab has the second's errors: %q", got)
	}
	var ft fakeT
	ft.TB = t
	tab.t = &ft
	tab.AssertNoErrors()
	if !strings.Contains(ft.errors.String(), "the page had errors (2)") || !strings.Contains(ft.errors.String(), "boom") {
		t.Errorf("AssertNoErrors on the broken page reported %q", ft.errors.String())
	}

	began = time.Now()
	Start(t).Visit(srv.URL)
	warm := time.Since(began)
	t.Logf("Start took %s cold, %s warm (with a first visit)", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
}

// fakeT records what a helper reports, to test a failure without failing the test.
type fakeT struct {
	testing.TB
	errors bytes.Buffer
	fatal  bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errors.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.fatal = true
	runtime.Goexit()
}

// TestTimeoutFailsWithThePage checks that a helper that times out fails the test with what the page shows.
func TestTimeoutFailsWithThePage(t *testing.T) {
	srv := server(t)
	b := Start(t)
	b.Visit(srv.URL)
	var ft fakeT
	ft.TB = t
	b.t, b.Timeout = &ft, 200*time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WaitVisible("#missing")
	}()
	<-done
	out := ft.errors.String()
	if !ft.fatal || !strings.Contains(out, "wait for #missing to be visible: not done after 200ms") ||
		!strings.Contains(out, "--- page "+srv.URL) || !strings.Contains(out, "--- text\nwaiting") {
		t.Errorf("the failure:\n%s", out)
	}
}

// TestMissingChromiumFails checks that without Chromium the test fails, saying what to run, and is not skipped.
func TestMissingChromiumFails(t *testing.T) {
	t.Setenv("AGENTHOST_CHROMIUM", "/nonexistent/chromium")
	var ft fakeT
	ft.TB = t
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(&ft)
	}()
	<-done
	if !ft.fatal || !strings.Contains(ft.errors.String(), "run `make test`") {
		t.Errorf("Start without Chromium: fatal %v, %q", ft.fatal, ft.errors.String())
	}
}

// TestCloseKillsEveryProcess checks that no process of the browser outlives Close, and that the test's cleanup
// closes it too.
func TestCloseKillsEveryProcess(t *testing.T) {
	srv := server(t)
	var procs *process
	t.Run("browser", func(t *testing.T) {
		b := Start(t)
		b.Visit(srv.URL) // a renderer, besides the browser, its zygotes and its utility processes
		procs = b.proc
		if n := len(procs.processes()); n < 3 {
			t.Errorf("%d processes of the browser found while it runs, want the browser and its children", n)
		}
		tab := b.NewTab()
		tab.Visit(srv.URL)
		tab.Close()
		b.Text("#status") // closing a tab leaves the browser
		// The cleanup at the end of this subtest closes the browser.
	})
	if pids := procs.processes(); len(pids) != 0 {
		t.Errorf("processes of the browser left after its test ended: %v", pids)
	}

	b := Start(t)
	b.Visit(srv.URL)
	b.Close()
	b.Close()
	if pids := b.proc.processes(); len(pids) != 0 {
		t.Errorf("processes of the browser left after Close: %v", pids)
	}
}
