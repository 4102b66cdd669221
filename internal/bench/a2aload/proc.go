package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/bench/procstat"
)

const (
	// startTimeout bounds how long a server may take to say where it listens.
	startTimeout = 30 * time.Second
	// stopTimeout is how long a server has to exit after SIGTERM before it is killed.
	stopTimeout = 10 * time.Second
	// waitDelay bounds how long Wait waits for a child's output pipes once the child has exited or been killed.
	waitDelay = 5 * time.Second
)

// server is a server process under load, in a process group of its own so that stopping it stops all it started.
type server struct {
	name string // the target's name in the report
	desc string // the command, for the report
	url  string
	pid  int

	cmd     *exec.Cmd
	stdin   io.Closer
	exited  chan struct{} // closed once Wait has returned
	waitErr error
	idleRSS int64 // VmRSS once it listens, before any load
}

// startServer starts cmd and waits until announce recognises, in the child's stdout or stderr (fromStderr), the line
// that gives its URL. The child's other output goes to logw, each line prefixed with name.
func startServer(ctx context.Context, name string, cmd *exec.Cmd, fromStderr bool, announce func(string) (string, bool), logw io.Writer) (*server, error) {
	s := &server{name: name, cmd: cmd, exited: make(chan struct{}), desc: strings.Join(cmd.Args, " ")}
	found := make(chan string, 1)
	watch := &lineWriter{line: func(line string) {
		if url, ok := announce(line); ok {
			select {
			case found <- url:
				return
			default: // announced already
			}
		}
		fmt.Fprintf(logw, "%s: %s\n", name, line)
	}}
	pass := &lineWriter{line: func(line string) { fmt.Fprintf(logw, "%s: %s\n", name, line) }}
	if fromStderr {
		cmd.Stdout, cmd.Stderr = pass, watch
	} else {
		cmd.Stdout, cmd.Stderr = watch, pass
	}
	// A group of its own, so that stop reaches whatever it started; SIGTERM if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = waitDelay
	stdin, err := cmd.StdinPipe() // the JS agents exit when it closes
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.stdin = stdin
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case s.url = <-found:
		m, err := procstat.ReadMemory(s.pid)
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		s.idleRSS = m.RSS
		return s, nil
	case <-s.exited:
		err = fmt.Errorf("it exited before it listened: %v", s.waitErr)
	case <-timer.C:
		err = fmt.Errorf("it did not say where it listens within %s", startTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, fmt.Errorf("start %s: %w", name, err)
}

// stop ends the server's process group: stdin closed and SIGTERM, then SIGKILL after stopTimeout. It returns once
// the server has been waited for.
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.stdin.Close()
	_ = syscall.Kill(-s.pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		<-s.exited
	}
	// Anything left in its group (nothing, normally) goes too.
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
}

// lineWriter calls line for each complete line written to it; a last line without its newline is dropped.
type lineWriter struct {
	line    func(string)
	mu      sync.Mutex
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		l, rest, ok := bytes.Cut(w.partial, []byte{'\n'})
		if !ok {
			break
		}
		w.line(string(bytes.TrimSuffix(l, []byte{'\r'})))
		w.partial = rest
	}
	w.partial = bytes.Clone(w.partial)
	return len(p), nil
}

// moduleRoot is the first directory at or above the working directory that holds a go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or any parent: run a2aload inside the module", wd)
		}
	}
}

// machineBusy returns the CPU time all the machine's CPUs have spent busy so far (everything but idle and iowait),
// from /proc/stat.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, errors.New("/proc/stat: unexpected format")
	}
	var ticks int64
	for i, f := range fields[1:9] { // user nice system idle iowait irq softirq steal
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * procstat.ClockTick, nil
}

// rssSampleEvery is how often a server's VmRSS is read during a run.
const rssSampleEvery = 50 * time.Millisecond

// sampleRSS reads pid's VmRSS every rssSampleEvery until the returned function is called, which returns the largest
// value read (0 when none could be).
func sampleRSS(pid int) (stop func() int64) {
	done := make(chan struct{})
	result := make(chan int64, 1)
	go func() {
		var peak int64
		read := func() {
			if m, err := procstat.ReadMemory(pid); err == nil {
				peak = max(peak, m.RSS)
			}
		}
		read()
		tick := time.NewTicker(rssSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				read()
			case <-done:
				read()
				result <- peak
				return
			}
		}
	}()
	return func() int64 {
		close(done)
		return <-result
	}
}

// buildAgenthost builds cmd/agenthost of the module at root into dir.
func buildAgenthost(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "agenthost")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return out, benchcli.BuildAgenthost(ctx, root, out)
}

// lookNode returns the node to run the JS peers with: path, or node on PATH.
func lookNode(path string) (string, error) {
	if path == "" {
		path = "node"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("node: %w (a2aload needs Node 20 or later)", err)
	}
	return p, nil
}

// checkPeers fails when the npm packages the JS peers load are not installed.
func checkPeers(root string) error {
	dir := filepath.Join(root, "testdata", "peers", "node_modules", "@a2a-js", "sdk")
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is missing: run `make peers` to install the npm peers pinned in testdata/peers", dir)
		}
		return err
	}
	return nil
}
