package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/llm"
)

// evalCase is one line of an eval dataset.
type evalCase struct {
	// Name names the case in the report; default "line N".
	Name string `json:"name"`
	// Prompt is what the agent is asked.
	Prompt string `json:"prompt"`
	// Conversation is the exchange before the prompt, user and assistant messages in turn.
	Conversation []evalMessage `json:"conversation"`
	// OutputSchema asks for a structured answer, as run --output-schema does.
	OutputSchema json.RawMessage `json:"output_schema"`
	// Checks are evaluation checks to run on the answer, besides [eval]'s (they need not pass).
	Checks []string `json:"checks"`
	// Expect is what the answer must be.
	Expect evalExpect `json:"expect"`

	line int
	// matches is expect.matches_schema, compiled; nil without one.
	matches host.Validator
}

type evalMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// evalExpect are the properties a case's answer must have. Every one is optional.
type evalExpect struct {
	// Contains and NotContains are texts the answer must and must not contain, whatever their case.
	Contains    []string `json:"contains"`
	NotContains []string `json:"not_contains"`
	// MatchesSchema is a JSON Schema the answer must match: its structured value, or its text read as JSON.
	MatchesSchema json.RawMessage `json:"matches_schema"`
	// ToolsCalled are tools the run must have called (whatever their outcome).
	ToolsCalled []string `json:"tools_called"`
	// MinSources is how many sources the answer must cite at least.
	MinSources int `json:"min_sources"`
	// ChecksPassed are evaluation checks that must run and pass.
	ChecksPassed []string `json:"checks_passed"`
	// StoppedBy is why the run must stop; default: any reason but an error or a cancellation.
	StoppedBy string `json:"stopped_by"`
}

// evalResult is a case's outcome, as --json prints it.
type evalResult struct {
	Name       string             `json:"name"`
	Line       int                `json:"line"`
	Passed     bool               `json:"passed"`
	Failures   []string           `json:"failures"`
	Answer     string             `json:"answer"`
	Output     json.RawMessage    `json:"output,omitempty"`
	StoppedBy  host.StopReason    `json:"stopped_by,omitempty"`
	Tools      []string           `json:"tools_called"`
	Sources    int                `json:"sources"`
	Checks     []host.CheckResult `json:"checks"`
	DurationMS int64              `json:"duration_ms"`
	Error      string             `json:"error,omitempty"`
}

// evalReport is what --json prints.
type evalReport struct {
	Cases  []*evalResult `json:"cases"`
	Passed int           `json:"passed"`
	Failed int           `json:"failed"`
}

// errCasesFailed ends an evaluation whose cases failed: exit code 1.
var errCasesFailed = errors.New("cases failed")

func cmdEval(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var c common
	c.register(fs)
	jsonOut := fs.Bool("json", false, "print the results as JSON")
	concurrency := fs.Int("concurrency", 4, "cases run at once: 1..64")
	only := fs.String("run", "", "run only the cases whose name matches this regular `expression`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: agenthost eval [flags] DATASET.jsonl

Runs each case of the dataset through the agent and checks its answer against what the case expects. Exits with 1
when a case fails. A case is one JSON object per line:

  {"name": "capital", "prompt": "What is the capital of France?",
   "conversation": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}],
   "output_schema": {...}, "checks": ["grounded"],
   "expect": {"contains": ["Paris"], "not_contains": ["Lyon"], "matches_schema": {...},
              "tools_called": ["web_search"], "min_sources": 1, "checks_passed": ["citations"],
              "stopped_by": "answered"}}

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: eval takes one dataset file", errUsage)
	}
	if *concurrency < 1 || *concurrency > 64 {
		return fmt.Errorf("%w: -concurrency must be between 1 and 64 (got %d)", errUsage, *concurrency)
	}
	cases, err := readDataset(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("%w: -run: %w", errUsage, err)
		}
		cases = slices.DeleteFunc(cases, func(ec *evalCase) bool { return !re.MatchString(ec.Name) })
		if len(cases) == 0 {
			return fmt.Errorf("%w: -run %q matches no case", errUsage, *only)
		}
	}
	a, err := c.app(ctx, fs, io.err, io.err, wiring.Evaluating)
	if err != nil {
		return err
	}
	defer a.Close()

	start := time.Now()
	results := make([]*evalResult, len(cases))
	progress := isTerminal(io.err) && !*jsonOut
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, *concurrency)
	var wg sync.WaitGroup
	for i, ec := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res := runCase(ctx, a, ec)
			results[i] = res
			if progress {
				mu.Lock()
				done++
				mark := "✓"
				if !res.Passed {
					mark = "✗"
				}
				fmt.Fprintf(io.err, "%s %d/%d %s\n", mark, done, len(cases), res.Name)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	report := evalReport{Cases: results}
	for _, r := range results {
		if r.Passed {
			report.Passed++
		} else {
			report.Failed++
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else if err := printEval(io, report, time.Since(start)); err != nil {
		return err
	}
	if report.Failed > 0 {
		return fmt.Errorf("%w: %d of %d", errCasesFailed, report.Failed, len(results))
	}
	return nil
}

// readDataset reads the cases of a dataset: JSON lines, blank lines and lines starting with "#" skipped. Every
// problem of every line is reported at once, each as path:line: (path:line:column: where the JSON is at fault).
func readDataset(path string) ([]*evalCase, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []*evalCase
	var errs []error
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	names := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		text := bytes.TrimSpace(raw)
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		indent := len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace))
		ec, col, err := decodeCase(text)
		if err != nil {
			if col > 0 {
				errs = append(errs, fmt.Errorf("%s:%d:%d: %w", path, line, indent+col, err))
			} else {
				errs = append(errs, fmt.Errorf("%s:%d: %w", path, line, err))
			}
			continue
		}
		ec.line = line
		problems := ec.problems()
		for _, p := range problems {
			errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, p))
		}
		if ec.Name == "" {
			ec.Name = fmt.Sprintf("line %d", line)
		}
		if first, dup := names[ec.Name]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: the name %q is taken by line %d", path, line, ec.Name, first))
			continue
		}
		names[ec.Name] = line
		if len(problems) == 0 {
			cases = append(cases, ec)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", path, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return cases, nil
}

// decodeCase decodes one line of a dataset. On error, col is the 1-based column in text where the JSON is at fault
// (for a value of the wrong type, its last character), or 0 when the error names no place (an unknown field names
// itself).
func decodeCase(text []byte) (ec *evalCase, col int, err error) {
	ec = &evalCase{}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ec); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, int(syntax.Offset), fmt.Errorf("invalid JSON: %v", syntax)
		case errors.As(err, &typ) && typ.Field == "":
			return nil, int(typ.Offset), fmt.Errorf("a case is a JSON object (got %s)", jsonKind(typ.Value))
		case errors.As(err, &typ):
			return nil, int(typ.Offset), fmt.Errorf("%s must be %s (got %s)", typ.Field, goKind(typ.Type), jsonKind(typ.Value))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, len(text), errors.New("invalid JSON: the case ends before its object closes (a case is one JSON object on one line)")
		}
		return nil, 0, err
	}
	if rest := bytes.TrimSpace(text[dec.InputOffset():]); len(rest) > 0 {
		return nil, int(dec.InputOffset()) + 1 + bytes.Index(text[dec.InputOffset():], rest[:1]), errors.New("invalid JSON: more after the case's object (one case per line)")
	}
	return ec, 0, nil
}

// jsonKind names a JSON value's kind as encoding/json reports it ("string", "number", "array", ...) for a message.
func jsonKind(v string) string {
	switch {
	case v == "array" || v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number"):
		return "a number"
	}
	return "a " + v
}

// goKind names what a field of a case holds, in JSON's words.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage: a schema
			return "a JSON Schema"
		}
		return "an array of objects"
	}
	return "an object"
}

// problems lists what is wrong with a case as written.
func (ec *evalCase) problems() []string {
	var out []string
	if strings.TrimSpace(ec.Prompt) == "" {
		out = append(out, "prompt is required")
	}
	for i, m := range ec.Conversation {
		if m.Role != "user" && m.Role != "assistant" {
			out = append(out, fmt.Sprintf("conversation[%d].role must be \"user\" or \"assistant\" (got %q)", i, m.Role))
		}
	}
	for _, c := range slices.Concat(ec.Checks, ec.Expect.ChecksPassed) {
		if !host.ValidCheck(c) {
			out = append(out, fmt.Sprintf("unknown check %q: the checks are %s", c, strings.Join(host.CheckNames, ", ")))
		}
	}
	if s := ec.Expect.StoppedBy; s != "" && !slices.Contains(host.StopReasons(), host.StopReason(s)) {
		reasons := make([]string, 0, len(host.StopReasons()))
		for _, r := range host.StopReasons() {
			reasons = append(reasons, string(r))
		}
		out = append(out, fmt.Sprintf("expect.stopped_by %q is not a reason a run stops: the reasons are %s", s, strings.Join(reasons, ", ")))
	}
	if len(ec.OutputSchema) > 0 {
		if _, err := schemacheck.Compile(ec.OutputSchema); err != nil {
			out = append(out, fmt.Sprintf("output_schema: %v", err))
		}
	}
	if len(ec.Expect.MatchesSchema) > 0 {
		v, err := schemacheck.Compile(ec.Expect.MatchesSchema)
		if err != nil {
			out = append(out, fmt.Sprintf("expect.matches_schema: %v", err))
		}
		ec.matches = v
	}
	if ec.Expect.MinSources < 0 {
		out = append(out, "expect.min_sources must not be negative")
	}
	return out
}

// runCase runs one case and checks its answer.
func runCase(ctx context.Context, a *wiring.App, ec *evalCase) *evalResult {
	res := &evalResult{Name: ec.Name, Line: ec.line, Failures: []string{}, Tools: []string{}, Checks: []host.CheckResult{}}
	start := time.Now()
	defer func() { res.DurationMS = time.Since(start).Milliseconds(); res.Passed = len(res.Failures) == 0 }()
	req := &host.Request{Prompt: ec.Prompt, OutputSchema: ec.OutputSchema, Checks: slices.Compact(slices.Sorted(slices.Values(slices.Concat(ec.Checks, ec.Expect.ChecksPassed))))}
	if len(ec.Conversation) > 0 {
		id, err := seedConversation(ctx, a.Orchestrator().Conversations(), ec.Conversation)
		if err != nil {
			res.Error = err.Error()
			res.Failures = append(res.Failures, "the conversation could not be set up: "+err.Error())
			return res
		}
		req.ConversationID = id
	}
	ans, err := a.Orchestrator().Ask(ctx, req, nil)
	if err != nil {
		res.Error = err.Error()
		res.Failures = append(res.Failures, "the run failed: "+err.Error())
	}
	if ans == nil {
		return res
	}
	res.Answer, res.Output, res.StoppedBy, res.Sources = ans.Text, ans.Output, ans.StoppedBy, len(ans.References)
	if ans.Checks != nil {
		res.Checks = ans.Checks
	}
	for _, c := range ans.ToolCalls {
		if c.NotRun == "" && !slices.Contains(res.Tools, c.Name) {
			res.Tools = append(res.Tools, c.Name)
		}
	}
	res.Failures = append(res.Failures, ec.failures(ans, res.Tools)...)
	return res
}

// seedConversation starts a conversation holding msgs, and returns its id.
func seedConversation(ctx context.Context, store host.ConversationStore, msgs []evalMessage) (string, error) {
	id, err := store.Create(ctx, "")
	if err != nil {
		return "", err
	}
	conv := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		conv[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content}
	}
	return id, store.Append(ctx, id, 0, conv, nil, nil)
}

// failures lists what the answer lacks of what the case expects.
func (ec *evalCase) failures(ans *host.Answer, tools []string) []string {
	e := &ec.Expect
	var out []string
	text := strings.ToLower(ans.Text)
	for _, s := range e.Contains {
		if !strings.Contains(text, strings.ToLower(s)) {
			out = append(out, fmt.Sprintf("the answer does not contain %q", s))
		}
	}
	for _, s := range e.NotContains {
		if strings.Contains(text, strings.ToLower(s)) {
			out = append(out, fmt.Sprintf("the answer contains %q", s))
		}
	}
	if ec.matches != nil {
		value := ans.Output
		if value == nil {
			value = json.RawMessage(strings.TrimSpace(ans.Text))
		}
		if !json.Valid(value) {
			out = append(out, "the answer is not JSON, so it cannot match the schema")
		} else if err := ec.matches.Validate(value); err != nil {
			out = append(out, "the answer does not match the schema: "+err.Error())
		}
	}
	for _, t := range e.ToolsCalled {
		if !slices.Contains(tools, t) {
			out = append(out, fmt.Sprintf("%s was not called", t))
		}
	}
	if n := len(ans.References); n < e.MinSources {
		out = append(out, fmt.Sprintf("the answer cites %d of the %d sources expected", n, e.MinSources))
	}
	for _, name := range e.ChecksPassed {
		i := slices.IndexFunc(ans.Checks, func(c host.CheckResult) bool { return c.Name == name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("the %s check did not run", name))
		case !ans.Checks[i].Passed:
			out = append(out, fmt.Sprintf("the %s check failed: %s", name, ans.Checks[i].Detail))
		}
	}
	switch {
	case e.StoppedBy != "" && string(ans.StoppedBy) != e.StoppedBy:
		out = append(out, fmt.Sprintf("the run stopped by %s, not %s", ans.StoppedBy, e.StoppedBy))
	case e.StoppedBy == "" && (ans.StoppedBy == host.StopError || ans.StoppedBy == host.StopCancelled):
		out = append(out, fmt.Sprintf("the run stopped by %s", ans.StoppedBy))
	}
	return out
}

// printEval prints a table of the cases, what failed in each, and a summary.
func printEval(io *stdio, r evalReport, took time.Duration) error {
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tTIME\tTOOLS\tSOURCES\tCHECKS\tFIRST FAILURE")
	for _, c := range r.Cases {
		result, first := "pass", "-"
		if !c.Passed {
			result, first = "FAIL", truncate(c.Failures[0], 80)
		}
		passed := 0
		for _, ch := range c.Checks {
			if ch.Passed {
				passed++
			}
		}
		checks := "-"
		if len(c.Checks) > 0 {
			checks = fmt.Sprintf("%d/%d", passed, len(c.Checks))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1fs\t%s\t%d\t%s\t%s\n", c.Name, result, float64(c.DurationMS)/1000,
			orDefault(truncate(strings.Join(c.Tools, ", "), 40), "-"), c.Sources, checks, first)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cases {
		if c.Passed {
			continue
		}
		fmt.Fprintf(io.out, "\n%s (line %d):\n", c.Name, c.Line)
		for _, f := range c.Failures {
			fmt.Fprintf(io.out, "  - %s\n", f)
		}
	}
	fmt.Fprintf(io.out, "\n%s: %d passed, %d failed (%.1fs)\n", count(len(r.Cases), "case", "cases"), r.Passed, r.Failed, took.Seconds())
	return nil
}
