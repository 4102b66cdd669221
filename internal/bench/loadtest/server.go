package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/wiring"
)

// The child process learns its role from the environment, so that a test binary can be re-executed as the server
// just like the command.
const (
	roleEnv    = "AGENTHOST_LOADTEST_ROLE"
	roleServer = "server"
)

// modelName is the model the server asks for; the fake answers any name.
const modelName = "fake-model"

// serveChild is the server role: the agent served over streamable HTTP on a loopback port, built and served through
// the composition root (internal/wiring) from the built-in defaults with the model at -model-url and the state
// flags as overrides, as `agenthost serve --http` builds it, and net/http/pprof on a second loopback port. It writes
// one line, "mcp=URL pprof=ADDR tool=NAME", to stdout once both listen, and serves until stdin closes (the parent
// went away) or ctx ends.
func serveChild(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modelURL := fs.String("model-url", "", "base URL of the OpenAI-compatible model")
	state := fs.String("state", config.StateMemory, "[state] backend")
	durableRuns := fs.String("durable", config.DurableNone, "[state] durable_runs")
	stateDir := fs.String("state-dir", "", "directory of the SQLite state file")
	dsn := fs.String("dsn", "", "Postgres connection string")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelURL == "" {
		return errors.New("server: -model-url is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()

	cfg := serverConfig(*modelURL, *state, *durableRuns, *stateDir)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	getenv := func(name string) string {
		if name == cfg.State.DSNEnv {
			return *dsn
		}
		return os.Getenv(name)
	}
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Logger: logger, Getenv: getenv, Version: "loadtest"})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	defer app.Close()
	profLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	profMux := http.NewServeMux()
	profMux.HandleFunc("/debug/pprof/", pprof.Index)
	profMux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	profSrv := &http.Server{Handler: profMux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = profSrv.Serve(profLn) }()
	defer profSrv.Close()

	err = app.Serve(ctx, &wiring.ServeOptions{HTTP: "127.0.0.1:0", Listening: func(e *wiring.Endpoint) {
		fmt.Fprintf(stdout, "mcp=%s pprof=%s tool=%s\n", e.URL, profLn.Addr(), e.Tool)
	}})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// serverConfig is the configuration the server role builds: the built-in defaults, the model at modelURL, and the
// state as the flags say (the SQLite file in stateDir).
func serverConfig(modelURL, state, durableRuns, stateDir string) *config.Config {
	cfg := config.Default()
	cfg.Model.Provider, cfg.Model.BaseURL, cfg.Model.Model, cfg.Model.APIKeyEnv = config.ProviderOpenAI, modelURL, modelName, ""
	cfg.State.Backend, cfg.State.DurableRuns = state, durableRuns
	if stateDir != "" {
		cfg.State.Path = filepath.Join(stateDir, "agenthost.db")
	}
	return cfg
}

// serverProc is the server's child process, seen from the parent.
type serverProc struct {
	kind      string // what runs: "built-in wiring" or the agenthost binary's path
	pid       int
	mcpURL    string
	pprofAddr string // "" when the server has no profiling endpoint
	toolName  string

	cmd    *exec.Cmd
	stdin  io.Closer // closing it stops the built-in server
	output chan struct{}
	tmpDir string
}

// startServer starts the server process for the fake model at modelURL and waits until it listens.
func startServer(ctx context.Context, cfg *options, modelURL string, stderr io.Writer) (*serverProc, error) {
	p := &serverProc{output: make(chan struct{})}
	var ready func(line string) bool
	if cfg.agenthost == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("start server: %w", err)
		}
		p.kind = "built-in wiring (agenthost serve --http defaults)"
		args := []string{"-model-url", modelURL, "-state-dir", cfg.stateDir, "-dsn", cfg.dsn}
		if cfg.state != "" {
			args = append(args, "-state", cfg.state)
		}
		if cfg.durable != "" {
			args = append(args, "-durable", cfg.durable)
		}
		p.cmd = exec.Command(exe, args...)
		p.cmd.Env = environ(roleEnv + "=" + roleServer)
		ready = p.parseChildLine
	} else {
		dir, err := os.MkdirTemp("", "agenthost-loadtest-")
		if err != nil {
			return nil, fmt.Errorf("start server: %w", err)
		}
		p.tmpDir = dir
		conf := fmt.Sprintf("[model]\nprovider = \"openai\"\nmodel = %q\nbase_url = %q\napi_key_env = \"\"\n\n[state]\npath = \"state.db\"\n\n[serve]\nhttp = \"127.0.0.1:0\"\n", modelName, modelURL)
		path := filepath.Join(dir, "agent.toml")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start server: %w", err)
		}
		p.kind = cfg.agenthost
		p.cmd = exec.Command(cfg.agenthost, "serve", "-config", path, "-log-level", "warn", "--http")
		// The binary does not watch its stdin in HTTP mode: make sure it does not outlive us.
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		p.cmd.Env = environ()
		ready = p.parseServeLine
	}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	p.stdin = stdin
	// The built-in server announces itself on stdout; agenthost on stderr. Both are read line by line, the other
	// lines are passed on to our stderr.
	var announce io.ReadCloser
	if cfg.agenthost == "" {
		announce, err = p.cmd.StdoutPipe()
		p.cmd.Stderr = stderr
	} else {
		announce, err = p.cmd.StderrPipe()
		p.cmd.Stdout = stderr
	}
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		p.cleanup()
		return nil, fmt.Errorf("start server: %w", err)
	}
	p.pid = p.cmd.Process.Pid

	found := make(chan bool, 1)
	go func() {
		defer close(p.output)
		sc := bufio.NewScanner(announce)
		seen := false
		for sc.Scan() {
			if !seen && ready(sc.Text()) {
				seen = true
				found <- true
				continue
			}
			fmt.Fprintln(stderr, sc.Text())
		}
		if !seen {
			found <- false
		}
	}()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case ok := <-found:
		if ok {
			return p, nil
		}
		err = errors.New("the server exited before it listened")
	case <-timeout.C:
		err = errors.New("the server did not listen within 30s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.stop()
	return nil, fmt.Errorf("start server: %w", err)
}

// parseChildLine reads the built-in server's "mcp=URL pprof=ADDR tool=NAME" line.
func (p *serverProc) parseChildLine(line string) bool {
	for f := range strings.FieldsSeq(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "mcp":
			p.mcpURL = v
		case "pprof":
			p.pprofAddr = v
		case "tool":
			p.toolName = v
		}
	}
	return p.mcpURL != ""
}

// parseServeLine reads agenthost's "agenthost: serving MCP at http://ADDR/PATH (tool NAME)" line.
func (p *serverProc) parseServeLine(line string) bool {
	rest, ok := strings.CutPrefix(line, "agenthost: serving MCP at ")
	if !ok {
		return false
	}
	url, tool, _ := strings.Cut(rest, " (tool ")
	p.mcpURL = url
	p.toolName = strings.TrimSuffix(tool, ")")
	return true
}

// stop ends the server: SIGTERM, which both kinds handle by draining, then SIGKILL after 10s.
func (p *serverProc) stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		p.stdin.Close()
		done := make(chan struct{})
		go func() {
			<-p.output // Wait must not run before the output is read
			_ = p.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
	p.cleanup()
}

func (p *serverProc) cleanup() {
	if p.tmpDir != "" {
		os.RemoveAll(p.tmpDir)
	}
}

// environ is this process's environment without the OTEL_ variables, and with extra: a shell that exports telemetry
// settings must not add exporters to the server being measured.
func environ(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
	return append(env, extra...)
}
