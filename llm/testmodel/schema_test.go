package testmodel

import (
	"encoding/json"
	"testing"
)

func TestExampleArguments(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"nil schema", ``, `{}`},
		{"invalid JSON", `{"type":`, `{}`},
		{"not an object schema", `{"type":"string"}`, `{}`},
		{"schema is true", `true`, `{}`},
		{"empty object", `{"type":"object"}`, `{}`},
		{"optional properties left out", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{}`},
		{"types", `{"type":"object","required":["s","i","n","b","z","a","o"],"properties":{
			"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},
			"z":{"type":"null"},"a":{"type":"array","items":{"type":"integer"}},
			"o":{"type":"object","required":["x"],"properties":{"x":{"type":"boolean"},"y":{"type":"string"}}}}}`,
			`{"a":[0],"b":false,"i":0,"n":0,"o":{"x":false},"s":"a","z":null}`},
		{"precedence const > enum > examples > default", `{"required":["c","e","x","d"],"properties":{
			"c":{"const":"k","enum":["e"],"examples":["x"],"default":"d"},
			"e":{"enum":[3.50,"e"],"examples":["x"],"default":"d","type":"string"},
			"x":{"examples":[{"deep":[1]}],"default":"d"},
			"d":{"type":"integer","default":12345678901234567890}}}`,
			`{"c":"k","d":12345678901234567890,"e":3.50,"x":{"deep":[1]}}`},
		{"type list takes the first non-null", `{"type":"object","required":["a","b","c"],"properties":{
			"a":{"type":["null","string"]},"b":{"type":["integer","null"]},"c":{"type":["null"]}}}`,
			`{"a":"a","b":0,"c":null}`},
		{"anyOf and oneOf take the first non-null branch", `{"type":"object","required":["a","b"],"properties":{
			"a":{"anyOf":[{"type":"null"},{"type":"boolean"},{"type":"string"}]},
			"b":{"oneOf":[{"type":"integer","minimum":4},{"type":"string"}]}}}`,
			`{"a":false,"b":4}`},
		{"anyOf branch merged with its siblings", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},
			"anyOf":[{"required":["b"]},{"required":["a"]}]}`,
			`{"b":"a"}`},
		{"allOf merges properties and required", `{"allOf":[
			{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
			{"properties":{"b":{"const":true}},"required":["b"]}]}`,
			`{"a":0,"b":true}`},
		{"$defs reference", `{"type":"object","required":["p"],"properties":{"p":{"$ref":"#/$defs/point"}},
			"$defs":{"point":{"type":"object","required":["x","y"],"properties":{"x":{"type":"number"},"y":{"type":"number","minimum":2.5}}}}}`,
			`{"p":{"x":0,"y":2.5}}`},
		{"definitions reference with sibling default", `{"type":"object","required":["a","b"],"properties":{
			"a":{"$ref":"#/definitions/s"},"b":{"$ref":"#/definitions/s","default":"own"}},
			"definitions":{"s":{"type":"string","enum":["first","second"]}}}`,
			`{"a":"first","b":"own"}`},
		{"escaped pointer", `{"type":"object","required":["a"],"properties":{"a":{"$ref":"#/$defs/a~1b~0c"}},
			"$defs":{"a/b~c":{"const":1}}}`,
			`{"a":1}`},
		{"whole-schema reference", `{"$ref":"#/$defs/args","$defs":{"args":{"type":"object","required":["q"],"properties":{"q":{"type":"string"}}}}}`,
			`{"q":"a"}`},
		{"unresolvable reference", `{"type":"object","required":["a","b"],"properties":{"a":{"$ref":"#/$defs/missing"},"b":{"$ref":"https://x/s.json"}}}`,
			`{"a":null,"b":null}`},
		{"recursive reference is bounded", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","required":["next","other"],
			"properties":{"next":{"$ref":"#/$defs/node"},"other":{"$ref":"#"}}}}}`, ``},
		{"required but undeclared", `{"type":"object","required":["a","b","a"],"properties":{}}`, `{"a":null,"b":null}`},
		{"required undeclared uses additionalProperties", `{"type":"object","required":["a"],"additionalProperties":{"type":"integer"}}`,
			`{"a":0}`},
		{"implied types", `{"required":["o","a","s","n"],"properties":{"o":{"required":[]},"a":{"items":{"type":"string"}},
			"s":{"minLength":3},"n":{"exclusiveMinimum":7}}}`,
			`{"a":["a"],"n":8,"o":{},"s":"aaa"}`},
		{"bounds", `{"type":"object","required":["i","j","k","f"],"properties":{"i":{"type":"integer","minimum":1.5},
			"j":{"type":"integer","maximum":-3},"k":{"type":"integer","exclusiveMaximum":-3},"f":{"type":"number","maximum":-0.5}}}`,
			`{"f":-0.5,"i":2,"j":-3,"k":-4}`},
		{"formats", `{"type":"object","required":["d","u","e"],"properties":{"d":{"type":"string","format":"date-time"},
			"u":{"type":"string","format":"uri"},"e":{"type":"string","format":"email"}}}`,
			`{"d":"2026-01-01T00:00:00Z","e":"a@example.com","u":"https://example.com"}`},
		{"tuples and empty arrays", `{"type":"object","required":["t","u","e","n"],"properties":{
			"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]},
			"u":{"type":"array","items":[{"type":"boolean"}]},
			"e":{"type":"array","maxItems":0,"items":{"type":"string"}},
			"n":{"type":"array"}}}`,
			`{"e":[],"n":[null],"t":["a",0],"u":[false]}`},
		{"non-string required entries ignored", `{"type":"object","required":[1,null,"a"],"properties":{"a":{"type":"boolean"}}}`, `{"a":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := exampleArguments(json.RawMessage(tt.schema))
			var obj map[string]any
			if err := json.Unmarshal(got, &obj); err != nil || obj == nil {
				t.Fatalf("not a JSON object: %s (%v)", got, err)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func FuzzExampleArguments(f *testing.F) {
	f.Add(`{"type":"object","required":["a"],"properties":{"a":{"$ref":"#"}}}`)
	f.Add(`{"allOf":[{"$ref":"#/allOf/0"}],"required":["x"],"properties":{"x":{"type":["null","array"],"items":{"anyOf":[true,{"$ref":"#"}]}}}}`)
	f.Add(`{"required":["n"],"properties":{"n":{"type":"integer","minimum":1e308,"exclusiveMinimum":1e400}}}`)
	f.Add(`{"required":["s"],"properties":{"s":{"minLength":1e9}}}`)
	f.Fuzz(func(t *testing.T, schema string) {
		got := exampleArguments(json.RawMessage(schema))
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil || obj == nil {
			t.Fatalf("exampleArguments(%q) = %s, not a JSON object (%v)", schema, got, err)
		}
	})
}
