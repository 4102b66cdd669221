package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// selfCPU returns the CPU time this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openFileLimit returns the soft limit on open files of process pid. (Go raises its own soft limit to the hard limit
// at start-up, but a child gets the limit its parent started with.)
func openFileLimit(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0], nil
			}
		}
	}
	return "", fmt.Errorf("/proc/%d/limits: no open-files limit", pid)
}
