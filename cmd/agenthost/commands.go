package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/mcpclients"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func cmdRun(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var c common
	c.register(fs)
	var tools, disabled listFlag
	jsonOut := fs.Bool("json", false, "print the whole answer as JSON instead of streaming its text")
	conversation := fs.String("conversation", "", "continue the conversation with this `id` (printed by earlier runs, listed by agenthost state)")
	fs.Var(&tools, "tool", "restrict the run to this tool and force it on the first iteration (repeatable)")
	fs.Var(&disabled, "disable", "do not offer this tool (repeatable)")
	outputSchema := fs.String("output-schema", "", "answer with a JSON value matching the JSON Schema in this `file` (instead of [agent.output]'s)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: agenthost run [flags] PROMPT\n\nWith no PROMPT, the prompt is read from stdin.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	prompt := strings.Join(fs.Args(), " ")
	promptFromStdin := prompt == "" || prompt == "-"
	if promptFromStdin {
		b, err := readAll(io.in)
		if err != nil {
			return fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return fmt.Errorf("%w: no prompt: pass it as an argument or on stdin", errUsage)
	}
	var schema json.RawMessage
	if *outputSchema != "" {
		b, err := os.ReadFile(*outputSchema)
		if err != nil {
			return fmt.Errorf("%w: -output-schema: %w", errUsage, err)
		}
		schema = b
	}
	a, err := c.app(ctx, fs, io.err, io.err, wiring.Running)
	if err != nil {
		return err
	}
	defer a.Close()
	if a.Provider() == config.ProviderSampling {
		return fmt.Errorf("%w: %w", errUsage, wiring.ErrSamplingOnlyServe)
	}

	req := &host.Request{Prompt: prompt, ConversationID: *conversation, Selection: host.Selection{ToolChoices: tools, DisabledTools: disabled}, OutputSchema: schema}
	if !promptFromStdin && isTerminal(io.in) && isTerminal(io.err) {
		req.Interactor = &terminal{in: bufio.NewReader(io.in), out: io.err}
	}
	progress := isTerminal(io.err)
	out := &answerWriter{w: io.out, sources: isTerminal(io.out)}
	var called callArguments
	ans, err := a.Orchestrator().Ask(ctx, req, func(ev *host.Event) {
		if progress {
			printProgress(io.err, ev)
		}
		if *jsonOut {
			called.event(ev)
		} else {
			out.event(ev)
		}
	})
	if errors.Is(err, host.ErrInvalidRequest) || errors.Is(err, host.ErrUnknownConversation) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if ans != nil && progress && a.State() != nil {
		fmt.Fprintf(io.err, "Continue with: agenthost run -conversation %s PROMPT\n", ans.ConversationID)
	}
	if *jsonOut && ans != nil {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(called.answer(ans)); err != nil {
			return err
		}
	}
	return err
}

// callArguments keeps the arguments of a run's tool calls, which --json prints with each call of the answer.
type callArguments map[callKey]json.RawMessage

type callKey struct {
	iteration int
	id        string
}

func (c *callArguments) event(ev *host.Event) {
	if ev.Kind != host.EventToolEnd || len(ev.ToolCall.Arguments) == 0 {
		return
	}
	if *c == nil {
		*c = callArguments{}
	}
	(*c)[callKey{ev.Iteration, ev.ToolCall.ID}] = ev.ToolCall.Arguments
}

// jsonAnswer is the answer as --json prints it: the tool calls with their arguments.
type jsonAnswer struct {
	*host.Answer
	ToolCalls []jsonToolCall `json:"tool_calls"`
}

type jsonToolCall struct {
	host.ToolCallInfo
	// Arguments are the arguments the tool was called with; absent when they were not valid JSON (the call was
	// then refused).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func (c callArguments) answer(ans *host.Answer) *jsonAnswer {
	out := &jsonAnswer{Answer: ans, ToolCalls: make([]jsonToolCall, len(ans.ToolCalls))}
	for i, info := range ans.ToolCalls {
		out.ToolCalls[i] = jsonToolCall{ToolCallInfo: info, Arguments: c[callKey{info.Iteration, info.ID}]}
	}
	return out
}

// answerWriter streams the answer's text to stdout: the text of each iteration as it is generated, then whatever the
// final answer adds to it (its list of sources, or the whole answer when it was not streamed).
type answerWriter struct {
	w io.Writer
	// sources lists the sources of a structured answer below its value: on a terminal, where a person reads
	// its [1]. Piped, the value stays a JSON document alone.
	sources  bool
	streamed strings.Builder // text written in the current iteration
	any      bool            // whether anything was written at all
}

func (a *answerWriter) event(ev *host.Event) {
	switch ev.Kind {
	case host.EventIteration:
		if a.streamed.Len() > 0 {
			// Text that came with tool calls was the model thinking aloud; the answer starts on a new line.
			fmt.Fprintln(a.w)
		}
		a.streamed.Reset()
	case host.EventTextDelta:
		a.streamed.WriteString(ev.Text)
		a.any = true
		fmt.Fprint(a.w, ev.Text)
	case host.EventAnswer:
		if s := ev.Answer.StoppedBy; s == host.StopError || s == host.StopCancelled {
			// The error goes to stderr; stdout only ends the line of what was streamed.
			if a.streamed.Len() > 0 {
				fmt.Fprintln(a.w)
			}
			return
		}
		text := ev.Answer.Text
		if rest, ok := strings.CutPrefix(text, a.streamed.String()); ok {
			text = rest
		} else if a.streamed.Len() > 0 {
			text = "\n\n" + text
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fmt.Fprint(a.w, text)
		if a.sources && ev.Answer.Output != nil && len(ev.Answer.References) > 0 {
			fmt.Fprint(a.w, sourcesList(ev.Answer.References))
		}
	}
}

// sourcesList is the list of sources a structured answer cites, as a text answer ends with it: "[1] Title — URI".
func sourcesList(refs []host.NumberedReference) string {
	var b strings.Builder
	b.WriteString("\nSources:\n")
	for _, r := range refs {
		var what string
		switch {
		case r.Title != "" && r.URI != "":
			what = r.Title + " — " + r.URI
		case r.Title != "" || r.URI != "":
			what = r.Title + r.URI
		default:
			what = "untitled source"
		}
		fmt.Fprintf(&b, "[%d] %s\n", r.Number, what)
	}
	return b.String()
}

// printProgress writes one line per step to the terminal.
func printProgress(w io.Writer, ev *host.Event) {
	switch ev.Kind {
	case host.EventToolStart:
		fmt.Fprintf(w, "· %s %s\n", ev.ToolCall.Name, truncate(string(ev.ToolCall.Arguments), 80))
	case host.EventToolProgress:
		p := ev.ToolCall.Progress
		if p.Total > 0 {
			fmt.Fprintf(w, "  %s: %.0f/%.0f %s\n", ev.ToolCall.Name, p.Progress, p.Total, p.Message)
		} else {
			fmt.Fprintf(w, "  %s: %s\n", ev.ToolCall.Name, p.Message)
		}
	case host.EventToolEnd:
		info := ev.ToolCall.Info
		if !info.OK {
			fmt.Fprintf(w, "✗ %s: %s\n", info.Name, truncate(info.Error, 120))
		}
	case host.EventCheck:
		mark := "✓"
		if !ev.Check.Passed {
			mark = "✗"
		}
		line := mark + " check " + ev.Check.Name
		if ev.Check.Detail != "" {
			line += ": " + truncate(ev.Check.Detail, 120)
		}
		fmt.Fprintln(w, line)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// readAll reads at most 4 MiB: a prompt, not a file system.
func readAll(r io.Reader) ([]byte, error) {
	const max = 4 << 20
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && len(b) > max {
		err = fmt.Errorf("the prompt is larger than %d bytes", max)
	}
	return b, err
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// terminal asks the person at the terminal for approvals and input. Tool calls may ask concurrently, so questions
// are asked one at a time.
type terminal struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
}

var _ host.Interactor = (*terminal)(nil)

func (t *terminal) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	line, err := t.ask(ctx, fmt.Sprintf("Allow %s (%s) with arguments %s? [y/N] ", req.Tool, req.Source, truncate(string(req.Arguments), 400)))
	if err != nil {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func (t *terminal) Elicit(ctx context.Context, req *host.ElicitRequest) (*host.ElicitResult, error) {
	q := fmt.Sprintf("%s asks: %s\nAnswer as a JSON object matching %s (empty line to decline): ", req.Source, req.Message, truncate(string(req.Schema), 400))
	line, err := t.ask(ctx, q)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(line) == "" {
		return &host.ElicitResult{Action: host.ElicitDecline}, nil
	}
	var content map[string]any
	if err := json.Unmarshal([]byte(line), &content); err != nil {
		return nil, fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	return &host.ElicitResult{Action: host.ElicitAccept, Content: content}, nil
}

// ask writes q and reads one line, giving up when ctx ends. A reader goroutine left blocked on the terminal after
// ctx ended is released when the process exits; the terminal has no way to cancel a read.
func (t *terminal) ask(ctx context.Context, q string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprint(t.out, q)
	type reply struct {
		line string
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		line, err := t.in.ReadString('\n')
		ch <- reply{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.line == "" {
			return "", r.err
		}
		return r.line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func cmdTools(ctx context.Context, args []string, io *stdio) error {
	var query *string
	limit, limitSet := host.DefaultSearchResults, false
	var jsonOut bool
	a, tools, err := loadTools(ctx, "tools", args, io, func(fs *flag.FlagSet) {
		fs.Func("search", "rank the tools for `QUERY`, best first, as search_tools does", func(s string) error {
			if strings.TrimSpace(s) == "" {
				return errors.New("needs a query")
			}
			query = &s
			return nil
		})
		fs.Func("limit", fmt.Sprintf("with --search, the most tools to list, `N` (default %d)", host.DefaultSearchResults), func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil {
				return errors.New("must be a whole number")
			}
			limit, limitSet = n, true
			return nil
		})
		fs.BoolVar(&jsonOut, "json", false, "with --search, print the ranked tools as a JSON array")
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if query != nil {
		return searchTools(ctx, a, *query, limit, jsonOut, io)
	}
	if jsonOut || limitSet {
		return fmt.Errorf("%w: --json and --limit go with --search", errUsage)
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tFLAGS\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Spec.Name, t.Source, flags(t.Policy), truncate(firstLine(t.Spec.Description), 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(io.out, toolSearchSummary(a.Orchestrator().SearchDecision(tools, host.Selection{})))
	return err
}

// toolSearchSummary says how many tools a run would offer, what their definitions cost, and whether tool search
// would be on for them: "12 tools offered, estimated 12,400 tokens; tool search: on (auto: 12,400 tokens >
// threshold 6,400)".
func toolSearchSummary(d host.SearchDecision) string {
	line := fmt.Sprintf("%s offered, estimated %s tokens; tool search: ", count(d.Tools, "tool", "tools"), grouped(d.Tokens))
	state := "off"
	if d.On {
		state = "on"
	}
	switch {
	case d.Why != "auto":
		return line + fmt.Sprintf("%s (%s)", state, d.Why)
	case d.On:
		return line + fmt.Sprintf("on (auto: %s tokens > threshold %s)", grouped(d.Tokens), grouped(d.Threshold))
	}
	return line + fmt.Sprintf("off (auto: %s tokens <= threshold %s)", grouped(d.Tokens), grouped(d.Threshold))
}

// grouped writes n with its thousands separated by commas: 12400 is "12,400".
func grouped(n int) string {
	if n < 0 {
		return "-" + grouped(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// searchHit is one tool of `agenthost tools --search --json`.
type searchHit struct {
	Rank        int             `json:"rank"`
	Name        string          `json:"name"`
	Source      string          `json:"source"`
	Score       float64         `json:"score"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// searchTools prints the tools ranked for query, best first: a table, or with jsonOut a JSON array.
func searchTools(ctx context.Context, a *wiring.App, query string, limit int, jsonOut bool, io *stdio) error {
	if limit < 1 {
		return fmt.Errorf("%w: --limit must be at least 1 (got %d)", errUsage, limit)
	}
	hits, err := a.Tools().Search(ctx, query, &host.SearchOptions{MaxResults: limit})
	if err != nil {
		return fmt.Errorf("searching the tools: %w", err)
	}
	if jsonOut {
		out := make([]searchHit, len(hits))
		for i, h := range hits {
			out[i] = searchHit{Rank: i + 1, Name: h.Tool.Spec.Name, Source: h.Tool.Source, Score: math.Round(h.Score*1e4) / 1e4,
				Description: h.Tool.Spec.Description, InputSchema: h.Tool.Spec.InputSchema}
		}
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(hits) == 0 {
		_, err := fmt.Fprintf(io.out, "no tool matches %q\n", query)
		return err
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tNAME\tSOURCE\tSCORE\tDESCRIPTION")
	for i, h := range hits {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.3f\t%s\n", i+1, h.Tool.Spec.Name, h.Tool.Source, h.Score, truncate(firstLine(h.Tool.Spec.Description), 80))
	}
	return tw.Flush()
}

// loadTools parses the common flags of command name, and those more registers, builds the app and lists its tools.
// A problem with the tools (two with one name, a source that cannot list them) is the configuration's.
func loadTools(ctx context.Context, name string, args []string, io *stdio, more func(*flag.FlagSet)) (*wiring.App, []*host.ManagedTool, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c common
	c.register(fs)
	if more != nil {
		more(fs)
	}
	fs.Usage = func() {
		what := "Lists the tools the agent offers: their final names, sources, policy flags and descriptions, then how many\n" +
			"a run offers, the tokens their definitions are estimated to cost, and whether tool search would be on\n" +
			"([agent.tool_search]). With --search, ranks the tools for a query instead, as search_tools does."
		if name == "check" {
			what = "Validates the configuration and reports every problem, then connects to every MCP server and A2A peer\n" +
				"and reports the state of each, of the sub-agents, the built-ins and the state database. Exits with 1\n" +
				"when one cannot be reached, and with 2 when the configuration is invalid."
		}
		fmt.Fprintf(fs.Output(), "Usage: agenthost %s [flags]\n\n%s\n\nFlags:\n", name, what)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("%w: %s takes no arguments (got %q)", errUsage, name, fs.Args())
	}
	mode := wiring.Listing
	if name == "check" {
		mode = wiring.Checking
	}
	a, err := c.app(ctx, fs, io.err, nil, mode)
	if err != nil {
		return nil, nil, err
	}
	tools, err := a.Tools().Tools(ctx)
	if err != nil {
		a.Close()
		return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return a, tools, nil
}

func flags(p host.ToolPolicy) string {
	if f := p.Flags(); len(f) > 0 {
		return strings.Join(f, ",")
	}
	return "-"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func cmdCheck(ctx context.Context, args []string, io *stdio) error {
	a, tools, err := loadTools(ctx, "check", args, io, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	for _, name := range a.Tools().UnknownPolicies(tools) {
		fmt.Fprintf(io.err, "agenthost: warning: %s: [tools.%q] matches no tool\n", configName(a.Config()), name)
	}
	warnWebAndWrites(io.err, a.Config(), tools)
	var modelErrs []error
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tPROVIDER\tENDPOINT\tSTATUS")
	for _, m := range a.CheckModel(ctx) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Model, a.Provider(), m.Endpoint, m.Status)
		var details []string
		if m.Detail != "" {
			details = append(details, m.Detail)
		}
		if m.Err != nil {
			details = append(details, m.Err.Error())
			modelErrs = append(modelErrs, fmt.Errorf("model %s: %s", m.Model, m.Status))
		}
		writeDetails(tw, 4, details)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var failed []string
	if servers := a.MCP().Status(); len(servers) > 0 {
		tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATUS\tPROTOCOL\tTOOLS\tERROR")
		for _, st := range servers {
			cell, details := serverProblem(st, 100)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", st.Name, st.Transport, st.State, orDefault(st.ProtocolVersion, "-"), st.Tools, cell)
			writeDetails(tw, 6, details)
			if st.State != mcpclients.StateConnected {
				failed = append(failed, st.Name)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var down []string
	if peers := a.Peers().Status(); len(peers) > 0 {
		tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PEER\tPROTOCOL\tURL\tSTATUS\tSKILLS\tERROR")
		for _, st := range peers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, orDefault(st.ProtocolVersion, "-"), orDefault(st.URL, "-"), st.State,
				orDefault(truncate(strings.Join(st.Skills, ", "), 60), "-"), orDefault(truncate(st.Error, 100), "-"))
			if st.State != a2a.StateReady {
				down = append(down, st.Name)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := printAgents(io, a, tools); err != nil {
		return err
	}
	if st := a.Builtins().Statuses(); len(st) > 0 {
		tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BUILTIN\tSTATUS\tDETAIL")
		for _, s := range st {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Tool, s.State, orDefault(truncate(s.Detail, 100), "-"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	oauthErr := checkServeOAuth(ctx, io, a)
	telErr := checkTelemetry(ctx, io, a.Config())
	st := checkState(ctx, a.Config(), a.Logger())
	tw = tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tWHERE\tSTATUS\tCONVERSATIONS")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Config().State.Backend, st.where, st.status, st.conversations)
	if err := tw.Flush(); err != nil {
		return err
	}
	errs := modelErrs
	if st.err != nil {
		errs = append(errs, st.err)
	}
	if oauthErr != nil {
		errs = append(errs, oauthErr)
	}
	if telErr != nil {
		errs = append(errs, telErr)
	}
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("MCP servers not reachable: %s", strings.Join(failed, ", ")))
	}
	if len(down) > 0 {
		errs = append(errs, fmt.Errorf("A2A peers not reachable: %s", strings.Join(down, ", ")))
	}
	if len(errs) > 0 {
		fmt.Fprintf(io.out, "%s: %s (model provider %s, %s)\n", configName(a.Config()), count(len(errs), "problem", "problems"), a.Provider(),
			count(len(tools), "tool", "tools"))
		return errors.Join(errs...)
	}
	fmt.Fprintf(io.out, "%s: ok (model provider %s, %s)\n", configName(a.Config()), a.Provider(), count(len(tools), "tool", "tools"))
	return nil
}

// serverProblem is what a table shows of a server's failure: the error, cut to width, in its row, and below it,
// on lines of their own, the root cause with what to do, the child's last stderr lines, and the whole error when
// the row could not hold it and no cause says more.
func serverProblem(st mcpclients.Status, width int) (cell string, details []string) {
	cell = orDefault(truncate(st.Error, width), "-")
	if st.State == mcpclients.StateConnected {
		return cell, nil
	}
	if st.Cause != "" {
		details = append(details, st.Cause)
	} else if len(st.Error) > width {
		details = append(details, st.Error)
	}
	for _, line := range st.Stderr {
		details = append(details, "  "+line)
	}
	return cell, details
}

// writeDetails writes lines below a table's row, indented in its last column (of cols): the last cell of a line
// does not widen its column, so long lines leave the table as it is.
func writeDetails(tw io.Writer, cols int, lines []string) {
	for _, line := range lines {
		fmt.Fprintf(tw, "%s  %s\n", strings.Repeat("\t", cols-1), line)
	}
}

// checkServeOAuth reads the metadata and the keys of [serve.oauth]'s issuer, as `serve` will, and prints what it
// found; it returns why `serve --http` could not verify tokens, if it could not.
func checkServeOAuth(ctx context.Context, io *stdio, a *wiring.App) error {
	o := a.Config().Serve.OAuth
	if o == nil {
		return nil
	}
	status, keys, metadata := "ok", "-", "-"
	var failure error
	v, err := wiring.Verifier(ctx, a.Config(), a.Logger())
	if err != nil {
		status, failure = truncate(err.Error(), 100), fmt.Errorf("[serve.oauth]: %w", err)
	} else {
		defer v.Close()
		if _, u := v.Metadata(); u != "" {
			metadata = u
		}
		n := v.Keys(ctx)
		if keys = strconv.Itoa(n); n == 0 {
			status, failure = "no keys", fmt.Errorf("[serve.oauth]: no signing key could be fetched from the issuer %s", o.Issuer)
		}
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVE OAUTH ISSUER\tAUDIENCE\tMETADATA\tKEYS\tSTATUS")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Issuer, o.Audience, metadata, keys, status)
	if err := tw.Flush(); err != nil {
		return err
	}
	return failure
}

// checkTelemetry prints where telemetry goes, from [telemetry] and the OTEL_* variables, and whether the collector
// accepts connections; nothing when telemetry is off. It returns why telemetry could not start, if it could not. A
// collector that is down is reported but is no error: runs do not depend on it.
func checkTelemetry(ctx context.Context, io *stdio, cfg *config.Config) error {
	tc := wiring.Telemetry(cfg, version, os.Getenv)
	r, err := tc.Resolve()
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if r == nil {
		return nil
	}
	status := "reachable"
	u, _ := url.Parse(r.Endpoint)
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr); err != nil {
		status = "unreachable: " + truncate(err.Error(), 80)
	} else {
		c.Close()
	}
	content := "no"
	if tc.CaptureContent {
		content = "yes"
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TELEMETRY\tPROTOCOL\tENDPOINT\tSERVICE\tCONTENT\tSTATUS")
	fmt.Fprintf(tw, "otlp\t%s\t%s\t%s\t%s\t%s\n", r.Protocol, redact.URL(r.Endpoint), r.Service, content, status)
	return tw.Flush()
}

// printAgents prints the sub-agents with their models and tools, and warns of the tools they name that no source
// offers (a typo, or a server that is down).
func printAgents(io *stdio, a *wiring.App, tools []*host.ManagedTool) error {
	if len(a.Config().AgentOrder) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tMODEL\tMAX ITERATIONS\tTOOLS")
	for _, name := range a.Config().AgentOrder {
		sa := a.Config().Agents[name]
		var missing []string
		for _, t := range sa.Tools {
			if !slices.ContainsFunc(tools, func(m *host.ManagedTool) bool { return m.Spec.Name == t }) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(io.err, "agenthost: warning: %s: agents.%s.tools: %s matches no tool\n", configName(a.Config()), name, strings.Join(missing, ", "))
		}
		model := orDefault(sa.Model, "(the agent's)")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", name, model, sa.MaxIterations, orDefault(truncate(strings.Join(sa.Tools, ", "), 80), "-"))
	}
	return tw.Flush()
}

// count writes n with the singular or the plural of its noun: "1 tool", "3 tools".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
