package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/bench/procstat"
)

// TestMain lets the test binary be re-executed as the server, as the command is.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == roleServer {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := serveChild(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString("loadtest server: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasure runs the whole tool with a tiny load against both kinds of server and checks the figures it depends
// on, not their values: every call succeeded, the window saw runs, the server's CPU and memory were read.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs a load for a few seconds")
	}
	agenthost := filepath.Join(t.TempDir(), "agenthost")
	if err := benchcli.BuildAgenthost(t.Context(), "", agenthost); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		agenthost string
		client    string
		progress  bool
		noSSE     bool
		profiled  bool
	}{
		{"built-in wiring, wire client, progress", "", clientWire, true, false, true},
		{"built-in wiring, sdk client, progress", "", clientSDK, true, false, true},
		{"built-in wiring, wire client, no progress, no standalone stream", "", clientWire, false, true, true},
		{"agenthost binary, wire client", agenthost, clientWire, true, false, false},
		{"agenthost binary, sdk client, no progress", agenthost, clientSDK, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &options{
				clients: 3, duration: time.Second, warmup: 300 * time.Millisecond, latency: 5 * time.Millisecond,
				client: tt.client, progress: tt.progress, noSSE: tt.noSSE, agenthost: tt.agenthost, profile: filepath.Join(t.TempDir(), "cpu.pprof"),
			}
			var stderr strings.Builder
			rep, err := measure(t.Context(), cfg, &stderr)
			if err != nil {
				t.Fatalf("measure: %v\nserver stderr:\n%s", err, stderr.String())
			}
			if rep.failures != 0 {
				t.Errorf("%d of %d calls failed: %v", rep.failures, rep.calls, rep.failedBy)
			}
			if rep.completed == 0 || len(rep.latencies) == 0 {
				t.Errorf("no run in the window: %d completed, %d latencies", rep.completed, len(rep.latencies))
			}
			if rep.modelRequests == 0 {
				t.Error("the fake model saw no request in the window")
			}
			if rep.peakRSS <= 0 || rep.serverCPU < 0 {
				t.Errorf("server figures not read: peak RSS %d, CPU %v", rep.peakRSS, rep.serverCPU)
			}
			if tt.progress != (rep.notifications > 0) {
				t.Errorf("progress tokens %v, but %d notifications", tt.progress, rep.notifications)
			}
			if tt.profiled != (rep.profile.path != "") || rep.profile.err != nil {
				t.Errorf("cpu profile: path %q, err %v; want one: %v", rep.profile.path, rep.profile.err, tt.profiled)
			}
			var out strings.Builder
			rep.write(&out)
			for _, want := range []string{"throughput:", "added latency:", "server CPU:", "peak RSS"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestSummarise(t *testing.T) {
	open := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	closed := open.Add(10 * time.Second)
	at := func(d time.Duration) time.Time { return open.Add(d) }
	samples := [][]sample{
		{
			{start: at(-time.Second), end: at(-900 * time.Millisecond)},               // warm-up: counts for nothing but calls
			{start: at(-50 * time.Millisecond), end: at(70 * time.Millisecond)},       // ends inside: throughput only
			{start: at(time.Second), end: at(time.Second + 110*time.Millisecond)},     // inside
			{start: at(9950 * time.Millisecond), end: at(10100 * time.Millisecond)},   // starts inside: latency only
			{start: at(2 * time.Second), end: at(3 * time.Second), err: errTest("x")}, // failed
		},
		{
			{start: at(5 * time.Second), end: at(5*time.Second + 130*time.Millisecond)}, // inside
		},
	}
	r := &report{cfg: &options{clients: 2, latency: 50 * time.Millisecond}}
	r.summarise(samples, open, closed, [2]counters{{at: open}, {at: closed, serverCPU: 30 * time.Millisecond}})

	if r.calls != 6 || r.failures != 1 || r.failedBy["x"] != 1 {
		t.Errorf("calls %d, failures %d (%v); want 6 and 1", r.calls, r.failures, r.failedBy)
	}
	if r.completed != 3 {
		t.Errorf("completed %d, want 3", r.completed)
	}
	if r.idealRate != 20 || r.throughput != 0.3 {
		t.Errorf("ideal %v/s, throughput %v/s; want 20 and 0.3", r.idealRate, r.throughput)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{0.5, 30 * time.Millisecond},
		{0.99, 50 * time.Millisecond},
		{1, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := r.added(tt.q); got != tt.want {
			t.Errorf("added(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := r.perRun(r.serverCPU); got != 10*time.Millisecond {
		t.Errorf("CPU per run %v, want 10ms", got)
	}
}

func TestParseAnnouncements(t *testing.T) {
	tests := []struct {
		name, line       string
		agenthost, ok    bool
		url, pprof, tool string
	}{
		{"built-in", "mcp=http://127.0.0.1:4000/mcp pprof=127.0.0.1:4001 tool=ask_agenthost", false, true, "http://127.0.0.1:4000/mcp", "127.0.0.1:4001", "ask_agenthost"},
		{"built-in, other line", "time=... level=WARN msg=x", false, false, "", "", ""},
		{"agenthost", "agenthost: serving MCP at http://127.0.0.1:4000/mcp (tool ask_agenthost)", true, true, "http://127.0.0.1:4000/mcp", "", "ask_agenthost"},
		{"agenthost, other line", "agenthost: warning: something", true, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &serverProc{}
			parse := p.parseChildLine
			if tt.agenthost {
				parse = p.parseServeLine
			}
			if ok := parse(tt.line); ok != tt.ok || p.mcpURL != tt.url || p.pprofAddr != tt.pprof || p.toolName != tt.tool {
				t.Errorf("parse = %v, url %q, pprof %q, tool %q; want %v, %q, %q, %q", ok, p.mcpURL, p.pprofAddr, p.toolName, tt.ok, tt.url, tt.pprof, tt.tool)
			}
		})
	}
}

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	if _, err := procstat.CPU(pid); err != nil {
		t.Errorf("processCPU: %v", err)
	}
	m, err := procstat.ReadMemory(pid)
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("processMemory = %+v, %v; want 0 < rss <= peak", m, err)
	}
	if lim, err := openFileLimit(pid); err != nil || lim == "" {
		t.Errorf("openFileLimit = %q, %v", lim, err)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-client", "sdk", "-n", "5"}, ""},
		{[]string{"-client", "curl"}, `-client "curl"`},
		{[]string{"-n", "0"}, "-n must be at least 1"},
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-state", "memory,sqlite,postgres", "-durable", "none,all"}, ""},
		{[]string{"-state", "redis"}, `-state "redis"`},
		{[]string{"-durable", "tasks"}, `-durable "tasks"`},
		{[]string{"-state", "sqlite", "-agenthost", "/bin/agenthost"}, "-state and -durable need the built-in wiring"},
	}
	for _, tt := range tests {
		cfg, err := parseFlags(tt.args, io.Discard)
		if tt.wantErr == "" {
			if err != nil || cfg.client == "" {
				t.Errorf("parseFlags(%q) = %+v, %v", tt.args, cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestStateMatrix runs the tool over every state backend, with and without durable runs, in one invocation: each
// combination's calls all succeed, and the comparison table has a row for each.
func TestStateMatrix(t *testing.T) {
	var stdout, stderr strings.Builder
	err := run(t.Context(), []string{"-state", "memory,sqlite,postgres", "-durable", "none,all", "-n", "3", "-duration", "1s",
		"-warmup", "300ms", "-latency", "5ms", "-top", "0", "-cpuprofile", filepath.Join(t.TempDir(), "cpu.pprof")}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	table := out[strings.LastIndex(out, "state  durable_runs"):]
	for _, row := range []string{"memory  none", "sqlite  none", "sqlite   all", "postgres  none", "postgres   all"} {
		if !regexp.MustCompile(`(?m)^\s*` + strings.Join(strings.Fields(row), `\s+`) + `\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+0\s*$`).MatchString(table) {
			t.Errorf("no row for %q with no failures in:\n%s", row, table)
		}
	}
	if strings.Count(out, "runs:          ") != 5 {
		t.Errorf("want 5 reports:\n%s", out)
	}
}

// TestEnvironWithoutTelemetry: the server measured gets no OTEL_ variable of the shell, which would add exporters
// to it, and keeps the rest.
func TestEnvironWithoutTelemetry(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("AGENTHOST_LOADTEST_KEEP", "1")
	env := environ("EXTRA=1")
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") }) {
		t.Errorf("an OTEL_ variable reaches the server: %q", env)
	}
	if !slices.Contains(env, "AGENTHOST_LOADTEST_KEEP=1") || env[len(env)-1] != "EXTRA=1" {
		t.Errorf("the rest of the environment, and the extra variable, are not all there: %q", env)
	}
}
