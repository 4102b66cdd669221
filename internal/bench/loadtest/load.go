package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/bench/procstat"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// answerText is what the fake model answers in a run's second model call.
const answerText = "It is Tuesday, 14:05 in the local time zone, according to the clock tool."

// callTimeout bounds one call of the agent tool; a call that takes longer is a failure.
const callTimeout = 2 * time.Minute

// responder answers a run's first model call with one call of current_time and its second, which carries the tool's
// result, with text.
func responder(latency time.Duration, chunkSize int) func(*fakellm.Request) fakellm.Turn {
	return func(req *fakellm.Request) fakellm.Turn {
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return fakellm.Turn{Latency: latency, Text: answerText, ChunkSize: chunkSize}
			}
		}
		return fakellm.Turn{Latency: latency, ChunkSize: chunkSize, ToolCalls: []fakellm.ToolCall{{Name: "current_time", Arguments: `{}`}}}
	}
}

// sample is one call of the agent tool.
type sample struct {
	start, end time.Time
	err        error
}

// measure starts the fake model, the server and the clients, runs the load and returns the figures.
func measure(ctx context.Context, cfg *options, stderr io.Writer) (*report, error) {
	llm := fakellm.New()
	defer llm.Close()
	llm.SetResponder(responder(cfg.latency, cfg.chunkSize))

	srv, err := startServer(ctx, cfg, llm.URL, stderr)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	// One transport for every client, as one machine's clients would share it. Each session holds its standalone
	// SSE stream open and has at most one call in flight, so 2n connections are kept idle at most.
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: 2*cfg.clients + 16,
		IdleConnTimeout:     90 * time.Second,
	}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}

	var notifications atomic.Int64
	sessions, err := connect(ctx, cfg, srv.mcpURL, httpClient, &notifications)
	defer func() {
		for _, s := range sessions {
			s.close()
		}
	}()
	if err != nil {
		return nil, err
	}
	toolName := srv.toolName
	if toolName == "" {
		return nil, errors.New("the server did not name its tool")
	}

	rep := &report{cfg: cfg, server: srv.kind, toolName: toolName}
	if rep.fdLimit, err = openFileLimit(srv.pid); err != nil {
		return nil, err
	}

	// The window is measured in whole seconds: the CPU profile's duration is.
	window := max(cfg.duration.Round(time.Second), time.Second)
	begin := time.Now()
	open, closed := begin.Add(cfg.warmup), begin.Add(cfg.warmup+window)
	samples := make([][]sample, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { samples[i] = drive(ctx, s, toolName, i, cfg.progress, closed) })
	}

	// At the window's opening: counters, and the CPU profile over the window.
	var at [2]counters
	var prof profileResult
	profDone := make(chan struct{})
	func() {
		t := time.NewTimer(time.Until(open))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}()
	if at[0], err = readCounters(srv.pid, llm, &notifications); err != nil {
		wg.Wait()
		return nil, err
	}
	stopSelf, err := startSelfProfile(cfg.selfProf)
	if err != nil {
		wg.Wait()
		return nil, err
	}
	go func() {
		defer close(profDone)
		if srv.pprofAddr != "" {
			prof = fetchProfile(ctx, srv.pprofAddr, fmt.Sprintf("profile?seconds=%d", window/time.Second), cfg.profile)
		}
	}()
	func() {
		t := time.NewTimer(time.Until(closed))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}()
	at[1], err = readCounters(srv.pid, llm, &notifications)
	if serr := stopSelf(); err == nil {
		err = serr
	}
	var heap profileResult
	if srv.pprofAddr != "" && cfg.top > 0 {
		heap = fetchProfile(ctx, srv.pprofAddr, "heap", "")
	}
	wg.Wait()
	<-profDone
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	mem, err := procstat.ReadMemory(srv.pid)
	if err != nil {
		return nil, err
	}
	rep.peakRSS = mem.Peak
	rep.rssAtEnd = at[1].mem.RSS
	rep.summarise(samples, open, closed, at)
	rep.profile = prof
	if prof.err == nil && prof.path != "" && cfg.top > 0 {
		rep.profileTop, rep.profile.err = pprofTop(ctx, prof.path, cfg.top, "-top", "-top -cum")
	}
	if heap.err == nil && heap.path != "" {
		rep.heapTop, heap.err = pprofTop(ctx, heap.path, cfg.top, "-top -sample_index=inuse_space")
		os.Remove(heap.path)
	}
	rep.heapErr = heap.err
	return rep, nil
}

// session is one client's MCP session, through the go-sdk client or the wire client.
type session interface {
	// call calls the agent tool once and returns the result's text (for errors) and its structuredContent.
	call(ctx context.Context, toolName, prompt, progressToken string) (isError bool, text string, structured []byte, err error)
	close()
}

// sdkSession is a session of the go-sdk client.
type sdkSession struct{ s *mcp.ClientSession }

func (c sdkSession) call(ctx context.Context, toolName, prompt, progressToken string) (bool, string, []byte, error) {
	params := &mcp.CallToolParams{Name: toolName, Arguments: map[string]any{"prompt": prompt}}
	if progressToken != "" {
		params.SetProgressToken(progressToken)
	}
	res, err := c.s.CallTool(ctx, params)
	if err != nil {
		return false, "", nil, err
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	raw, err := json.Marshal(res.StructuredContent)
	return res.IsError, text, raw, err
}

func (c sdkSession) close() { c.s.Close() }

// wireSession is a session of the wire client.
type wireSession struct{ c *wireClient }

func (w wireSession) call(ctx context.Context, toolName, prompt, progressToken string) (bool, string, []byte, error) {
	res, err := w.c.callTool(ctx, toolName, map[string]any{"prompt": prompt}, progressToken)
	if err != nil {
		return false, "", nil, err
	}
	var text string
	if len(res.Content) > 0 {
		text = res.Content[0].Text
	}
	return res.IsError, text, res.StructuredContent, nil
}

func (w wireSession) close() { w.c.close() }

// connect opens one MCP session per client, a few at a time. It returns the sessions opened, also on error.
func connect(ctx context.Context, cfg *options, url string, hc *http.Client, notifications *atomic.Int64) ([]session, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agenthost-loadtest", Version: "dev"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { notifications.Add(1) },
	})
	dial := func() (session, error) {
		if cfg.client == clientWire {
			c, err := dialWire(ctx, url, hc, cfg.noSSE, notifications)
			if err != nil {
				return nil, err
			}
			return wireSession{c}, nil
		}
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:             url,
			HTTPClient:           hc,
			MaxRetries:           -1, // a lost connection is a failure to report, not to hide
			DisableStandaloneSSE: cfg.noSSE,
		}, nil)
		if err != nil {
			return nil, err
		}
		return sdkSession{s}, nil
	}
	sessions := make([]session, cfg.clients)
	errs := make([]error, cfg.clients)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			s, err := dial()
			if err != nil {
				errs[i] = fmt.Errorf("client %d: connect: %w", i, err)
				return
			}
			sessions[i] = s
		})
	}
	wg.Wait()
	sessions = slices.DeleteFunc(sessions, func(s session) bool { return s == nil })
	if failed := cfg.clients - len(sessions); failed > 0 {
		first := errs[slices.IndexFunc(errs, func(err error) bool { return err != nil })]
		return sessions, fmt.Errorf("%d of %d clients could not connect; the first: %w", failed, cfg.clients, first)
	}
	return sessions, nil
}

// drive calls the agent tool on s, one call after the other, until stop; the call in flight at stop completes.
func drive(ctx context.Context, s session, toolName string, client int, progress bool, stop time.Time) []sample {
	var out []sample
	for seq := 0; ctx.Err() == nil; seq++ {
		start := time.Now()
		if !start.Before(stop) {
			break
		}
		err := callAgent(ctx, s, toolName, client, seq, progress)
		out = append(out, sample{start: start, end: time.Now(), err: err})
	}
	return out
}

// callAgent makes one call of the agent tool and checks that the run went as scripted: two iterations, one
// successful tool call, the scripted answer.
func callAgent(ctx context.Context, s session, toolName string, client, seq int, progress bool) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var token string
	if progress {
		token = fmt.Sprintf("%d-%d", client, seq)
	}
	isError, text, raw, err := s.call(ctx, toolName, fmt.Sprintf("What time is it? (client %d, call %d)", client, seq), token)
	if err != nil {
		return err
	}
	if isError {
		return fmt.Errorf("tool error: %s", text)
	}
	var out struct {
		Answer     string `json:"answer"`
		StoppedBy  string `json:"stopped_by"`
		Iterations int    `json:"iterations"`
		ToolCalls  []struct {
			OK bool `json:"ok"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("structured content: %w", err)
	}
	if out.StoppedBy != "answered" || out.Iterations != 2 || len(out.ToolCalls) != 1 || !out.ToolCalls[0].OK ||
		!strings.HasPrefix(out.Answer, answerText) {
		return fmt.Errorf("unexpected run: stopped_by %q, %d iterations, %d tool calls, answer %.40q",
			out.StoppedBy, out.Iterations, len(out.ToolCalls), out.Answer)
	}
	return nil
}

// counters are read at the opening and at the closing of the window.
type counters struct {
	at            time.Time
	serverCPU     time.Duration
	selfCPU       time.Duration
	modelRequests int
	notifications int64
	mem           procstat.Memory
}

func readCounters(pid int, llm *fakellm.Server, notifications *atomic.Int64) (counters, error) {
	c := counters{at: time.Now(), selfCPU: selfCPU(), modelRequests: llm.RequestCount(), notifications: notifications.Load()}
	var err error
	if c.serverCPU, err = procstat.CPU(pid); err != nil {
		return c, err
	}
	c.mem, err = procstat.ReadMemory(pid)
	return c, err
}

// startSelfProfile starts this process's CPU profile into path, if path is set; the function it returns stops it.
func startSelfProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("self profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// profileResult is the server's CPU profile over the window.
type profileResult struct {
	path string
	err  error
}

// fetchProfile fetches a profile from the server's pprof endpoint (name and query, such as "profile?seconds=20")
// and writes it to path ("" means a new temporary file).
func fetchProfile(ctx context.Context, addr, name, path string) profileResult {
	url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return profileResult{err: err}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return profileResult{err: fmt.Errorf("%s profile: %w", name, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return profileResult{err: fmt.Errorf("%s profile: %s: %s", name, resp.Status, strings.TrimSpace(string(b)))}
	}
	var f *os.File
	if path == "" {
		f, err = os.CreateTemp("", "agenthost-loadtest-*.pprof")
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return profileResult{err: fmt.Errorf("%s profile: %w", name, err)}
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return profileResult{err: fmt.Errorf("%s profile: %w", name, err)}
	}
	return profileResult{path: f.Name()}
}

// pprofTop returns the first n entries of `go tool pprof` for the profile at path, once for each of modes (such as
// "-top" and "-top -cum").
func pprofTop(ctx context.Context, path string, n int, modes ...string) (string, error) {
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if os.Getenv("GOROOT") == "" {
		goBin = "go"
	}
	var out strings.Builder
	for _, mode := range modes {
		args := append([]string{"tool", "pprof"}, strings.Fields(mode)...)
		args = append(args, fmt.Sprintf("-nodecount=%d", n), path)
		b, err := exec.CommandContext(ctx, goBin, args...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go tool pprof: %w: %s", err, strings.TrimSpace(string(b)))
		}
		fmt.Fprintf(&out, "$ go tool pprof %s -nodecount=%d %s\n%s\n", mode, n, path, b)
	}
	return out.String(), nil
}
