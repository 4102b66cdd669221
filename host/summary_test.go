package host

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestStopReasonsComplete reads the StopReason constants from the source: a stop reason added without a place in
// StopReasons would be missing from the enum the edges declare.
func TestStopReasonsComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []StopReason
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "StopReason" {
				continue
			}
			for _, val := range v.Values {
				lit := val.(*ast.BasicLit)
				declared = append(declared, StopReason(lit.Value[1:len(lit.Value)-1]))
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no StopReason constants found in events.go")
	}
	if got := StopReasons(); !slices.Equal(got, declared) {
		t.Errorf("StopReasons() = %v, the constants are %v", got, declared)
	}
}
