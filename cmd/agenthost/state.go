package main

import (
	"bytes"
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
  tasks [-n N] [-context ID]
                           list the served A2A tasks, most recently updated first
  calls                    list the MCP calls waiting for their callers' answers (protocol 2026-07-28), which any
                           replica can continue
  show [-json] ID          print a conversation (its messages and numbered sources), or a task (as A2A JSON)
  delete ID...             delete conversations or tasks
  prune [-older-than DURATION] [-dry-run]
                           delete the conversations idle for longer than DURATION (default: agent.conversation_ttl);
                           -dry-run lists them and deletes nothing

Every command takes -config FILE and -log-level LEVEL.
`

// cmdState inspects the state database.
func cmdState(ctx context.Context, args []string, io *stdio) error {
	sub, rest := splitCommand(args, append(commonValueFlags, "n", "context", "older-than")...)
	if sub == "" {
		sub = "conversations"
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
	contextID := ""
	var olderThan time.Duration
	dryRun := false
	switch sub {
	case "conversations":
		fs.IntVar(&limit, "n", 50, "list at most `N` conversations; 0 lists all")
	case "tasks":
		fs.IntVar(&limit, "n", 50, "list at most `N` tasks; 0 lists all")
		fs.StringVar(&contextID, "context", "", "list only the tasks of this context `id`")
	case "calls":
	case "show":
		fs.BoolVar(&jsonOut, "json", false, "print the conversation as JSON")
	case "delete":
	case "prune":
		fs.DurationVar(&olderThan, "older-than", 0, "delete the conversations idle for longer than `DURATION` (\"720h\", say); "+
			"default: agent.conversation_ttl")
		fs.BoolVar(&dryRun, "dry-run", false, "list the conversations that would go, and delete nothing")
	case "help", "-h", "-help", "--help":
		fmt.Fprint(io.out, stateUsage)
		return nil
	default:
		return fmt.Errorf("%w: unknown state command %q\n\n%s", errUsage, sub, stateUsage)
	}
	if err := parseFlags(fs, rest, io); err != nil {
		return err
	}
	switch {
	case (sub == "conversations" || sub == "tasks" || sub == "calls" || sub == "prune") && fs.NArg() > 0:
		return fmt.Errorf("%w: state %s takes no arguments (got %q)", errUsage, sub, fs.Args())
	case sub == "show" && fs.NArg() != 1:
		return fmt.Errorf("%w: state show takes one conversation id", errUsage)
	case sub == "delete" && fs.NArg() == 0:
		return fmt.Errorf("%w: state delete takes the ids of the conversations to delete", errUsage)
	case sub == "prune" && olderThan < 0, sub == "prune" && olderThan == 0 && flagSet(fs, "older-than"):
		return fmt.Errorf("%w: state prune: -older-than must be positive (got %s)", errUsage, olderThan)
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
	case "tasks":
		tasks, _, err := db.Tasks(ctx, store.TaskQuery{ContextID: contextID, Limit: limit})
		if err != nil {
			return err
		}
		return printTasks(io.out, tasks)
	case "calls":
		calls, err := db.Calls(ctx)
		if err != nil {
			return err
		}
		return printCalls(io.out, calls)
	case "prune":
		return pruneConversations(ctx, io.out, db, olderThan, dryRun)
	case "show":
		conv, err := db.Peek(ctx, fs.Arg(0))
		if errors.Is(err, host.ErrUnknownConversation) {
			tk, terr := db.Task(ctx, fs.Arg(0))
			if terr == nil {
				return printJSON(io.out, tk.Body)
			}
			if !errors.Is(terr, store.ErrTaskNotFound) {
				return terr
			}
			return fmt.Errorf("no conversation or task %q", fs.Arg(0))
		}
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
			err := db.DeleteConversation(ctx, id)
			if err == nil {
				fmt.Fprintf(io.out, "deleted conversation %s\n", id)
				continue
			}
			if errors.Is(err, host.ErrUnknownConversation) {
				if err = db.DeleteTask(ctx, id); err == nil {
					fmt.Fprintf(io.out, "deleted task %s\n", id)
					continue
				}
				if errors.Is(err, store.ErrTaskNotFound) {
					err = fmt.Errorf("no conversation or task %q", id)
				}
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
}

// pruneConversations deletes the conversations idle for longer than idle (0: the TTL), or lists them with dryRun.
func pruneConversations(ctx context.Context, w io.Writer, db *store.DB, idle time.Duration, dryRun bool) error {
	if idle == 0 {
		idle = db.ConversationTTL()
	}
	if dryRun {
		list, err := db.IdleConversations(ctx, idle)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintf(w, "No conversations idle for longer than %s.\n", idle)
			return nil
		}
		fmt.Fprintf(w, "Would delete %s idle for longer than %s:\n", count(len(list), "conversation", "conversations"), idle)
		return printConversations(w, list)
	}
	n, err := db.PruneConversations(ctx, idle)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Deleted %s idle for longer than %s.\n", count(n, "conversation", "conversations"), idle)
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
	db, err := wiring.OpenExisting(ctx, opts)
	if errors.Is(err, wiring.ErrNoState) {
		return nil, fmt.Errorf("no state yet: %s does not exist (agenthost run and serve create it)", opts.Path)
	}
	return db, err
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
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	db, err := wiring.OpenExisting(ctx, opts)
	if errors.Is(err, wiring.ErrNoState) {
		return stateStatus{where: where, status: "not created yet (run and serve create it)", conversations: "0"}
	}
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

func printTasks(w io.Writer, tasks []*store.Task) error {
	if len(tasks) == 0 {
		fmt.Fprintln(w, "No tasks.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCONTEXT\tSTATE\tUPDATED")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.ContextID, strings.ToLower(strings.TrimPrefix(t.State, "TASK_STATE_")), t.Updated.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// printCalls prints the paused calls. Their ids are cut short: the whole one lets its bearer continue the call.
func printCalls(w io.Writer, calls []*store.Call) error {
	if len(calls) == 0 {
		fmt.Fprintln(w, "No calls waiting for their callers.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tTOOL\tSTATE\tROUND\tPROCESS\tUPDATED\tEXPIRES")
	for _, c := range calls {
		fmt.Fprintf(tw, "%s…\t%s\t%s\t%d\t%s\t%s\t%s\n", c.ID[:min(len(c.ID), 8)], c.Tool, c.State, c.Round, c.Owner,
			c.Updated.Local().Format(time.DateTime), c.Expires.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// printJSON prints a JSON document indented.
func printJSON(w io.Writer, doc []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
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
