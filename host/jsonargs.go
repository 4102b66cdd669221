package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// canonicalJSON returns a canonical text of a JSON value: object keys sorted, no insignificant whitespace, numbers
// as written. Two calls whose arguments differ only in key order or spacing have the same canonical form. It is the
// one canonical-JSON helper of the project.
func canonicalJSON(raw []byte) (string, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return "", err
	}
	return canonicalValue(v)
}

// canonicalValue is canonicalJSON of a value decoded by decodeJSON: object keys sorted, numbers as written, strings
// escaped as encoding/json escapes them.
func canonicalValue(v any) (string, error) {
	b, err := appendCanonical(nil, v)
	return string(b), err
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.Number:
		return append(b, v...), nil
	case string:
		return appendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("canonical JSON: unexpected %T", v)
}

// appendString appends s as a JSON string. Plain strings, the common case, are copied as they are; others are left
// to encoding/json, so escaping (of control characters, HTML characters, invalid UTF-8) is exactly its own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeJSON decodes exactly one JSON value, keeping numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// parseArguments turns the model's argument text into a JSON object. Empty text means no arguments.
func parseArguments(text string) (json.RawMessage, map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return json.RawMessage("{}"), map[string]any{}, nil
	}
	v, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("the arguments must be a JSON object, not %s", jsonKind(v))
	}
	return json.RawMessage(text), obj, nil
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// validateArguments checks args against the parts of a JSON Schema that models most often get wrong: required
// properties, types, enums and const, recursively through properties and items. It is deliberately not a full
// validator: the tool's owner validates fully; this catches the common mistakes early and tells the model in words
// it can act on. It returns every problem found, sorted.
func validateArguments(s map[string]any, args map[string]any) []string {
	if s == nil {
		return nil // no schema, or an unreadable one: the source's problem, not the model's
	}
	var problems []string
	validateValue(s, args, "", &problems, 0)
	sort.Strings(problems)
	return problems
}

// schemaCache keeps parsed input schemas by their text, so a tool's schema is parsed once, not on every call. It is
// emptied if it ever holds maxCachedSchemas (a source that makes up a new schema every time).
type schemaCache struct {
	mu sync.Mutex
	m  map[string]map[string]any
}

const maxCachedSchemas = 4096

// get returns the parsed schema, or nil when there is none or it is not a JSON object.
func (c *schemaCache) get(schema json.RawMessage) map[string]any {
	if len(schema) == 0 {
		return nil
	}
	c.mu.Lock()
	s, ok := c.m[string(schema)]
	c.mu.Unlock()
	if ok {
		return s
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		s = nil
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedSchemas {
		c.m = map[string]map[string]any{}
	}
	c.m[string(schema)] = s
	c.mu.Unlock()
	return s
}

func validateValue(s map[string]any, v any, path string, problems *[]string, depth int) {
	if depth > 32 {
		return
	}
	where := path
	if where == "" {
		where = "the arguments"
	}
	if types := schemaTypes(s["type"]); len(types) > 0 && !typeMatches(types, v) {
		*problems = append(*problems, fmt.Sprintf("%s: expected %s, got %s", where, strings.Join(types, " or "), jsonKind(v)))
		return
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		*problems = append(*problems, fmt.Sprintf("%s: must be %s", where, compact(c)))
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		found := false
		for _, e := range enum {
			if jsonEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			vals := make([]string, len(enum))
			for i, e := range enum {
				vals[i] = compact(e)
			}
			*problems = append(*problems, fmt.Sprintf("%s: must be one of %s", where, strings.Join(vals, ", ")))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				name, _ := r.(string)
				if _, present := v[name]; name != "" && !present {
					*problems = append(*problems, fmt.Sprintf("%s: missing required property %q", where, name))
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		for name, val := range v {
			ps, ok := props[name].(map[string]any)
			if !ok {
				if ap, isBool := s["additionalProperties"].(bool); isBool && !ap && props != nil {
					*problems = append(*problems, fmt.Sprintf("%s: unknown property %q", where, name))
				}
				continue
			}
			validateValue(ps, val, joinPath(path, name), problems, depth+1)
		}
	case []any:
		if is, ok := s["items"].(map[string]any); ok {
			for i, item := range v {
				validateValue(is, item, fmt.Sprintf("%s[%d]", pathOr(path), i), problems, depth+1)
			}
		}
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func pathOr(path string) string {
	if path == "" {
		return "arguments"
	}
	return path
}

func schemaTypes(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeMatches(types []string, v any) bool {
	kind := jsonKind(v)
	for _, t := range types {
		if t == kind || t == "number" && kind == "integer" {
			return true
		}
		if t == "integer" && kind == "number" {
			// 2.0 is an integer in JSON Schema.
			if n, ok := v.(json.Number); ok {
				if f, err := n.Float64(); err == nil && f == float64(int64(f)) {
					return true
				}
			}
		}
	}
	return false
}

func jsonEqual(a, b any) bool {
	ca, err1 := json.Marshal(normalizeNumbers(a))
	cb, err2 := json.Marshal(normalizeNumbers(b))
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// normalizeNumbers makes 1, 1.0 and json.Number("1") compare equal.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = normalizeNumbers(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = normalizeNumbers(x)
		}
		return s
	}
	return v
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
