// Command a2aload compares `agenthost serve --a2a` with the JS SDK's echo agent under the same load of JS SDK
// clients: requests per second, latency (p50, p99), errors, and each server's CPU and peak RSS, side by side.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/a2aload [-c 100] [-d 10s] [-rounds 1] [-warmup 2s] [-agenthost PATH] [-cpuprofile FILE] [-memprofile FILE]
//
// It starts two servers on loopback and keeps them for the whole measurement:
//   - agenthost: `agenthost serve --a2a 127.0.0.1:0 -model test` with an agent.toml whose [builtin] tools = [], so a
//     message is one run of the orchestrator on the offline test model, with no tool: the server's own cost. Without
//     -agenthost, the binary is built with `go build` into a temporary directory. With -cpuprofile or -memprofile,
//     this program re-executes itself as that server instead, built through the composition root (internal/wiring)
//     as `agenthost serve --a2a` is, and writes the server's CPU profile (it is idle outside its own load runs) or
//     its heap once the load is over to the file;
//   - js-echo: testdata/a2a/echo-agent.mjs, an @a2a-js/sdk agent on express that answers every message with a
//     Message "echo: <text>".
//
// Then, for each round, it runs testdata/a2a/load.mjs (one Node process: -c JS SDK clients, each calling
// SendMessage back to back for -d) against each server in turn, alternating which goes first, after one -warmup
// run against each that is not counted. During each run it samples the server's VmRSS every 50 ms; it reads the
// server's CPU time from /proc/PID/stat and, at the end, each server's VmHWM (its peak RSS over its whole life).
//
// The report (stdout) has a row per run, the medians over the rounds, and the ratios agenthost / js-echo of
// requests per second and of peak RSS against the target: at least 2x the JS agent's requests per second with at
// most a quarter of its RSS. The load generator shares the machine with the server it measures: its CPU is shown.
//
// It exits 1 when a run saw an error or no request. Every process it starts is stopped before it exits, and each
// load run is bounded. Everything is on 127.0.0.1. It runs on Linux only (it reads /proc) and needs Node 20 or
// later and the npm packages of testdata/peers (`make peers`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
)

func main() {
	benchcli.Main("a2aload", func(ctx context.Context) error {
		if os.Getenv(roleEnv) == roleServer {
			return serveChild(ctx, os.Args[1:], os.Stdin, os.Stderr)
		}
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	})
}

// options is what the flags set.
type options struct {
	concurrency int
	duration    time.Duration
	rounds      int
	warmup      time.Duration
	agenthost   string // "" builds it
	cpuprofile  string // "" for none; else the agenthost target is the built-in wiring, profiled
	memprofile  string // "" for none; else the agenthost target is the built-in wiring, with a heap profile at the end
	node        string // "" is node on PATH
	top         int
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("a2aload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.IntVar(&o.concurrency, "c", 100, "concurrent JS SDK clients, each sending a message at a time")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "duration of each measured run")
	fs.IntVar(&o.rounds, "rounds", 1, "measured runs against each target, alternating which goes first")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "an uncounted run against each target before the rounds; 0 for none")
	fs.StringVar(&o.agenthost, "agenthost", "", "the agenthost binary; \"\" builds it into a temporary directory")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "run the agenthost target as this program re-executed with the wiring of `agenthost serve --a2a`, and write its CPU profile to `file`")
	fs.StringVar(&o.memprofile, "memprofile", "", "like -cpuprofile, for the heap profile the server writes once the load is over")
	fs.StringVar(&o.node, "node", "", "the node binary; \"\" means node on PATH")
	fs.IntVar(&o.top, "top", 30, "entries of the CPU profile to print (go tool pprof -top); 0 for none")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: a2aload [flags]\n\nCompares agenthost serve --a2a with the JS SDK echo agent under the same JS client load. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.concurrency < 1:
		return nil, errors.New("-c must be at least 1")
	case o.duration < 100*time.Millisecond:
		return nil, errors.New("-d must be at least 100ms")
	case o.rounds < 1:
		return nil, errors.New("-rounds must be at least 1")
	case o.warmup < 0:
		return nil, errors.New("-warmup must not be negative")
	case o.agenthost != "" && o.builtin():
		return nil, errors.New("-cpuprofile and -memprofile profile the built-in wiring: they do not take -agenthost")
	}
	return o, nil
}

// builtin reports whether the agenthost target is this program re-executed, for its profiles.
func (o *options) builtin() bool { return o.cpuprofile != "" || o.memprofile != "" }

// run is the whole measurement: it parses args, measures, and writes the report to stdout. It fails when a run saw
// an error or no request.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	rep, err := measure(ctx, o, stderr)
	if err != nil {
		return err
	}
	rep.write(stdout)
	if o.top > 0 {
		for _, p := range []string{o.cpuprofile, o.memprofile} {
			if p != "" {
				writeProfileTop(ctx, stdout, p, o.top)
			}
		}
	}
	return rep.check()
}
