package main

import (
	"regexp"
	"runtime/debug"
)

// version is what agenthost reports as its version: in `agenthost version`, MCP's serverInfo, the A2A card and
// telemetry, and in the version durable runs are matched by. A build sets it with -ldflags "-X main.version=...";
// otherwise it comes from the build's own information (buildVersion).
var version = ""

func init() {
	if version == "" {
		info, _ := debug.ReadBuildInfo()
		version = buildVersion(info)
	}
}

// pseudoVersion matches the pseudo-versions Go gives a module at a commit without a tag (v0.0.0-20250102150405-
// abcdef123456, v1.2.4-0.20250102150405-abcdef123456), with their build suffix.
var pseudoVersion = regexp.MustCompile(`[-.](0\.)?\d{14}-[0-9a-f]{12}(\+.*)?$`)

// buildVersion is the version of a build that was given none: the module's version when it is a release, as `go
// install module@v1.2.3` builds it; else the commit it was built from, cut to 12 characters, with "-dirty" when the
// work tree had changes, as `go build` and `make build` in a git checkout stamp it; else a pseudo-version (`go
// install module@commit`); else "dev".
func buildVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "dev"
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
		return v
	}
	var revision string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision != "" {
		revision = revision[:min(len(revision), 12)]
		if modified {
			revision += "-dirty"
		}
		return revision
	}
	if v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}
