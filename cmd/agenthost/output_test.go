package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

const docSchema = `{
  "type": "object",
  "properties": {
    "greeting": {"type": "string", "minLength": 1},
    "certainty": {"type": "number", "minimum": 0, "maximum": 1}
  },
  "required": ["greeting", "certainty"],
  "additionalProperties": false
}`

// TestRunOutputSchema: `agenthost run --output-schema` against the OpenAI wire, in both modes: through final_answer
// (a compatible API), and as response_format json_schema ([model] structured_output = true). A first answer that
// does not validate goes back to the model with the validator's errors; the second is the answer, with its citation
// rendered and its reference beside it.
func TestRunOutputSchema(t *testing.T) {
	for _, mode := range []string{"tool", "native"} {
		t.Run(mode, func(t *testing.T) {
			llm := fakellm.New()
			t.Cleanup(llm.Close)
			dir := t.TempDir()
			cfg := agentConfig(t, dir, "a", llm.URL, `"current_time"`, "")
			if mode == "native" {
				cfg = writeFile(t, dir, "a.toml", strings.Replace(readFile(t, cfg), "max_retries = 0\n", "max_retries = 0\nstructured_output = true\n", 1))
			}
			schema := writeFile(t, dir, "schema.json", docSchema)
			bad, good := `{"greeting": "", "certainty": 2}`, `{"greeting": "The document says hello [source 1].", "certainty": 0.9}`
			cite := fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}}
			if mode == "tool" {
				llm.Enqueue(cite,
					fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: host.OutputToolName, Arguments: bad}}},
					fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c3", Name: host.OutputToolName, Arguments: good}}})
			} else {
				llm.Enqueue(cite, fakellm.Turn{Text: bad}, fakellm.Turn{Text: good})
			}
			r := agenthost(t, dir, "", []string{"TEST_KEY=sk"}, "run", "--json", "--config", cfg, "--output-schema", schema, "What does the document say?")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var ans host.Answer
			if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
				t.Fatalf("%v\n%s", err, r.stdout)
			}
			var out struct {
				Greeting  string  `json:"greeting"`
				Certainty float64 `json:"certainty"`
			}
			if err := json.Unmarshal(ans.Output, &out); err != nil || out.Greeting != "The document says hello [1]." || out.Certainty != 0.9 {
				t.Errorf("output = %s (%v)", ans.Output, err)
			}
			if want := []host.NumberedReference{{Number: 1, Title: "The test document", URI: fixtureDocURI}}; !slices.Equal(ans.References, want) {
				t.Errorf("references = %+v, want %+v", ans.References, want)
			}
			reqs := llm.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3", len(reqs))
			}
			_, hasFormat := reqs[0].Fields["response_format"]
			offersTool := slices.ContainsFunc(reqs[0].Tools, func(tl fakellm.Tool) bool { return tl.Function.Name == host.OutputToolName })
			if hasFormat != (mode == "native") || offersTool != (mode == "tool") {
				t.Errorf("response_format sent: %v, final_answer offered: %v", hasFormat, offersTool)
			}
			// The validator's errors reached the model: the empty greeting and the certainty above 1.
			var told string
			if mode == "tool" {
				told = toolMessage(reqs[2], "c2")
			} else {
				told = reqs[2].Messages[len(reqs[2].Messages)-1].Content
			}
			for _, want := range []string{"at /greeting:", "at /certainty:"} {
				if !strings.Contains(told, want) {
					t.Errorf("the model was told %q, which lacks %q", told, want)
				}
			}
		})
	}
}

// TestRunOutputSchemaErrors: a schema that is not one is a usage error, before anything runs.
func TestRunOutputSchemaErrors(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "a", llm.URL, `"current_time"`, "")
	bad := writeFile(t, dir, "bad.json", `{"type": "nonsense"}`)
	r := agenthost(t, dir, "", []string{"TEST_KEY=sk"}, "run", "--config", cfg, "--output-schema", bad, "Hi")
	if r.code != 2 || !strings.Contains(r.stderr, "output schema") {
		t.Errorf("a bad schema: exit %d, %s", r.code, r.stderr)
	}
	r = agenthost(t, dir, "", []string{"TEST_KEY=sk"}, "run", "--config", cfg, "--output-schema", "missing.json", "Hi")
	if r.code != 2 || !strings.Contains(r.stderr, "-output-schema") {
		t.Errorf("a missing file: exit %d, %s", r.code, r.stderr)
	}
	withFile := writeFile(t, dir, "b.toml", strings.Replace(readFile(t, cfg), "[builtin]", "[agent.output]\nschema_file = \"bad.json\"\n\n[builtin]", 1))
	r = agenthost(t, dir, "", []string{"TEST_KEY=sk"}, "run", "--config", withFile, "Hi")
	if r.code != 2 || !strings.Contains(r.stderr, "agent.output.schema_file: not a usable JSON Schema") {
		t.Errorf("a bad [agent.output] schema_file: exit %d, %s", r.code, r.stderr)
	}
	if n := llm.RequestCount(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func toolMessage(req *fakellm.Request, id string) string {
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.ToolOutput()
		}
	}
	return ""
}

// TestServeOutputSchemaTS: the TypeScript SDK client calls the agent tool of an agent with an [agent.output]
// schema, once with an output_schema of its own and once without: each answer is structuredContent.output, shaped
// as asked, and the SDK, which checks structured content against the tool's output schema, accepts both.
func TestServeOutputSchemaTS(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	config := serveConfig(t, dir, "helper", llm, `
[agent.output.schema]
type = "object"
required = ["city"]
additionalProperties = false
properties.city = { type = "string" }
`)
	callerSchema := writeFile(t, dir, "caller.json", docSchema)
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: host.OutputToolName, Arguments: `{"greeting":"Hello.","certainty":1}`}}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: host.OutputToolName, Arguments: `{"city":"Lyon"}`}}},
	)
	connect := stdioArgs(config, "TEST_KEY=sk")
	first := tsClient(t, true, append(connect, "--action", "ask", "--tool", "ask_helper", "--output-schema", callerSchema, "--prompt", "Greet me.")...)
	second := tsClient(t, true, append(connect, "--action", "ask", "--tool", "ask_helper", "--prompt", "Which city?")...)
	for i, tc := range []struct {
		out  clientOutput
		want string
	}{{first, `{"certainty":1,"greeting":"Hello."}`}, {second, `{"city":"Lyon"}`}} {
		if len(tc.out.Calls) != 1 || tc.out.Calls[0].Result.StructuredContent == nil {
			t.Fatalf("call %d: %+v", i+1, tc.out)
		}
		res := tc.out.Calls[0].Result
		if got := string(res.StructuredContent.Output); got != tc.want || res.IsError {
			t.Errorf("call %d: output %s (error %v), want %s", i+1, got, res.IsError, tc.want)
		}
		var text any
		if len(res.Content) == 0 || json.Unmarshal([]byte(res.Content[0].Text), &text) != nil {
			t.Errorf("call %d: the text content is not the output as JSON: %+v", i+1, res.Content)
		}
	}
	// The caller's schema reached the model as final_answer's parameters.
	reqs := llm.Requests()
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == host.OutputToolName && !strings.Contains(string(tl.Function.Parameters), "certainty") {
			t.Errorf("final_answer's parameters on the first call: %s", tl.Function.Parameters)
		}
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(first.Tools[0].OutputSchema, &schema); err != nil || !strings.Contains(string(schema.Properties["output"]), `"city"`) {
		t.Errorf("the agent tool's output schema does not show the configured shape: %s", first.Tools[0].OutputSchema)
	}
}

// TestServeChecksTS: the checks of [eval] run on the answer of the agent tool; the TypeScript SDK client gets each
// outcome as progress while the call runs, and all of them in structuredContent.checks.
func TestServeChecksTS(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	config := serveConfig(t, t.TempDir(), "helper", llm, "\n[eval]\nchecks = [\"citations\", \"complete\"]\n")
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}},
		fakellm.Turn{Text: "The document says hello [source 1] and more [source 5]."},
	)
	out := tsClient(t, true, append(stdioArgs(config, "TEST_KEY=sk"), "--action", "ask", "--tool", "ask_helper", "--prompt", "What does it say?")...)
	res := out.Calls[0].Result.StructuredContent
	if res == nil || len(res.Checks) != 2 {
		t.Fatalf("structured content: %+v", res)
	}
	if c := res.Checks[0]; c.Name != host.CheckCitations || c.Passed || !strings.Contains(c.Detail, "[source 5]") {
		t.Errorf("citations check: %+v", c)
	}
	if c := res.Checks[1]; c.Name != host.CheckComplete || !c.Passed {
		t.Errorf("complete check: %+v", c)
	}
	var notes []string
	for _, p := range out.Calls[0].Progress {
		if strings.HasPrefix(p.Message, "check ") {
			notes = append(notes, p.Message)
		}
	}
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "check citations: failed (the answer cites [source 5]") || notes[1] != "check complete: passed" {
		t.Errorf("check progress: %q", notes)
	}
}

// TestRunOutputSchemaOfflineModel: the offline test model gives a structured answer too. It calls the other tools,
// then final_answer alone with a value made from the schema, and the run ends answered (it used to call final_answer
// beside the others, which is refused, and end with invalid_output).
func TestRunOutputSchemaOfflineModel(t *testing.T) {
	dir := t.TempDir()
	schema := writeFile(t, dir, "answer.json", `{"type":"object","required":["city","certainty"],
		"properties":{"city":{"type":"string"},"certainty":{"type":"number","minimum":0,"maximum":1}}}`)
	r := agenthost(t, dir, "", nil, "run", "--model", "test", "--json", "--output-schema", schema, "Where is Lyon?")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	var out struct {
		Output    map[string]any `json:"output"`
		StoppedBy string         `json:"stopped_by"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if out.StoppedBy != "answered" || out.Output["city"] == nil || out.Output["certainty"] == nil {
		t.Errorf("stopped by %q with output %v, want answered with the schema's properties", out.StoppedBy, out.Output)
	}
}
