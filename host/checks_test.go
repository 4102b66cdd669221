package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// guide is a tool that returns one document, and names the citations check itself.
type guide struct{}

func (guide) Spec() ToolSpec { return ToolSpec{Name: "guide", Description: "the city guide"} }
func (guide) Call(context.Context, json.RawMessage, *Call) (*Result, error) {
	return &Result{Text: "Lyon has 522,000 inhabitants.", References: []Reference{{Title: "City guide", URI: "https://guide.test/lyon", Content: "Lyon has 522,000 inhabitants."}}}, nil
}

type checkingGuide struct{ guide }

func (checkingGuide) EvaluationChecks() []string { return []string{CheckCitations} }

func checksOf(ans *Answer) map[string]CheckResult {
	out := map[string]CheckResult{}
	for _, c := range ans.Checks {
		out[c.Name] = c
	}
	return out
}

func TestChecks(t *testing.T) {
	guideCall := fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g1", "guide", `{}`)}}
	for _, tc := range []struct {
		name   string
		turns  []fakellm.Turn
		checks []string
		want   map[string]string // check → "" when it passes, else a piece of its detail
	}{
		{"cited", []fakellm.Turn{guideCall, {Text: "Lyon has 522,000 inhabitants [source 1]."}}, []string{CheckCitations, CheckComplete},
			map[string]string{CheckCitations: "", CheckComplete: ""}},
		{"unknown source", []fakellm.Turn{guideCall, {Text: "Lyon is big [source 1], very big [source 4]."}}, []string{CheckCitations},
			map[string]string{CheckCitations: "cites [source 4], which no tool returned"}},
		{"sources not cited", []fakellm.Turn{guideCall, {Text: "Lyon is big."}}, []string{CheckCitations},
			map[string]string{CheckCitations: "cites none of the 1 sources"}},
		{"no sources, no citations", []fakellm.Turn{{Text: "Hello."}}, []string{CheckCitations}, map[string]string{CheckCitations: ""}},
		{"cut off", []fakellm.Turn{{Text: "Lyon has", FinishReason: "length"}}, []string{CheckComplete},
			map[string]string{CheckComplete: "cut off"}},
		{"no schema", []fakellm.Turn{{Text: "Hello."}}, []string{CheckSchema}, map[string]string{CheckSchema: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{tools: []Tool{guide{}}})
			h.srv.Enqueue(tc.turns...)
			ans := h.mustAsk(t, &Request{Prompt: "How big is Lyon?", Checks: tc.checks})
			got := checksOf(ans)
			if len(got) != len(tc.want) {
				t.Errorf("checks = %+v, want %v", ans.Checks, tc.want)
			}
			for name, detail := range tc.want {
				c, ok := got[name]
				switch {
				case !ok:
					t.Errorf("check %s did not run", name)
				case detail == "" && !c.Passed:
					t.Errorf("check %s failed: %s", name, c.Detail)
				case detail != "" && (c.Passed || !strings.Contains(c.Detail, detail)):
					t.Errorf("check %s: passed %v, %q; want a failure with %q", name, c.Passed, c.Detail, detail)
				}
			}
			var events int
			for _, ev := range h.events {
				if ev.Kind == EventCheck {
					events++
				}
			}
			if events != len(tc.want) {
				t.Errorf("%d check events, want %d", events, len(tc.want))
			}
		})
	}
}

func TestCheckSchemaFails(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: Options{CompileSchema: compileKeys, OutputRetries: -1, Checks: []string{CheckSchema, CheckComplete}}})
	h.srv.Enqueue(fakellm.Turn{Text: "Lyon."})
	ans := h.mustAsk(t, &Request{Prompt: "Which city?", OutputSchema: json.RawMessage(citySchema)})
	got := checksOf(ans)
	if ans.StoppedBy != StopInvalidOutput || got[CheckSchema].Passed || got[CheckComplete].Passed {
		t.Errorf("stopped by %s, checks %+v", ans.StoppedBy, ans.Checks)
	}
	h.srv.Enqueue(fakellm.Turn{Text: `{"city":"Lyon","why":"food"}`})
	ans = h.mustAsk(t, &Request{Prompt: "Which city?", OutputSchema: json.RawMessage(citySchema)})
	if got := checksOf(ans); ans.StoppedBy != StopAnswered || !got[CheckSchema].Passed || got[CheckSchema].Detail != "" || !got[CheckComplete].Passed {
		t.Errorf("a valid answer: stopped by %s, checks %+v", ans.StoppedBy, ans.Checks)
	}
}

// TestChecksFromTools: a tool's policy and a tool itself name checks, which then apply to the run's answer.
func TestChecksFromTools(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tool     Tool
		policies map[string]ToolPolicy
	}{
		{"policy", guide{}, map[string]ToolPolicy{"guide": {EvaluationChecks: []string{CheckCitations}}}},
		{"tool", checkingGuide{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{tools: []Tool{tc.tool}, policies: tc.policies})
			h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g1", "guide", `{}`)}}, fakellm.Turn{Text: "Lyon is big."})
			ans := h.mustAsk(t, &Request{Prompt: "How big is Lyon?"})
			if c := checksOf(ans)[CheckCitations]; len(ans.Checks) != 1 || c.Passed {
				t.Errorf("checks = %+v, want citations failed", ans.Checks)
			}
			// Without the tool running, no check applies.
			h.srv.Enqueue(fakellm.Turn{Text: "Hello."})
			if ans := h.mustAsk(t, &Request{Prompt: "Hi"}); ans.Checks != nil {
				t.Errorf("checks without the tool: %+v", ans.Checks)
			}
		})
	}
}

func TestCheckRetry(t *testing.T) {
	h := newHarness(t, harnessConfig{tools: []Tool{guide{}}, opts: Options{Checks: []string{CheckCitations}, OnCheckFailure: CheckRetry}})
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g1", "guide", `{}`)}},
		fakellm.Turn{Text: "Lyon is big."},
		fakellm.Turn{Text: "Lyon is big [source 1]."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "How big is Lyon?"})
	if c := checksOf(ans)[CheckCitations]; !c.Passed || ans.Text == "" || !strings.HasPrefix(ans.Text, "Lyon is big [1].") {
		t.Errorf("answer %q, checks %+v", ans.Text, ans.Checks)
	}
	last := h.srv.LastRequest().Messages
	told := last[len(last)-1]
	if told.Role != "user" || !strings.Contains(told.Content, "- citations: the answer cites none of the 1 sources") {
		t.Errorf("the model was told %+v", told)
	}
	// Retried once only: a second failure is reported.
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g2", "guide", `{}`)}}, fakellm.Turn{Text: "Big."}, fakellm.Turn{Text: "Still big."})
	ans = h.mustAsk(t, &Request{Prompt: "And now?"})
	if c := checksOf(ans)[CheckCitations]; c.Passed || ans.Text != "Still big." {
		t.Errorf("after a second failure: %q, %+v", ans.Text, ans.Checks)
	}
}

func TestCheckGrounded(t *testing.T) {
	grader := fakellm.New()
	t.Cleanup(grader.Close)
	gm, err := openai.New(&openai.Options{BaseURL: grader.URL, APIKey: "sk", Model: "grader", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{tools: []Tool{guide{}}, opts: Options{Checks: []string{CheckGrounded}, Grader: gm}})
	for _, tc := range []struct {
		verdict string
		passed  bool
		detail  string
	}{
		{`{"verdicts":[{"claim":1,"supported":true,"reason":"stated"}]}`, true, "1 cited sentences supported"},
		{"Here: {\"verdicts\":[{\"claim\":1,\"supported\":false,\"reason\":\"the guide gives another figure\"}]}", false, "the guide gives another figure"},
		{`not JSON`, false, "could not be read"},
	} {
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g1", "guide", `{}`)}}, fakellm.Turn{Text: "Lyon has 522,000 inhabitants [source 1]. It is lovely."})
		grader.Enqueue(fakellm.Turn{Text: tc.verdict})
		ans := h.mustAsk(t, &Request{Prompt: "How big is Lyon?"})
		c := checksOf(ans)[CheckGrounded]
		if c.Passed != tc.passed || !strings.Contains(c.Detail, tc.detail) {
			t.Errorf("grounded with verdict %s: %+v", tc.verdict, c)
		}
		req := grader.LastRequest()
		user := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(user, "Claim 1: Lyon has 522,000 inhabitants [source 1].") || !strings.Contains(user, "[source 1] City guide: Lyon has 522,000") || strings.Contains(user, "lovely") {
			t.Errorf("the grader was asked %q", user)
		}
	}
	// A citation after the sentence's full stop is that sentence's, not the next one's.
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("g1", "guide", `{}`)}}, fakellm.Turn{Text: "Lyon has 522,000 inhabitants. [source 1] It is lovely."})
	grader.Enqueue(fakellm.Turn{Text: `{"verdicts":[{"claim":1,"supported":true,"reason":"stated"}]}`})
	if c := checksOf(h.mustAsk(t, &Request{Prompt: "How big is Lyon?"}))[CheckGrounded]; !c.Passed {
		t.Errorf("grounded, citing after the full stop: %+v", c)
	}
	req := grader.LastRequest()
	if user := req.Messages[len(req.Messages)-1].Content; !strings.HasPrefix(user, "Claim 1: Lyon has 522,000 inhabitants. [source 1]\n") || strings.Contains(user, "lovely") {
		t.Errorf("the grader was asked %q", user)
	}
	h.srv.Enqueue(fakellm.Turn{Text: "Nothing cited."})
	ans := h.mustAsk(t, &Request{Prompt: "Hi"})
	if c := checksOf(ans)[CheckGrounded]; !c.Passed || c.Detail != "no sentence cites a source" {
		t.Errorf("grounded without citations: %+v", c)
	}
	if grader.RequestCount() != 4 {
		t.Errorf("the grader was asked %d times, want 4", grader.RequestCount())
	}
}

func TestUnknownCheck(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if _, err := h.ask(t, &Request{Prompt: "x", Checks: []string{"spelling"}}); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), `unknown check "spelling"`) {
		t.Errorf("an unknown check: %v", err)
	}
}
