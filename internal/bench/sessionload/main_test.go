//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
)

// TestRun runs the tool on the built binary with a few short-lived sessions, and checks what its report rests on,
// not the figures: every session opened and expired (else run fails), and a row with RSS and the live heap for
// each point.
func TestRun(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agenthost")
	if err := benchcli.BuildAgenthost(t.Context(), "", bin); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-n", "50", "-c", "4", "-rounds", "1", "-idle", "300ms", "-settle", "0s", "-agenthost", bin}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	for _, row := range []string{
		`idle, before any session\s+\d+\.\d MiB`,
		`1\s+50 sessions open \(\d+\.\ds\)\s+\d+\.\d MiB\s+\d+ MB`,
		`1\s+sessions expired\s+\d+\.\d MiB`,
		`peak \(VmHWM\)\s+\d+\.\d MiB`,
	} {
		if !regexp.MustCompile(row).Match(stdout.Bytes()) {
			t.Errorf("no row matching %q in the report:\n%s", row, &stdout)
		}
	}
}
