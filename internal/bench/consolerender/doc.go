// Package consolerender measures the web console as it ships: the real `agenthost ui` binary, built as the README
// says, and a real headless Chromium (internal/testkit/browser). Its measurements are tests, because the browser
// harness needs a testing.T:
//
//	go test ./internal/bench/consolerender -run TestFirstRender -v -count=1 [-rounds 20] [-agenthost PATH]
//	go test ./internal/bench/consolerender -run TestLongRun -v -count=1 [-rounds 3] [-agenthost PATH]
//
// TestFirstRender loads the console in a fresh tab each round, cold (the tab's HTTP cache disabled through the
// DevTools protocol) and warm (the cache on, so the page's files are revalidated by ETag), and reports the median
// and p90 of first-contentful-paint, domContentLoaded, load and first render: the time from navigation until the
// chat box (data-testid chat-input) is laid out visible and GET /api/session has answered, observed by a script the
// DevTools protocol adds to the document before the page's own.
//
// TestLongRun has `agenthost ui` run a scripted model (internal/testkit/fakellm) that makes a run of well over 1,000
// entries, opens the run's page after it ended and while it streams, and reports the time to the timeline's first
// bars, how many timeline elements are in the DOM, and the frame times while the timeline is scrolled from top to
// bottom.
//
// The tests assert only that the measurements exist and are sane, and that the timeline stays virtualized: never a
// timing target. The figures are in BENCHMARKS.md ("Web console").
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
package consolerender
