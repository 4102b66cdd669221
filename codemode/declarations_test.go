package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
)

func tool(name, description, input, output string) *host.ManagedTool {
	spec := host.ToolSpec{Name: name, Description: description}
	if input != "" {
		spec.InputSchema = json.RawMessage(input)
	}
	if output != "" {
		spec.OutputSchema = json.RawMessage(output)
	}
	return &host.ManagedTool{Spec: spec}
}

// TestDeclarationsSchemaTypes checks the TypeScript type drawn from each kind of JSON Schema.
func TestDeclarationsSchemaTypes(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"string", `{"type":"string"}`, `string`},
		{"integer is a number", `{"type":"integer","minimum":0}`, `number`},
		{"boolean", `{"type":"boolean"}`, `boolean`},
		{"null", `{"type":"null"}`, `null`},
		{"unknown type name", `{"type":"decimal"}`, `unknown`},
		{"nullable as a type array", `{"type":["string","null"]}`, `string | null`},
		{"nullable as OpenAPI says", `{"type":"integer","nullable":true}`, `number | null`},
		{"true", `true`, `unknown`},
		{"false", `false`, `never`},
		{"empty", `{}`, `unknown`},
		{"only a description", `{"description":"anything"}`, `unknown`},
		{"const", `{"const":"fixed"}`, `"fixed"`},
		{"enum of every kind", `{"enum":["a",1.5,true,null]}`, `"a" | 1.5 | true | null`},
		{"enum escapes", `{"enum":["say \"hi\"","<b>&"]}`, `"say \"hi\"" | "<b>&"`},
		{"enum repeats", `{"enum":["a","a","b"]}`, `"a" | "b"`},
		{"enum too wide", `{"enum":[` + numbered(`"v%d"`, 30) + `]}`, `string`},
		{"enum too wide of two kinds", `{"enum":[` + numbered(`"v%d"`, 30) + `,1,null]}`, `string | number | null`},
		{"anyOf", `{"anyOf":[{"type":"string"},{"type":"number"}]}`, `string | number`},
		{"oneOf of objects", `{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},` +
			`{"type":"object","properties":{"b":{"type":"number"}},"required":["b"]}]}`, `{ a: string } | { b: number }`},
		{"anyOf with an open member", `{"anyOf":[{"type":"string"},{}]}`, `unknown`},
		{"anyOf beside a type", `{"type":"string","anyOf":[{"const":"a"},{"const":"b"}]}`, `string & ("a" | "b")`},
		{"anyOf that adds nothing", `{"type":"string","anyOf":[{"minLength":1},{"format":"email"}]}`, `string`},
		{"allOf", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},` +
			`{"type":"object","properties":{"b":{"type":"integer"}}}]}`, `{ a: string } & { b?: number }`},
		{"allOf with a union", `{"allOf":[{"anyOf":[{"type":"string"},{"type":"number"}]},{"not":{"const":0}}]}`, `string | number`},
		{"array", `{"type":"array","items":{"type":"string"}}`, `string[]`},
		{"array of a union", `{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer"}]}}`, `(string | number)[]`},
		{"array without items", `{"type":"array"}`, `unknown[]`},
		{"array inferred from items", `{"items":{"type":"boolean"}}`, `boolean[]`},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]}`, `[string, number]`},
		{"tuple of draft 4", `{"type":"array","items":[{"type":"string"},{"type":"boolean"}]}`, `[string, boolean]`},
		{"nullable array", `{"type":["array","null"],"items":{"type":"number"}}`, `number[] | null`},
		{"object", `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`,
			`{ city: string; days?: number }`},
		{"object inferred from properties", `{"properties":{"a":{"type":"string"}}}`, `{ a?: string }`},
		{"properties in the order of the text", `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"},"mid":{}}}`,
			`{ zeta?: string; alpha?: number; mid?: unknown }`},
		{"required beyond properties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["b","a"]}`,
			`{ a: string; b: unknown }`},
		{"bare object", `{"type":"object"}`, `object`},
		{"closed empty object", `{"type":"object","additionalProperties":false}`, `{}`},
		{"index signature", `{"type":"object","additionalProperties":{"type":"number"}}`, `{ [key: string]: number }`},
		{"properties and index signature", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"number"}}`,
			`{ a?: string; [key: string]: number | string | undefined }`},
		{"index signature wide enough for every property", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"],"additionalProperties":{"type":"string"}}`,
			`{ a: number; b?: string; [key: string]: string | number | undefined }`},
		{"index signature of unknown", `{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":{}}`,
			`{ a?: number; [key: string]: unknown }`},
		{"keys that need quotes", `{"type":"object","properties":{"a-b":{"type":"string"},"class":{"type":"string"},"1st":{"type":"string"},"ok_$1":{"type":"string"},"é":{"type":"string"}}}`,
			`{ "a-b"?: string; "class"?: string; "1st"?: string; ok_$1?: string; "é"?: string }`},
		{"descriptions", `{"type":"object","properties":{"city":{"type":"string","description":"The city,\n  in English."},"note":{"type":"string","description":"Ends */ here"}}}`,
			`{ /** The city, in English. */ city?: string; /** Ends *\/ here */ note?: string }`},
		{"$ref to $defs", `{"$defs":{"id":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#/$defs/id"}},"required":["x"]}`,
			`{ x: number }`},
		{"$ref to definitions", `{"definitions":{"unit":{"enum":["c","f"]}},"properties":{"u":{"$ref":"#/definitions/unit"}}}`,
			`{ u?: "c" | "f" }`},
		{"$ref with an escaped pointer", `{"$defs":{"a/b":{"type":"string"},"c~d":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/a~1b"},"y":{"$ref":"#/$defs/c~0d"}}}`,
			`{ x?: string; y?: number }`},
		{"$ref into a list", `{"$defs":{"pair":[{"type":"string"},{"type":"boolean"}]},"properties":{"x":{"$ref":"#/$defs/pair/1"}}}`,
			`{ x?: boolean }`},
		{"$ref beside a description", `{"$defs":{"id":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/id","description":"The id."}}}`,
			`{ /** The id. */ x?: string }`},
		{"$ref elsewhere", `{"properties":{"x":{"$ref":"https://example.com/schema.json"}}}`, `{ x?: unknown }`},
		{"$ref to nothing", `{"properties":{"x":{"$ref":"#/$defs/missing"},"y":{"$ref":"#/properties/x/0"}}}`, `{ x?: unknown; y?: unknown }`},
		{"$ref cycle", `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},` +
			`"$ref":"#/$defs/node"}`, `{ name: string; children?: unknown[] }`},
		{"$ref cycle through two", `{"$defs":{"a":{"properties":{"b":{"$ref":"#/$defs/b"}}},"b":{"properties":{"a":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a"}`,
			`{ b?: { a?: unknown } }`},
		{"$ref to the root", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, `{ next?: { next?: unknown } }`},
		{"not JSON", `{"type":`, `object`},
		{"data after the value", `{"type":"string"} {}`, `object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := schemaType(json.RawMessage(tc.schema), "object"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// numbered returns n comma-separated values of format, numbered from 0.
func numbered(format string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(parts, ",")
}

// TestDeclarationsBounded checks that deep, wide and long schemas give a short type, drawn less deep or not at all.
func TestDeclarationsBounded(t *testing.T) {
	// Ten levels of objects: six drawn, then object.
	deep := `{"type":"string"}`
	for range 10 {
		deep = `{"type":"object","properties":{"a":` + deep + `},"required":["a"]}`
	}
	wantDeep := strings.Repeat("{ a: ", 6) + "object" + strings.Repeat(" }", 6)

	// Arrays count as levels too.
	deepArrays := `{"type":"string"}`
	for range 10 {
		deepArrays = `{"type":"array","items":` + deepArrays + `}`
	}

	// A hundred properties: forty, and the rest under an index signature.
	wide := `{"type":"object","properties":{` + numbered(`"p%02d":{"type":"string"}`, 100) + `}}`
	wantWide := "{ " + numbered("p%02d?: string", 40) + "; [key: string]: unknown }"
	wantWide = strings.ReplaceAll(wantWide, ",", "; ")

	// Forty properties of forty of forty: too much work at every depth but the first.
	leaf := `{"type":"object","properties":{` + numbered(`"q%02d":{"type":"string"}`, 40) + `}}`
	mid := `{"type":"object","properties":{` + numbered(`"r%02d":`+strings.ReplaceAll(leaf, "%", "%%"), 40) + `}}`
	huge := `{"type":"object","properties":{` + numbered(`"p%02d":`+strings.ReplaceAll(mid, "%", "%%"), 40) + `}}`
	wantHuge := "{ " + strings.ReplaceAll(numbered("p%02d?: object", 40), ",", "; ") + " }"

	// An enum too long at any depth.
	long := `{"enum":[` + numbered(`"`+strings.Repeat("x", 200)+`%d"`, 24) + `]}`

	tests := []struct {
		name, schema, fallback, want string
	}{
		{"deep", deep, "object", wantDeep},
		{"deep arrays", deepArrays, "unknown", "unknown[][][][][][][]"},
		{"wide", wide, "object", wantWide},
		{"huge", huge, "object", wantHuge},
		{"long arguments", long, "object", "object"},
		{"long result", long, "unknown", "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := schemaType(json.RawMessage(tc.schema), tc.fallback)
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if len(got) > maxTypeLen {
				t.Errorf("%d characters, more than %d", len(got), maxTypeLen)
			}
			checkBalanced(t, got)
		})
	}
}

// TestDeclarations checks whole declarations: the example of the issue, names that need brackets, results with and
// without an output schema, doc comments.
func TestDeclarations(t *testing.T) {
	weather := tool("get_weather", "Gets the weather in a city.\n\nUses a service with a daily quota; prefer one call per city.",
		`{"type":"object","properties":{"city":{"type":"string","description":"The city."},"units":{"enum":["c","f"]}},"required":["city"]}`,
		`{"type":"object","properties":{"temp":{"type":"number"},"conditions":{"type":"string"}},"required":["temp","conditions"]}`)
	tests := []struct {
		name  string
		tools []*host.ManagedTool
		want  string
	}{
		{"the issue's example", []*host.ManagedTool{weather}, `declare const tools: {
  /** Gets the weather in a city. */
  get_weather(args: { /** The city. */ city: string; units?: "c" | "f" }): Promise<{ temp: number; conditions: string }>;
};
`},
		{"no output schema", []*host.ManagedTool{tool("current_time", "Returns the current time.", `{"type":"object","properties":{}}`, "")},
			`// Promise<string | unknown>: the tool's text, or its structured content when it gives one.
declare const tools: {
  /** Returns the current time. */
  current_time(args: object): Promise<string | unknown>;
};
`},
		{"names that need brackets", []*host.ManagedTool{
			tool("fs_read-file", "Reads a file.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, `{"type":"object","properties":{"text":{"type":"string"}}}`),
			tool("delete", "", "", `{"type":"boolean"}`),
			tool("2fa", "", "", `{"type":"string"}`),
			weather,
		}, `// A tool whose name is quoted below is called with brackets: tools["fs_read-file"](args).
declare const tools: {
  /** Reads a file. */
  "fs_read-file"(args: { path: string }): Promise<{ text?: string }>;
  "delete"(args: object): Promise<boolean>;
  "2fa"(args: object): Promise<string>;
  /** Gets the weather in a city. */
  get_weather(args: { /** The city. */ city: string; units?: "c" | "f" }): Promise<{ temp: number; conditions: string }>;
};
`},
		{"doc comments", []*host.ManagedTool{
			tool("a", "  Closes */ early\r\n  and spans\tlines.\r\n\r\nSecond paragraph.", "", `{}`),
			tool("b", "\n\n", "", `{}`),
		}, `declare const tools: {
  /** Closes *\/ early and spans lines. */
  a(args: object): Promise<unknown>;
  b(args: object): Promise<unknown>;
};
`},
		{"no tools", []*host.ManagedTool{nil}, "declare const tools: {};\n"},
		{"reserved names", []*host.ManagedTool{tool("then", "", "", ""), tool("toJSON", "", "", `{}`), tool("thenable", "", "", `{}`)},
			`// The tool then cannot be called from a program: tools.then is reserved.
// The tool toJSON cannot be called from a program: tools.toJSON is reserved.
declare const tools: {
  thenable(args: object): Promise<unknown>;
};
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Declarations(tc.tools)
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			checkDeclarations(t, got)
			if again := Declarations(tc.tools); again != got {
				t.Errorf("a second call differs:\n%s", again)
			}
		})
	}
}

// TestDeclarationsLongDescription checks that a long first paragraph is cut at a word, with an ellipsis.
func TestDeclarationsLongDescription(t *testing.T) {
	desc := strings.Repeat("Looks everything up in the catalogue. ", 20)
	got := Declarations([]*host.ManagedTool{tool("lookup", desc, "", "")})
	doc := strings.Split(got, "\n")[2]
	want := "  /** " + strings.TrimSpace(strings.Repeat("Looks everything up in the catalogue. ", 7)) + " Looks everything up in the…" + " */"
	if doc != want {
		t.Errorf("doc comment\n%s\nwant\n%s", doc, want)
	}
	if n := utf8.RuneCountInString(strings.TrimSuffix(strings.TrimPrefix(doc, "  /** "), " */")); n > maxToolDoc+1 {
		t.Errorf("doc comment of %d characters, more than %d and the ellipsis", n, maxToolDoc)
	}
	checkDeclarations(t, got)
}

var declLine = regexp.MustCompile(`^  (?:/\*\* .+ \*/|([A-Za-z_$][A-Za-z0-9_$]*|"[^"]+")\(args: .+\): Promise<.+>;)$`)

// checkDeclarations checks the shape of a declaration block, as tsc cannot run here: guidance comments, then
// `declare const tools: {`, one line per doc comment or method, and `};`, with every bracket closed.
func checkDeclarations(t *testing.T, text string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "// ") {
		i++
	}
	if i == len(lines) {
		t.Fatalf("no declaration in\n%s", text)
	}
	if lines[i] == "declare const tools: {};" && i == len(lines)-1 {
		return
	}
	if lines[i] != "declare const tools: {" || lines[len(lines)-1] != "};" {
		t.Fatalf("not a declaration of tools:\n%s", text)
	}
	for _, l := range lines[i+1 : len(lines)-1] {
		if !declLine.MatchString(l) {
			t.Errorf("not a doc comment nor a method: %s", l)
		}
		checkBalanced(t, l)
	}
}

// checkBalanced checks that every (, [, { and < of a type is closed in order, outside strings and comments.
func checkBalanced(t *testing.T, s string) {
	t.Helper()
	closing := map[byte]byte{'(': ')', '[': ']', '{': '}', '<': '>'}
	var stack []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case strings.HasPrefix(s[i:], "/**"):
			end := strings.Index(s[i:], "*/")
			if end < 0 {
				t.Errorf("comment not closed: %s", s)
				return
			}
			i += end + 1
		case closing[c] != 0:
			stack = append(stack, closing[c])
		case c == ')' || c == ']' || c == '}' || c == '>':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				t.Errorf("%q at %d closes nothing open: %s", c, i, s)
				return
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Errorf("not closed: %s", s)
	}
}

// FuzzDeclarations checks that any schema, JSON or not, gives a bounded, balanced declaration.
func FuzzDeclarations(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":["string","null"],"description":"*/ x"}},"required":["a"]}`,
		`{"$defs":{"n":{"properties":{"c":{"items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`,
		`{"anyOf":[{"enum":[1,"b",null]},{"allOf":[{"const":{"x":1}},{"type":"array","prefixItems":[true,false]}]}]}`,
		`{"type":"object","additionalProperties":{"$ref":"#"},"properties":{"a b":{"nullable":true,"type":"integer"}}}`,
		`[1,2`,
	} {
		f.Add("a-b", "desc", s, s)
	}
	f.Fuzz(func(t *testing.T, name, desc, input, output string) {
		got := Declarations([]*host.ManagedTool{tool(name, desc, input, output)})
		for _, l := range strings.Split(got, "\n") {
			if len(l) > 2*maxTypeLen+4*maxToolDoc+200 { // two types, a doc comment, a quoted name
				t.Fatalf("a line of %d characters", len(l))
			}
		}
		checkBalanced(t, got)
	})
}
