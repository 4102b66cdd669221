// Command loadtest measures `agenthost serve --http` under many concurrent MCP clients.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/loadtest [-n 100] [-duration 20s] [-warmup 3s] [-latency 50ms] [-agenthost PATH]
//
// It starts three things on loopback:
//   - a fake OpenAI-compatible model (internal/testkit/fakellm) that answers every request after -latency: the first
//     model call of a run asks for one call of the built-in current_time tool, the second answers with text;
//   - the agent server in a child process: by default this binary re-executed as the server, built and served through
//     the composition root (internal/wiring) as `agenthost serve --http` is, from the built-in defaults with the
//     fake model and the -state flags as overrides, with net/http/pprof on a second loopback port;
//     with -agenthost, that binary itself, started with a generated agent.toml (then there is no CPU profile);
//   - -n MCP clients over streamable HTTP, each calling the agent tool in a loop: by default a minimal client
//     written against the wire format (wire.go), which leaves more of the machine to the server; with
//     -client sdk, go-sdk clients.
//
// The server runs in its own process so that its CPU time and peak RSS are its own, not the clients' or the fake
// model's; both are read from /proc. A run ideally takes two model latencies (the tool takes no time), so the ideal
// throughput is n / (2 × latency) runs per second. The report gives the throughput against that ideal, the latency
// each run adds to the ideal (p50, p99, max), the server's CPU time per run and peak RSS (VmHWM), failed calls, and
// the top entries of the server's CPU profile over the measured window.
//
// Only the window after -warmup counts for throughput, latency and CPU; a failed call anywhere counts as failed.
//
// It runs on Linux only (it reads /proc). It imports internal/wiring, as `agenthost serve` does, plus
// internal/testkit/fakellm and the MCP SDK's client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/testkit/pgtest"
)

func main() {
	benchcli.Main("loadtest", func(ctx context.Context) error {
		if os.Getenv(roleEnv) == roleServer {
			return serveChild(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		}
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	})
}

// The MCP clients the load tool can drive the server with.
const (
	clientWire = "wire"
	clientSDK  = "sdk"
)

// options is what the flags set.
type options struct {
	clients    int
	duration   time.Duration
	warmup     time.Duration
	latency    time.Duration
	chunkSize  int
	progress   bool
	noSSE      bool
	agenthost  string
	profile    string
	selfProf   string
	client     string
	top        int
	maxFailLog int

	// states and durables are the state backends and durable_runs values measured, every combination in turn;
	// state and durable are the combination being measured.
	states, durables []string
	state, durable   string
	stateDir, dsn    string // the combination's SQLite directory or Postgres database
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &options{}
	fs.IntVar(&c.clients, "n", 100, "concurrent MCP clients (sessions), each calling the agent tool in a loop")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "measured window")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "time the clients run before the window opens")
	fs.DurationVar(&c.latency, "latency", 50*time.Millisecond, "the fake model's latency per request")
	fs.IntVar(&c.chunkSize, "chunk-size", 0, "runes per streamed delta of the fake model; 0 means fakellm's default (3)")
	fs.BoolVar(&c.progress, "progress", true, "send a progress token with each call, so the server sends progress notifications")
	fs.StringVar(&c.client, "client", clientWire, "the MCP client: \"wire\", a minimal client written against the wire format, or \"sdk\", the go-sdk client")
	fs.BoolVar(&c.noSSE, "no-standalone-sse", false, "clients do not open the standalone SSE stream (one connection less per session)")
	fs.StringVar(&c.agenthost, "agenthost", "", "run this agenthost binary as the server instead of the built-in wiring (no CPU profile then)")
	fs.StringVar(&c.profile, "cpuprofile", "", "write the server's CPU profile of the window to `file`; \"\" means a temporary file")
	fs.StringVar(&c.selfProf, "self-cpuprofile", "", "also write this process's own CPU profile of the window (clients and fake model) to `file`")
	fs.IntVar(&c.top, "top", 25, "entries of the server's CPU and heap profiles to print (go tool pprof -top); 0 for none")
	fs.IntVar(&c.maxFailLog, "show-failures", 5, "distinct failure messages to print")
	states := fs.String("state", "memory", "state backends to measure, comma-separated: memory, sqlite, postgres (a throwaway cluster)")
	durables := fs.String("durable", "none", "durable_runs values to measure, comma-separated: none, all")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: loadtest [flags]\n\nMeasures agenthost serve --http under concurrent MCP clients. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.clients < 1:
		return nil, errors.New("-n must be at least 1")
	case c.client != clientWire && c.client != clientSDK:
		return nil, fmt.Errorf("-client %q: want %q or %q", c.client, clientWire, clientSDK)
	case c.duration <= 0 || c.warmup < 0 || c.latency < 0 || c.chunkSize < 0:
		return nil, errors.New("-duration must be positive; -warmup, -latency and -chunk-size not negative")
	}
	c.states, c.durables = strings.Split(*states, ","), strings.Split(*durables, ",")
	for _, st := range c.states {
		if st != config.StateMemory && st != config.StateSQLite && st != config.StatePostgres {
			return nil, fmt.Errorf("-state %q: want memory, sqlite or postgres", st)
		}
	}
	for _, d := range c.durables {
		if d != config.DurableNone && d != config.DurableAll {
			return nil, fmt.Errorf("-durable %q: want none or all", d)
		}
	}
	if c.agenthost != "" && (len(c.states) > 1 || len(c.durables) > 1 || c.states[0] != config.StateMemory || c.durables[0] != config.DurableNone) {
		return nil, errors.New("-state and -durable need the built-in wiring: leave out -agenthost")
	}
	return c, nil
}

// run is the whole measurement: it parses args, then for each combination of state backend and durable_runs
// starts everything, drives the load and writes the report to stdout; with several, a table compares them.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var cluster *pgtest.Cluster
	if slices.Contains(cfg.states, config.StatePostgres) {
		fmt.Fprintln(stderr, "loadtest: starting a throwaway PostgreSQL cluster")
		if cluster, err = pgtest.Start(); err != nil {
			return err
		}
		defer cluster.Stop()
	}
	var reps []*report
	for _, state := range cfg.states {
		for _, d := range cfg.durables {
			if state == config.StateMemory && d != config.DurableNone {
				continue // durable runs need a database
			}
			c := *cfg
			c.state, c.durable = state, d
			switch state {
			case config.StateSQLite:
				dir, err := os.MkdirTemp("", "agenthost-loadtest-state-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				c.stateDir = dir
			case config.StatePostgres:
				if c.dsn, err = cluster.CreateDatabase(ctx); err != nil {
					return err
				}
			}
			if len(cfg.states)*len(cfg.durables) > 1 {
				fmt.Fprintf(stdout, "== state %s, durable_runs %s\n", state, d)
			}
			rep, err := measure(ctx, &c, stderr)
			if err != nil {
				return fmt.Errorf("state %s, durable_runs %s: %w", state, d, err)
			}
			rep.write(stdout)
			fmt.Fprintln(stdout)
			reps = append(reps, rep)
		}
	}
	if len(reps) > 1 {
		writeComparison(stdout, reps)
	}
	return nil
}
