package codemode

import "github.com/agenthost/agenthost/host"

// Declarations returns the typed declarations of tools as the script sees them: `tools.<name>(args)` (or
// `tools["any-name"](args)`), from their input and output schemas.
func Declarations(tools []*host.ManagedTool) string {
	return ""
}
