//go:build !linux

package mcpclients

import "os/exec"

// ownProcessGroup does nothing on this platform: the child is stopped by the SDK's own shutdown of its process.
func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
