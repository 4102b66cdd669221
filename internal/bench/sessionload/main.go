//go:build linux

// Command sessionload shows that the memory of MCP sessions comes back once they end: it opens -n sessions on
// `agenthost serve --http` with initialize, lets them expire (session_idle_timeout), and reads the server's resident
// memory before, at the peak, right after they expired, 15s later and after a settle window.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/sessionload [-n 10000] [-c 32] [-rounds 2] [-idle 5s] [-settle 30s] [-agenthost PATH] [-godebug S]
//
// The server is the real binary (built with plain `go build` into a temporary directory unless
// -agenthost names one), started as a child with an agent.toml of its own: the offline test model, no tools, state in
// memory, [serve] session_idle_timeout = -idle and max_sessions above -n, and -log-level info. It runs with
// GODEBUG=gctrace=1 (and -godebug's settings after it, such as scavtrace=1; then the GC lines are shown too), so
// each of its garbage collections writes the live heap it left, which the report shows beside VmRSS: RSS counts
// memory the runtime has freed but not yet returned to the system; the live heap does not. The last column is what
// the server said it returned to the system once many sessions had ended (its "returned the memory of ended
// sessions" log lines: how many times, and the MiB released in all).
//
// Each round opens -n sessions from -c clients at once (every initialize must get 200 and a session id), then
// waits until the first and the last session opened answer 404 (expired), then waits -settle. The server returns the
// memory 10s after its 1,000th session ended; left to the Go runtime, an idle server would run no collection until
// the runtime forces one (2 minutes after the last), and return the freed pages up to a minute after that. A second
// round shows whether what the first left behind grows.
//
// It exits 1 when a session was refused or did not expire. The server is stopped before it exits. Everything is on
// 127.0.0.1. It runs on Linux only (it reads /proc).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/bench/procstat"
)

func main() {
	benchcli.Main("sessionload", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

type options struct {
	n, concurrency, rounds int
	idle, settle           time.Duration
	agenthost, godebug     string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sessionload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.n, "n", 10000, "sessions opened per round")
	fs.IntVar(&o.concurrency, "c", 32, "clients opening sessions at once")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds of opening and expiring")
	fs.DurationVar(&o.idle, "idle", 5*time.Second, "the server's session_idle_timeout")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "how long to wait after the sessions expired before reading RSS again")
	fs.StringVar(&o.agenthost, "agenthost", "", "the agenthost binary; built into a temporary directory when empty")
	fs.StringVar(&o.godebug, "godebug", "", "more GODEBUG settings for the server, after gctrace=1 (e.g. scavtrace=1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.n < 1 || o.concurrency < 1 || o.rounds < 1 || o.idle <= 0 || o.settle < 0 {
		return errors.New("-n, -c and -rounds must be at least 1, -idle positive and -settle not negative")
	}
	dir, err := os.MkdirTemp("", "sessionload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.agenthost == "" {
		o.agenthost = filepath.Join(dir, "agenthost")
		fmt.Fprintln(stderr, "building agenthost")
		if err := benchcli.BuildAgenthost(ctx, "", o.agenthost); err != nil {
			return err
		}
	}
	config := filepath.Join(dir, "agent.toml")
	toml := fmt.Sprintf("[agent]\nname = \"sessions\"\n\n[model]\nprovider = \"test\"\n\n[builtin]\ntools = []\n\n[state]\nbackend = \"memory\"\n\n"+
		"[serve]\nsession_idle_timeout = %q\nmax_sessions = %d\n", o.idle.String(), o.n+100)
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		return err
	}
	srv, err := start(ctx, o.agenthost, config, o.godebug, stderr)
	if err != nil {
		return err
	}
	defer srv.stop()

	fmt.Fprintf(stdout, "agenthost serve --http, session_idle_timeout %v: %d sessions per round from %d clients, settle %v\n\n", o.idle, o.n, o.concurrency, o.settle)
	var failed error
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "round\tpoint\tVmRSS\tlive heap (last GC)\treturned by the server\t")
	row := func(round, point string) {
		m, err := procstat.ReadMemory(srv.pid)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%v\t\t\t\n", round, point, err)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", round, point, mib(m.RSS), srv.liveHeap(), srv.returned())
	}
	wait := func(d time.Duration) {
		select {
		case <-ctx.Done():
			failed = ctx.Err()
		case <-time.After(d):
		}
	}
	time.Sleep(time.Second) // let start-up settle
	row("-", "idle, before any session")
	for r := 1; r <= o.rounds && failed == nil; r++ {
		round := strconv.Itoa(r)
		started := time.Now()
		ids, err := openSessions(ctx, srv.url, o.n, o.concurrency)
		if err != nil {
			failed = fmt.Errorf("round %d: %w", r, err)
			break
		}
		row(round, fmt.Sprintf("%d sessions open (%.1fs)", len(ids), time.Since(started).Seconds()))
		if err := waitExpired(ctx, srv.url, []string{ids[0], ids[len(ids)-1]}, o.idle+time.Minute); err != nil {
			failed = fmt.Errorf("round %d: %w", r, err)
			break
		}
		row(round, "sessions expired")
		const soon = 15 * time.Second
		if o.settle > soon {
			wait(soon)
			row(round, fmt.Sprintf("%v later", soon))
			wait(o.settle - soon)
		} else {
			wait(o.settle)
		}
		row(round, fmt.Sprintf("%v after they expired", o.settle))
	}
	m, err := procstat.ReadMemory(srv.pid)
	if err == nil {
		fmt.Fprintf(tw, "-\tpeak (VmHWM)\t%s\t\t\t\n", mib(m.Peak))
	}
	tw.Flush()
	return failed
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sessionload","version":"1"}}}`

// openSessions opens n sessions from c clients at once and returns their ids, in the order they were opened.
func openSessions(ctx context.Context, url string, n, c int) ([]string, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	var (
		mu    sync.Mutex
		ids   []string
		first error
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				id, err := open(ctx, client, url)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					ids = append(ids, id)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil && len(ids) != n {
		first = fmt.Errorf("%d sessions opened, want %d", len(ids), n)
	}
	return ids, first
}

func open(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initialize))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return "", fmt.Errorf("initialize: HTTP %d, session %q: %s", resp.StatusCode, id, bytes.TrimSpace(body))
	}
	return id, nil
}

// waitExpired waits until each of ids answers 404; it fails after limit. It asks with a GET for the session's
// stream, which the SDK does not count as activity (only POSTs keep a session), and drops a stream it gets.
func waitExpired(ctx context.Context, url string, ids []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, id := range ids {
		for {
			status, err := probe(ctx, url, id)
			if err != nil {
				return err
			}
			if status == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("session %s: HTTP %d after %v, want 404 once expired", id, status, limit)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

func probe(ctx context.Context, url, id string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// server is the agenthost child.
type server struct {
	cmd    *exec.Cmd
	pid    int
	url    string
	exited chan struct{}

	mu       sync.Mutex
	live     string // the live heap the last GC left, from gctrace
	reclaims int    // the server's "returned the memory of ended sessions" lines
	released int    // the MiB they said were released, in all
}

var (
	servingLine = regexp.MustCompile(`serving MCP at (http://\S+)`)
	gcLine      = regexp.MustCompile(`^gc \d+ .* (\d+)->(\d+)->(\d+) MB`)
	// The go-sdk logs each session that ends at info: 10,000 lines a round, not shown.
	sessionEndLine = regexp.MustCompile(`msg="server session disconnected"`)
	reclaimLine    = regexp.MustCompile(`msg="returned the memory of ended sessions to the system" .*released_mib=(-?\d+)`)
)

// start starts `agenthost serve --http 127.0.0.1:0` with config and waits until it says where it listens. Its
// other stderr lines go to logw, but for the gctrace lines, which it keeps the last of (and shows too when godebug
// has more settings), and the go-sdk's line for each session that ends.
func start(ctx context.Context, bin, config, godebug string, logw io.Writer) (*server, error) {
	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--config", config, "-log-level", "info")
	env := "GODEBUG=gctrace=1"
	if godebug != "" {
		env += "," + godebug
	}
	cmd.Env = append(os.Environ(), env)
	// A group of its own, killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agenthost: %w", err)
	}
	s := &server{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	echoGC := godebug != "" // GC lines too, beside what the other settings write
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if m := gcLine.FindStringSubmatch(line); m != nil {
				s.mu.Lock()
				s.live = m[3] + " MB"
				s.mu.Unlock()
				if !echoGC {
					continue
				}
			}
			if sessionEndLine.MatchString(line) {
				continue
			}
			if m := reclaimLine.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				s.mu.Lock()
				s.reclaims++
				s.released += n
				s.mu.Unlock()
			}
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			fmt.Fprintln(logw, "agenthost:", line)
		}
		_, _ = io.Copy(io.Discard, stderr) // a line too long ends the scan: the rest is read all the same
	}()
	go func() {
		// Wait closes the pipe: it is called once the pipe has been read to its end (os/exec).
		<-scanned
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.url = <-found:
		return s, nil
	case <-s.exited:
		return nil, errors.New("agenthost exited before it served")
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	s.stop()
	return nil, errors.New("agenthost did not say where it listens")
}

func (s *server) liveHeap() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

func (s *server) returned() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reclaims == 0 {
		return "-"
	}
	return fmt.Sprintf("%d× %d MiB", s.reclaims, s.released)
}

// stop interrupts the server and waits for it, killing its group after 10s.
func (s *server) stop() {
	_ = syscall.Kill(-s.pid, syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		<-s.exited
	}
}
