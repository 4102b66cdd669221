// Package schemacheck compiles JSON Schemas into host.Validators with github.com/santhosh-tekuri/jsonschema: draft
// 2020-12 unless a schema names another in "$schema", formats asserted. References are resolved within the
// schema only: nothing is fetched.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agenthost/agenthost/host"
)

// maxProblems bounds the problems an error lists: enough for the model to fix an answer, short enough to read.
const maxProblems = 10

// resource is the URL the schema is compiled under.
const resource = "agenthost:output.json"

// Compile compiles schema, a JSON Schema. It implements host.CompileFunc.
func Compile(schema json.RawMessage) (host.Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(resource, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(resource)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), resource, "the schema"))
	}
	return validator{s}, nil
}

// noLoader refuses every reference outside the schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not fetched: only references within the schema are resolved", url)
}

type validator struct{ s *jsonschema.Schema }

// Validate implements host.Validator: the error lists each problem as "at /pointer: message", "at /" for the
// value itself.
func (v validator) Validate(value json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = v.s.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var problems []string
	leaves(ve, func(e *jsonschema.ValidationError) {
		problems = append(problems, fmt.Sprintf("at %s: %s", pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(printer)))
	})
	if len(problems) == 0 {
		return errors.New(ve.Error())
	}
	if len(problems) > maxProblems {
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", len(problems)-maxProblems))
	}
	return errors.New(strings.Join(problems, "; "))
}

var printer = message.NewPrinter(language.English)

// leaves calls f with each error of the tree under e that has no causes: the problems themselves, below the
// groups ("allOf failed", "$ref failed") that gather them.
func leaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, f)
	}
}

// pointer writes an instance location as a JSON Pointer, "/" for the value itself.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
