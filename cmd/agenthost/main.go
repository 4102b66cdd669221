// Command agenthost runs an LLM tool-calling agent configured in agent.toml.
//
// It is a thin shell over the composition root, internal/wiring: it parses the flags, reads the configuration,
// has wiring build and serve the product, and owns the terminal (stdout, stderr, prompts, progress) and the
// process's exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the run failed
	exitUsage  = 2 // bad usage or configuration
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

// stdio is the process's standard streams, replaceable in tests.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

const usage = `agenthost runs an LLM agent with tools, configured in agent.toml.

Usage:
  agenthost run [flags] PROMPT   answer PROMPT (or the prompt on stdin), streaming the answer to stdout
  agenthost tools [flags]        list the tools the agent offers
  agenthost check [flags]        validate the configuration and report every problem
  agenthost serve [flags]        serve the agent as an MCP server over stdio, or --http ADDR
  agenthost eval [flags] FILE    run an eval dataset (JSON lines) through the agent and check each answer
  agenthost index [flags]        build or bring up to date doc_search's index
  agenthost state COMMAND        list, show and delete the conversations kept in [state]
  agenthost mcp COMMAND          log in to and out of the MCP servers that need OAuth, and list their logins
  agenthost version              print the version

Run "agenthost COMMAND -h" for the flags of a command.
`

// errUsage marks errors that are the user's to fix (flags, configuration): they exit with code 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, io *stdio) int {
	if len(args) == 0 {
		fmt.Fprint(io.err, usage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		err = cmdRun(ctx, rest, io)
	case "tools":
		err = cmdTools(ctx, rest, io)
	case "check":
		err = cmdCheck(ctx, rest, io)
	case "serve":
		err = cmdServe(ctx, rest, io)
	case "eval":
		err = cmdEval(ctx, rest, io)
	case "index":
		err = cmdIndex(ctx, rest, io)
	case "state":
		err = cmdState(ctx, rest, io)
	case "mcp":
		err = cmdMCP(ctx, rest, io)
	case "version", "-version", "--version":
		fmt.Fprintln(io.out, "agenthost", version)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(io.out, usage)
	default:
		fmt.Fprintf(io.err, "agenthost: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFlagHelp):
		return exitOK
	case errors.Is(err, errUsage), errors.Is(err, wiring.ErrConfig):
		fmt.Fprintln(io.err, "agenthost:", redact.Text(err.Error()))
		return exitUsage
	default:
		fmt.Fprintln(io.err, "agenthost:", redact.Text(err.Error()))
		return exitFailed
	}
}
