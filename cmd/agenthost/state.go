package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/store"
)

const stateUsage = `Usage: agenthost state COMMAND [flags] [ARGS]

Inspects the state [state] keeps: the SQLite file or the Postgres database.

Commands:
  conversations [-n N]     list the conversations, most recently used first (the default)
  show [-json] ID          print a conversation: its messages and numbered sources
  delete ID...             delete conversations

Every command takes -config FILE and -log-level LEVEL.
`

// cmdState inspects the state database.
func cmdState(ctx context.Context, args []string, io *stdio) error {
	sub, rest := "conversations", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, rest = args[0], args[1:]
	}
	fs := flag.NewFlagSet("state "+sub, flag.ContinueOnError)
	var c common
	c.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), stateUsage+"\nFlags of "+sub+":\n")
		fs.PrintDefaults()
	}
	limit := 0
	jsonOut := false
	switch sub {
	case "conversations":
		fs.IntVar(&limit, "n", 50, "list at most `N` conversations; 0 lists all")
	case "show":
		fs.BoolVar(&jsonOut, "json", false, "print the conversation as JSON")
	case "delete":
	case "help", "-h", "-help", "--help":
		fmt.Fprint(io.out, stateUsage)
		return nil
	default:
		return fmt.Errorf("%w: unknown state command %q\n\n%s", errUsage, sub, stateUsage)
	}
	if err := parseFlags(fs, rest, io.err); err != nil {
		return err
	}
	switch {
	case sub == "conversations" && fs.NArg() > 0:
		return fmt.Errorf("%w: state conversations takes no arguments (got %q)", errUsage, fs.Args())
	case sub == "show" && fs.NArg() != 1:
		return fmt.Errorf("%w: state show takes one conversation id", errUsage)
	case sub == "delete" && fs.NArg() == 0:
		return fmt.Errorf("%w: state delete takes the ids of the conversations to delete", errUsage)
	}
	db, err := c.openState(ctx, fs, io.err)
	if err != nil {
		return err
	}
	defer db.Close()

	switch sub {
	case "conversations":
		list, err := db.Conversations(ctx, limit)
		if err != nil {
			return err
		}
		return printConversations(io.out, list)
	case "show":
		conv, err := db.Peek(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if jsonOut {
			enc := json.NewEncoder(io.out)
			enc.SetIndent("", "  ")
			return enc.Encode(conv)
		}
		printConversation(io.out, conv)
		return nil
	default: // delete
		var errs []error
		for _, id := range fs.Args() {
			if err := db.DeleteConversation(ctx, id); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(io.out, "deleted conversation %s\n", id)
		}
		return errors.Join(errs...)
	}
}

// openState opens the database of the configuration's [state].
func (c *common) openState(ctx context.Context, fs *flag.FlagSet, stderr io.Writer) (*store.DB, error) {
	cfg, err := c.loadConfig(fs)
	if err != nil {
		return nil, err
	}
	logger, err := c.logger(stderr)
	if err != nil {
		return nil, err
	}
	if cfg.State.Backend == config.StateMemory {
		return nil, fmt.Errorf("%w: %s: state.backend is %q: agenthost keeps nothing after a process ends", errUsage, configName(cfg), config.StateMemory)
	}
	opts, err := wiring.StateOptions(cfg, os.Getenv, logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, configName(cfg), err)
	}
	if opts.Backend == store.SQLite {
		if _, err := os.Stat(opts.Path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no state yet: %s does not exist (agenthost run and serve create it)", opts.Path)
		}
	}
	return store.Open(ctx, opts)
}

// stateStatus is the state database as check reports it.
type stateStatus struct {
	where, status, conversations string
	err                          error // the database cannot be used
}

// checkState opens the state database, if it exists, and counts its conversations. It creates nothing.
func checkState(ctx context.Context, cfg *config.Config, logger *slog.Logger) stateStatus {
	if cfg.State.Backend == config.StateMemory {
		return stateStatus{where: "-", status: "kept only while a process runs", conversations: "-"}
	}
	opts, err := wiring.StateOptions(cfg, os.Getenv, logger)
	if err != nil {
		return stateStatus{where: "-", status: "error: " + err.Error(), conversations: "-", err: err}
	}
	where := opts.Where()
	if opts.Backend == store.SQLite {
		if _, err := os.Stat(opts.Path); errors.Is(err, os.ErrNotExist) {
			return stateStatus{where: where, status: "not created yet (run and serve create it)", conversations: "0"}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	db, err := store.Open(ctx, opts)
	if err == nil {
		defer db.Close()
		var list []store.ConversationSummary
		if list, err = db.Conversations(ctx, 0); err == nil {
			return stateStatus{where: where, status: "ok", conversations: fmt.Sprint(len(list))}
		}
	}
	return stateStatus{where: where, status: "error: " + truncate(strings.Join(strings.Fields(err.Error()), " "), 100), conversations: "-",
		err: fmt.Errorf("state database not usable: %w", err)}
}

func printConversations(w io.Writer, list []store.ConversationSummary) error {
	if len(list) == 0 {
		fmt.Fprintln(w, "No conversations.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tMESSAGES\tSOURCES\tFIRST PROMPT")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", c.ID, c.Updated.Local().Format(time.DateTime), c.Messages, c.Sources, orDefault(truncate(c.Prompt, 60), "-"))
	}
	return tw.Flush()
}

// printConversation prints a conversation as a transcript: who said what, the tool calls, then the sources.
func printConversation(w io.Writer, c *host.Conversation) {
	fmt.Fprintf(w, "Conversation %s: created %s, last used %s, %d messages, %d sources.\n",
		c.ID, c.Created.Local().Format(time.DateTime), c.Updated.Local().Format(time.DateTime), len(c.Messages), len(c.Sources))
	for _, m := range c.Messages {
		fmt.Fprintln(w)
		switch m.Role {
		case llm.RoleTool:
			fmt.Fprintf(w, "tool %s (%s):\n%s\n", m.Name, m.ToolCallID, indent(truncate(m.Content, 2000)))
		default:
			fmt.Fprintf(w, "%s:\n", m.Role)
			if m.Content != "" {
				fmt.Fprintln(w, indent(m.Content))
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(w, "  → %s %s (%s)\n", tc.Name, truncate(tc.Arguments, 200), tc.ID)
			}
		}
	}
	if len(c.Sources) > 0 {
		fmt.Fprintln(w, "\nSources:")
		for i, s := range c.Sources {
			fmt.Fprintf(w, "  [%d] %s %s\n", i+1, orDefault(s.Title, "(untitled)"), s.URI)
		}
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
