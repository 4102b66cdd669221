// Command agenthost runs an LLM tool-calling agent configured in agent.toml.
//
// It is a thin shell over the composition root, internal/wiring: it parses the flags, reads the configuration,
// has wiring build and serve the product, and owns the terminal (stdout, stderr, prompts, progress) and the
// process's exit code.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
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

// command is a sub-command of agenthost: its name, the lines of the top-level help that show how it is used, and
// what runs it. A command prints its own usage for -h.
type command struct {
	name  string
	usage string
	run   func(context.Context, []string, *stdio) error
}

// commands are agenthost's sub-commands, in the order the help lists them.
var commands = []command{
	{"run", `
  agenthost run [flags] PROMPT          answer PROMPT (or the prompt on stdin), streaming the answer to stdout`, cmdRun},
	{"tools", `
  agenthost tools [flags]               list the tools the agent offers, and whether tool search would be on
  agenthost tools --search QUERY        rank the tools for QUERY, best first [--limit N] [--json]`, cmdTools},
	{"check", `
  agenthost check [flags]               validate the configuration and report every problem; connect to every MCP
                                        server and A2A peer and report their state`, cmdCheck},
	{"serve", `
  agenthost serve [flags]               serve the agent as an MCP server over stdio
  agenthost serve --http [ADDR]         ... over streamable HTTP instead (default [serve] http)
  agenthost serve --a2a [ADDR]          ... as an A2A agent too (with --http), or only (without)
  agenthost serve --ui [ADDR]           ... and serve the web console too (default 127.0.0.1:8767)`, cmdServe},
	{"ui", `
  agenthost ui [--addr ADDR] [--open]   run the agent and serve the web console: chat, every run step by step,
                                        tools, servers, conversations and evals (default 127.0.0.1:8767)`, cmdUI},
	{"eval", `
  agenthost eval [flags] DATASET.jsonl  run an eval dataset through the agent and check each answer`, cmdEval},
	{"index", `
  agenthost index [flags]               build or bring up to date doc_search's index`, cmdIndex},
	{"state", `
  agenthost state [COMMAND] [flags]     inspect the state database:
      conversations                     list the conversations (the default)
      tasks                             list the served A2A tasks
      calls                             list the MCP calls waiting for their callers
      show ID                           print a conversation or a task
      delete ID...                      delete conversations or tasks
      prune [-older-than DURATION]      delete the conversations idle for longer than that, or than the TTL`, cmdState},
	{"mcp", `
  agenthost mcp COMMAND [flags]         manage the MCP servers of [mcp.servers]:
      list                              connect to every server and list them with their state
      add NAME -- COMMAND [ARGS...]     add a server started by COMMAND (or add NAME -url URL: one at URL)
      import FILE                       add the servers of Claude Desktop's, Cursor's, VS Code's... configuration
      login NAME                        log in to a server with OAuth
      logout NAME                       forget the login to a server
      auth                              list the servers' OAuth logins`, cmdMCP},
	{"version", `
  agenthost version                     print the version`, cmdVersion},
	{"help", `
  agenthost help [COMMAND]              print this help, or a command's`, nil}, // run by run: it needs the table
}

func usage() string {
	var b strings.Builder
	b.WriteString("agenthost runs an LLM agent with tools, configured in agent.toml.\n\nUsage:")
	for _, c := range commands {
		b.WriteString(c.usage)
	}
	b.WriteString(`

Flags may come before or after the arguments; -- ends them ("agenthost run -- --json" asks about "--json").
The commands that read the configuration take -config FILE (default agent.toml), -model NAME and -log-level LEVEL.
Run "agenthost COMMAND -h" for the flags of a command.
`)
	return b.String()
}

func cmdVersion(_ context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agenthost version\n\nPrints the version: the one the build was given, else its module version or commit.\n")
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: version takes no arguments", errUsage)
	}
	fmt.Fprintln(io.out, "agenthost", version)
	return nil
}

// errUsage marks errors that are the user's to fix (flags, configuration): they exit with code 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, io *stdio) int {
	if len(args) == 0 {
		fmt.Fprint(io.err, usage())
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-version", "--version":
		cmd = "version"
	case "-h", "-help", "--help":
		cmd = "help"
	}
	if cmd == "help" && len(rest) > 0 {
		cmd, rest = rest[0], []string{"-h"} // "help run" is "run -h"
	}
	if cmd == "help" {
		fmt.Fprint(io.out, usage())
		return exitOK
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == cmd && c.run != nil })
	if i < 0 {
		fmt.Fprintf(io.err, "agenthost: unknown command %q\n\n%s", cmd, usage())
		return exitUsage
	}
	err := commands[i].run(ctx, rest, io)
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
