package wiring

import (
	"slices"
	"testing"

	"github.com/agenthost/agenthost/config"
)

func TestRetryOnDisconnect(t *testing.T) {
	policies := map[string]config.ToolPolicy{
		"fs_write_file":  {RetryOnDisconnect: true},
		"fs_read_file":   {RetryOnDisconnect: false},
		"fs_move_file":   {RetryOnDisconnect: true},
		"web_fetch":      {RetryOnDisconnect: true},
		"current_time":   {RetryOnDisconnect: true},
		"fsx_other_tool": {RetryOnDisconnect: true},
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"fs", []string{"move_file", "write_file"}},
		{"web", []string{"fetch"}},
		{"", []string{"current_time", "fs_move_file", "fs_write_file", "fsx_other_tool", "web_fetch"}},
		{"none", nil},
	} {
		if got := retryOnDisconnect(policies, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("prefix %q: %q, want %q", tc.prefix, got, tc.want)
		}
	}
}
