package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/internal/cite"
	"github.com/agenthost/agenthost/llm"
)

// DefaultOutputRetries is how many answers that do not match the output schema go back to the model before the run
// gives up.
const DefaultOutputRetries = 2

// OutputToolName is the tool that ends a run with a structured answer, in OutputTool mode.
const OutputToolName = "final_answer"

// OutputMode says how a run with an output schema asks the model for its answer.
type OutputMode string

const (
	// OutputTool offers a tool, final_answer, whose parameters are the schema and whose call ends the run: any
	// model that calls tools can give it.
	OutputTool OutputMode = "tool"
	// OutputNative asks the provider for a JSON answer matching the schema (OpenAI's response_format json_schema).
	OutputNative OutputMode = "native"
)

// Validator checks values against a compiled JSON Schema.
type Validator interface {
	// Validate returns nil when value, a JSON text, matches the schema; otherwise an error that lists what does
	// not, as the model should read it.
	Validate(value json.RawMessage) error
}

// CompileFunc compiles a JSON Schema into a Validator, or says why it is not a usable schema.
type CompileFunc func(schema json.RawMessage) (Validator, error)

// errNoCompiler is the error of a request with an output schema on an orchestrator that cannot check one.
var errNoCompiler = errors.New("this agent cannot check output schemas")

// output is a run's output schema, compiled.
type output struct {
	schema    json.RawMessage
	validator Validator
	// wrapped is set when the schema is not an object's: what the model is given (final_answer's parameters, the
	// response format) is then params, {"value": schema}.
	wrapped bool
	params  json.RawMessage
	mode    OutputMode
	tool    *ManagedTool // OutputTool mode
	// failures counts the answers that did not validate.
	failures int
}

// newOutput compiles the run's output schema: the request's, else the orchestrator's default. It returns nil when
// the run has none.
func (r *run) newOutput() (*output, error) {
	schema := r.req.OutputSchema
	if len(schema) == 0 {
		schema = r.o.opts.OutputSchema
	}
	if len(bytes.TrimSpace(schema)) == 0 || r.req.nested {
		return nil, nil
	}
	var v Validator
	var err error
	switch {
	case len(r.req.OutputSchema) == 0:
		v, err = r.o.defaultOutput() // compiled once
	case r.o.opts.CompileSchema == nil:
		err = errNoCompiler
	default:
		v, err = r.o.opts.CompileSchema(schema)
	}
	if err != nil {
		return nil, fmt.Errorf("the output schema: %w", err)
	}
	out := &output{schema: schema, validator: v, mode: r.o.opts.OutputMode}
	if out.mode != OutputNative || r.req.Model != nil { // the caller's own model is asked through a tool
		out.mode = OutputTool
	}
	var probe struct {
		Type any `json:"type"`
	}
	_ = json.Unmarshal(schema, &probe)
	out.params = schema
	if probe.Type != "object" {
		out.wrapped = true
		out.params, _ = json.Marshal(map[string]any{
			"type": "object", "properties": map[string]json.RawMessage{"value": schema}, "required": []string{"value"}, "additionalProperties": false,
		})
	}
	if out.mode == OutputTool {
		out.tool = &ManagedTool{
			Tool:   outputTool{out},
			Spec:   ToolSpec{Name: OutputToolName, Description: "Give your final answer. Its parameters are the answer's required shape; the call ends the conversation turn.", InputSchema: out.params},
			Source: "output",
			Policy: ToolPolicy{TakesControl: true, Prompt: "when you have the answer, call final_answer with it, alone, instead of writing it as text. Cite sources with [source N] inside its string values."},
		}
	}
	return out, nil
}

// outputTool is final_answer: it checks the answer against the schema, and its result ends the run when it passes.
type outputTool struct{ out *output }

func (t outputTool) Spec() ToolSpec { return t.out.tool.Spec }

func (t outputTool) Call(_ context.Context, args json.RawMessage, _ *Call) (*Result, error) {
	value, err := t.out.unwrap(args)
	if err == nil {
		err = t.out.validator.Validate(value)
	}
	if err != nil {
		return &Result{Text: fmt.Sprintf("The answer does not match the required schema: %v. Call %s again with a corrected answer.", err, OutputToolName), IsError: true}, nil
	}
	return &Result{Text: "The answer was accepted.", Structured: value}, nil
}

// unwrap returns the answer final_answer's arguments carry.
func (o *output) unwrap(args json.RawMessage) (json.RawMessage, error) {
	if !o.wrapped {
		return args, nil
	}
	var w struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(args, &w); err != nil || w.Value == nil {
		return nil, errors.New(`the arguments have no "value"`)
	}
	return w.Value, nil
}

// fromText reads an answer written as text: the JSON value, alone or in a code fence, checked against the schema.
func (o *output) fromText(text string) (json.RawMessage, error) {
	text = strings.TrimSpace(text)
	if fenced, ok := strings.CutPrefix(text, "```"); ok {
		if nl := strings.IndexByte(fenced, '\n'); nl >= 0 {
			fenced = fenced[nl+1:]
		}
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(fenced), "```"))
	}
	if !json.Valid([]byte(text)) {
		return nil, errors.New("the answer is not a JSON value")
	}
	value := json.RawMessage(text)
	if o.mode == OutputNative {
		var err error
		if value, err = o.unwrap(value); err != nil {
			return nil, err
		}
	}
	if err := o.validator.Validate(value); err != nil {
		return nil, err
	}
	return value, nil
}

// offer returns off with final_answer added, in OutputTool mode.
func (o *output) offer(off *offer) *offer {
	if o == nil || o.tool == nil {
		return off
	}
	withTool := &offer{tools: append(off.tools[:len(off.tools):len(off.tools)], o.tool), forced: off.forced,
		specs: append(off.specs[:len(off.specs):len(off.specs)], llm.ToolSpec{Name: o.tool.Spec.Name,
			Description: o.tool.Spec.Description, Parameters: o.tool.Spec.InputSchema, Final: true}),
		byName: make(map[string]*ManagedTool, len(off.byName)+1)}
	for k, v := range off.byName {
		withTool.byName[k] = v
	}
	withTool.byName[o.tool.Spec.Name] = o.tool
	return withTool
}

// feedback is the message that sends an answer written as text back to the model.
func (o *output) feedback(problem error) string {
	if o.mode == OutputTool {
		return fmt.Sprintf("That answer was not accepted (%v). Give your final answer by calling %s, alone.", problem, OutputToolName)
	}
	return fmt.Sprintf("That answer was not accepted: %v. Answer again with one JSON value that matches the schema.", problem)
}

// prompt is what the system prompt says of the answer's shape.
func (o *output) prompt() string {
	if o.mode == OutputTool {
		return "" // final_answer's own guidance says it
	}
	return "Answer with one JSON value that matches the response format's schema, and nothing else. Cite sources with [source N] inside its string values."
}

// structured finishes a run whose answer validated: value with the citations in its strings rendered, and the
// cited references beside it. Should rendering break the schema (a length limit, a pattern), the citations are
// removed instead, and should that break it too, the value stays as the model wrote it: the answer always matches.
func (r *run) structured(value json.RawMessage) *Answer {
	compact, refs := r.renderOutput(value, cite.Style(r.citationStyle()))
	if r.output.validator.Validate(compact) != nil {
		if compact, refs = r.renderOutput(value, cite.StyleNone); r.output.validator.Validate(compact) != nil {
			var buf bytes.Buffer
			if compact = value; json.Compact(&buf, value) == nil {
				compact = buf.Bytes()
			}
		}
	}
	var indented bytes.Buffer
	if json.Indent(&indented, compact, "", "  ") != nil {
		indented.Reset()
		indented.Write(compact)
	}
	text := indented.String()
	r.emit(&Event{Kind: EventTextDelta, Iteration: r.iteration, Text: text})
	return &Answer{Text: text, Output: compact, References: numbered(refs), StoppedBy: StopAnswered}
}

// renderOutput returns value, validated JSON, with the citations in its strings rendered in style, compacted, and
// the references they cite.
func (r *run) renderOutput(value json.RawMessage, style cite.Style) (json.RawMessage, []cite.Ref) {
	v, err := decodeJSON(value)
	if err != nil { // validated JSON: cannot happen
		return value, nil
	}
	strs := cite.NewStrings(r.citeSources(), style)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<sup>1</sup>" stays readable
	if err := enc.Encode(mapStrings(v, strs.Render)); err != nil {
		return value, nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), strs.Refs()
}

// mapStrings returns v, a value decoded by decodeJSON, with f applied to each of its strings (not to object keys).
func mapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for i := range v {
			v[i] = mapStrings(v[i], f)
		}
	case map[string]any:
		for k := range v {
			v[k] = mapStrings(v[k], f)
		}
	}
	return v
}

// retry counts an answer that did not validate and says what the run does: "" to let the model answer again, or
// why the run stops.
func (o *output) retry(max int, problem error) string {
	o.failures++
	if o.failures > max {
		return fmt.Sprintf("the answer did not match the output schema after %d attempts: %v", o.failures, problem)
	}
	return ""
}
