package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/internal/wiring"
)

// addrFlag is --http or --a2a: alone it serves on the configured address, with a value (--http=ADDR or --http ADDR)
// on that address (see optionalValue).
type addrFlag struct {
	set  bool
	addr string
}

var _ optionalValue = (*addrFlag)(nil)

func (f *addrFlag) optionalValue()   {}
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
	var uiAddr addrFlag
	fs.Var(&uiAddr, "ui", "serve the web console too, on `ADDR` (default "+defaultUIAddr+")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: agenthost serve [flags]
       agenthost serve --http [ADDR] [--a2a [ADDR]] [--ui [ADDR]] [flags]
       agenthost serve --a2a [ADDR] [flags]

Serves the agent as an MCP server: over stdio (what Claude Desktop and IDEs start), or over
streamable HTTP at [serve] path (default /mcp). With --a2a it is also (or only) an A2A agent,
its card at /.well-known/agent-card.json and its JSON-RPC endpoint at /. With --ui it also
serves the web console (see agenthost ui), for the runs of every front end of this process.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return fmt.Errorf("%w: serve takes no arguments (got %q)", errUsage, rest)
	}
	c.recordRuns = uiAddr.set
	a, err := c.app(ctx, fs, io.err, io.err, wiring.Running)
	if err != nil {
		return err
	}
	defer a.Close()
	sc := a.Config().Serve
	o := &wiring.ServeOptions{Stdin: io.stdinCloser(), Stdout: io.stdoutCloser(), Listening: func(e *wiring.Endpoint) {
		switch e.Front {
		case "mcp":
			fmt.Fprintf(io.err, "agenthost: serving MCP at %s (tool %s)\n", e.URL, e.Tool)
		case "ui":
			fmt.Fprintf(io.err, "agenthost: console at %s\n", e.URL)
		default:
			fmt.Fprintf(io.err, "agenthost: serving A2A at %s (card %s)\n", e.URL, e.Card)
		}
	}}
	if uiAddr.set {
		o.UI = uiAddr.or(defaultUIAddr)
	}
	if httpAddr.set {
		o.HTTP = httpAddr.or(sc.HTTP)
	}
	if a2aAddr.set {
		o.A2A = a2aAddr.or(sc.A2A)
	}
	return a.Serve(ctx, o)
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
