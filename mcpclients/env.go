package mcpclients

import (
	"maps"
	"runtime"
	"slices"
	"strings"
)

// inheritedEnv is what a stdio server inherits of agenthost's environment when its configuration asks for nothing
// more. A server is often code fetched at start-up (npx -y, uvx), so it must not see agenthost's secrets (the model's
// API key, the state's DSN, the serve and peer tokens): it gets what the official MCP SDKs give (the TypeScript SDK's
// getDefaultEnvironment: HOME, LOGNAME, PATH, SHELL, TERM, USER), plus what a program needs to behave as it would in
// the user's shell and nothing that grants access: LANG and LC_* (the locale: how text is decoded and sorted), TZ
// (local time) and TMPDIR (where temporary files go; macOS gives each user one of their own). On Windows it is the
// SDK's list with PATHEXT and COMSPEC, without which npm's .cmd shims are not found or cannot run.
var inheritedEnv = func() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES", "PATHEXT", "COMSPEC"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TZ", "TMPDIR"}
}()

// childEnv returns the environment of a stdio server, from environ (agenthost's, as os.Environ gives it): the
// variables of inheritedEnv, those that match a passthrough pattern, then env, which wins. A default variable whose
// value starts with "()" is left out, as the SDKs do: it is a shell function, which a shell would run.
func childEnv(environ, passthrough []string, env map[string]string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, set := env[name]; set {
			continue
		}
		switch {
		case matchAny(passthrough, name):
		case matchAny(inheritedEnv, name) && !strings.HasPrefix(value, "()"):
		default:
			continue
		}
		out = append(out, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// matchAny reports whether name matches one of patterns: a variable's name in which "*" stands for any run of
// characters. On Windows names are matched without regard to case, as Windows reads them.
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if runtime.GOOS == "windows" {
			p, name = strings.ToUpper(p), strings.ToUpper(name)
		}
		if globMatch(p, name) {
			return true
		}
	}
	return false
}

// globMatch matches name against pattern, where "*" matches any run of characters and every other character
// itself.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}
