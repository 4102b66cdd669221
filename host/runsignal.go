package host

import (
	"encoding/json"
	"time"
)

// RunSignal is a request for the process that runs something, left by another process sharing the state: to cancel
// an A2A task or answer its question, or to continue an MCP call paused between rounds. The store keeps it, the
// front ends (a2a, mcpserver) leave and take it; they all use this one type so that nothing copies it on the way.
type RunSignal struct {
	// ID is the store's id of the signal.
	ID string
	// Target is the task or call the signal is for.
	Target string
	// Kind says what is asked; its values belong to the front end that takes the signal.
	Kind string
	// Body is the request's JSON, or empty.
	Body json.RawMessage
	// At is when the signal was left.
	At time.Time
}
