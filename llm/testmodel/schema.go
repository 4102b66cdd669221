package testmodel

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Bounds of the argument generator: schemas come from MCP servers, and a recursive $ref must not make it loop or
// blow up.
const (
	maxSchemaDepth = 16   // nested schemas followed
	maxSchemaNodes = 1000 // schemas visited in total
	maxStringLen   = 1000 // longest string generated for minLength
)

// exampleArguments returns arguments for a tool with the given JSON Schema: a JSON object holding a value for each
// required property (optional ones are left out). A value is chosen, in this order, from const, enum[0],
// examples[0] and default, or else by type: string "a" (or a sample of its format, or "a" repeated to minLength),
// integer and number 0 (moved into minimum/maximum), boolean false, array of one generated item (or the tuple of
// prefixItems), object with its own required properties, null. "type" given as a list means its first non-null
// type; allOf branches are merged, anyOf/oneOf use their first branch that is not just {"type":"null"}; $ref to any
// JSON pointer inside the schema ("#/$defs/...", "#/definitions/...") is followed.
//
// It never fails: an invalid schema, or one that does not describe an object, gives "{}".
func exampleArguments(schema json.RawMessage) json.RawMessage {
	var root any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber() // const, enum and default values keep their exact text
	if err := dec.Decode(&root); err != nil {
		root = nil
	}
	g := &argGen{root: root, budget: maxSchemaNodes}
	obj, ok := g.value(root, 0).(map[string]any)
	if !ok {
		return json.RawMessage("{}")
	}
	out, err := json.Marshal(obj) // map keys are sorted: the text is deterministic
	if err != nil {
		return json.RawMessage("{}")
	}
	return out
}

type argGen struct {
	root   any
	budget int
}

// value generates a value for schema node.
func (g *argGen) value(node any, depth int) any {
	if g.budget <= 0 || depth > maxSchemaDepth {
		return nil
	}
	g.budget--
	n, ok := node.(map[string]any)
	if !ok {
		return nil // true (anything), false (nothing) or not a schema
	}

	if merged, ok := g.flatten(n); ok {
		return g.value(merged, depth+1)
	}
	if v, ok := n["const"]; ok {
		return v
	}
	for _, key := range []string{"enum", "examples"} {
		if list, ok := n[key].([]any); ok && len(list) > 0 {
			return list[0]
		}
	}
	if v, ok := n["default"]; ok {
		return v
	}

	switch schemaType(n) {
	case "object":
		return g.object(n, depth)
	case "array":
		return g.array(n, depth)
	case "string":
		return stringValue(n)
	case "integer":
		return numberValue(n, true)
	case "number":
		return numberValue(n, false)
	case "boolean":
		return false
	default:
		return nil
	}
}

// flatten merges $ref, allOf and the chosen anyOf/oneOf branch into a copy of n. The keys of n win, and a value
// keyword of n (const, enum, examples, default) hides those of the branches, so {"$ref": ..., "default": 5} gives
// 5; properties and required lists are united. ok is false when n has
// none of these keys.
func (g *argGen) flatten(n map[string]any) (map[string]any, bool) {
	var branches []any
	if ref, ok := n["$ref"].(string); ok {
		if target, ok := g.resolve(ref); ok {
			branches = append(branches, target)
		}
	}
	if all, ok := n["allOf"].([]any); ok {
		branches = append(branches, all...)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if list, ok := n[key].([]any); ok && len(list) > 0 {
			branches = append(branches, firstBranch(list))
		}
	}
	_, hasRef := n["$ref"]
	_, hasAll := n["allOf"]
	_, hasAny := n["anyOf"]
	_, hasOne := n["oneOf"]
	if !hasRef && !hasAll && !hasAny && !hasOne {
		return nil, false
	}

	merged := make(map[string]any, len(n))
	ownValue := false // a value of n's own outranks any value of a branch, whatever the keyword
	for k, v := range n {
		switch k {
		case "$ref", "allOf", "anyOf", "oneOf":
		case "const", "enum", "examples", "default":
			ownValue = true
			merged[k] = v
		default:
			merged[k] = v
		}
	}
	for _, b := range branches {
		bm, ok := b.(map[string]any)
		if !ok {
			continue
		}
		for k, v := range bm {
			switch k {
			case "properties":
				props := make(map[string]any)
				if src, ok := v.(map[string]any); ok {
					for name, p := range src {
						props[name] = p
					}
				}
				if dst, ok := merged[k].(map[string]any); ok {
					for name, p := range dst {
						props[name] = p
					}
				}
				merged[k] = props
			case "required":
				var req []any
				if dst, ok := merged[k].([]any); ok {
					req = append(req, dst...)
				}
				if src, ok := v.([]any); ok {
					req = append(req, src...)
				}
				merged[k] = req
			case "const", "enum", "examples", "default":
				if _, ok := merged[k]; !ok && !ownValue {
					merged[k] = v
				}
			default:
				if _, ok := merged[k]; !ok {
					merged[k] = v
				}
			}
		}
	}
	return merged, true
}

// firstBranch is the first branch of an anyOf/oneOf that allows more than null, so that an optional-looking
// {"anyOf": [{"type": "null"}, {"type": "string"}]} still gets a string.
func firstBranch(list []any) any {
	for _, b := range list {
		bm, ok := b.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := bm["type"].(string); t != "null" {
			return b
		}
	}
	return list[0]
}

// resolve follows a JSON pointer inside the schema: "#", "#/$defs/x", "#/definitions/x", "#/properties/a/items".
func (g *argGen) resolve(ref string) (any, bool) {
	if ref == "#" {
		return g.root, true
	}
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false // remote references are not fetched
	}
	cur := g.root
	for part := range strings.SplitSeq(path, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// schemaType is the type a schema node describes: its "type" (the first non-null one of a list), or else what its
// keywords imply.
func schemaType(n map[string]any) string {
	switch t := n["type"].(type) {
	case string:
		return t
	case []any:
		null := false
		for _, x := range t {
			if s, ok := x.(string); ok {
				if s != "null" {
					return s
				}
				null = true
			}
		}
		if null {
			return "null"
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := n[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "patternProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems"):
		return "array"
	case has("minLength", "maxLength", "pattern", "format"):
		return "string"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return ""
}

func (g *argGen) object(n map[string]any, depth int) map[string]any {
	obj := map[string]any{}
	props, _ := n["properties"].(map[string]any)
	required, _ := n["required"].([]any)
	for _, r := range required {
		name, ok := r.(string)
		if !ok {
			continue
		}
		if _, done := obj[name]; done {
			continue
		}
		sub, ok := props[name]
		if !ok {
			sub = n["additionalProperties"] // required but not declared: whatever extra properties may be
		}
		obj[name] = g.value(sub, depth+1)
	}
	return obj
}

func (g *argGen) array(n map[string]any, depth int) []any {
	if maxItems, ok := number(n["maxItems"]); ok && maxItems < 1 {
		return []any{}
	}
	tuple, _ := n["prefixItems"].([]any)
	if t, ok := n["items"].([]any); ok && tuple == nil {
		tuple = t // draft 4 tuple form
	}
	if len(tuple) > 0 {
		out := make([]any, 0, len(tuple))
		for _, item := range tuple {
			out = append(out, g.value(item, depth+1))
		}
		return out
	}
	return []any{g.value(n["items"], depth+1)}
}

// formatSamples are strings that satisfy the common string formats.
var formatSamples = map[string]string{
	"date-time": "2026-01-01T00:00:00Z",
	"date":      "2026-01-01",
	"time":      "00:00:00Z",
	"email":     "a@example.com",
	"uri":       "https://example.com",
	"url":       "https://example.com",
	"iri":       "https://example.com",
	"hostname":  "example.com",
	"ipv4":      "127.0.0.1",
	"ipv6":      "::1",
	"uuid":      "00000000-0000-0000-0000-000000000000",
}

func stringValue(n map[string]any) string {
	if f, ok := n["format"].(string); ok {
		if s, ok := formatSamples[f]; ok {
			return s
		}
	}
	if minLen, ok := number(n["minLength"]); ok && minLen > 1 {
		return strings.Repeat("a", int(min(minLen, maxStringLen)))
	}
	return "a"
}

// numberValue is 0 moved into the schema's bounds.
func numberValue(n map[string]any, integer bool) json.Number {
	v := 0.0
	if lo, ok := number(n["minimum"]); ok && v < lo {
		v = lo
	}
	if lo, ok := number(n["exclusiveMinimum"]); ok && v <= lo {
		v = lo + 1
	}
	if hi, ok := number(n["maximum"]); ok && v > hi {
		v = hi
	}
	if hi, ok := number(n["exclusiveMaximum"]); ok && v >= hi {
		v = hi - 1
	}
	if integer {
		v = math.Ceil(v)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
}

// number reads a schema keyword's numeric value.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
