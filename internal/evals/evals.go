// Package evals runs eval datasets through an agent and checks each answer against what its case expects: the
// engine of `agenthost eval` and of the console's eval view. A dataset is a JSON-lines file of cases.
//
// It imports host, llm and internal/schemacheck, and the standard library.
package evals

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/schemacheck"
	"github.com/agenthost/agenthost/internal/statedir"
	"github.com/agenthost/agenthost/llm"
)

// Case is one line of an eval dataset (`agenthost eval -h` shows one).
type Case struct {
	// Name names the case in the report; default "line N".
	Name string `json:"name"`
	// Prompt is what the agent is asked.
	Prompt string `json:"prompt"`
	// Conversation is the exchange before the prompt, user and assistant messages in turn.
	Conversation []Message `json:"conversation"`
	// OutputSchema asks for a structured answer, as run --output-schema does.
	OutputSchema json.RawMessage `json:"output_schema"`
	// Checks are evaluation checks to run on the answer, besides [eval]'s (they need not pass).
	Checks []string `json:"checks"`
	// Expect is what the answer must be.
	Expect Expect `json:"expect"`

	// line is the case's line in its file.
	line int
	// matches is expect.matches_schema, compiled; nil without one.
	matches host.Validator
}

// Message is a message of a case's conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Expect are the properties a case's answer must have. Every one is optional.
type Expect struct {
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

// ReadDataset reads the cases of a dataset: JSON lines, blank lines and lines starting with "#" skipped. Every
// problem of every line is reported at once, each as path:line: (path:line:column: where the JSON is at fault).
func ReadDataset(path string) ([]*Case, error) {
	// A glob of [eval] datasets may match the state database: it is not opened (see statedir.HoldSQLite).
	if fi, err := os.Stat(path); err == nil && statedir.HeldSQLite(fi) {
		return nil, fmt.Errorf("%s is a database agenthost has open, not a dataset", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []*Case
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
func decodeCase(text []byte) (ec *Case, col int, err error) {
	ec = &Case{}
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
func (ec *Case) problems() []string {
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
func runCase(ctx context.Context, orch *host.Orchestrator, ec *Case) *Result {
	res := &Result{Name: ec.Name, Line: ec.line, Failures: []string{}, Tools: []string{}, Checks: []host.CheckResult{}}
	start := time.Now()
	defer func() { res.DurationMS = time.Since(start).Milliseconds(); res.Passed = len(res.Failures) == 0 }()
	req := &host.Request{Prompt: ec.Prompt, OutputSchema: ec.OutputSchema, Checks: slices.Compact(slices.Sorted(slices.Values(slices.Concat(ec.Checks, ec.Expect.ChecksPassed))))}
	if len(ec.Conversation) > 0 {
		id, err := seedConversation(ctx, orch.Conversations(), ec.Conversation)
		if err != nil {
			res.Error = err.Error()
			res.Failures = append(res.Failures, "the conversation could not be set up: "+err.Error())
			return res
		}
		req.ConversationID = id
	}
	ans, err := orch.Ask(ctx, req, nil)
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
func seedConversation(ctx context.Context, store host.ConversationStore, msgs []Message) (string, error) {
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
func (ec *Case) failures(ans *host.Answer, tools []string) []string {
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

// Result is a case's outcome (`agenthost eval --json` prints it).
type Result struct {
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

// Report is the outcome of a dataset.
type Report struct {
	Cases  []*Result `json:"cases"`
	Passed int       `json:"passed"`
	Failed int       `json:"failed"`
}

// DefaultConcurrency is how many cases run at once when the caller says 0; MaxConcurrency bounds it.
const (
	DefaultConcurrency = 4
	MaxConcurrency     = 64
)

// RunCases runs cases through orch, concurrency at once (clamped to 1..MaxConcurrency; 0 means DefaultConcurrency),
// and returns the report, cases in the order given. onCase, when not nil, is called with each case's result as it
// ends, one call at a time. A cancelled ctx fails the cases still running; the caller decides what that means.
func RunCases(ctx context.Context, orch *host.Orchestrator, cases []*Case, concurrency int, onCase func(*Result)) *Report {
	if concurrency == 0 {
		concurrency = DefaultConcurrency
	}
	concurrency = min(max(concurrency, 1), MaxConcurrency)
	results := make([]*Result, len(cases))
	var mu sync.Mutex
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, ec := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res := runCase(ctx, orch, ec)
			results[i] = res
			if onCase != nil {
				mu.Lock()
				defer mu.Unlock()
				onCase(res)
			}
		})
	}
	wg.Wait()
	report := &Report{Cases: results}
	for _, r := range results {
		if r.Passed {
			report.Passed++
		} else {
			report.Failed++
		}
	}
	return report
}

// Dataset is a dataset file the configuration names ([eval] datasets).
type Dataset struct {
	// Name is the file's name without its directory and .jsonl; Path its path.
	Name  string `json:"name"`
	Path  string `json:"path"`
	Cases int    `json:"cases"`
	// Error says why the file cannot be read; Cases is 0 then.
	Error string `json:"error,omitempty"`
}

// ErrUnknownDataset is Suite.Run's error for a name no dataset has.
var ErrUnknownDataset = errors.New("evals: no such dataset")

// Suite runs the datasets of a configuration through an orchestrator whose conversations are kept in memory, so
// that evaluating leaves the state as it was.
type Suite struct {
	orch     *host.Orchestrator
	patterns []string
}

// NewSuite returns the suite of the datasets patterns name: file names or filepath.Match globs, absolute or
// relative to the working directory, read at each call of Datasets and Run. orch runs the cases; its conversations
// should be kept in memory (host.MemoryStore), as a case with a conversation starts one.
func NewSuite(orch *host.Orchestrator, patterns []string) *Suite {
	return &Suite{orch: orch, patterns: slices.Clone(patterns)}
}

// Datasets lists the datasets the configuration names, in its order: each pattern's files in lexical order, a file
// that several name listed once, where first named. The globs are expanded at each call, so new files appear; a file
// name that matches no file, and a file whose cases do not read, is listed with its Error.
func (s *Suite) Datasets() []Dataset {
	var out []Dataset
	seen := map[string]bool{}
	add := func(path string, err error) {
		if seen[path] {
			return
		}
		seen[path] = true
		d := Dataset{Name: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Path: path}
		if err == nil {
			var cases []*Case
			if cases, err = ReadDataset(path); err == nil {
				d.Cases = len(cases)
			}
		}
		if err != nil {
			d.Error = err.Error()
		}
		out = append(out, d)
	}
	for _, p := range s.patterns {
		matches, err := filepath.Glob(p)
		switch {
		case err != nil:
			add(p, fmt.Errorf("%s: %w", p, err))
		case len(matches) == 0 && !hasMeta(p):
			_, err := os.Stat(p)
			if err == nil {
				err = fmt.Errorf("%s: not found", p)
			}
			add(p, err)
		}
		for _, m := range matches {
			add(m, nil)
		}
	}
	return out
}

// hasMeta reports whether path has a character filepath.Match treats specially.
func hasMeta(path string) bool {
	return strings.ContainsAny(path, `*?[\`)
}

// Run runs the named dataset, concurrency cases at once (0 means 4), calling onCase (when not nil) with each case's
// result as it ends, and returns the report, cases in the dataset's order. A name no dataset has is
// ErrUnknownDataset; a dataset that does not read, its errors, each at its line. When two files have the name, the
// first listed runs. Its runs have the origin "eval" (host.WithOrigin), so that a console can list them.
func (s *Suite) Run(ctx context.Context, dataset string, concurrency int, onCase func(*Result)) (*Report, error) {
	all := s.Datasets()
	i := slices.IndexFunc(all, func(d Dataset) bool { return d.Name == dataset })
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDataset, dataset)
	}
	cases, err := ReadDataset(all[i].Path)
	if err != nil {
		return nil, err
	}
	report := RunCases(host.WithOrigin(ctx, "eval"), s.orch, cases, concurrency, onCase)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evals: %s: %w", dataset, err)
	}
	return report, nil
}
