package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host"
)

// decodeArgs decodes a tool's JSON arguments into v, a pointer to a struct. Unknown properties are ignored. The
// error says what was wrong in words a model can act on; example is a valid call to show it.
func decodeArgs(args json.RawMessage, v any, example string) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s must be %s, not %s; for example %s", te.Field, jsonType(te.Type.Kind().String()), te.Value, example)
		}
		return fmt.Errorf("the arguments must be a JSON object such as %s", example)
	}
	return nil
}

func jsonType(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "a boolean"
	case kind == "slice":
		return "an array"
	}
	return "an object"
}

// errorResult is a failed call as the model reads it.
func errorResult(format string, args ...any) *host.Result {
	return &host.Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// readOnly are the annotations of a tool that changes nothing; openWorld says whether it reaches outside the machine.
func readOnly(openWorld bool) *host.ToolAnnotations {
	yes := true
	return &host.ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: &openWorld}
}
