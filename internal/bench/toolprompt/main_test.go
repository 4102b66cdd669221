package main

import (
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// TestMeasure runs a small version of the measurement, 5 servers of 25 tools: at the default mode search is on, the
// first request is at least 90% smaller than with every definition, and the scripted model searches, then calls
// the right tool, and the run ends with its answer. Without search the model calls the tool directly.
func TestMeasure(t *testing.T) {
	catalog, err := buildCatalog(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names, err := themes(t.Context(), catalog)
	if err != nil || len(names) < 5 || !slices.Contains(names[:5], "calendar") {
		t.Fatalf("themes %q (%v): want the calendar among the first five", names, err)
	}
	without, err := measure(t.Context(), catalog, names[:5], 25, config.ToolSearchNever)
	if err != nil {
		t.Fatal(err)
	}
	with, err := measure(t.Context(), catalog, names[:5], 25, config.ToolSearchAuto)
	if err != nil {
		t.Fatal(err)
	}
	if without.searchActive || without.firstTools != 125 || !slices.Equal(without.calls, []string{target}) || !without.rightTool || !without.answered {
		t.Errorf("without search: %+v, want the 125 tools offered and %s called directly", without, target)
	}
	if !with.searchActive || !slices.Equal(with.calls, []string{host.SearchToolName, target}) || !with.rightTool || !with.answered {
		t.Errorf("with search: %+v, want %s, then %s, then the answer", with, host.SearchToolName, target)
	}
	if s := saving(without, with); s < 0.9 {
		t.Errorf("with search the first request is %d bytes, without %d: %.1f%% smaller, want at least 90%%",
			with.firstBytes, without.firstBytes, s*100)
	}
}

// TestRun checks the report and the flags' bounds.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-servers", "4", "-tools", "10"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`over 40 tools from 4 stdio MCP servers`,
		`(?m)^never\s+false\s+40\s+\d+`,
		`(?m)^auto\s+`,
		`with search the first request is -?\d+\.\d% smaller`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("report lacks %s:\n%s", want, out.String())
		}
	}
	for _, args := range [][]string{{"-tools", "5"}, {"-servers", "3"}, {"-servers", "99"}} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
