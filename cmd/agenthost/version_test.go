package main

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(revision, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "e254d1f03e54a773599e222ceac86294d13966f0"
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "dev"},
		{"go install module@v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"a tagged checkout", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs(rev, "false")}, "v1.2.3"},
		{"go build in a git checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125164304-e254d1f03e54"}, Settings: vcs(rev, "false")}, "e254d1f03e54"},
		{"with changes", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125164304-e254d1f03e54+dirty"}, Settings: vcs(rev, "true")}, "e254d1f03e54-dirty"},
		{"a pseudo-version after a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261125164304-e254d1f03e54"}, Settings: vcs(rev, "false")}, "e254d1f03e54"},
		{"without a version from the toolchain", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "e254d1f03e54-dirty"},
		{"go install module@commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125164304-e254d1f03e54"}}, "v0.0.0-20261125164304-e254d1f03e54"},
		{"nothing known", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildVersion(tt.info); got != tt.want {
				t.Errorf("buildVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
