package schemacheck

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	v, err := Compile(json.RawMessage(`{
		"type": "object",
		"properties": {
			"city": {"type": "string", "minLength": 1},
			"population": {"type": "integer", "minimum": 0},
			"tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
			"site": {"type": "string", "format": "uri"}
		},
		"required": ["city", "population"],
		"additionalProperties": false,
		"$defs": {"tag": {"type": "string", "enum": ["old", "new"]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(json.RawMessage(`{"city":"Lyon","population":522000,"tags":["old"],"site":"https://lyon.fr"}`)); err != nil {
		t.Errorf("a valid value: %v", err)
	}
	err = v.Validate(json.RawMessage(`{"city":"","tags":["blue"],"site":"not a uri","extra":1}`))
	if err == nil {
		t.Fatal("an invalid value passed")
	}
	for _, want := range []string{"at /: missing property 'population'", "at /city:", "at /tags/0:", "at /site:", "extra"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if err := v.Validate(json.RawMessage(`[1`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("not JSON: %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": 5}`, "type"},
		{`{"$ref": "https://example.com/schema.json"}`, "not fetched"},
		{`{"type":`, "not JSON"},
	} {
		if _, err := Compile(json.RawMessage(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%s) = %v, want an error with %q", tc.schema, err, tc.want)
		}
	}
}
