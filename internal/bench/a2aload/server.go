package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/wiring"
)

// The child process learns its role from the environment, so that a test binary can be re-executed as the server
// just like the command.
const (
	roleEnv    = "AGENTHOST_A2ALOAD_ROLE"
	roleServer = "server"
)

// serveChild is the profiled agenthost target: `agenthost serve --a2a 127.0.0.1:0 -model test` for agentConfig
// ([builtin] tools = [], state in memory), built and served through the composition root (internal/wiring): the
// orchestrator on the offline test model with no tool. It announces itself on stderr as agenthost does, writes its CPU profile from start to exit to -cpuprofile,
// and serves until stdin closes (the parent went away) or ctx ends.
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

	// The configuration is the one the agenthost binary is given (agentConfig).
	cfg, err := config.Parse("agent.toml", []byte(agentConfig), os.LookupEnv)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app, err := wiring.Build(ctx, cfg, &wiring.Options{Logger: logger, Model: "test"})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	defer app.Close()

	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
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
	return app.Serve(serveCtx, &wiring.ServeOptions{A2A: "127.0.0.1:0", Listening: func(e *wiring.Endpoint) {
		fmt.Fprintf(stderr, "agenthost: serving A2A at %s (card %s)\n", e.URL, e.Card)
	}})
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile shows the heap as of the last collection
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
