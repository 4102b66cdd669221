// Package statedir locates agenthost's state directory, shared by the state store and the built-in tools' files,
// and makes the files kept there private: 0600 files and 0700 directories whatever the umask. It also keeps the
// SQLite databases the process has open (HoldSQLite), which nothing else in the process may open and close, and
// retries their opening while SQLite answers busy (RetryBusy).
package statedir

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns agenthost's state directory: $XDG_STATE_HOME/agenthost, else ~/.local/state/agenthost. It does not
// create it.
func Dir() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "agenthost"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "agenthost"), nil
}
