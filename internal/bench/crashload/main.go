// Command crashload measures what calls to a stdio MCP server suffer when the server crashes: it starts a server
// (this program, re-executed), configured as an [mcp.servers] entry and connected through the composition root
// (internal/wiring) as agenthost connects it, calls its tools from many goroutines at once, kills the server with
// SIGKILL every -kill, and sorts the calls that failed into those that were in flight at a kill and those made after
// one. A kill counts from the moment the process is dead (a zombie), which /proc shows a
// moment after the signal: a call made in between may still have reached it.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/crashload [-c 20] [-d 20s] [-kill 1s] [-work 20ms] [-reconnect-wait 10s]
//
// The server has two tools that each take -work: lookup, annotated readOnlyHint, and charge, with no annotation.
// The target is that only calls in flight at a kill fail, none of them lookup's, and no call made after a kill.
// -reconnect-wait -1s makes calls fail at once while the server is down, for comparison.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/wiring"
)

// serverName is the server's name in the configuration, and the prefix of its tools' names.
const serverName = "crashy"

// The child process learns its role from the environment.
const (
	roleEnv = "AGENTHOST_CRASHLOAD_ROLE"
	pidEnv  = "AGENTHOST_CRASHLOAD_PIDFILE"
	workEnv = "AGENTHOST_CRASHLOAD_WORK"
)

func main() {
	if os.Getenv(roleEnv) == "server" {
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, "crashload server:", err)
			os.Exit(1)
		}
		return
	}
	benchcli.Main("crashload", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// serve is the MCP server role: it writes its pid to the pid file and serves lookup and charge over stdio.
func serve() error {
	if err := os.WriteFile(os.Getenv(pidEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	work, err := time.ParseDuration(os.Getenv(workEnv))
	if err != nil {
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "1"}, nil)
	handler := func(name string) mcp.ToolHandler {
		return func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(work):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
		}
	}
	schema := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "Looks up.", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, handler("lookup"))
	srv.AddTool(&mcp.Tool{Name: "charge", Description: "Charges.", InputSchema: schema}, handler("charge"))
	return srv.Run(context.Background(), &mcp.StdioTransport{})
}

type options struct {
	concurrency   int
	duration      time.Duration
	kill          time.Duration
	work          time.Duration
	reconnectWait time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("crashload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.IntVar(&o.concurrency, "c", 20, "goroutines calling the tools at once")
	fs.DurationVar(&o.duration, "d", 20*time.Second, "how long to call")
	fs.DurationVar(&o.kill, "kill", time.Second, "time between two kills of the server")
	fs.DurationVar(&o.work, "work", 20*time.Millisecond, "how long a tool call takes")
	fs.DurationVar(&o.reconnectWait, "reconnect-wait", 10*time.Second, "[mcp.servers.X] reconnect_wait; negative: calls fail at once while the server is down")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.concurrency < 1 || o.duration <= 0 || o.kill <= 0 || o.work < 0 {
		return nil, errors.New("-c must be at least 1; -d and -kill positive; -work not negative")
	}
	return o, nil
}

// call is one tool call, as the load saw it.
type call struct {
	tool       string
	start, end time.Time
	err        string // "" when it succeeded
}

// result is the measurement.
type result struct {
	calls []call
	kills []time.Time
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	res, err := measure(ctx, o)
	if err != nil {
		return err
	}
	write(stdout, o, res)
	return nil
}

func measure(ctx context.Context, o *options) (*result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agenthost-crashload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "pid")
	// The server is an [mcp.servers] entry of agenthost's defaults, built through the composition root.
	cfg := config.Default()
	cfg.Builtin.Tools = []string{}
	cfg.State.Backend = config.StateMemory
	server := config.DefaultMCPServer()
	server.Transport, server.Command, server.Required = config.TransportStdio, exe, true
	server.Env = map[string]string{roleEnv: "server", pidEnv: pidFile, workEnv: o.work.String()}
	server.ReconnectWait = config.Duration{Duration: o.reconnectWait}
	cfg.MCP.Servers[serverName], cfg.MCP.Order = server, []string{serverName}
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Model: "test", Version: "crashload"})
	if err != nil {
		return nil, err
	}
	defer app.Close()
	tools, err := app.MCP().Toolsets()[0].Tools(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]host.Tool{}
	for _, t := range tools {
		byName[strings.TrimPrefix(t.Spec().Name, serverName+"_")] = t
	}
	lookup, charge := byName["lookup"], byName["charge"]
	if lookup == nil || charge == nil {
		return nil, fmt.Errorf("the server offers %d tools, not lookup and charge", len(tools))
	}

	res := &result{}
	var mu sync.Mutex
	end := time.Now().Add(o.duration)
	var wg sync.WaitGroup
	for i := range o.concurrency {
		wg.Go(func() {
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				t, name := lookup, "lookup"
				if (i+n)%2 == 1 {
					t, name = charge, "charge"
				}
				c := call{tool: name, start: time.Now()}
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				r, err := t.Call(cctx, []byte(`{}`), nil)
				cancel()
				c.end = time.Now()
				switch {
				case err != nil:
					c.err = err.Error()
				case r.IsError:
					c.err = r.Text
				}
				mu.Lock()
				res.calls = append(res.calls, c)
				mu.Unlock()
			}
		})
	}
	ticker := time.NewTicker(o.kill)
	defer ticker.Stop()
	for time.Now().Before(end) && ctx.Err() == nil {
		select {
		case <-ticker.C:
		case <-ctx.Done():
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, syscall.SIGKILL) != nil {
			continue
		}
		gone := waitGone(pid)
		mu.Lock()
		res.kills = append(res.kills, gone)
		mu.Unlock()
	}
	wg.Wait()
	return res, ctx.Err()
}

// waitGone waits until the killed process pid is dead (a zombie, or reaped) and returns that time: a call started
// before then may have reached the server, one started after it found no server.
func waitGone(pid int) time.Time {
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			break // reaped
		}
		// The state follows the command name, which is in parentheses and may hold spaces.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			break
		}
	}
	return time.Now()
}

// inFlight reports whether a kill happened while c ran.
func (r *result) inFlight(c call) bool {
	return slices.ContainsFunc(r.kills, func(k time.Time) bool { return c.start.Before(k) && c.end.After(k) })
}

// tally is the calls of one tool, sorted by what happened to them.
type tally struct {
	calls, ok, inFlightOK, inFlightFailed, failedAfter int
	reasons                                            map[string]int
}

func (r *result) tally(tool string) *tally {
	t := &tally{reasons: map[string]int{}}
	for _, c := range r.calls {
		if c.tool != tool {
			continue
		}
		t.calls++
		in := r.inFlight(c)
		switch {
		case c.err == "" && in:
			t.inFlightOK++
			t.ok++
		case c.err == "":
			t.ok++
		case in:
			t.inFlightFailed++
			t.reasons[reason(c.err)]++
		default:
			t.failedAfter++
			t.reasons[reason(c.err)]++
		}
	}
	return t
}

// reason shortens an error to its kind.
func reason(msg string) string {
	switch {
	case strings.Contains(msg, "may or may not have taken effect"):
		return "went away during the call"
	case strings.Contains(msg, "did not come back within"):
		return "down longer than reconnect_wait"
	case strings.Contains(msg, "is down"):
		return "down (no wait)"
	}
	return msg
}

func write(w io.Writer, o *options, r *result) {
	fmt.Fprintf(w, "crashload: %d goroutines for %v, the server killed every %v (%d kills), tool calls of %v, reconnect_wait %v\n\n",
		o.concurrency, o.duration, o.kill, len(r.kills), o.work, o.reconnectWait)
	fmt.Fprintf(w, "%-7s %7s %7s %21s %21s %20s\n", "tool", "calls", "ok", "in flight, succeeded", "in flight, failed", "failed after a kill")
	for _, name := range []string{"lookup", "charge"} {
		t := r.tally(name)
		fmt.Fprintf(w, "%-7s %7d %7d %21d %21d %20d\n", name, t.calls, t.ok, t.inFlightOK, t.inFlightFailed, t.failedAfter)
	}
	for _, name := range []string{"lookup", "charge"} {
		for msg, n := range r.tally(name).reasons {
			fmt.Fprintf(w, "%s: %d × %s\n", name, n, msg)
		}
	}
}
