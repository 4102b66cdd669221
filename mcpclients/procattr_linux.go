package mcpclients

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the child in a process group of its own, so that stopping it stops what it started too (a
// server run through npx is a tree of processes). Should agenthost die, the child sees its stdin close and exits, as
// MCP stdio servers do. (Pdeathsig is not used: it fires when the spawning thread exits, not the process.)
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills whatever is left of the child's process group. It runs after the leader was reaped, so the
// group's number is in principle free for reuse; Linux hands out process ids in sequence up to pid_max before it
// wraps, so a new group with that number this soon would take the whole id space cycling within the moment.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group may be gone already
	}
}
