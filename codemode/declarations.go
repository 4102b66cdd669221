package codemode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
)

// The declarations are TypeScript as the model knows it, one line per tool, inside `declare const tools: {...}`:
//
//	/** Gets the weather in a city. */
//	get_weather(args: { /** The city. */ city: string; units?: "c" | "f" }): Promise<{ temp: number; conditions: string }>;
//
// A type is read from a JSON Schema faithfully but compactly: type (integer is number), const and enum (literal
// unions), anyOf and oneOf (unions), allOf and $ref beside other keywords (intersections), properties in the order
// of the schema's JSON text with `?` for those not required, items and prefixItems, additionalProperties (an index
// signature), nullable type arrays (and OpenAPI's nullable), $ref to the schema's own $defs or definitions (any
// local JSON pointer), and descriptions as doc comments. Every other keyword is left out: the tool checks its
// arguments.
//
// Each type is bounded: past maxDepth levels an object is `object` and an array `unknown[]`, an object lists at most
// maxProperties properties, a union at most maxUnion members, a $ref met again inside itself is `unknown`. A type
// still longer than maxTypeLen is drawn again less deep, down to `object` (arguments) or `unknown` (results). The
// same tools give the same text.

// Bounds of one type's text.
const (
	maxDepth      = 6    // levels of nested objects and arrays drawn in full
	maxProperties = 40   // properties of one object; the rest fall under an index signature
	maxUnion      = 24   // members of a union or values of an enum; past it, their kinds
	maxNodes      = 600  // schemas visited for one type: bounds the work, whatever the schema's shape
	maxTypeLen    = 3000 // characters of one type; past it, the type is drawn less deep
	maxToolDoc    = 300  // characters of a tool's doc comment
	maxFieldDoc   = 160  // characters of a property's doc comment
)

// Declarations returns the typed declarations of tools as the script sees them: `tools.<name>(args)` (or
// `tools["any-name"](args)`), from their input and output schemas, in the order of tools.
func Declarations(tools []*host.ManagedTool) string {
	var b strings.Builder
	var quoted string // the first name that needs brackets
	untyped := false  // a tool without an output schema
	var lines, reserved []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		spec := t.Spec
		// tools.then and tools.toJSON stay undefined in the sandbox, so that awaiting tools or writing it as JSON
		// calls nothing: tools of those names are left out, and named so the model knows why.
		if spec.Name == "then" || spec.Name == "toJSON" {
			reserved = append(reserved, spec.Name)
			continue
		}
		name := propertyName(spec.Name)
		if name != spec.Name && quoted == "" {
			quoted = name
		}
		var line strings.Builder
		if doc := docComment(firstParagraph(spec.Description), maxToolDoc); doc != "" {
			line.WriteString("  " + doc + "\n")
		}
		result := "string | unknown"
		if len(bytes.TrimSpace(spec.OutputSchema)) == 0 {
			untyped = true
		} else {
			result = schemaType(spec.OutputSchema, "unknown")
		}
		line.WriteString("  " + name + "(args: " + schemaType(spec.InputSchema, "object") + "): Promise<" + result + ">;\n")
		lines = append(lines, line.String())
	}
	if quoted != "" {
		b.WriteString("// A tool whose name is quoted below is called with brackets: tools[" + quoted + "](args).\n")
	}
	if untyped {
		b.WriteString("// Promise<string | unknown>: the tool's text, or its structured content when it gives one.\n")
	}
	for _, name := range reserved {
		b.WriteString("// The tool " + name + " cannot be called from a program: tools." + name + " is reserved.\n")
	}
	if len(lines) == 0 {
		b.WriteString("declare const tools: {};\n")
		return b.String()
	}
	b.WriteString("declare const tools: {\n")
	for _, l := range lines {
		b.WriteString(l)
	}
	b.WriteString("};\n")
	return b.String()
}

// schemaType returns the TypeScript type of a JSON Schema: fallback when there is no schema or it is not JSON, and
// when even its shallowest drawing is too long.
func schemaType(raw json.RawMessage, fallback string) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fallback
	}
	root, err := parseOrdered(raw)
	if err != nil {
		return fallback
	}
	for _, depth := range []int{maxDepth, 3, 1, 0} {
		r := &renderer{root: root, maxDepth: depth, nodes: maxNodes}
		s := r.render(root, 0).s
		if r.nodes >= 0 && len(s) <= maxTypeLen {
			return s
		}
	}
	return fallback
}

// Operator precedence of a type's text, to know when it needs parentheses.
const (
	precUnion = iota
	precIntersection
	precAtom
)

type tsType struct {
	s    string
	prec int
}

var (
	tUnknown = tsType{"unknown", precAtom}
	tNever   = tsType{"never", precAtom}
)

// renderer draws one schema. A Go value of the schema is what parseOrdered gives.
type renderer struct {
	root     any
	maxDepth int
	nodes    int      // schemas it may still visit; below zero, the drawing is abandoned
	refs     []string // the $refs being drawn, for the cycle guard
}

func (r *renderer) render(schema any, depth int) tsType {
	r.nodes--
	if r.nodes < 0 {
		return tUnknown
	}
	switch s := schema.(type) {
	case bool:
		if s {
			return tUnknown
		}
		return tNever
	case *object:
		return r.renderObject(s, depth)
	}
	return tUnknown
}

func (r *renderer) renderObject(s *object, depth int) tsType {
	var parts []tsType // intersected
	if own, ok := r.own(s, depth); ok {
		parts = append(parts, own)
	}
	if ref, ok := s.vals["$ref"].(string); ok {
		parts = append(parts, r.ref(ref, depth))
	}
	if all, ok := s.vals["allOf"].([]any); ok {
		for _, m := range all {
			parts = append(parts, r.render(m, depth))
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		members, ok := s.vals[k].([]any)
		if !ok {
			continue
		}
		if len(members) > maxUnion {
			parts = append(parts, tUnknown)
			continue
		}
		var u []tsType
		for _, m := range members {
			u = append(u, r.render(m, depth))
		}
		parts = append(parts, union(u))
	}
	if s.vals["nullable"] == true && len(parts) > 0 {
		parts = []tsType{union([]tsType{intersection(parts), {"null", precAtom}})}
	}
	return intersection(parts)
}

// own is the type a schema's own keywords give (type, const, enum, properties, items), without its combinators;
// ok is false when it has none.
func (r *renderer) own(s *object, depth int) (tsType, bool) {
	if c, ok := s.vals["const"]; ok {
		return literal(c), true
	}
	if e, ok := s.vals["enum"].([]any); ok {
		return enumType(e), true
	}
	var kinds []string
	switch t := s.vals["type"].(type) {
	case string:
		kinds = []string{t}
	case []any:
		for _, k := range t {
			if k, ok := k.(string); ok {
				kinds = append(kinds, k)
			}
		}
	default:
		switch {
		case s.has("properties", "additionalProperties", "required"):
			kinds = []string{"object"}
		case s.has("items", "prefixItems"):
			kinds = []string{"array"}
		default:
			return tsType{}, false
		}
	}
	var u []tsType
	for _, k := range kinds {
		switch k {
		case "string", "number", "boolean", "null":
			u = append(u, tsType{k, precAtom})
		case "integer":
			u = append(u, tsType{"number", precAtom})
		case "object":
			u = append(u, r.objectType(s, depth))
		case "array":
			u = append(u, r.arrayType(s, depth))
		default:
			u = append(u, tUnknown)
		}
	}
	return union(u), true
}

func (r *renderer) objectType(s *object, depth int) tsType {
	if depth >= r.maxDepth {
		return tsType{"object", precAtom}
	}
	props, _ := s.vals["properties"].(*object)
	required := map[string]bool{}
	var extra []string // required names that properties do not describe
	if list, ok := s.vals["required"].([]any); ok {
		for _, n := range list {
			if n, ok := n.(string); ok && !required[n] {
				required[n] = true
				if props == nil || props.vals[n] == nil {
					extra = append(extra, n)
				}
			}
		}
	}
	var fields []string
	var names []string
	var types []tsType // of the properties, which an index signature's type must include
	if props != nil {
		names = props.keys
	}
	names = append(slices.Clip(names), extra...)
	more := len(names) > maxProperties
	if more {
		names = names[:maxProperties]
	}
	for _, n := range names {
		var f strings.Builder
		t := tUnknown
		if props != nil {
			if p, ok := props.vals[n]; ok {
				if po, ok := p.(*object); ok {
					if doc := docComment(description(po), maxFieldDoc); doc != "" {
						f.WriteString(doc + " ")
					}
				}
				t = r.render(p, depth+1)
			}
		}
		types = append(types, t)
		f.WriteString(propertyName(n))
		if !required[n] {
			f.WriteString("?")
			types = append(types, tsType{"undefined", precAtom})
		}
		f.WriteString(": " + t.s)
		fields = append(fields, f.String())
	}
	switch ap := s.vals["additionalProperties"].(type) {
	case *object:
		// TypeScript wants every property's type, undefined for an optional one, to fit the index signature's.
		fields = append(fields, "[key: string]: "+union(append([]tsType{r.render(ap, depth+1)}, types...)).s)
	default:
		if more {
			fields = append(fields, "[key: string]: unknown")
		}
	}
	if len(fields) == 0 {
		if s.vals["additionalProperties"] == false {
			return tsType{"{}", precAtom}
		}
		return tsType{"object", precAtom}
	}
	return tsType{"{ " + strings.Join(fields, "; ") + " }", precAtom}
}

func (r *renderer) arrayType(s *object, depth int) tsType {
	if depth >= r.maxDepth {
		return tsType{"unknown[]", precAtom}
	}
	tuple, ok := s.vals["prefixItems"].([]any)
	if !ok {
		tuple, ok = s.vals["items"].([]any) // draft 4 to 2019-09
	}
	if ok && len(tuple) <= maxUnion {
		var items []string
		for _, it := range tuple {
			items = append(items, r.render(it, depth+1).s)
		}
		return tsType{"[" + strings.Join(items, ", ") + "]", precAtom}
	}
	item := tUnknown
	if it, ok := s.vals["items"]; ok && !isList(it) {
		item = r.render(it, depth+1)
	}
	if item.prec < precAtom {
		return tsType{"(" + item.s + ")[]", precAtom}
	}
	return tsType{item.s + "[]", precAtom}
}

// ref draws a $ref to a place in the same schema ("#", "#/$defs/x"); any other is unknown, as is one met again
// while it is being drawn.
func (r *renderer) ref(ref string, depth int) tsType {
	if slices.Contains(r.refs, ref) || !strings.HasPrefix(ref, "#") {
		return tUnknown
	}
	target, ok := pointer(r.root, strings.TrimPrefix(ref, "#"))
	if !ok {
		return tUnknown
	}
	r.refs = append(r.refs, ref)
	defer func() { r.refs = r.refs[:len(r.refs)-1] }()
	return r.render(target, depth)
}

// pointer resolves a JSON pointer (RFC 6901) in v.
func pointer(v any, p string) (any, bool) {
	if p == "" {
		return v, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case *object:
			next, ok := x.vals[tok]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// enumType is the union of an enum's values; past maxUnion values, the union of their kinds.
func enumType(values []any) tsType {
	var u []tsType
	if len(values) <= maxUnion {
		for _, v := range values {
			u = append(u, literal(v))
		}
		return union(u)
	}
	for _, v := range values {
		u = append(u, kindOf(v))
	}
	return union(u)
}

// literal is the literal type of a JSON value; an object or array is its kind.
func literal(v any) tsType {
	switch x := v.(type) {
	case string:
		return tsType{quote(x), precAtom}
	case json.Number:
		return tsType{x.String(), precAtom}
	case bool:
		return tsType{strconv.FormatBool(x), precAtom}
	case nil:
		return tsType{"null", precAtom}
	}
	return kindOf(v)
}

func kindOf(v any) tsType {
	switch v.(type) {
	case string:
		return tsType{"string", precAtom}
	case json.Number:
		return tsType{"number", precAtom}
	case bool:
		return tsType{"boolean", precAtom}
	case nil:
		return tsType{"null", precAtom}
	case []any:
		return tsType{"unknown[]", precAtom}
	}
	return tsType{"object", precAtom}
}

// union joins types with |: unknown absorbs the others, never and repeats drop out.
func union(types []tsType) tsType {
	var out []tsType
	for _, t := range types {
		switch {
		case t == tUnknown:
			return tUnknown
		case t == tNever || slices.Contains(out, t):
		default:
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return tNever
	case 1:
		return out[0]
	}
	s := make([]string, len(out))
	for i, t := range out {
		s[i] = t.s
	}
	return tsType{strings.Join(s, " | "), precUnion}
}

// intersection joins types with &: unknown and repeats drop out, never absorbs the others.
func intersection(types []tsType) tsType {
	var out []tsType
	for _, t := range types {
		switch {
		case t == tNever:
			return tNever
		case t == tUnknown || slices.Contains(out, t):
		default:
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return tUnknown
	case 1:
		return out[0]
	}
	s := make([]string, len(out))
	for i, t := range out {
		s[i] = t.s
		if t.prec < precIntersection {
			s[i] = "(" + t.s + ")"
		}
	}
	return tsType{strings.Join(s, " & "), precIntersection}
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func description(s *object) string {
	d, _ := s.vals["description"].(string)
	return d
}

// firstParagraph returns text up to its first blank line.
func firstParagraph(text string) string {
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if i := strings.Index(text, "\n\n"); i >= 0 {
		text = text[:i]
	}
	return text
}

// docComment returns text as a one-line doc comment of at most limit characters of text, cut at a word with "…"
// when longer; "" for no text. A "*/" in text cannot end the comment.
func docComment(text string, limit int) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return ""
	}
	if utf8.RuneCountInString(text) > limit {
		runes := []rune(text)[:limit]
		cut := string(runes)
		if i := strings.LastIndexByte(cut, ' '); i > limit/2 {
			cut = cut[:i]
		}
		text = strings.TrimRight(cut, " ,;:.") + "…"
	}
	return "/** " + strings.ReplaceAll(text, "*/", "*\\/") + " */"
}

// propertyName is name as a key of an object type: itself when it is a JavaScript identifier and no reserved word,
// else a quoted string, so that `tools.name` works for the one and `tools["name"]` is needed for the other.
func propertyName(name string) string {
	if isIdentifier(name) && !reserved[name] {
		return name
	}
	return quote(name)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// reserved are JavaScript's reserved words, strict mode's included.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`await break case catch class const continue debugger default delete do else enum
		export extends false finally for function if implements import in instanceof interface let new null package
		private protected public return static super switch this throw true try typeof var void while with yield`) {
		m[w] = true
	}
	return m
}()

// quote writes s as a JSON string, which is a JavaScript string literal too; <, > and & stay as they are.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// object is a JSON object whose keys keep the order of the text: properties are declared as the schema lists them.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) has(keys ...string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { _, ok := o.vals[k]; return ok })
}

// parseOrdered decodes JSON into *object, []any, string, json.Number, bool and nil.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("codemode: schema: data after the value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token() // }
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ]
			return list, err
		}
	}
	return tok, nil
}
