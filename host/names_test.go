package host

import (
	"strings"
	"testing"
)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct {
		prefix, name, want string
	}{
		{"fs", "read_file", "fs_read_file"},
		{"", "read_file", "read_file"},
		{"my server", "get.thing", "my_server_get_thing"},
		{"", "", "tool_" + "e3b0c442"},
		{"", "日本", "______"},
	}
	for _, tt := range tests {
		if got := ToolName(tt.prefix, tt.name); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.prefix, tt.name, got, tt.want)
		}
	}
	a, b := ToolName("srv", long+"a"), ToolName("srv", long+"b")
	if len(a) != MaxToolNameLen || len(b) != MaxToolNameLen || a == b {
		t.Errorf("long names: %q (%d), %q (%d): want distinct names of %d characters", a, len(a), b, len(b), MaxToolNameLen)
	}
	if a != ToolName("srv", long+"a") {
		t.Error("long name is not stable")
	}
	for _, n := range []string{a, b, ToolName("", ""), ToolName("a b", "c/d")} {
		if !ValidToolName(n) {
			t.Errorf("ToolName produced invalid name %q", n)
		}
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "A-b_9": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "a.b": false, "a b": false, "é": false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}
