package consolerender

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/browser"
)

// offlineConfig runs the agent on the offline test model, with nothing to connect to.
const offlineConfig = `
[agent]
name = "console-bench"

[model]
provider = "test"

[state]
backend = "memory"
`

// readyScript runs before the page's own scripts in every document of a tab (browser.OnNewDocument): it records in
// window.__benchReady the time (performance.now(), from the navigation's start) at which the chat box is first laid
// out visible with GET /api/session answered. It looks on every change of the DOM and on every frame, so the time
// is at most a frame late when the session answers after the box is shown, and it reads the layout only until then.
const readyScript = `(() => {
  const check = () => {
    if (window.__benchReady) return true;
    const el = document.querySelector('[data-testid="chat-input"]');
    if (!el || !el.checkVisibility()) return false;
    const s = performance.getEntriesByType('resource').find((e) => new URL(e.name).pathname === '/api/session');
    if (!s || !s.responseEnd) return false;
    window.__benchReady = performance.now();
    return true;
  };
  new MutationObserver((_, o) => { if (check()) o.disconnect(); })
    .observe(document, { subtree: true, childList: true, attributes: true });
  const tick = () => { if (!check()) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
})();`

// readTimings waits (at most 10 s) for the first render, the end of the load event and the first contentful paint
// (which Chromium sometimes never reports for a headless tab: -1 then), then reads the page's
// timings, in milliseconds from the navigation's start, and what its files weighed on the wire.
const readTimings = `new Promise((resolve) => {
  const t0 = performance.now();
  const done = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const res = performance.getEntriesByType('resource');
    resolve({
      fcp: fcp ? fcp.startTime : -1,
      dcl: nav ? nav.domContentLoadedEventEnd : -1,
      load: nav ? nav.loadEventEnd : -1,
      ready: window.__benchReady || -1,
      requests: res.length + 1,
      transferred: res.reduce((n, e) => n + e.transferSize, nav ? nav.transferSize : 0),
    });
  };
  const wait = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    if ((window.__benchReady && nav && nav.loadEventEnd > 0 && fcp) || performance.now() - t0 > 10000) done();
    else setTimeout(wait, 5);
  };
  wait();
})`

// pageTimings are what readTimings returns.
type pageTimings struct {
	FCP         float64 `json:"fcp"`
	DCL         float64 `json:"dcl"`
	Load        float64 `json:"load"`
	Ready       float64 `json:"ready"`
	Requests    int     `json:"requests"`
	Transferred int64   `json:"transferred"`
}

// TestFirstRender loads the console of the real `agenthost ui`, on the offline test model, in a fresh tab of one
// headless Chromium each round: cold, with the tab's cache disabled, then warm, in another fresh tab with the cache
// on (the page's files are served with no-cache and an ETag: a warm load revalidates them). It reports the median
// and p90 of each timing over the rounds, and asserts only that each was measured and is sane.
func TestFirstRender(t *testing.T) {
	n := roundsOr(20)
	bin := binary(t)
	config := filepath.Join(t.TempDir(), "agent.toml")
	if err := os.WriteFile(config, []byte(offlineConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startUI(t, bin, config)

	b := browser.Start(t)
	// One load first, so that the warm rounds find the page's files in the cache, and the browser's own start-up
	// (its first tab, its first renderer) is not in the first round.
	measure(t, b.NewTab(), base, false)

	var cold, warm []pageTimings
	for range n {
		cold = append(cold, measure(t, b.NewTab(), base, true))
		warm = append(warm, measure(t, b.NewTab(), base, false))
	}
	noFCP := 0
	for _, series := range [][]pageTimings{cold, warm} {
		for i, m := range series {
			// Not FCP <= load: the page's shell is drawn by its module scripts, so its first contentful paint
			// often comes after the load event.
			if m.DCL <= 0 || m.Load <= 0 || m.Ready <= 0 || m.DCL > m.Load || m.FCP > 10000 || m.Ready > 10000 || m.FCP == 0 {
				t.Errorf("round %d: timings not all measured, or not in order: %+v", i+1, m)
			}
			if m.FCP < 0 {
				noFCP++
			}
		}
	}
	if noFCP == 2*n {
		t.Error("no load reported a first contentful paint")
	}

	rows := [][]string{{"load", "what", "median", "p90"}}
	for _, s := range []struct {
		name   string
		series []pageTimings
	}{{"cold", cold}, {"warm", warm}} {
		for _, f := range []struct {
			what string
			get  func(pageTimings) float64
		}{
			{"first-contentful-paint", func(m pageTimings) float64 { return m.FCP }},
			{"domContentLoaded", func(m pageTimings) float64 { return m.DCL }},
			{"load", func(m pageTimings) float64 { return m.Load }},
			{"first render (chat box + session)", func(m pageTimings) float64 { return m.Ready }},
		} {
			var v []float64
			for _, m := range s.series {
				if x := f.get(m); x >= 0 { // a paint Chromium did not report is left out
					v = append(v, x)
				}
			}
			st := summarize(v)
			rows = append(rows, []string{s.name, f.what, ms(st.median), ms(st.p90)})
		}
	}
	t.Logf("first render of the console, %d rounds (%d CPUs, shared by the browser and the server):\n%s"+
		"requests per load: cold %d, warm %d; bytes on the wire: cold %d, warm %d (headers included); "+
		"loads without a first-contentful-paint entry: %d of %d",
		n, runtime.NumCPU(), table(rows), cold[0].Requests, warm[0].Requests, cold[0].Transferred, warm[0].Transferred, noFCP, 2*n)
}

// measure loads the console at base in tab, cold (cache disabled) or warm, reads its timings and closes the tab.
func measure(t *testing.T, tab *browser.Browser, base string, cold bool) pageTimings {
	t.Helper()
	defer tab.Close()
	tab.DisableCache(cold)
	tab.OnNewDocument(readyScript)
	tab.Visit(base)
	tab.WaitVisible(`[data-testid="chat-input"]`)
	var m pageTimings
	tab.Eval(readTimings, &m)
	tab.AssertNoErrors()
	if m.Ready <= 0 {
		t.Fatalf("no first render measured: %+v", m)
	}
	return m
}
