package consolerender

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/browser"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

const (
	// longRounds model calls make longCalls calls of calculate each, then one streams a long answer.
	longRounds = 10
	longCalls  = 60
	// longAnswer is the answer's length in runes, streamed longChunk runes a delta.
	longAnswer = 6000
	longChunk  = 20
)

// longConfig is an agent on the scripted model at %s, with calculate as its only tool and room for the long run.
const longConfig = `
[agent]
name = "console-bench"
max_iterations = 20
max_tool_calls = 100

[model]
provider = "openai"
model = "fake-model"
base_url = %q
api_key_env = "BENCH_KEY"
max_retries = 0

[builtin]
tools = ["calculate"]

[state]
backend = "memory"
`

// script enqueues one long run on srv: longRounds rounds of longCalls calculate calls, each answered after latency,
// then the long answer.
func script(srv *fakellm.Server, latency time.Duration) {
	for r := range longRounds {
		calls := make([]fakellm.ToolCall, longCalls)
		for i := range calls {
			calls[i] = fakellm.ToolCall{Name: "calculate", Arguments: fmt.Sprintf(`{"expression":"%d * %d + 1"}`, r+1, i+1)}
		}
		srv.Enqueue(fakellm.Turn{ToolCalls: calls, Latency: latency})
	}
	words := strings.Repeat("The timeline keeps only the rows in view in the DOM. ", longAnswer/53+1)
	srv.Enqueue(fakellm.Turn{Text: words[:longAnswer], ChunkSize: longChunk, Latency: latency})
}

// startRun starts a chat in the console at base and returns its run's id.
func startRun(t *testing.T, base string) string {
	t.Helper()
	var s struct {
		CSRF string `json:"csrf"`
	}
	call(t, "GET", base+"api/session", "", nil, &s)
	var started struct {
		RunID string `json:"run_id"`
	}
	call(t, "POST", base+"api/chat", s.CSRF, map[string]any{"message": "compute them all, then explain at length"}, &started)
	if started.RunID == "" {
		t.Fatal("POST /api/chat gave no run_id")
	}
	return started.RunID
}

// runEntries waits (at most a minute) until the run has ended and returns how many entries it has.
func runEntries(t *testing.T, base, id string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r struct {
			Run struct {
				Status string `json:"status"`
			} `json:"run"`
			Entries []map[string]any `json:"entries"`
		}
		call(t, "GET", base+"api/runs/"+id, "", nil, &r)
		if r.Run.Status != "" && r.Run.Status != "running" {
			return len(r.Entries)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %q after a minute", id, r.Run.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// firstBars waits for the timeline's first bars and returns the time (ms) from the navigation's start.
const firstBars = `new Promise((resolve) => {
  const t0 = performance.now();
  const wait = () => {
    if (document.querySelector('[data-testid="timeline-bar"]')) resolve(performance.now());
    else if (performance.now() - t0 > 10000) resolve(-1);
    else requestAnimationFrame(wait);
  };
  wait();
})`

// scrollTimeline scrolls the timeline from top to bottom in steps of 300 px, one a frame, and records every frame's
// delta (requestAnimationFrame) meanwhile; at the bottom it waits two frames and reads the bars in the DOM and the
// index of the last row rendered.
const scrollTimeline = `new Promise((resolve) => {
  const tl = document.querySelector('[data-testid="timeline"]');
  tl.scrollTop = 0;
  const deltas = [];
  let last = performance.now(), settle = 0, maxBars = 0;
  const frame = (now) => {
    deltas.push(now - last);
    last = now;
    maxBars = Math.max(maxBars, document.querySelectorAll('[data-testid="timeline-bar"]').length);
    if (tl.scrollTop + tl.clientHeight < tl.scrollHeight - 1) {
      tl.scrollTop += 300;
    } else if (++settle > 2) {
      const rows = [...tl.querySelectorAll('[data-i]')].map((e) => +e.dataset.i);
      resolve({ deltas, maxBars, bars: document.querySelectorAll('[data-testid="timeline-bar"]').length,
        nodes: tl.querySelectorAll('*').length, lastRow: Math.max(-1, ...rows), height: tl.scrollHeight });
      return;
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame((now) => { last = now; requestAnimationFrame(frame); });
})`

// scrolled is what scrollTimeline returns.
type scrolled struct {
	Deltas  []float64 `json:"deltas"`
	MaxBars int       `json:"maxBars"`
	Bars    int       `json:"bars"`
	Nodes   int       `json:"nodes"`
	LastRow int       `json:"lastRow"`
	Height  float64   `json:"height"`
}

// watchFrames records every frame's delta for the given milliseconds, and the most bars in the DOM meanwhile.
const watchFrames = `new Promise((resolve) => {
  const deltas = [];
  let last = performance.now(), maxBars = 0;
  const end = last + %d;
  const frame = (now) => {
    deltas.push(now - last);
    last = now;
    maxBars = Math.max(maxBars, document.querySelectorAll('[data-testid="timeline-bar"]').length);
    if (now < end) requestAnimationFrame(frame);
    else resolve({ deltas, maxBars, bars: document.querySelectorAll('[data-testid="timeline-bar"]').length, nodes: 0, lastRow: 0, height: 0 });
  };
  requestAnimationFrame((now) => { last = now; requestAnimationFrame(frame); });
})`

// TestLongRun has the real `agenthost ui` make runs of well over 1,000 entries on a scripted model, and measures the
// run's page in a headless Chromium each round: once the run has ended (time to the timeline's first bars, the
// timeline's DOM, frame times while it is scrolled from top to bottom), and while it streams (frame times while it
// grows, then while it is scrolled). It asserts only that the timeline stays virtualized (fewer than 300 bars in the
// DOM) and that its last row is reachable by scrolling.
func TestLongRun(t *testing.T) {
	n := roundsOr(3)
	bin := binary(t)
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "agent.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(longConfig, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startUI(t, bin, config, "BENCH_KEY=bench")
	b := browser.Start(t)
	b.Timeout = 30 * time.Second

	var endedFirst, endedFrames, liveFrames, liveScroll []float64
	var entries, bars, nodes, maxBars int
	for r := range n {
		// A run that has ended.
		script(srv, 0)
		id := startRun(t, base)
		entries = runEntries(t, base, id)
		if entries < 1000 {
			t.Fatalf("the run has %d entries, want well over 1,000", entries)
		}
		tab := b.NewTab()
		tab.Timeout = b.Timeout
		tab.Visit(base + "#/runs/" + id)
		var first float64
		tab.Eval(firstBars, &first)
		if first <= 0 {
			t.Fatalf("round %d: no timeline bar within 10 s", r+1)
		}
		endedFirst = append(endedFirst, first)
		var s scrolled
		tab.Eval(scrollTimeline, &s)
		check(t, "ended", s)
		endedFrames = append(endedFrames, s.Deltas...)
		bars, nodes, maxBars = s.Bars, s.Nodes, max(maxBars, s.MaxBars)
		tab.AssertNoErrors()
		tab.Close()

		// A run followed while it streams: each model call waits 300 ms, so it lasts about 3 s.
		script(srv, 300*time.Millisecond)
		id = startRun(t, base)
		tab = b.NewTab()
		tab.Timeout = b.Timeout
		tab.Visit(base + "#/runs/" + id)
		var live scrolled
		tab.Eval(fmt.Sprintf(watchFrames, 2500), &live)
		liveFrames = append(liveFrames, live.Deltas...)
		maxBars = max(maxBars, live.MaxBars)
		tab.Eval(scrollTimeline, &live)
		liveScroll = append(liveScroll, live.Deltas...)
		maxBars = max(maxBars, live.MaxBars)
		runEntries(t, base, id)
		tab.AssertNoErrors()
		tab.Close()
	}
	if maxBars >= 300 {
		t.Errorf("up to %d timeline bars in the DOM for a run of %d entries: the timeline is not virtualized", maxBars, entries)
	}

	rows := [][]string{{"frames", "count", "median", "p95", "max", "over 50 ms"}}
	for _, f := range []struct {
		what string
		v    []float64
	}{{"ended run, scrolled top to bottom", endedFrames}, {"live run, streaming", liveFrames}, {"live run, scrolled", liveScroll}} {
		st := summarize(f.v)
		over := 0
		for _, d := range f.v {
			if d > 50 {
				over++
			}
		}
		rows = append(rows, []string{f.what, fmt.Sprint(st.n), ms(st.median), ms(st.p95), ms(st.max), fmt.Sprint(over)})
	}
	fb := summarize(endedFirst)
	t.Logf("a run of %d entries (%d model calls, %d tool calls, a %d-rune answer in %d-rune deltas), %d rounds:\n"+
		"navigation to the timeline's first bars (ended run): median %s, p90 %s\n"+
		"timeline DOM at the bottom: %d bars, %d elements; at most %d bars at any frame\n%s",
		entries, longRounds+1, longRounds*longCalls, longAnswer, longChunk, n, ms(fb.median), ms(fb.p90), bars, nodes, maxBars, table(rows))
}

// check fails the test when the timeline is not virtualized, or its last row was not reached.
func check(t *testing.T, what string, s scrolled) {
	t.Helper()
	if s.Bars == 0 || s.Bars >= 300 || s.MaxBars >= 300 {
		t.Errorf("%s: %d timeline bars in the DOM at the bottom, %d at most: want some, fewer than 300", what, s.Bars, s.MaxBars)
	}
	// The timeline has a row per tool call, model call and run.
	rows := longRounds*longCalls + (longRounds + 1) + 1
	if want := rows - 1; s.LastRow != want {
		t.Errorf("%s: the last row rendered at the bottom is %d, want %d (height %v px)", what, s.LastRow, rows-1, s.Height)
	}
}
