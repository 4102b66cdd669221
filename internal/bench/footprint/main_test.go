//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
)

// TestRun runs the tool on the binary built as the README says, for two rounds, and checks what the report rests on,
// not the figures: the binary's description, a row of memory per round and the median, and a resident .text.
func TestRun(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if err := benchcli.BuildAgenthost(t.Context(), "", bin); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-rounds", "2", "-settle", "0s", "-agenthost", bin}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	for _, row := range []string{
		`binary: \d+\.\d MB, linking (static|dynamic)`,
		`\.text \d+\.\d MB, \.rodata \d+\.\d MB, \.gopclntab \d+\.\d MB`,
		`(?m)^\s+1\s+\d+\.\d MiB\s+\d+\.\d MiB\s+\d+\.\d MiB`,
		`(?m)^\s+2\s+\d+\.\d MiB\s+\d+\.\d MiB\s+\d+\.\d MiB`,
		`(?m)^\s+median\s+\d+\.\d MiB`,
		`(?m)^\s+\.text\s+\d+\.\d MB\s+[1-9]\d*\.\d MB`,
	} {
		if !regexp.MustCompile(row).Match(stdout.Bytes()) {
			t.Errorf("no line matching %q in the report:\n%s", row, &stdout)
		}
	}
}
