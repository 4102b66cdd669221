package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/bench/procstat"
)

// The targets, as the report names them.
const (
	targetAgenthost = "agenthost"
	targetJS        = "js-echo"
)

// agentConfig is the agent.toml of the agenthost target: no tool, so that a message is one model call, and state in
// memory, as the JS echo agent keeps its tasks (the cost of a state database is measured by internal/bench/loadtest).
const agentConfig = "[builtin]\ntools = []\n\n[state]\nbackend = \"memory\"\n"

// loadSlack bounds a load run beyond its duration: the clients' creation (each fetches the card) before the timed
// part, and the 10 s load.mjs gives hanging calls after it.
const loadSlack = time.Minute

// loadResult is the line load.mjs prints.
type loadResult struct {
	Requests int     `json:"requests"` // successful calls
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
}

// runResult is one load run against one target.
type runResult struct {
	round      int // 0 for the warm-up
	target     string
	load       loadResult
	firstError string        // what load.mjs said on stderr, when the run had errors
	serverCPU  time.Duration // the server's, over the load process's life
	loadCPU    time.Duration // the load process's
	loadWall   time.Duration // the load process's life, node's start-up and the clients' creation included
	peakRSS    int64         // the server's largest VmRSS sampled during the run
	otherCPU   time.Duration // what the rest of the machine used meanwhile: all CPUs' busy time less the two above
}

// measure starts both servers, runs the warm-up and the rounds, reads the servers' peak RSS and stops everything.
func measure(ctx context.Context, o *options, stderr io.Writer) (*report, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	node, err := lookNode(o.node)
	if err != nil {
		return nil, err
	}
	if err := checkPeers(root); err != nil {
		return nil, err
	}
	version, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", node, err)
	}
	dir, err := os.MkdirTemp("", "a2aload-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(conf, []byte(agentConfig), 0o600); err != nil {
		return nil, err
	}

	var ahCmd *exec.Cmd
	if o.builtin() {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		var args []string
		for _, p := range []struct{ flag, path string }{{"-cpuprofile", o.cpuprofile}, {"-memprofile", o.memprofile}} {
			if p.path == "" {
				continue
			}
			abs, err := filepath.Abs(p.path)
			if err != nil {
				return nil, err
			}
			args = append(args, p.flag, abs)
		}
		ahCmd = exec.Command(exe, args...)
		ahCmd.Env = append(os.Environ(), roleEnv+"="+roleServer)
	} else {
		bin := o.agenthost
		if bin == "" {
			fmt.Fprintln(stderr, "a2aload: go build ./cmd/agenthost")
			if bin, err = buildAgenthost(ctx, root, dir); err != nil {
				return nil, err
			}
		}
		ahCmd = exec.Command(bin, "serve", "-config", conf, "-log-level", "warn", "-model", "test", "--a2a", "127.0.0.1:0")
	}
	ah, err := startServer(ctx, targetAgenthost, ahCmd, true, parseServeLine, stderr)
	if err != nil {
		return nil, err
	}
	defer ah.stop()
	if o.builtin() {
		ah.desc = "this program re-executed as `agenthost serve --a2a 127.0.0.1:0 -model test` (built-in wiring, profiled)"
	}
	jsCmd := exec.Command(node, filepath.Join(root, "testdata", "a2a", "echo-agent.mjs"))
	jsCmd.Env = append(os.Environ(), "PORT=0")
	js, err := startServer(ctx, targetJS, jsCmd, false, parseListenLine, stderr)
	if err != nil {
		return nil, err
	}
	defer js.stop()

	rep := &report{o: o, node: strings.TrimSpace(string(version)), servers: []*server{ah, js}}
	script := filepath.Join(root, "testdata", "a2a", "load.mjs")
	if o.warmup > 0 {
		for _, s := range rep.servers {
			r, err := loadRun(ctx, node, script, s, o.concurrency, o.warmup)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(stderr, "a2aload: warm-up %-9s %8.1f req/s, %d errors\n", s.name, r.load.RPS, r.load.Errors)
			rep.warmups = append(rep.warmups, r)
		}
	}
	for round := 1; round <= o.rounds; round++ {
		order := slices.Clone(rep.servers)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, s := range order {
			r, err := loadRun(ctx, node, script, s, o.concurrency, o.duration)
			if err != nil {
				return nil, err
			}
			r.round = round
			fmt.Fprintf(stderr, "a2aload: round %d   %-9s %8.1f req/s, p50 %.1f ms, p99 %.1f ms, %d errors\n", round, s.name, r.load.RPS, r.load.P50, r.load.P99, r.load.Errors)
			rep.runs = append(rep.runs, r)
		}
	}
	for _, s := range rep.servers {
		m, err := procstat.ReadMemory(s.pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		rep.hwm = append(rep.hwm, m.Peak)
	}
	// Stopped here rather than deferred only, so that the CPU profile is written before the report reads it.
	ah.stop()
	js.stop()
	return rep, nil
}

// loadRun runs load.mjs against s with c clients for d, and reads the server's CPU time and RSS around it.
func loadRun(ctx context.Context, node, script string, s *server, c int, d time.Duration) (runResult, error) {
	r := runResult{target: s.name}
	cpu0, err := procstat.CPU(s.pid)
	if err != nil {
		return r, fmt.Errorf("%s: %w", s.name, err)
	}
	busy0, err := machineBusy()
	if err != nil {
		return r, err
	}
	stopRSS := sampleRSS(s.pid)
	ctx, cancel := context.WithTimeout(ctx, d+loadSlack)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, s.url, strconv.Itoa(c), strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = waitDelay
	start := time.Now()
	err = cmd.Run()
	r.loadWall = time.Since(start)
	r.peakRSS = stopRSS()
	cpu1, cpuErr := procstat.CPU(s.pid)
	busy1, busyErr := machineBusy()
	select {
	case <-s.exited:
		return r, fmt.Errorf("%s exited during the load: %v", s.name, s.waitErr)
	default:
	}
	if err != nil {
		return r, fmt.Errorf("load.mjs against %s: %w\n%s", s.name, err, clip(stderr.String(), 2000))
	}
	if err := errors.Join(cpuErr, busyErr); err != nil {
		return r, fmt.Errorf("%s: %w", s.name, err)
	}
	r.serverCPU = cpu1 - cpu0
	r.loadCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r.otherCPU = max(busy1-busy0-r.serverCPU-r.loadCPU, 0)
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, &r.load); err != nil {
		return r, fmt.Errorf("load.mjs against %s printed %q: %w", s.name, clip(stdout.String(), 500), err)
	}
	if r.load.Errors > 0 {
		r.firstError = clip(strings.TrimSpace(stderr.String()), 500)
	}
	return r, nil
}

// parseServeLine reads agenthost's "agenthost: serving A2A at URL (card ...)" line.
func parseServeLine(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "agenthost: serving A2A at ")
	if !ok {
		return "", false
	}
	url, _, _ := strings.Cut(rest, " ")
	return url, url != ""
}

// parseListenLine reads a JS agent's "listening URL" line.
func parseListenLine(line string) (string, bool) {
	url, ok := strings.CutPrefix(line, "listening ")
	if !ok || url == "" {
		return "", false
	}
	return url, true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
