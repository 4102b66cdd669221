package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTemplatesLinked guards the binary's size: a package that imports text/template or html/template makes the
// linker keep every exported method of every type (the templates call methods by name), which took the binary from
// 70 MB to 101 MB when gRPC's golang.org/x/net/trace came in. Built as go build and go install do (no tags), nothing may import them.
func TestNoTemplatesLinked(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), ": ")
		for _, imp := range strings.Fields(imports) {
			if imp == "text/template" || imp == "html/template" {
				if pkg != "html/template" {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
}
