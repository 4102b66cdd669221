package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

func TestRetryOnDisconnect(t *testing.T) {
	policies := map[string]config.ToolPolicy{
		"fs_write_file":  {RetryOnDisconnect: true},
		"fs_read_file":   {RetryOnDisconnect: false},
		"fs_move_file":   {RetryOnDisconnect: true},
		"web_fetch":      {RetryOnDisconnect: true},
		"current_time":   {RetryOnDisconnect: true},
		"fsx_other_tool": {RetryOnDisconnect: true},
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"fs", []string{"move_file", "write_file"}},
		{"web", []string{"fetch"}},
		{"", []string{"current_time", "fs_move_file", "fs_write_file", "fsx_other_tool", "web_fetch"}},
		{"none", nil},
	} {
		if got := retryOnDisconnect(policies, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("prefix %q: %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

// TestNoTemplatesLinked guards the binary's size: a package that imports text/template or html/template makes the
// linker keep every exported method of every type (the templates call methods by name), which took the binary from
// 70 MB to 101 MB when gRPC's golang.org/x/net/trace came in. Built as make build does, nothing may import them.
func TestNoTemplatesLinked(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-tags", "grpcnotrace", "-deps", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, ".").Output()
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
