package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agenthost/agenthost/internal/wiring"
)

// defaultUIAddr is where the web console listens unless told otherwise.
const defaultUIAddr = "127.0.0.1:8767"

// cmdUI runs the agent and serves the web console, until interrupted.
func cmdUI(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	var c common
	c.register(fs)
	addr := fs.String("addr", defaultUIAddr, "serve the console on `ADDR`; beyond loopback it needs a token or [serve.oauth]")
	open := fs.Bool("open", false, "open the console in a browser")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: agenthost ui [--addr ADDR] [--open] [flags]

Runs the configured agent, with its MCP servers and A2A peers, and serves the web console: chat with
the agent, follow each run step by step, browse its tools, servers, conversations and eval datasets.
It prints the console's URL; with [serve] auth_token_env, auth_tokens_env or [serve.oauth] the page
asks for a token (never put in the URL).

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return fmt.Errorf("%w: ui takes no arguments (got %q)", errUsage, rest)
	}
	c.recordRuns = true
	a, err := c.app(ctx, fs, io.err, io.err, wiring.Running)
	if err != nil {
		return err
	}
	defer a.Close()
	o := &wiring.ServeOptions{UI: *addr, UIOnly: true, Listening: func(e *wiring.Endpoint) {
		fmt.Fprintf(io.err, "agenthost: console at %s\n", e.URL)
		if *open {
			if err := openBrowser(e.URL); err != nil {
				fmt.Fprintf(io.err, "agenthost: opening a browser: %v\n", err)
			}
		}
	}}
	return a.Serve(ctx, o)
}
