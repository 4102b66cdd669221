package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// fakeSuite has two datasets: "slow", whose runs end only when cancelled, and "quick", whose runs end at once.
type fakeSuite struct{}

func (fakeSuite) Datasets() []evals.Dataset {
	return []evals.Dataset{{Name: "slow", Cases: 1}, {Name: "quick", Cases: 1}}
}

func (fakeSuite) Run(ctx context.Context, dataset string, _ int, _ func(*evals.Result)) (*evals.Report, error) {
	if dataset == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &evals.Report{Cases: []*evals.Result{}}, nil
}

func TestEvalRunsBoundedAndCancellable(t *testing.T) {
	f := newFixture(t, nil)
	f.console.evals = fakeSuite{}
	csrf := f.csrf(t)
	start := func(dataset string, want int) string {
		t.Helper()
		resp, b := f.do(t, "POST", "/api/evals/"+dataset+"/run", "", "X-CSRF-Token", csrf)
		if resp.StatusCode != want {
			t.Fatalf("run %s: %d %s, want %d", dataset, resp.StatusCode, b, want)
		}
		var r struct{ ID string }
		_ = json.Unmarshal(b, &r)
		return r.ID
	}
	status := func(id string) (int, string) {
		resp, b := f.do(t, "GET", "/api/evals/runs/"+id, "")
		var r struct{ Status string }
		_ = json.Unmarshal(b, &r)
		return resp.StatusCode, r.Status
	}
	first, second := start("slow", http.StatusAccepted), start("slow", http.StatusAccepted)
	start("quick", http.StatusTooManyRequests) // two are going
	if resp, b := f.do(t, "POST", "/api/evals/runs/"+first+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	testwait.Until(t, 30*time.Second, "the cancelled eval run to end", func() bool {
		_, s := status(first)
		return s == "cancelled"
	})
	if resp, _ := f.do(t, "POST", "/api/evals/runs/"+first+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusConflict {
		t.Errorf("cancel an ended eval run: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "POST", "/api/evals/runs/nope/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNotFound {
		t.Errorf("cancel an unknown eval run: %d", resp.StatusCode)
	}
	// The ended runs are kept up to maxEvalRuns, the oldest dropped first; the one going stays.
	var quick []string
	for range maxEvalRuns + 1 {
		id := start("quick", http.StatusAccepted)
		testwait.Until(t, 30*time.Second, "a quick eval run to end", func() bool {
			_, s := status(id)
			return s == "done"
		})
		quick = append(quick, id)
	}
	if code, _ := status(first); code != http.StatusNotFound {
		t.Errorf("the oldest ended eval run: %d, want dropped", code)
	}
	if code, _ := status(quick[0]); code != http.StatusNotFound {
		t.Errorf("the oldest ended quick eval run: %d, want dropped", code)
	}
	if code, s := status(second); code != http.StatusOK || s != "running" {
		t.Errorf("the eval run going: %d %q, want kept", code, s)
	}
	if code, s := status(quick[1]); code != http.StatusOK || s != "done" {
		t.Errorf("the %dth newest ended eval run: %d %q, want kept", maxEvalRuns, code, s)
	}
}

// openLive opens /api/runs/live with headers and returns the response, its body left open until the test ends.
func (f *fixture) openLive(t *testing.T, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", f.srv.URL+"/api/runs/live", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestEventStreamsBounded(t *testing.T) {
	f := subjectsFixture(t, nil)
	f.console.maxSessionStreams, f.console.maxStreams = 2, 3
	first := f.openLive(t, asAlice...)
	if resp := f.openLive(t, asAlice...); first.StatusCode != http.StatusOK || resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's streams: %d %d", first.StatusCode, resp.StatusCode)
	}
	if resp := f.openLive(t, asAlice...); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice's third stream: %d, want 429", resp.StatusCode)
	}
	if resp := f.openLive(t, asBob...); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's stream: %d", resp.StatusCode)
	}
	// A run's events count the same.
	f.llm.Enqueue(fakellm.Turn{Text: "for the operator"})
	if _, err := f.orch.Ask(t.Context(), &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	run := f.runs.Runs()[0].ID
	if resp, _ := f.do(t, "GET", "/api/runs/"+run+"/events", "", asOwner...); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a stream beyond the console's cap: %d, want 429", resp.StatusCode)
	}
	// A closed stream gives its place back.
	first.Body.Close()
	testwait.Until(t, 30*time.Second, "a closed stream to give its place back", func() bool {
		f.console.mu.Lock()
		defer f.console.mu.Unlock()
		return f.console.nStreams < 3
	})
	if resp := f.openLive(t, asAlice...); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's stream after one closed: %d", resp.StatusCode)
	}
}

// After loginFreeFailures failures from one address, a login waits, 1s doubling; a good one forgets the failures.
// A failed login is logged at most once a minute per address, without the token.
func TestLoginBackOff(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	var logs bytes.Buffer
	f := newFixture(t, func(o *Options) {
		o.Token = staticToken
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		o.Logger = slog.New(slog.NewTextHandler(&syncWriter{mu: &mu, w: &logs}, nil))
	})
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	login := func(token string) int {
		resp, _ := f.do(t, "POST", "/api/login", `{"token":"`+token+`"}`)
		return resp.StatusCode
	}
	for i := range loginFreeFailures {
		if code := login("guess-number-one"); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	if code := login(staticToken); code != http.StatusTooManyRequests {
		t.Errorf("a login right after %d failures: %d, want 429", loginFreeFailures, code)
	}
	advance(time.Second)
	if code := login("guess-number-two"); code != http.StatusUnauthorized {
		t.Errorf("a login 1s later: %d, want a try", code)
	}
	advance(time.Second) // the next wait is 2s
	if code := login(staticToken); code != http.StatusTooManyRequests {
		t.Errorf("a login 1s after the 6th failure: %d, want 429", code)
	}
	advance(time.Second)
	if code := login(staticToken); code != http.StatusNoContent {
		t.Errorf("a good login once the wait is over: %d", code)
	}
	if code := login("guess-number-three"); code != http.StatusUnauthorized {
		t.Errorf("a failure after a good login: %d, want the count restarted", code)
	}
	mu.Lock()
	text := logs.String()
	mu.Unlock()
	if n := strings.Count(text, "a login was refused"); n != 1 || !strings.Contains(text, "level=WARN") {
		t.Errorf("%d refused logins logged, want 1 at WARN: %s", n, text)
	}
	if strings.Contains(text, "guess-number") || strings.Contains(text, staticToken) {
		t.Errorf("the log has a token: %s", text)
	}
	// The wait is capped.
	l := newLoginLimiter(func() time.Time { return now })
	for range 40 {
		l.failed("192.0.2.1")
	}
	if w := l.wait("192.0.2.1"); w != loginMaxDelay {
		t.Errorf("the wait after 40 failures is %v, want %v", w, loginMaxDelay)
	}
}

// syncWriter writes to w under mu.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestLoginLimiterBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newLoginLimiter(func() time.Time { return now })
	for i := range maxLoginAddrs + 10 {
		now = now.Add(time.Millisecond)
		l.failed(fmt.Sprintf("ip-%d", i))
	}
	if len(l.m) != maxLoginAddrs {
		t.Errorf("%d addresses remembered, want %d", len(l.m), maxLoginAddrs)
	}
	if _, ok := l.m["ip-0"]; ok {
		t.Error("the address that failed least recently is still remembered")
	}
}
