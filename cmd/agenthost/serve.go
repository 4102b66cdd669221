package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/durable"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/mcpserver"
)

// Once reclaimEnded sessions and tasks have ended (about 20 MiB at 20 KB each, see BENCHMARKS.md) and the count is
// still that low reclaimQuiet later, their memory goes back to the system, at most once per reclaimEvery.
const (
	reclaimEnded = 1000
	reclaimQuiet = 10 * time.Second
	reclaimEvery = time.Minute
)

// freeSessionMemory returns what httpedge.Sessions.Reclaim calls: a collection that frees what the ended sessions
// held, and the freed memory returned to the system at once (debug.FreeOSMemory). Left to itself, the runtime of an
// idle server does so only minutes later (see Reclaim). It logs what it released.
func freeSessionMemory(logger *slog.Logger) func(ended int) {
	return func(ended int) {
		released := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(released)
		before := released[0].Value.Uint64()
		start := time.Now()
		debug.FreeOSMemory()
		took := time.Since(start)
		metrics.Read(released)
		logger.Info("returned the memory of ended sessions to the system", "sessions", ended,
			"released_mib", (int64(released[0].Value.Uint64())-int64(before))>>20, "took", took.Round(time.Millisecond))
	}
}

// addrFlag is --http or --a2a: alone it serves on the configured address, with a value (--http=ADDR or --http ADDR)
// on that address.
type addrFlag struct {
	set  bool
	addr string
}

// joinAddrFlags turns "--NAME ADDR" into "--NAME=ADDR" for each of names, wherever it stands: the flags also work
// alone, so the flag package would not take the next argument as the value, and would stop parsing at it.
func joinAddrFlags(args []string, names ...string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && slices.Contains(names, name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func (f *addrFlag) String() string   { return f.addr }
func (f *addrFlag) IsBoolFlag() bool { return true }
func (f *addrFlag) Set(s string) error {
	f.set = true
	if s != "true" {
		f.addr = s
	}
	return nil
}

// or returns the flag's address, or def when the flag was given alone.
func (f *addrFlag) or(def string) string {
	if f.addr == "" {
		return def
	}
	return f.addr
}

func cmdServe(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	var httpAddr, a2aAddr addrFlag
	fs.Var(&httpAddr, "http", "serve MCP over streamable HTTP instead of stdio, on `ADDR` or on [serve] http (default 127.0.0.1:8765)")
	fs.Var(&a2aAddr, "a2a", "serve A2A (JSON-RPC, v1.0 and v0.3) on `ADDR` or on [serve] a2a (default 127.0.0.1:8766); alone, stdin is not read")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: agenthost serve [flags]
       agenthost serve --http [ADDR] [--a2a [ADDR]] [flags]
       agenthost serve --a2a [ADDR] [flags]

Serves the agent as an MCP server: over stdio (what Claude Desktop and IDEs start), or over
streamable HTTP at [serve] path (default /mcp). With --a2a it is also (or only) an A2A agent,
its card at /.well-known/agent-card.json and its JSON-RPC endpoint at /.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, joinAddrFlags(args, "http", "a2a"), io.err); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return fmt.Errorf("%w: serve takes no arguments (got %q)", errUsage, rest)
	}
	a, err := c.app(ctx, fs, io.err, io.err, forRunning)
	if err != nil {
		return err
	}
	defer a.close()
	sc := a.cfg.Serve
	var access wiring.Access
	if (httpAddr.set || a2aAddr.set) && sc.AuthTokenEnv != "" {
		if access.Token = os.Getenv(sc.AuthTokenEnv); access.Token == "" {
			return fmt.Errorf("%w: %s: serve.auth_token_env names %s, which is not set", errUsage, configName(a.cfg), sc.AuthTokenEnv)
		}
	}
	if (httpAddr.set || a2aAddr.set) && len(sc.AuthTokensEnv) > 0 {
		if access.Tokens, err = callerTokens(sc.AuthTokensEnv); err != nil {
			return fmt.Errorf("%w: %s: serve.auth_tokens_env: %w", errUsage, configName(a.cfg), err)
		}
	}
	if httpAddr.set || a2aAddr.set {
		if access.JWT, err = wiring.Verifier(ctx, a.cfg, a.logger); err != nil {
			return fmt.Errorf("%s: [serve.oauth]: %w", configName(a.cfg), err)
		}
		if access.JWT != nil {
			defer access.JWT.Close()
		}
	}
	protected := access.Protected()
	// Listen first, so that an address in use is reported before anything is served.
	var mcpLn, a2aLn net.Listener
	if httpAddr.set {
		if mcpLn, err = listen("--http", httpAddr.or(sc.HTTP), protected, a.logger); err != nil {
			return err
		}
		defer mcpLn.Close()
	}
	if a2aAddr.set {
		if a2aLn, err = listen("--a2a", a2aAddr.or(sc.A2A), protected, a.logger); err != nil {
			return err
		}
		defer a2aLn.Close()
	}

	engine, err := startEngine(ctx, a)
	if err != nil {
		return err
	}
	// The engine closes before the servers, so that the durable runs still going are interrupted, to be resumed
	// by the next start, rather than cancelled by their callers going away.
	closeEngine := func() {}
	if engine != nil {
		closeEngine = sync.OnceFunc(func() {
			if err := engine.Close(); err != nil {
				a.logger.Warn("closing the durable run engine", "err", err)
			}
		})
		defer closeEngine()
	}

	var serve []func(context.Context) error
	// The MCP sessions of --http and the unfinished tasks of --a2a share one cap.
	sessions := httpedge.NewSessions(sc.MaxSessions)
	sessions.Reclaim(reclaimEnded, reclaimQuiet, reclaimEvery, freeSessionMemory(a.logger))
	defer sessions.Reclaim(0, 0, 0, nil) // a release still pending when serving stops does nothing
	if !a2aAddr.set || httpAddr.set {
		opts := wiring.ServerOptions(a.cfg, version, sampling(a.cfg, a.provider, c.model), a.logger)
		opts.Telemetry = a.tel
		opts.OutputSchema = a.outputSchema
		if engine != nil && wiring.Durable(a.cfg, "mcp") {
			opts.Run = engine.Run
		}
		if sc.PromptsExposed() {
			for _, srv := range a.mcp.Servers() {
				opts.Prompts = append(opts.Prompts, srv)
			}
		}
		if sc.ResourcesExposed() {
			for _, srv := range a.mcp.Servers() {
				opts.Resources = append(opts.Resources, srv)
			}
		}
		if sc.ExposeTools {
			opts.LogLevel = func(ctx context.Context, level string) {
				for _, srv := range a.mcp.Servers() {
					if err := srv.SetLogLevel(ctx, level); err != nil {
						a.logger.Warn("the log level could not be passed on", "server", srv.Name(), "level", level, "err", err)
					}
				}
			}
		}
		if a.state != nil && httpAddr.set {
			// Replicas on one database continue each other's calls paused between rounds.
			executor, err := wiring.ExecutorID(a.cfg)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", errUsage, configName(a.cfg), err)
			}
			opts.Calls, opts.Instance = wiring.CallStore(a.state), executor+"/"+rand.Text()[:8]
		}
		srv, err := mcpserver.New(ctx, a.orch, opts)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		defer srv.Close()
		if !httpAddr.set {
			if err := launch(engine); err != nil {
				return err
			}
			a.logger.Info("serving MCP over stdio", "tool", srv.ToolName())
			err := srv.ServeStdio(ctx, io.stdinCloser(), io.stdoutCloser())
			closeEngine()
			return err
		}
		hopts := wiring.HTTPOptions(sc, access, mcpLn.Addr().String(), func() any { return a.mcp.Status() })
		hopts.Sessions = sessions
		handler := srv.Handler(hopts)
		fmt.Fprintf(io.err, "agenthost: serving MCP at http://%s%s (tool %s)\n", mcpLn.Addr(), orDefault(sc.Path, "/mcp"), srv.ToolName())
		serve = append(serve, func(ctx context.Context) error { return httpedge.Serve(ctx, mcpLn, handler, wiring.Timeouts(sc)) })
	}
	if a2aAddr.set {
		url := sc.A2APublicURL
		if url == "" {
			url = "http://" + a2aLn.Addr().String() + "/"
		}
		opts := wiring.A2AServerOptions(a.cfg, version, url, access, a.logger)
		opts.Telemetry = a.tel
		opts.Sessions = sessions
		if a.state != nil {
			opts.Tasks = wiring.TaskStore(a.state)
			if opts.Owner, err = wiring.ExecutorID(a.cfg); err != nil {
				return fmt.Errorf("%w: %s: %w", errUsage, configName(a.cfg), err)
			}
		}
		if engine != nil && wiring.Durable(a.cfg, "a2a") {
			opts.Run, opts.Durable = engine.Run, true
		}
		srv := a2a.NewServer(a.orch, opts)
		defer srv.Close()
		if _, err := srv.FailOrphans(ctx); err != nil {
			a.logger.Warn("failing the tasks an earlier process left unfinished", "err", err)
		}
		if engine != nil {
			engine.Handle(a2a.TagPrefix, func(ctx context.Context, cancel context.CancelCauseFunc, tag string) *durable.Resumed {
				ia, event, end, ok := srv.Resume(ctx, tag, cancel)
				if !ok {
					return nil
				}
				return &durable.Resumed{Interactor: ia, Event: event, End: end}
			})
		}
		handler := srv.Handler(wiring.Edge(sc, access, a2aLn.Addr().String()), func() any {
			return map[string]any{"servers": a.mcp.Status(), "peers": a.peers.Status()}
		})
		fmt.Fprintf(io.err, "agenthost: serving A2A at %s (card http://%s/.well-known/agent-card.json)\n", url, a2aLn.Addr())
		serve = append(serve, func(ctx context.Context) error { return httpedge.Serve(ctx, a2aLn, handler, wiring.Timeouts(sc)) })
	}
	if err := launch(engine); err != nil {
		return err
	}
	err = serveAll(ctx, serve)
	closeEngine()
	return err
}

// startEngine creates the durable run engine when [state] makes runs durable, or returns nil. Launch it once the
// front ends have registered.
func startEngine(ctx context.Context, a *app) (*durable.Engine, error) {
	if a.state == nil || !(wiring.Durable(a.cfg, "mcp") || wiring.Durable(a.cfg, "a2a")) {
		return nil, nil
	}
	sopts, err := wiring.StateOptions(a.cfg, os.Getenv, a.logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, configName(a.cfg), err)
	}
	eopts, err := wiring.EngineOptions(a.cfg, a.state, sopts, version, a.logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configName(a.cfg), err)
	}
	return durable.New(ctx, a.orch, eopts)
}

// launch launches engine, when there is one: the runs an earlier process left unfinished resume.
func launch(engine *durable.Engine) error {
	if engine == nil {
		return nil
	}
	return engine.Launch()
}

// listen opens a listener for flag on addr, warning when it is beyond loopback and not protected (by a token or
// [serve.oauth]).
func listen(flag, addr string, protected bool, logger *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: serve %s %s: %w", errUsage, flag, addr, err)
	}
	if !isLoopback(ln.Addr()) && !protected {
		logger.Warn("serving beyond loopback without a token: anyone who can reach this address can use the agent and its tools; "+
			"set [serve.oauth], [serve] auth_token_env or auth_tokens_env", "addr", ln.Addr().String())
	}
	return ln, nil
}

// serveAll runs every server until ctx ends or one of them fails, which stops the others; it returns the first
// failure.
func serveAll(ctx context.Context, serve []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(serve))
	for _, f := range serve {
		go func() { errs <- f(ctx) }()
	}
	var first error
	for range serve {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// stdinCloser and stdoutCloser give the MCP stdio transport the streams it closes at the end.
func (s *stdio) stdinCloser() io.ReadCloser {
	if rc, ok := s.in.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(s.in)
}

func (s *stdio) stdoutCloser() io.WriteCloser {
	if wc, ok := s.out.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{s.out}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// callerTokens reads the callers' tokens of [serve] auth_tokens_env: each variable must be set, to a token of its
// own. It maps each token to its subject, the variable's name.
func callerTokens(names []string) (map[string]string, error) {
	tokens := map[string]string{}
	for _, name := range names {
		token := os.Getenv(name)
		if token == "" {
			return nil, fmt.Errorf("%s is not set", name)
		}
		if other, dup := tokens[token]; dup {
			return nil, fmt.Errorf("%s and %s hold the same token: each caller needs its own", other, name)
		}
		tokens[token] = name
	}
	return tokens, nil
}
