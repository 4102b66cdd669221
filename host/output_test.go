package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// keysValidator is a Validator for an object whose listed keys must be strings: enough to tell a good answer from a
// bad one without a JSON Schema library, which host does not import.
type keysValidator []string

func (v keysValidator) Validate(value json.RawMessage) error {
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return errors.New("at /: not an object")
	}
	var problems []string
	for _, k := range v {
		if s, ok := obj[k].(string); !ok || s == "" {
			problems = append(problems, fmt.Sprintf("at /%s: missing, empty or not a string", k))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

const citySchema = `{"type":"object","properties":{"city":{"type":"string"},"why":{"type":"string"}},"required":["city","why"]}`

func compileKeys(schema json.RawMessage) (Validator, error) {
	var s struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	if s.Type == "array" {
		return arrayValidator{}, nil
	}
	return keysValidator(s.Required), nil
}

type arrayValidator struct{}

func (arrayValidator) Validate(value json.RawMessage) error {
	var a []string
	if json.Unmarshal(value, &a) != nil {
		return errors.New("at /: not an array of strings")
	}
	return nil
}

func outputHarness(t *testing.T, mode OutputMode, retries int) *harness {
	doc := &funcTool{spec: ToolSpec{Name: "doc", Description: "a document"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return &Result{Text: "Lyon is the capital of gastronomy.", References: []Reference{{Title: "Food guide", URI: "https://food.test/lyon"}}}, nil
	}}
	return newHarness(t, harnessConfig{tools: []Tool{doc}, opts: Options{OutputSchema: json.RawMessage(citySchema), CompileSchema: compileKeys, OutputMode: mode, OutputRetries: retries}})
}

func offered(req *fakellm.Request) []string {
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

func TestOutputToolMode(t *testing.T) {
	h := outputHarness(t, OutputTool, 0)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", "doc", `{}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c2", OutputToolName, `{"city":"Lyon","why":""}`)}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c3", OutputToolName, `{"city":"Lyon","why":"Its food [source 1]."}`)}},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Which city?"})
	if ans.StoppedBy != StopAnswered || string(ans.Output) != `{"city":"Lyon","why":"Its food [1]."}` {
		t.Fatalf("answer: %s, output %s", ans.StoppedBy, ans.Output)
	}
	if want := []NumberedReference{{Number: 1, Title: "Food guide", URI: "https://food.test/lyon"}}; !slices.Equal(ans.References, want) {
		t.Errorf("references = %+v, want %+v", ans.References, want)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(ans.Text), &back); err != nil || back["city"] != "Lyon" {
		t.Errorf("the answer's text is not the output as JSON: %q", ans.Text)
	}
	reqs := h.srv.Requests()
	first := reqs[0]
	if names := offered(first); !slices.Contains(names, OutputToolName) || !slices.Contains(names, "doc") {
		t.Errorf("offered tools: %v", names)
	}
	for _, tl := range first.Tools {
		if tl.Function.Name == OutputToolName && !jsonSame(tl.Function.Parameters, citySchema) {
			t.Errorf("final_answer's parameters = %s, want the schema", tl.Function.Parameters)
		}
	}
	if _, ok := first.Fields["response_format"]; ok {
		t.Errorf("tool mode sent a response_format")
	}
	if !strings.Contains(first.Messages[0].Content, "call final_answer") {
		t.Errorf("the system prompt does not say to call final_answer: %q", first.Messages[0].Content)
	}
	// The bad answer went back with what was wrong.
	if got := toolMessages(reqs[2])["c2"]; !strings.Contains(got, "at /why: missing, empty or not a string") {
		t.Errorf("the model read %q for its bad answer", got)
	}
	// The streamed text adds up to the answer, in one piece.
	onceStreamed(t, h, ans)
}

func TestOutputNativeMode(t *testing.T) {
	h := outputHarness(t, OutputNative, 0)
	h.srv.Enqueue(
		fakellm.Turn{Text: "Lyon, surely."},
		fakellm.Turn{Text: "```json\n{\"city\":\"Lyon\",\"why\":\"Food.\"}\n```"},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Which city?"})
	if ans.StoppedBy != StopAnswered || string(ans.Output) != `{"city":"Lyon","why":"Food."}` {
		t.Fatalf("answer: %s, output %s", ans.StoppedBy, ans.Output)
	}
	reqs := h.srv.Requests()
	if rf := string(reqs[0].Fields["response_format"]); !strings.Contains(rf, `"json_schema"`) || !strings.Contains(rf, `"city"`) {
		t.Errorf("response_format = %s", rf)
	}
	if slices.Contains(offered(reqs[0]), OutputToolName) {
		t.Errorf("native mode offered final_answer")
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "not a JSON value") {
		t.Errorf("the model was told %q after its text answer", last.Content)
	}
	// Neither the rejected answer nor the raw JSON streams: the text is the answer, once.
	onceStreamed(t, h, ans)
}

func TestOutputRetriesExhausted(t *testing.T) {
	h := outputHarness(t, OutputTool, 1)
	h.srv.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", OutputToolName, `{"city":"Lyon"}`)}},
		fakellm.Turn{Text: "Lyon."},
	)
	ans := h.mustAsk(t, &Request{Prompt: "Which city?"})
	if ans.StoppedBy != StopInvalidOutput || ans.Output != nil || !strings.Contains(ans.Text, "did not match the output schema after 2 attempts") {
		t.Errorf("answer: %s %q, output %s", ans.StoppedBy, ans.Text, ans.Output)
	}
}

func TestOutputWrappedSchemaAndFinalIteration(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: Options{MaxIterations: 1, CompileSchema: compileKeys}})
	h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", OutputToolName, `{"value":["a","b"]}`)}})
	ans := h.mustAsk(t, &Request{Prompt: "List.", OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)})
	if ans.StoppedBy != StopAnswered || string(ans.Output) != `["a","b"]` {
		t.Fatalf("answer: %s, output %s", ans.StoppedBy, ans.Output)
	}
	req := h.srv.LastRequest()
	if names := offered(req); !slices.Equal(names, []string{OutputToolName}) || !strings.Contains(string(req.ToolChoice), OutputToolName) {
		t.Errorf("the final iteration offered %v with tool_choice %s, want final_answer alone and named", names, req.ToolChoice)
	}
	if p := string(req.Tools[0].Function.Parameters); !strings.Contains(p, `"value"`) {
		t.Errorf("final_answer's parameters for an array schema: %s", p)
	}
}

func TestOutputSchemaErrors(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if _, err := h.ask(t, &Request{Prompt: "x", OutputSchema: json.RawMessage(citySchema)}); !errors.Is(err, ErrInvalidRequest) || !errors.Is(err, errNoCompiler) {
		t.Errorf("a schema without a compiler: %v", err)
	}
	h = newHarness(t, harnessConfig{opts: Options{CompileSchema: func(json.RawMessage) (Validator, error) { return nil, errors.New("bad keyword") }}})
	if _, err := h.ask(t, &Request{Prompt: "x", OutputSchema: json.RawMessage(`{}`)}); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "bad keyword") {
		t.Errorf("a schema that does not compile: %v", err)
	}
	if n := h.srv.RequestCount(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}

func jsonSame(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TestOutputDefaultSchemaCompiledOnce: the orchestrator's own schema is compiled once, for every run.
func TestOutputDefaultSchemaCompiledOnce(t *testing.T) {
	compiles := 0
	count := func(schema json.RawMessage) (Validator, error) { compiles++; return compileKeys(schema) }
	h := newHarness(t, harnessConfig{opts: Options{OutputSchema: json.RawMessage(citySchema), CompileSchema: count}})
	for range 2 {
		h.srv.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", OutputToolName, `{"city":"Lyon","why":"food"}`)}})
		if ans := h.mustAsk(t, &Request{Prompt: "Which city?"}); ans.Output == nil {
			t.Fatalf("no output: %+v", ans)
		}
	}
	if compiles != 1 {
		t.Errorf("the schema was compiled %d times for 2 runs, want once", compiles)
	}
}

// onceStreamed checks that the text deltas of the run add up to its answer, in one piece.
func onceStreamed(t *testing.T, h *harness, ans *Answer) {
	t.Helper()
	var deltas []string
	for _, ev := range h.events {
		if ev.Kind == EventTextDelta {
			deltas = append(deltas, ev.Text)
		}
	}
	if len(deltas) != 1 || deltas[0] != ans.Text {
		t.Errorf("text deltas %q, want the answer once", deltas)
	}
}

// maxLenValidator is keysValidator with a limit on the length of the strings, as maxLength would set.
type maxLenValidator struct {
	keysValidator
	max int
}

func (v maxLenValidator) Validate(value json.RawMessage) error {
	if err := v.keysValidator.Validate(value); err != nil {
		return err
	}
	var obj map[string]any
	_ = json.Unmarshal(value, &obj)
	for k, x := range obj {
		if s, _ := x.(string); len(s) > v.max {
			return fmt.Errorf("at /%s: longer than %d", k, v.max)
		}
	}
	return nil
}

// TestOutputRenderedStillMatches checks that the structured answer matches the schema after its citations are
// rendered: when the configured style makes a string too long, the citations are removed instead, and when even
// that fails the value stays as the model wrote it.
func TestOutputRenderedStillMatches(t *testing.T) {
	doc := &funcTool{spec: ToolSpec{Name: "doc", Description: "a document"}, fn: func(context.Context, json.RawMessage, *Call) (*Result, error) {
		return &Result{Text: "Lyon is the capital of gastronomy.", References: []Reference{{Title: "Food guide", URI: "https://food.test/lyon"}}}, nil
	}}
	for _, tc := range []struct {
		max  int
		why  string
		want string
	}{
		{max: 30, why: "Its food [source 1].", want: `{"city":"Lyon","why":"Its food <sup>1</sup>."}`}, // rendered
		{max: 20, why: "Its food [source 1].", want: `{"city":"Lyon","why":"Its food."}`},              // <sup>1</sup> is too long
		{max: 11, why: "[source 1]", want: `{"city":"Lyon","why":"[source 1]"}`},                       // and removing it empties it
	} {
		compile := func(schema json.RawMessage) (Validator, error) {
			return maxLenValidator{keysValidator{"city", "why"}, tc.max}, nil
		}
		h := newHarness(t, harnessConfig{tools: []Tool{doc}, opts: Options{OutputSchema: json.RawMessage(citySchema), CompileSchema: compile, OutputMode: OutputTool, CitationStyle: "sup"}})
		args, _ := json.Marshal(map[string]string{"city": "Lyon", "why": tc.why})
		h.srv.Enqueue(
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c1", "doc", `{}`)}},
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{call("c2", OutputToolName, strings.ReplaceAll(string(args), ",", ", "))}}, // spaced as models write
		)
		ans := h.mustAsk(t, &Request{Prompt: "Which city?"})
		if string(ans.Output) != tc.want {
			t.Errorf("max %d, %q: output %s, want %s", tc.max, tc.why, ans.Output, tc.want)
		}
		if want := []NumberedReference{{Number: 1, Title: "Food guide", URI: "https://food.test/lyon"}}; !slices.Equal(ans.References, want) {
			t.Errorf("max %d, %q: references = %+v, want %+v", tc.max, tc.why, ans.References, want)
		}
	}
}
