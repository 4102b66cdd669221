package mcpclients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// richSchema uses the keywords a pass-through must not lose: $schema, $defs, $ref, anyOf, descriptions (one with
// characters encoding/json escapes by default), enums, nested objects and numbers.
const richSchema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"description": "Search <documents> & notes",
	"$defs": {
		"range": {
			"type": "object",
			"properties": {"from": {"type": "integer", "minimum": 0}, "to": {"type": "integer"}},
			"required": ["from"],
			"additionalProperties": false
		}
	},
	"properties": {
		"query": {"type": "string", "description": "what to look for", "maxLength": 200},
		"when": {"$ref": "#/$defs/range"},
		"limit": {"anyOf": [{"type": "integer", "maximum": 50}, {"type": "null"}], "default": 10},
		"mode": {"type": "string", "enum": ["fast", "exact"]},
		"boost": {"type": "number", "exclusiveMinimum": 0.5}
	},
	"required": ["query"]
}`

// decodeTool decodes a tool the way a client receives it: inside a tools/list result.
func decodeTool(t *testing.T, toolJSON string) *mcp.Tool {
	t.Helper()
	var res mcp.ListToolsResult
	if err := json.Unmarshal([]byte(`{"tools":[`+toolJSON+`]}`), &res); err != nil {
		t.Fatalf("decode tools/list result: %v", err)
	}
	if len(res.Tools) != 1 {
		t.Fatalf("decoded %d tools, want 1", len(res.Tools))
	}
	return res.Tools[0]
}

// canonical decodes JSON keeping numbers as written and encodes it again with sorted keys.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// assertSameJSON fails unless got and want are the same JSON value, compared both as decoded values and as
// canonical text.
func assertSameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: invalid JSON %s: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: invalid wanted JSON %s: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
	if cg, cw := canonical(t, got), canonical(t, want); cg != cw {
		t.Errorf("%s, canonical:\n got %s\nwant %s", what, cg, cw)
	}
}

func TestToolSpecSchema(t *testing.T) {
	tests := []struct {
		name       string
		tool       string // a tool as it appears on the wire
		wantInput  string
		wantOutput string // "" for none
	}{
		{
			name:      "rich schema passes through",
			tool:      `{"name":"search","inputSchema":` + richSchema + `}`,
			wantInput: richSchema,
		},
		{
			name:      "missing type is added",
			tool:      `{"name":"t","inputSchema":{"properties":{"a":{"type":"string"}},"required":["a"]}}`,
			wantInput: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		},
		{
			name:      "empty schema",
			tool:      `{"name":"t","inputSchema":{}}`,
			wantInput: `{"type":"object"}`,
		},
		{
			name:      "missing input schema",
			tool:      `{"name":"t"}`,
			wantInput: `{"type":"object"}`,
		},
		{
			name:      "a type other than object is kept",
			tool:      `{"name":"t","inputSchema":{"type":["object","null"],"properties":{}}}`,
			wantInput: `{"type":["object","null"],"properties":{}}`,
		},
		{
			name:       "output schema passes through",
			tool:       `{"name":"t","inputSchema":{"type":"object"},"outputSchema":` + richSchema + `}`,
			wantInput:  `{"type":"object"}`,
			wantOutput: richSchema,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := toolSpec("srv_t", decodeTool(t, tt.tool))
			if err != nil {
				t.Fatalf("toolSpec: %v", err)
			}
			if spec.Name != "srv_t" {
				t.Errorf("Name = %q, want srv_t", spec.Name)
			}
			assertSameJSON(t, "input schema", spec.InputSchema, []byte(tt.wantInput))
			if tt.wantOutput == "" {
				if spec.OutputSchema != nil {
					t.Errorf("OutputSchema = %s, want none", spec.OutputSchema)
				}
			} else {
				assertSameJSON(t, "output schema", spec.OutputSchema, []byte(tt.wantOutput))
			}
		})
	}
}

func TestToolSpecSchemaKeepsCharacters(t *testing.T) {
	spec, err := toolSpec("s", decodeTool(t, `{"name":"s","inputSchema":`+richSchema+`}`))
	if err != nil {
		t.Fatal(err)
	}
	// The model reads the schema's descriptions: they must not come out as \u003c escapes.
	if !bytes.Contains(spec.InputSchema, []byte(`Search <documents> & notes`)) {
		t.Errorf("description was escaped: %s", spec.InputSchema)
	}
}

func TestToolSpecRawSchema(t *testing.T) {
	// A tool built in-process (a gateway, a test) may hold its schema as json.RawMessage.
	tests := []struct {
		name, schema, want string
	}{
		{"kept as is", `{"type":"object","properties":{"b":{},"a":{}}}`, `{"type":"object","properties":{"b":{},"a":{}}}`},
		{"type spliced in", "{\n  \"properties\": {\"b\": {}, \"a\": {}}\n}", "{\"type\":\"object\",\"properties\": {\"b\": {}, \"a\": {}}\n}"},
		{"empty with spaces", "{ }", `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := toolSpec("t", &mcp.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)})
			if err != nil {
				t.Fatal(err)
			}
			if string(spec.InputSchema) != tt.want {
				t.Errorf("InputSchema = %s, want %s", spec.InputSchema, tt.want)
			}
		})
	}
}

func TestToolSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		tool *mcp.Tool
	}{
		{"nil tool", nil},
		{"boolean schema", &mcp.Tool{Name: "t", InputSchema: true}},
		{"array schema", &mcp.Tool{Name: "t", InputSchema: []any{}}},
		{"invalid raw schema", &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":`)}},
		{"unencodable output schema", &mcp.Tool{Name: "t", OutputSchema: func() {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if spec, err := toolSpec("t", tt.tool); err == nil {
				t.Errorf("toolSpec = %+v, want an error", spec)
			}
		})
	}
}

func TestToolSpecFields(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		tool      string
		wantTitle string
		wantDesc  string
		wantAnn   *host.ToolAnnotations
	}{
		{
			name:     "no annotations",
			tool:     `{"name":"t","description":"Does things.","inputSchema":{"type":"object"}}`,
			wantDesc: "Does things.",
		},
		{
			name:      "title",
			tool:      `{"name":"t","title":"The Tool","inputSchema":{"type":"object"},"annotations":{"title":"Other"}}`,
			wantTitle: "The Tool",
			wantAnn:   &host.ToolAnnotations{},
		},
		{
			name:      "title from annotations",
			tool:      `{"name":"t","inputSchema":{"type":"object"},"annotations":{"title":"Annotated"}}`,
			wantTitle: "Annotated",
			wantAnn:   &host.ToolAnnotations{},
		},
		{
			name: "hints",
			tool: `{"name":"t","inputSchema":{"type":"object"},"annotations":{
				"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}}`,
			wantAnn: &host.ToolAnnotations{ReadOnlyHint: &yes, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &yes},
		},
		{
			// The SDK cannot tell an absent readOnlyHint from false; both are the spec's default.
			name: "false hints",
			tool: `{"name":"t","inputSchema":{"type":"object"},"annotations":{
				"readOnlyHint":false,"destructiveHint":true,"openWorldHint":false}}`,
			wantAnn: &host.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := toolSpec("t", decodeTool(t, tt.tool))
			if err != nil {
				t.Fatal(err)
			}
			if spec.Title != tt.wantTitle || spec.Description != tt.wantDesc {
				t.Errorf("Title, Description = %q, %q; want %q, %q", spec.Title, spec.Description, tt.wantTitle, tt.wantDesc)
			}
			if got, want := annotationsJSON(spec.Annotations), annotationsJSON(tt.wantAnn); got != want {
				t.Errorf("Annotations = %s, want %s", got, want)
			}
		})
	}
}

func annotationsJSON(a *host.ToolAnnotations) string {
	b, _ := json.Marshal(a)
	return string(b)
}

func TestToolResult(t *testing.T) {
	long := strings.Repeat("é", maxExcerpt+10)
	png := []byte("\x89PNG\r\n\x1a\n")
	tests := []struct {
		name string
		res  string // a CallToolResult as it appears on the wire
		want host.Result
	}{
		{
			name: "text",
			res:  `{"content":[{"type":"text","text":"hello"}]}`,
			want: host.Result{Text: "hello"},
		},
		{
			name: "two texts",
			res:  `{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`,
			want: host.Result{Text: "one\ntwo"},
		},
		{
			name: "structured with text",
			res:  `{"content":[{"type":"text","text":"Found 2."}],"structuredContent":{"n": 2, "items": ["x", "<y>"]}}`,
			want: host.Result{
				Text:       "Found 2.\n\n" + `{"items":["x","<y>"],"n":2}`,
				Structured: json.RawMessage(`{"items":["x","<y>"],"n":2}`),
			},
		},
		{
			name: "structured without text",
			res:  `{"content":[],"structuredContent":{"n":2}}`,
			want: host.Result{Structured: json.RawMessage(`{"n":2}`)},
		},
		{
			name: "structured already given as text",
			res:  `{"content":[{"type":"text","text":"{\"n\": 2}"}],"structuredContent":{"n":2}}`,
			want: host.Result{Text: `{"n": 2}`, Structured: json.RawMessage(`{"n":2}`)},
		},
		{
			name: "structured content that repeats the text is not shown again",
			res:  `{"content":[{"type":"text","text":"The launch code is 1234.\n"}],"structuredContent":{"content":"The launch code is 1234.\n"}}`,
			want: host.Result{Text: "The launch code is 1234.\n", Structured: json.RawMessage(`{"content":"The launch code is 1234.\n"}`)},
		},
		{
			name: "structured content with a value the text lacks is shown",
			res:  `{"content":[{"type":"text","text":"Sunny, 22 degrees."}],"structuredContent":{"temp":22,"sky":"sunny","wind":true}}`,
			want: host.Result{
				Text:       "Sunny, 22 degrees.\n\n" + `{"sky":"sunny","temp":22,"wind":true}`,
				Structured: json.RawMessage(`{"sky":"sunny","temp":22,"wind":true}`),
			},
		},
		{
			name: "structured array",
			res:  `{"content":[],"structuredContent":[1,"a"]}`,
			want: host.Result{Structured: json.RawMessage(`[1,"a"]`)},
		},
		{
			name: "image",
			res:  `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}`,
			want: host.Result{
				Text:  "[image: image/png, 8 bytes]",
				Media: []host.Media{{Type: "image", MIMEType: "image/png", Data: png}},
			},
		},
		{
			name: "audio",
			res:  `{"content":[{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}]}`,
			want: host.Result{
				Text:  "[audio: audio/wav, 4 bytes]",
				Media: []host.Media{{Type: "audio", MIMEType: "audio/wav", Data: []byte("RIFF")}},
			},
		},
		{
			name: "text and image in order",
			res:  `{"content":[{"type":"text","text":"before"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"text","text":"after"}]}`,
			want: host.Result{
				Text:  "before\n[image: image/png, 8 bytes]\nafter",
				Media: []host.Media{{Type: "image", MIMEType: "image/png", Data: png}},
			},
		},
		{
			name: "resource link",
			res: `{"content":[
				{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","title":"A file","description":"The first file."},
				{"type":"resource_link","uri":"file:///b.txt","name":"b.txt"}]}`,
			want: host.Result{
				Text: "[resource link: a.txt file:///a.txt]\n[resource link: b.txt file:///b.txt]",
				References: []host.Reference{
					{Title: "A file", URI: "file:///a.txt", Content: "The first file."},
					{Title: "b.txt", URI: "file:///b.txt"},
				},
			},
		},
		{
			name: "embedded text resource",
			res:  `{"content":[{"type":"text","text":"See the notes."},{"type":"resource","resource":{"uri":"file:///n.md","mimeType":"text/markdown","text":"# Notes"}}]}`,
			want: host.Result{
				Text:       "See the notes.",
				References: []host.Reference{{Title: "file:///n.md", URI: "file:///n.md", Content: "# Notes"}},
			},
		},
		{
			name: "embedded blob resource",
			res:  `{"content":[{"type":"resource","resource":{"uri":"file:///c.bin","mimeType":"application/octet-stream","blob":"AAEC"}}]}`,
			want: host.Result{
				References: []host.Reference{{Title: "file:///c.bin", URI: "file:///c.bin", Content: "[blob: application/octet-stream, 3 bytes]"}},
			},
		},
		{
			name: "long embedded text is cut",
			res:  `{"content":[{"type":"resource","resource":{"uri":"file:///long","text":"` + long + `"}}]}`,
			want: host.Result{
				References: []host.Reference{{Title: "file:///long", URI: "file:///long", Content: long[:2*maxExcerpt] + "…"}},
			},
		},
		{
			name: "error with text",
			res:  `{"content":[{"type":"text","text":"no such file"}],"isError":true}`,
			want: host.Result{Text: "no such file", IsError: true},
		},
		{
			name: "error without text",
			res:  `{"content":[],"isError":true}`,
			want: host.Result{Text: "the tool reported an error", IsError: true},
		},
		{
			name: "error with empty text",
			res:  `{"content":[{"type":"text","text":""}],"isError":true}`,
			want: host.Result{Text: "the tool reported an error", IsError: true},
		},
		{
			name: "error with structured content only",
			res:  `{"content":[],"structuredContent":{"code":7},"isError":true}`,
			want: host.Result{Structured: json.RawMessage(`{"code":7}`), IsError: true},
		},
		{
			// tool_use is the one type the SDK decodes in a tool result that a tool result should not hold.
			name: "unknown content type",
			res:  `{"content":[{"type":"text","text":"a"},{"type":"tool_use","id":"u1","name":"x","input":{}},{"type":"text","text":"b"}]}`,
			want: host.Result{Text: "a\n[unsupported content: tool_use]\nb"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(tt.res), &res); err != nil {
				t.Fatalf("decode CallToolResult: %v", err)
			}
			got := toolResult(&res)
			assertResult(t, got, &tt.want)
			if got.Original != &res {
				t.Errorf("Original = %v, want the server's result, for a gateway", got.Original)
			}
		})
	}
}

func TestToolResultOddValues(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want host.Result
	}{
		{"nil result", nil, host.Result{Text: "the tool returned no result", IsError: true}},
		{"nil content item", &mcp.CallToolResult{Content: []mcp.Content{nil, &mcp.TextContent{Text: "a"}}},
			host.Result{Text: "[unsupported content: empty]\na"}},
		{"typed nil items", &mcp.CallToolResult{Content: []mcp.Content{(*mcp.TextContent)(nil), (*mcp.ImageContent)(nil), (*mcp.EmbeddedResource)(nil), &mcp.EmbeddedResource{}}},
			host.Result{}},
		{"unencodable structured content", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, StructuredContent: make(chan int)},
			host.Result{Text: "a\n[structured content not encodable: json: unsupported type: chan int]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertResult(t, toolResult(tt.res), &tt.want)
		})
	}
}

// TestUnknownContentOnTheWire records that the SDK itself rejects a content type it does not know: such a result
// never reaches toolResult, the call fails in the session instead. If the SDK starts passing such items through,
// toolResult's default case already turns them into a placeholder.
func TestUnknownContentOnTheWire(t *testing.T) {
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[{"type":"video","data":"AA=="}]}`), &res); err == nil {
		t.Logf("the SDK now decodes unknown content; toolResult gives %q", toolResult(&res).Text)
		if !strings.Contains(toolResult(&res).Text, "[unsupported content:") {
			t.Errorf("unknown content not shown as a placeholder: %q", toolResult(&res).Text)
		}
	}
}

func assertResult(t *testing.T, got, want *host.Result) {
	t.Helper()
	if got.Text != want.Text {
		t.Errorf("Text = %q\nwant   %q", got.Text, want.Text)
	}
	if string(got.Structured) != string(want.Structured) {
		t.Errorf("Structured = %s, want %s", got.Structured, want.Structured)
	}
	if got.IsError != want.IsError {
		t.Errorf("IsError = %v, want %v", got.IsError, want.IsError)
	}
	if len(got.References) != 0 || len(want.References) != 0 {
		if !reflect.DeepEqual(got.References, want.References) {
			t.Errorf("References = %+v\nwant %+v", got.References, want.References)
		}
	}
	if len(got.Media) != 0 || len(want.Media) != 0 {
		if !reflect.DeepEqual(got.Media, want.Media) {
			t.Errorf("Media = %+v\nwant %+v", got.Media, want.Media)
		}
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "abc", "abc"},
		{"exactly the limit", strings.Repeat("a", maxExcerpt), strings.Repeat("a", maxExcerpt)},
		{"one over", strings.Repeat("a", maxExcerpt+1), strings.Repeat("a", maxExcerpt) + "…"},
		{"runes, not bytes", strings.Repeat("日", maxExcerpt+1), strings.Repeat("日", maxExcerpt) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := excerpt(tt.in); got != tt.want {
				t.Errorf("excerpt: got %d runes, want %d", len([]rune(got)), len([]rune(tt.want)))
			}
		})
	}
}

func TestReadResourceResult(t *testing.T) {
	long := strings.Repeat("x", maxExcerpt+1)
	tests := []struct {
		name          string
		uri, resource string // the arguments of readResourceResult
		res           string // a ReadResourceResult as it appears on the wire; "" for nil
		want          host.Result
	}{
		{
			name: "text with a name",
			uri:  "file:///r.txt", resource: "Readme",
			res: `{"contents":[{"uri":"file:///r.txt","mimeType":"text/plain","text":"hello"}]}`,
			want: host.Result{
				Text:       "hello",
				References: []host.Reference{{Title: "Readme", URI: "file:///r.txt", Content: "hello"}},
			},
		},
		{
			name: "text and blob without a name",
			uri:  "file:///dir",
			res: `{"contents":[{"uri":"file:///dir/a.txt","text":"part one"},
				{"uri":"file:///dir/b.png","mimeType":"image/png","blob":"AAEC"},
				{"text":"no uri"}]}`,
			want: host.Result{
				Text: "part one\n[blob: image/png, 3 bytes]\nno uri",
				References: []host.Reference{
					{Title: "file:///dir/a.txt", URI: "file:///dir/a.txt", Content: "part one"},
					{Title: "file:///dir/b.png", URI: "file:///dir/b.png", Content: "[blob: image/png, 3 bytes]"},
					{Title: "file:///dir", URI: "file:///dir", Content: "no uri"},
				},
			},
		},
		{
			name: "long text is whole in Text, cut in the reference",
			uri:  "file:///long", resource: "Long",
			res: `{"contents":[{"uri":"file:///long","text":"` + long + `"}]}`,
			want: host.Result{
				Text:       long,
				References: []host.Reference{{Title: "Long", URI: "file:///long", Content: long[:maxExcerpt] + "…"}},
			},
		},
		{
			name: "no contents",
			uri:  "file:///empty",
			res:  `{"contents":[]}`,
			want: host.Result{Text: "the resource file:///empty has no contents"},
		},
		{
			name: "nil result",
			uri:  "file:///nil",
			want: host.Result{Text: "the resource file:///nil has no contents"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res *mcp.ReadResourceResult
			if tt.res != "" {
				res = new(mcp.ReadResourceResult)
				if err := json.Unmarshal([]byte(tt.res), res); err != nil {
					t.Fatalf("decode ReadResourceResult: %v", err)
				}
			}
			assertResult(t, readResourceResult(tt.uri, tt.resource, res), &tt.want)
		})
	}
}

func TestSamplingRequest(t *testing.T) {
	const conversation = `"messages":[
		{"role":"user","content":{"type":"text","text":"Summarise this."}},
		{"role":"assistant","content":{"type":"text","text":"Which part?"}},
		{"role":"user","content":{"type":"image","mimeType":"image/png","data":"AAEC"}},
		{"role":"user","content":{"type":"audio","mimeType":"audio/wav","data":"AAEC"}}]`
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "Summarise this."},
		{Role: llm.RoleAssistant, Content: "Which part?"},
		{Role: llm.RoleUser, Content: "[image omitted]"},
		{Role: llm.RoleUser, Content: "[audio omitted]"},
	}
	system := llm.Message{Role: llm.RoleSystem, Content: "Be brief."}
	temp := 0.2
	tests := []struct {
		name          string
		params        string // CreateMessageParams on the wire
		capTokens     int
		wantMessages  []llm.Message
		wantMaxTokens int
		wantTemp      *float64
	}{
		{
			name:         "everything, no cap",
			params:       `{"systemPrompt":"Be brief.","maxTokens":500,"temperature":0.2,` + conversation + `}`,
			wantMessages: append([]llm.Message{system}, want...), wantMaxTokens: 500, wantTemp: &temp,
		},
		{
			name:         "cap below the request",
			params:       `{"maxTokens":500,` + conversation + `}`,
			capTokens:    100,
			wantMessages: want, wantMaxTokens: 100,
		},
		{
			name:         "cap above the request",
			params:       `{"maxTokens":500,` + conversation + `}`,
			capTokens:    1000,
			wantMessages: want, wantMaxTokens: 500,
		},
		{
			name:         "cap with no request",
			params:       `{"maxTokens":0,` + conversation + `}`,
			capTokens:    300,
			wantMessages: want, wantMaxTokens: 300,
		},
		{
			name:         "tool content",
			params:       `{"maxTokens":10,"messages":[{"role":"assistant","content":{"type":"tool_use","id":"1","name":"f","input":{}}}]}`,
			wantMessages: []llm.Message{{Role: llm.RoleAssistant, Content: "[tool_use omitted]"}}, wantMaxTokens: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p mcp.CreateMessageParams
			if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
				t.Fatalf("decode CreateMessageParams: %v", err)
			}
			req, err := samplingRequest(&p, tt.capTokens)
			if err != nil {
				t.Fatalf("samplingRequest: %v", err)
			}
			if !reflect.DeepEqual(req.Messages, tt.wantMessages) {
				t.Errorf("Messages = %+v\nwant %+v", req.Messages, tt.wantMessages)
			}
			if req.MaxTokens != tt.wantMaxTokens {
				t.Errorf("MaxTokens = %d, want %d", req.MaxTokens, tt.wantMaxTokens)
			}
			if !reflect.DeepEqual(req.Temperature, tt.wantTemp) {
				t.Errorf("Temperature = %v, want %v", ptrString(req.Temperature), ptrString(tt.wantTemp))
			}
			if req.Tools != nil || req.ToolChoice != (llm.ToolChoice{}) {
				t.Errorf("tools offered to a sampling request: %+v, %+v", req.Tools, req.ToolChoice)
			}
		})
	}
}

func ptrString(f *float64) string {
	if f == nil {
		return "nil"
	}
	return fmt.Sprint(*f)
}

func TestSamplingRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		p    *mcp.CreateMessageParams
	}{
		{"nil params", nil},
		{"no messages", &mcp.CreateMessageParams{MaxTokens: 10}},
		{"nil message", &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{nil}}},
		{"no content", &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user"}}}},
		{"system role", &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "system", Content: &mcp.TextContent{Text: "x"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if req, err := samplingRequest(tt.p, 0); err == nil {
				t.Errorf("samplingRequest = %+v, want an error", req)
			}
		})
	}
}

func TestSamplingResult(t *testing.T) {
	tests := []struct {
		name  string
		resp  *llm.Response
		model string
		want  string // the CreateMessageResult on the wire
	}{
		{
			name:  "stop",
			resp:  &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "Done."}, FinishReason: llm.FinishStop, Model: "provider-model"},
			model: "configured",
			want:  `{"role":"assistant","content":{"type":"text","text":"Done."},"model":"configured","stopReason":"endTurn"}`,
		},
		{
			name: "length, model from the provider",
			resp: &llm.Response{Message: llm.Message{Content: "Cut"}, FinishReason: llm.FinishLength, Model: "provider-model"},
			want: `{"role":"assistant","content":{"type":"text","text":"Cut"},"model":"provider-model","stopReason":"maxTokens"}`,
		},
		{
			name:  "tool calls",
			resp:  &llm.Response{FinishReason: llm.FinishToolCalls},
			model: "m",
			want:  `{"role":"assistant","content":{"type":"text","text":""},"model":"m","stopReason":"toolUse"}`,
		},
		{
			name:  "other reasons as they are",
			resp:  &llm.Response{Message: llm.Message{Content: "x"}, FinishReason: llm.FinishContentFilter},
			model: "m",
			want:  `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","stopReason":"content_filter"}`,
		},
		{
			name:  "no reason",
			resp:  &llm.Response{Message: llm.Message{Content: "x"}},
			model: "m",
			want:  `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`,
		},
		{
			name:  "nil response",
			model: "m",
			want:  `{"role":"assistant","content":{"type":"text","text":""},"model":"m"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(samplingResult(tt.resp, tt.model))
			if err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, "result", got, []byte(tt.want))
			// The server decodes what we send with the SDK: it must accept it.
			var back mcp.CreateMessageResult
			if err := json.Unmarshal(got, &back); err != nil {
				t.Errorf("the SDK cannot decode %s: %v", got, err)
			}
		})
	}
}

func TestElicitRequest(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string","description":"your <name>"},"age":{"type":"integer","minimum":0}},"required":["name"]}`
	tests := []struct {
		name   string
		params string // ElicitParams on the wire; "" for nil
		want   host.ElicitRequest
	}{
		{
			name:   "form",
			params: `{"mode":"form","message":"Who are you?","requestedSchema":` + schema + `}`,
			want:   host.ElicitRequest{Message: "Who are you?", Schema: json.RawMessage(schema), Source: "mcp:people"},
		},
		{
			name:   "no schema",
			params: `{"message":"Continue?"}`,
			want:   host.ElicitRequest{Message: "Continue?", Source: "mcp:people"},
		},
		{
			name:   "url",
			params: `{"mode":"url","message":"Sign in to continue.","url":"https://example.com/auth","elicitationId":"e1"}`,
			want:   host.ElicitRequest{Message: "Sign in to continue.\n\nhttps://example.com/auth", Source: "mcp:people"},
		},
		{
			name: "nil params",
			want: host.ElicitRequest{Source: "mcp:people"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *mcp.ElicitParams
			if tt.params != "" {
				p = new(mcp.ElicitParams)
				if err := json.Unmarshal([]byte(tt.params), p); err != nil {
					t.Fatalf("decode ElicitParams: %v", err)
				}
			}
			got := elicitRequest(p, "mcp:people")
			if got.Message != tt.want.Message || got.Source != tt.want.Source {
				t.Errorf("Message, Source = %q, %q; want %q, %q", got.Message, got.Source, tt.want.Message, tt.want.Source)
			}
			if tt.want.Schema == nil {
				if got.Schema != nil {
					t.Errorf("Schema = %s, want none", got.Schema)
				}
			} else {
				assertSameJSON(t, "schema", got.Schema, tt.want.Schema)
			}
		})
	}
}

func TestElicitResult(t *testing.T) {
	tests := []struct {
		name string
		in   *host.ElicitResult
		want string // the ElicitResult on the wire
	}{
		{"accept", &host.ElicitResult{Action: host.ElicitAccept, Content: map[string]any{"name": "Ada", "age": 36}},
			`{"action":"accept","content":{"name":"Ada","age":36}}`},
		{"decline drops content", &host.ElicitResult{Action: host.ElicitDecline, Content: map[string]any{"name": "Ada"}},
			`{"action":"decline"}`},
		{"cancel", &host.ElicitResult{Action: host.ElicitCancel}, `{"action":"cancel"}`},
		{"unknown action", &host.ElicitResult{Action: "maybe", Content: map[string]any{"x": 1}}, `{"action":"cancel"}`},
		{"nil", nil, `{"action":"cancel"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(elicitResult(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, "result", got, []byte(tt.want))
		})
	}
}

// TestConvertOverTheWire runs a real SDK server and client in memory, so the values converted are exactly what
// the client side of the SDK produces.
func TestConvertOverTheWire(t *testing.T) {
	ctx := t.Context()
	server := mcp.NewServer(&mcp.Implementation{Name: "wire", Version: "v0"}, nil)
	server.AddTool(&mcp.Tool{
		Name:         "search",
		Description:  "Searches.",
		InputSchema:  json.RawMessage(richSchema),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"integer"}}}`),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Search"},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				&mcp.TextContent{Text: "Two hits."},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
				&mcp.ResourceLink{URI: "https://example.com/a", Name: "a", Description: "First."},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "https://example.com/b", Text: "Second."}},
			},
			StructuredContent: map[string]any{"hits": 2},
		}, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 {
		t.Fatalf("listed %d tools, want 1", len(list.Tools))
	}
	spec, err := toolSpec("wire_search", list.Tools[0])
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, "input schema", spec.InputSchema, []byte(richSchema))
	assertSameJSON(t, "output schema", spec.OutputSchema, []byte(`{"type":"object","properties":{"hits":{"type":"integer"}}}`))
	if spec.Title != "Search" || spec.Annotations == nil || spec.Annotations.ReadOnlyHint == nil || !*spec.Annotations.ReadOnlyHint {
		t.Errorf("Title, Annotations = %q, %s", spec.Title, annotationsJSON(spec.Annotations))
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	assertResult(t, toolResult(res), &host.Result{
		Text:       "Two hits.\n[image: image/png, 3 bytes]\n[resource link: a https://example.com/a]\n\n{\"hits\":2}",
		Structured: json.RawMessage(`{"hits":2}`),
		Media:      []host.Media{{Type: "image", MIMEType: "image/png", Data: []byte{1, 2, 3}}},
		References: []host.Reference{
			{Title: "a", URI: "https://example.com/a", Content: "First."},
			{Title: "https://example.com/b", URI: "https://example.com/b", Content: "Second."},
		},
	})
}
