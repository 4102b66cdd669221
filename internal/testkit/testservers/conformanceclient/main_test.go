package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestSchemaDefaults(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		want    map[string]any
		wantErr bool
	}{
		{"no schema", ``, map[string]any{}, false},
		{
			"every kind of default",
			`{"type":"object","properties":{
				"name":{"type":"string","default":"John Doe"},
				"age":{"type":"integer","default":30},
				"score":{"type":"number","default":95.5},
				"status":{"type":"string","enum":["active","inactive"],"default":"active"},
				"verified":{"type":"boolean","default":true},
				"note":{"type":"string"}
			},"required":[]}`,
			map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true},
			false,
		},
		{"optional property without default", `{"properties":{"note":{"type":"string"}}}`, map[string]any{}, false},
		{"required property without default", `{"properties":{"email":{"type":"string"}},"required":["email"]}`, nil, true},
		{"required property with default", `{"properties":{"n":{"default":1}},"required":["n"]}`, map[string]any{"n": 1.0}, false},
		{"not a schema", `[1,2]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schemaDefaults(json.RawMessage(tt.schema))
			if (err != nil) != tt.wantErr {
				t.Fatalf("schemaDefaults(%s) error = %v, want error %v", tt.schema, err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("schemaDefaults(%s) = %v, want %v", tt.schema, got, tt.want)
			}
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	if err := run(t.Context(), nil, "no-such-scenario", "http://127.0.0.1:1/mcp", nil); err == nil {
		t.Error("run accepted an unknown scenario")
	}
}
