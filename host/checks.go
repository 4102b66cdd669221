package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host/internal/cite"
	"github.com/agenthost/agenthost/llm"
)

// The evaluation checks of an answer.
const (
	// CheckCitations: every citation names a source the tools returned, and an answer to a run whose tools
	// returned sources cites at least one.
	CheckCitations = "citations"
	// CheckComplete: the answer is not empty, the run answered, and the model was not cut off at its token limit.
	CheckComplete = "complete"
	// CheckSchema: the structured answer matched the output schema.
	CheckSchema = "schema"
	// CheckGrounded: a model (Options.Grader, else the run's) judges each sentence that cites a source to be
	// supported by it.
	CheckGrounded = "grounded"
)

// CheckNames are the checks there are, in the order they run.
var CheckNames = []string{CheckCitations, CheckComplete, CheckSchema, CheckGrounded}

// CheckPolicy is what a failed check does.
type CheckPolicy string

const (
	// CheckWarn reports the failure with the answer.
	CheckWarn CheckPolicy = "warn"
	// CheckRetry tells the model what failed and lets it answer again, once per run.
	CheckRetry CheckPolicy = "retry"
)

// CheckResult is the outcome of one evaluation check.
type CheckResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Detail says what failed, or why a check had nothing to look at.
	Detail string `json:"detail,omitempty"`
}

// checkSet is the set of checks a run's answer must pass.
type checkSet map[string]bool

func (s *checkSet) add(names ...string) {
	for _, n := range names {
		if *s == nil {
			*s = checkSet{}
		}
		(*s)[n] = true
	}
}

// ValidCheck reports whether name is a check.
func ValidCheck(name string) bool { return slices.Contains(CheckNames, name) }

// evaluate runs the checks the answer must pass, in order, emitting each outcome. raw is the answer as the model
// wrote it, citations unrendered: its text, or its structured value as JSON.
func (r *run) evaluate(ctx context.Context, ans *Answer, raw string) []CheckResult {
	var out []CheckResult
	for _, name := range CheckNames {
		if !r.checks[name] {
			continue
		}
		var res CheckResult
		switch name {
		case CheckCitations:
			res = r.checkCitations(raw)
		case CheckComplete:
			res = r.checkComplete(ans)
		case CheckSchema:
			res = r.checkSchema(ans)
		case CheckGrounded:
			res = r.checkGrounded(ctx, raw)
		}
		res.Name = name
		out = append(out, res)
		r.emit(&Event{Kind: EventCheck, Iteration: r.iteration, Check: &res})
	}
	return out
}

func (r *run) checkCitations(raw string) CheckResult {
	unknown, cited := cite.Audit(raw, r.citeSources())
	if len(unknown) > 0 {
		return CheckResult{Detail: fmt.Sprintf("the answer cites %s, which no tool returned", sourceList(unknown))}
	}
	if added := len(r.sources) - r.loaded; len(cited) == 0 && added > 0 {
		return CheckResult{Detail: fmt.Sprintf("the answer cites none of the %d sources the tools returned", added)}
	}
	return CheckResult{Passed: true}
}

func sourceList(nums []int) string {
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = fmt.Sprintf("[source %d]", n)
	}
	return strings.Join(parts, ", ")
}

func (r *run) checkComplete(ans *Answer) CheckResult {
	switch {
	case ans.StoppedBy != StopAnswered && ans.StoppedBy != StopToolControl:
		return CheckResult{Detail: fmt.Sprintf("the run stopped without an answer (%s)", ans.StoppedBy)}
	case strings.TrimSpace(ans.Text) == "":
		return CheckResult{Detail: "the answer is empty"}
	case len(r.infos) > 0 && r.infos[len(r.infos)-1].FinishReason == llm.FinishLength:
		return CheckResult{Detail: "the answer was cut off at the model's token limit"}
	}
	return CheckResult{Passed: true}
}

func (r *run) checkSchema(ans *Answer) CheckResult {
	switch {
	case r.output == nil:
		return CheckResult{Passed: true, Detail: "the run has no output schema"}
	case ans.Output == nil:
		return CheckResult{Detail: "the answer does not match the output schema"}
	}
	return CheckResult{Passed: true}
}

// maxGradedClaims and maxSourceExcerpt bound what the grounded check sends to its model.
const (
	maxGradedClaims  = 20
	maxSourceExcerpt = 2000
)

const graderInstructions = `You check whether claims are supported by the sources they cite. For each numbered claim, decide whether its sources state it or directly imply it. Reply with JSON only: {"verdicts": [{"claim": 1, "supported": true, "reason": "..."}]}, one verdict per claim, the reason one short sentence.`

// checkGrounded asks the grader whether each sentence that cites a source is supported by it.
func (r *run) checkGrounded(ctx context.Context, raw string) CheckResult {
	sources := r.citeSources()
	var claims []string
	var prompt strings.Builder
	for _, sentence := range cite.Sentences(raw, sources) {
		if len(sentence.Cited) == 0 {
			continue
		}
		if len(claims) == maxGradedClaims {
			break
		}
		claims = append(claims, sentence.Text)
		fmt.Fprintf(&prompt, "Claim %d: %s\n", len(claims), sentence.Text)
		for _, n := range sentence.Cited {
			src := r.sources[n-1]
			fmt.Fprintf(&prompt, "  [source %d] %s: %s\n", n, src.Title, excerpt(src.Content, maxSourceExcerpt))
		}
		prompt.WriteString("\n")
	}
	if len(claims) == 0 {
		return CheckResult{Passed: true, Detail: "no sentence cites a source"}
	}
	model := r.o.opts.Grader
	if model == nil {
		model = r.model()
	}
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: graderInstructions}, {Role: llm.RoleUser, Content: prompt.String()}}}
	resp, err := stepJSON(ctx, r.steps, fmt.Sprintf("iteration %d: grounded check", r.iteration), func(ctx context.Context) (*llm.Response, error) {
		return r.generateWith(ctx, model, r.iteration, req, nil)
	})
	if err != nil {
		return CheckResult{Detail: "the grader failed: " + err.Error()}
	}
	r.usage.Add(resp.Usage)
	var verdict struct {
		Verdicts []struct {
			Claim     int    `json:"claim"`
			Supported bool   `json:"supported"`
			Reason    string `json:"reason"`
		} `json:"verdicts"`
	}
	text := resp.Message.Content
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		text = text[i : j+1]
	}
	if err := json.Unmarshal([]byte(text), &verdict); err != nil || len(verdict.Verdicts) == 0 {
		return CheckResult{Detail: "the grader's verdict could not be read: " + excerpt(resp.Message.Content, 200)}
	}
	var unsupported []string
	graded := map[int]bool{}
	for _, v := range verdict.Verdicts {
		if v.Claim < 1 || v.Claim > len(claims) {
			continue
		}
		graded[v.Claim] = true
		if !v.Supported {
			unsupported = append(unsupported, fmt.Sprintf("%q (%s)", excerpt(claims[v.Claim-1], 120), v.Reason))
		}
	}
	if len(graded) < len(claims) {
		unsupported = append(unsupported, fmt.Sprintf("%d claims were not graded", len(claims)-len(graded)))
	}
	if len(unsupported) > 0 {
		return CheckResult{Detail: "not supported by its sources: " + strings.Join(unsupported, "; ")}
	}
	return CheckResult{Passed: true, Detail: fmt.Sprintf("%d cited sentences supported", len(claims))}
}

// excerpt returns the first n bytes of s, cut at a rune boundary, with "…" when cut.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
