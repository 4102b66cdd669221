package main

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain lets the test binary be re-executed as the MCP server, as the command is.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "server" {
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasure kills the server a few times under a small load: lookup, read-only, loses no call; the calls of
// charge that fail are those the kills interrupted, and the tool calls go on after each kill.
func TestMeasure(t *testing.T) {
	o := &options{concurrency: 4, duration: 3 * time.Second, kill: 700 * time.Millisecond, work: 10 * time.Millisecond, reconnectWait: 10 * time.Second}
	res, err := measure(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.kills) < 2 {
		t.Fatalf("%d kills", len(res.kills))
	}
	lookup, charge := res.tally("lookup"), res.tally("charge")
	if lookup.calls == 0 || lookup.ok != lookup.calls {
		t.Errorf("lookup: %d of %d calls succeeded, want all: %v", lookup.ok, lookup.calls, lookup.reasons)
	}
	if charge.calls == 0 || charge.ok == 0 {
		t.Errorf("charge: %d of %d calls succeeded", charge.ok, charge.calls)
	}
	for msg := range charge.reasons {
		if msg != "went away during the call" {
			t.Errorf("charge failed with %q, want only calls the kills interrupted", msg)
		}
	}
	// Calls succeeded between the first two kills: the server came back.
	after := 0
	for _, c := range res.calls {
		if c.start.After(res.kills[0]) && c.end.Before(res.kills[1]) && c.err == "" {
			after++
		}
	}
	if after == 0 {
		t.Error("no call succeeded between the first two kills")
	}
}
