package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/peers"
)

// TestMain lets the test binary be re-executed as the profiled server, as the command is.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == roleServer {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := serveChild(ctx, os.Args[1:], os.Stdin, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString("a2aload server: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasure runs the whole tool with a tiny load against both targets, the built agenthost binary and the profiled
// built-in wiring, and checks what the report rests on, not the figures' values: requests and no error on both
// targets, the servers' CPU and memory read, the report's rows, and the profile written.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agenthost, starts Node processes and runs a load for a few seconds")
	}
	node := peers.Node(t) // both fail the test when the peers are missing
	peers.Dir(t)
	tests := []struct {
		name    string
		profile bool
	}{
		{"agenthost binary", false},
		{"built-in wiring, profiled", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &options{concurrency: 4, duration: time.Second, rounds: 1, node: node}
			if tt.profile {
				o.cpuprofile = filepath.Join(t.TempDir(), "cpu.pprof")
				o.memprofile = filepath.Join(t.TempDir(), "heap.pprof")
			}
			var stderr strings.Builder
			rep, err := measure(t.Context(), o, &stderr)
			if err != nil {
				t.Fatalf("measure: %v\nstderr:\n%s", err, stderr.String())
			}
			if err := rep.check(); err != nil {
				t.Errorf("check: %v", err)
			}
			if len(rep.runs) != 2 {
				t.Fatalf("%d runs, want 2", len(rep.runs))
			}
			for _, run := range rep.runs {
				if run.load.Requests == 0 || run.load.Errors != 0 {
					t.Errorf("%s: %d requests, %d errors (%s); want some and none", run.target, run.load.Requests, run.load.Errors, run.firstError)
				}
				if run.peakRSS <= 0 || run.serverCPU < 0 || run.loadCPU <= 0 {
					t.Errorf("%s: figures not read: peak RSS %d, server CPU %v, load CPU %v", run.target, run.peakRSS, run.serverCPU, run.loadCPU)
				}
			}
			for i, s := range rep.servers {
				if rep.hwm[i] <= 0 || s.idleRSS <= 0 {
					t.Errorf("%s: VmHWM %d, idle RSS %d", s.name, rep.hwm[i], s.idleRSS)
				}
				select {
				case <-s.exited:
				default:
					t.Errorf("%s (pid %d) is still running after measure", s.name, s.pid)
				}
			}
			var out strings.Builder
			rep.write(&out)
			for _, want := range []string{"agenthost / js-echo: req/s", "VmHWM", "js-echo", "agenthost"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
			if tt.profile {
				for _, p := range []string{o.cpuprofile, o.memprofile} {
					if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
						t.Errorf("profile %s: %v", p, err)
					}
				}
			}
			t.Logf("report:\n%s", out.String())
		})
	}
}

func TestParseLines(t *testing.T) {
	tests := []struct {
		parse func(string) (string, bool)
		line  string
		url   string
		ok    bool
	}{
		{parseServeLine, "agenthost: serving A2A at http://127.0.0.1:4000/ (card http://127.0.0.1:4000/.well-known/agent-card.json)", "http://127.0.0.1:4000/", true},
		{parseServeLine, "agenthost: serving A2A at http://127.0.0.1:4000/ (built-in wiring)", "http://127.0.0.1:4000/", true},
		{parseServeLine, "agenthost: serving MCP at http://127.0.0.1:4000/mcp (tool ask)", "", false},
		{parseServeLine, "time=... level=WARN msg=x", "", false},
		{parseListenLine, "listening http://127.0.0.1:5000", "http://127.0.0.1:5000", true},
		{parseListenLine, "listening ", "", false},
		{parseListenLine, "Error: listen EADDRINUSE", "", false},
	}
	for _, tt := range tests {
		if url, ok := tt.parse(tt.line); url != tt.url || ok != tt.ok {
			t.Errorf("parse(%q) = %q, %v; want %q, %v", tt.line, url, ok, tt.url, tt.ok)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-c", "4", "-d", "1s", "-rounds", "3"}, ""},
		{[]string{"-c", "0"}, "-c must be at least 1"},
		{[]string{"-d", "0s"}, "-d must be at least"},
		{[]string{"-rounds", "0"}, "-rounds must be at least 1"},
		{[]string{"-agenthost", "x", "-cpuprofile", "y"}, "do not take -agenthost"},
		{[]string{"-agenthost", "x", "-memprofile", "y"}, "do not take -agenthost"},
		{[]string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args, io.Discard)
		if tt.wantErr == "" {
			if err != nil || o.concurrency < 1 {
				t.Errorf("parseFlags(%q) = %+v, %v", tt.args, o, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
