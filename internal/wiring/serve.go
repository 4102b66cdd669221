package wiring

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/durable"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/mcpserver"
	"github.com/agenthost/agenthost/store"
)

// ServeOptions say where Serve serves the app.
type ServeOptions struct {
	// HTTP is the address to serve MCP over streamable HTTP on, at [serve] path; "" serves no MCP over HTTP.
	HTTP string
	// A2A is the address to serve A2A on; "" serves no A2A.
	A2A string
	// UI is the address to serve the web console on; "" serves none. The app must have been built with
	// Options.RecordRuns.
	UI string
	// UIOnly serves the console alone (`agenthost ui`): no MCP over stdio when HTTP and A2A are "".
	UIOnly bool
	// Stdin and Stdout carry MCP over stdio when HTTP and A2A are both "" (and not UIOnly). Serve closes them.
	Stdin  io.ReadCloser
	Stdout io.WriteCloser
	// Listening, when set, is told where each HTTP front end listens, before anything is served on it.
	Listening func(*Endpoint)
}

// Endpoint is where Serve serves one front end over HTTP.
type Endpoint struct {
	// Front is "mcp", "a2a" or "ui".
	Front string
	// Addr is the listener's address.
	Addr net.Addr
	// URL is the MCP endpoint (http://ADDR/PATH), or the A2A agent's URL as its card advertises it.
	URL string
	// Tool is the name of the MCP server's agent tool; "" for A2A.
	Tool string
	// Card is the URL of the A2A agent card; "" for MCP.
	Card string
}

// Once ReclaimEnded sessions and tasks have ended (about 20 MiB at 20 KB each, see BENCHMARKS.md) and the count is
// still that low reclaimQuiet later, their memory goes back to the system, at most once per reclaimEvery.
const (
	ReclaimEnded = 1000
	reclaimQuiet = 10 * time.Second
	reclaimEvery = time.Minute
)

// Serve serves the app, which must have been built for Running, as an MCP server (over stdio, or over HTTP) and as an
// A2A agent, as o says, until ctx ends or a server fails. It listens first, so that an address in use is reported
// before anything is served; with durable runs, the engine resumes the runs an earlier process left unfinished once
// the front ends are registered, and closes before the servers, so that the runs still going are interrupted, to be
// resumed by the next start, rather than cancelled by their callers going away. The errors that are the
// configuration's or the addresses' wrap ErrConfig.
func (a *App) Serve(ctx context.Context, o *ServeOptions) error {
	if o == nil {
		o = &ServeOptions{}
	}
	serveHTTP, serveA2A, serveUI := o.HTTP != "", o.A2A != "", o.UI != ""
	listens := serveHTTP || serveA2A || serveUI
	sc := a.cfg.Serve
	var access Access
	var err error
	if serveUI && a.runs == nil {
		return errors.New("serve: the console needs an app built with Options.RecordRuns")
	}
	if listens && sc.AuthTokenEnv != "" {
		if access.Token = a.getenv(sc.AuthTokenEnv); access.Token == "" {
			return fmt.Errorf("%w: %s: serve.auth_token_env names %s, which is not set", ErrConfig, ConfigName(a.cfg), sc.AuthTokenEnv)
		}
	}
	if listens && len(sc.AuthTokensEnv) > 0 {
		if access.Tokens, err = readCallerTokens(sc.AuthTokensEnv, a.getenv); err != nil {
			return fmt.Errorf("%w: %s: serve.auth_tokens_env: %w", ErrConfig, ConfigName(a.cfg), err)
		}
	}
	if listens {
		if access.JWT, err = Verifier(ctx, a.cfg, a.logger); err != nil {
			return fmt.Errorf("%s: [serve.oauth]: %w", ConfigName(a.cfg), err)
		}
		if access.JWT != nil {
			defer access.JWT.Close()
		}
	}
	protected := access.Protected()
	// Listen first, so that an address in use is reported before anything is served.
	var mcpLn, a2aLn net.Listener
	if serveHTTP {
		if mcpLn, err = listen("--http", o.HTTP, protected, a.logger); err != nil {
			return err
		}
		defer mcpLn.Close()
	}
	if serveA2A {
		if a2aLn, err = listen("--a2a", o.A2A, protected, a.logger); err != nil {
			return err
		}
		defer a2aLn.Close()
	}
	var uiLn net.Listener
	if serveUI {
		if uiLn, err = listenUI(o.UI, protected); err != nil {
			return err
		}
		defer uiLn.Close()
	}

	serveMCP := serveHTTP || (!serveA2A && !o.UIOnly)
	engine, err := a.startEngine(ctx, (serveMCP && Durable(a.cfg, "mcp")) || (serveA2A && Durable(a.cfg, "a2a")))
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
	// /livez answers 503 once serving stops: a probe sees the shutdown before the listeners close.
	live := func() bool { return ctx.Err() == nil }
	if serveUI {
		con, err := a.newConsole(access, uiLn.Addr().String())
		if err != nil {
			return err
		}
		// Closed as Serve returns: after the engine, which closes as serving ends (closeEngine, called before the
		// deferred calls run), and before the app, which the caller closes. The console's runs are not durable: the
		// engine's closing leaves them going, and Close cancels them and waits for them to end.
		defer con.Close()
		handler := con.Handler()
		o.announce(&Endpoint{Front: "ui", Addr: uiLn.Addr(), URL: "http://" + uiLn.Addr().String() + "/"})
		serve = append(serve, func(ctx context.Context) error { return httpedge.Serve(ctx, uiLn, handler, Timeouts(sc)) })
	}
	// The MCP sessions of HTTP and the unfinished tasks of A2A share one cap.
	sessions := httpedge.NewSessions(sc.MaxSessions)
	sessions.Reclaim(ReclaimEnded, reclaimQuiet, reclaimEvery, freeSessionMemory(a.logger))
	defer sessions.Reclaim(0, 0, 0, nil) // a release still pending when serving stops does nothing
	if serveMCP {
		opts := ServerOptions(a.cfg, a.version, sampling(a.cfg, a.provider, a.modelArg), a.logger)
		opts.Telemetry = a.tel
		opts.OutputSchema = a.outputSchema
		if engine != nil && Durable(a.cfg, "mcp") {
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
		if a.state != nil && serveHTTP {
			// Replicas on one database continue each other's calls paused between rounds.
			executor, err := ExecutorID(a.cfg)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrConfig, ConfigName(a.cfg), err)
			}
			opts.Calls, opts.Instance = CallStore(a.state), executor+"/"+rand.Text()[:8]
		}
		srv, err := mcpserver.New(ctx, a.orch, opts)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		defer srv.Close()
		if !serveHTTP {
			if o.Stdin == nil || o.Stdout == nil {
				return errors.New("serve: MCP over stdio needs ServeOptions.Stdin and Stdout")
			}
			if err := launch(ctx, engine); err != nil {
				return err
			}
			a.logger.Info("serving MCP over stdio", "tool", srv.ToolName())
			releaseStartupGarbage()
			// With the console, MCP over stdio ending (stdin closed) ends serving as a stop would.
			stdio := func(ctx context.Context) error {
				if err := srv.ServeStdio(ctx, o.Stdin, o.Stdout); err != nil {
					return err
				}
				return errStdioEnded
			}
			err := serveAll(ctx, append(serve, stdio))
			if errors.Is(err, errStdioEnded) {
				err = nil
			}
			closeEngine()
			return err
		}
		hopts := HTTPOptions(sc, access, mcpLn.Addr().String(), func() any { return a.mcp.Status() })
		hopts.Sessions = sessions
		hopts.Live = live
		handler := srv.Handler(hopts)
		o.announce(&Endpoint{Front: "mcp", Addr: mcpLn.Addr(), URL: "http://" + mcpLn.Addr().String() + orDefault(sc.Path, "/mcp"), Tool: srv.ToolName()})
		serve = append(serve, func(ctx context.Context) error { return httpedge.Serve(ctx, mcpLn, handler, Timeouts(sc)) })
	}
	if serveA2A {
		url := sc.A2APublicURL
		if url == "" {
			url = "http://" + a2aLn.Addr().String() + "/"
		}
		opts := A2AServerOptions(a.cfg, a.version, url, access, a.logger)
		opts.Telemetry = a.tel
		opts.Sessions = sessions
		if a.state != nil {
			opts.Tasks = TaskStore(a.state)
			if opts.Owner, err = ExecutorID(a.cfg); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrConfig, ConfigName(a.cfg), err)
			}
		}
		if engine != nil && Durable(a.cfg, "a2a") {
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
		edge := Edge(sc, access, a2aLn.Addr().String())
		edge.Live = live
		handler := srv.Handler(edge, func() any {
			return map[string]any{"servers": a.mcp.Status(), "peers": a.peers.Status()}
		})
		o.announce(&Endpoint{Front: "a2a", Addr: a2aLn.Addr(), URL: url, Card: "http://" + a2aLn.Addr().String() + "/.well-known/agent-card.json"})
		serve = append(serve, func(ctx context.Context) error { return httpedge.Serve(ctx, a2aLn, handler, Timeouts(sc)) })
	}
	if err := launch(ctx, engine); err != nil {
		return err
	}
	releaseStartupGarbage()
	err = serveAll(ctx, serve)
	closeEngine()
	return err
}

// errStdioEnded stops the other servers when MCP over stdio ends without an error.
var errStdioEnded = errors.New("serve: MCP over stdio ended")

func (o *ServeOptions) announce(e *Endpoint) {
	if o.Listening != nil {
		o.Listening(e)
	}
}

// startEngine creates the durable run engine when [state] makes runs durable, or returns nil. Launch it once the
// front ends have registered. needed says whether a front end served here makes its runs durable. When none does,
// an engine would only resume the runs an earlier process left (of the front end it served, or of one with no
// Resumer here, whose conversations are finished all the same): on SQLite it is created only when the file holds
// such a run, since DBOS's connections, goroutines and code cost about 5 MiB of resident memory for nothing
// otherwise. On Postgres it always is: a replica's engine also takes over the runs of replicas that died.
func (a *App) startEngine(ctx context.Context, needed bool) (*durable.Engine, error) {
	if a.state == nil || !(Durable(a.cfg, "mcp") || Durable(a.cfg, "a2a")) {
		return nil, nil
	}
	if !needed && a.state.Backend() == store.SQLite {
		found, err := durable.Unfinished(ctx, a.state)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ConfigName(a.cfg), err)
		}
		if !found {
			return nil, nil
		}
	}
	sopts, err := StateOptions(a.cfg, a.getenv, a.logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, ConfigName(a.cfg), err)
	}
	eopts, err := EngineOptions(a.cfg, a.state, sopts, a.version, a.logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigName(a.cfg), err)
	}
	return durable.New(ctx, a.orch, eopts)
}

// releaseStartupGarbage collects what start-up left behind (configuration, migrations, connections: a few MiB the
// heap would otherwise hold until its next collection, minutes away for an idle server) and returns the freed
// memory to the system, once, before serving. It takes about a millisecond.
func releaseStartupGarbage() { debug.FreeOSMemory() }

// launch launches engine, when there is one: the runs an earlier process left unfinished resume. A launch that
// fails because ctx ended (a stop asked for while starting) is no failure: serving stops as it was asked to.
func launch(ctx context.Context, engine *durable.Engine) error {
	if engine == nil {
		return nil
	}
	if err := engine.Launch(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// listen opens a listener for flag on addr, warning when it is beyond loopback and not protected (by a token or
// [serve.oauth]).
func listen(flag, addr string, protected bool, logger *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: serve %s %s: %w", ErrConfig, flag, addr, err)
	}
	if !isLoopback(ln.Addr()) && !protected {
		logger.Warn("serving beyond loopback without a token: anyone who can reach this address can use the agent and its tools; "+
			"set [serve.oauth], [serve] auth_token_env or auth_tokens_env", "addr", ln.Addr().String())
	}
	return ln, nil
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
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

// readCallerTokens reads the callers' tokens of [serve] auth_tokens_env with getenv: each variable must be set, to a
// token of its own. It maps each token to its subject, the variable's name.
func readCallerTokens(names []string, getenv func(string) string) (map[string]string, error) {
	tokens := map[string]string{}
	for _, name := range names {
		token := getenv(name)
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
