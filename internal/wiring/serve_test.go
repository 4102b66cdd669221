package wiring

import (
	"bytes"
	"log/slog"
	"regexp"
	"runtime"
	"strconv"
	"testing"
)

// garbage keeps the allocation below from being optimized away before it is dropped.
var garbage [][]byte

// TestFreeSessionMemory: what the sessions' reclaim calls returns freed heap to the system at once, and says how
// much: 64 MiB allocated and dropped come back (the runtime's own scavenger would wait for a collection and for
// its monitor thread to wake it).
func TestFreeSessionMemory(t *testing.T) {
	for range 64 {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	var logs bytes.Buffer
	freeSessionMemory(slog.New(slog.NewTextHandler(&logs, nil)))(1234)
	m := regexp.MustCompile(`msg="returned the memory of ended sessions to the system" sessions=1234 released_mib=(\d+) took=`).FindSubmatch(logs.Bytes())
	if m == nil {
		t.Fatalf("log: %q; want the line saying what was released", &logs)
	}
	// Most of the 64 MiB: some may have been reused or released before.
	if mib, _ := strconv.Atoi(string(m[1])); mib < 32 {
		t.Fatalf("released %d MiB after 64 MiB were dropped; want at least 32: %s", mib, &logs)
	}
}
