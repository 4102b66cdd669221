package host

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	a, err := canonicalJSON([]byte(`{"b": [1, {"y":2,"x":1}], "a": "s"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := canonicalJSON([]byte("{\n\"a\":\"s\",\"b\":[1,{\"x\":1,  \"y\":2}]}"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a != `{"a":"s","b":[1,{"x":1,"y":2}]}` {
		t.Errorf("canonical forms differ or are wrong: %s vs %s", a, b)
	}
	if _, err := canonicalJSON([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Error("two values: want error")
	}
}

func TestParseArguments(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{"", ""},
		{"  ", ""},
		{`{"a":1}`, ""},
		{`{"a":`, "not valid JSON"},
		{`[1]`, "must be a JSON object, not array"},
		{`"x"`, "must be a JSON object, not string"},
	}
	for _, tt := range tests {
		_, _, err := parseArguments(tt.in)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parseArguments(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestValidateArguments(t *testing.T) {
	schema := json.RawMessage(`{
		"type": "object",
		"properties": {
			"path": {"type": "string"},
			"count": {"type": "integer"},
			"mode": {"enum": ["r", "w"]},
			"tags": {"type": "array", "items": {"type": "string"}},
			"opt": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}
		},
		"required": ["path"],
		"additionalProperties": false
	}`)
	tests := []struct {
		args string
		want []string
	}{
		{`{"path":"a"}`, nil},
		{`{"path":"a","count":2.0,"mode":"r","tags":["x"],"opt":{"deep":true}}`, nil},
		{`{}`, []string{`the arguments: missing required property "path"`}},
		{`{"path":1}`, []string{"path: expected string, got integer"}},
		{`{"path":"a","count":1.5}`, []string{"count: expected integer, got number"}},
		{`{"path":"a","mode":"x"}`, []string{`mode: must be one of "r", "w"`}},
		{`{"path":"a","tags":["x",2]}`, []string{"tags[1]: expected string, got integer"}},
		{`{"path":"a","opt":{}}`, []string{`opt: missing required property "deep"`}},
		{`{"path":"a","extra":1}`, []string{`the arguments: unknown property "extra"`}},
	}
	var cache schemaCache
	for _, tt := range tests {
		var obj map[string]any
		d := json.NewDecoder(strings.NewReader(tt.args))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		got := validateArguments(cache.get(schema), obj)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("validateArguments(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := validateArguments(cache.get(json.RawMessage(`not json`)), map[string]any{}); got != nil {
		t.Errorf("unreadable schema: got %q, want no problems", got)
	}
}

func FuzzArguments(f *testing.F) {
	f.Add(`{"a":[1,2,{"b":null}]}`, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]}`)
	f.Add(`{`, `{}`)
	f.Add(`{"x":1e400}`, `{"properties":{"x":{"const":1}}}`)
	f.Add(`{"s":"a\"b<c>\u0001 é \ud800","k":[true,null,-0.5e3]}`, `{}`)
	f.Fuzz(func(t *testing.T, args, schema string) {
		raw, obj, err := parseArguments(args)
		if err != nil {
			return
		}
		c1, err := canonicalJSON(raw)
		if err != nil {
			t.Fatalf("canonicalJSON of parsed arguments %q: %v", args, err)
		}
		c2, err := canonicalJSON([]byte(c1))
		if err != nil || c1 != c2 {
			t.Fatalf("canonical form not stable: %q -> %q (%v)", c1, c2, err)
		}
		// The same as encoding/json's own output, which sorts keys and keeps json.Number's text.
		v, _ := decodeJSON(raw)
		if want, err := json.Marshal(v); err != nil || string(want) != c1 {
			t.Fatalf("canonical form %q differs from encoding/json's %q (%v)", c1, want, err)
		}
		var cache schemaCache
		validateArguments(cache.get(json.RawMessage(schema)), obj)
	})
}
