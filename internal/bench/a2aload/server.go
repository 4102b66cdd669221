package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/builtin"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm/testmodel"
)

// The child process learns its role from the environment, so that a test binary can be re-executed as the server
// just like the command.
const (
	roleEnv    = "AGENTHOST_A2ALOAD_ROLE"
	roleServer = "server"
)

// serveChild is the profiled agenthost target: the orchestrator on the offline test model with no tool, served over
// A2A on a loopback port with the library calls `agenthost serve --a2a -model test` makes for an agent.toml whose
// [builtin] tools = [] and whose state is in memory. It announces itself on stderr as agenthost does, writes its CPU
// profile from start to exit to -cpuprofile, and serves until stdin closes (the parent went away) or ctx ends.
func serveChild(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("a2aload server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("cpuprofile", "", "write the CPU profile to `file`")
	heap := fs.String("memprofile", "", "write the heap profile to `file` when the load is over (stdin closed or ctx ended)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()

	cfg := config.Default()
	cfg.Builtin.Tools = []string{}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	builtins, err := builtin.New(cfg.Builtin.Tools, &builtin.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	tools := host.NewToolManager([]host.Toolset{builtins}, &host.ToolManagerOptions{Policies: wiring.Policies(cfg.Tools), Logger: logger})
	orch := host.New(testmodel.New(), tools, wiring.HostOptions(cfg, logger))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	url := "http://" + ln.Addr().String() + "/"
	srv := a2a.NewServer(orch, wiring.A2AServerOptions(cfg, "dev", url, wiring.Access{}, logger))
	defer srv.Close()
	handler := srv.Handler(wiring.Edge(cfg.Serve, wiring.Access{}, ln.Addr().String()), nil)

	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			ln.Close()
			return fmt.Errorf("server: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			ln.Close()
			return fmt.Errorf("server: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
		}()
	}
	serveCtx := ctx
	if *heap != "" {
		// Written before Serve shuts down, so that the profile shows what the server keeps after the load: its tasks,
		// the conversations and the idle connections.
		var stopServe context.CancelFunc
		serveCtx, stopServe = context.WithCancel(context.WithoutCancel(ctx))
		defer stopServe()
		go func() {
			<-ctx.Done()
			if herr := writeHeapProfile(*heap); herr != nil {
				fmt.Fprintf(stderr, "server: %v\n", herr)
			}
			stopServe()
		}()
	}
	fmt.Fprintf(stderr, "agenthost: serving A2A at %s (built-in wiring)\n", url)
	return httpedge.Serve(serveCtx, ln, handler, nil)
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile shows the heap as of the last collection
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
