package mcpclients

import (
	"maps"
	"runtime"
	"slices"
	"strings"
)

// InheritedEnv returns the names and patterns of the variables a stdio server inherits of agenthost's environment
// when its configuration asks for nothing more; a "*" stands for any run of characters. A server is often code
// fetched at start-up (npx -y, uvx), so it must not see agenthost's secrets (the model's API key, the state's DSN,
// the serve and peer tokens): it gets what the official MCP SDKs give (the TypeScript SDK's getDefaultEnvironment:
// HOME, LOGNAME, PATH, SHELL, TERM, USER), plus what a program needs to behave as it would in the user's shell and
// nothing that grants access: LANG and LC_* (the locale: how text is decoded and sorted), TZ (local time), TMPDIR
// (where temporary files go; macOS gives each user one of their own), and where to find a network that only a proxy
// or a private certificate authority opens: the proxy variables (ProxyEnv) and SSL_CERT_FILE, SSL_CERT_DIR and
// NODE_EXTRA_CA_CERTS, without which "npx -y" cannot fetch its package behind a corporate proxy. On Windows it is
// the SDK's list with PATHEXT and COMSPEC, without which npm's .cmd shims are not found or cannot run.
func InheritedEnv() []string { return inheritedEnv(runtime.GOOS) }

func inheritedEnv(goos string) []string {
	network := append(ProxyEnv(), "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS")
	if goos == "windows" {
		return append([]string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES", "PATHEXT", "COMSPEC"}, network...)
	}
	return append([]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TZ", "TMPDIR"}, network...)
}

// ProxyEnv returns the proxy variables a stdio server inherits (see InheritedEnv), in both cases. A proxy's URL may
// carry a user and password ("http://user:pass@proxy:3128"): such a value is not inherited; a server that needs it
// gets it by naming the variable in env_passthrough.
func ProxyEnv() []string {
	return []string{"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "no_proxy", "all_proxy"}
}

// childEnv returns the environment of a stdio server, from environ (agenthost's, as os.Environ gives it): the
// variables of InheritedEnv, those that match a passthrough pattern, then env, which wins. A default variable whose
// value starts with "()" is left out, as the SDKs do: it is a shell function, which a shell would run; so is a proxy
// variable whose URL holds a password.
func childEnv(environ, passthrough []string, env map[string]string) []string {
	return childEnvOn(runtime.GOOS, environ, passthrough, env)
}

// childEnvOn is childEnv as on goos: on Windows names are matched without regard to case, as Windows reads them, so
// that env's "Path" replaces the inherited "PATH" instead of being added next to it.
func childEnvOn(goos string, environ, passthrough []string, env map[string]string) []string {
	fold := func(name string) string { return name }
	if goos == "windows" {
		fold = strings.ToUpper
	}
	configured := map[string]bool{}
	for k := range env {
		configured[fold(k)] = true
	}
	inherited := inheritedEnv(goos)
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || configured[fold(name)] {
			continue
		}
		switch {
		case matchAny(goos, passthrough, name):
		case matchAny(goos, inherited, name) && !strings.HasPrefix(value, "()") && !(matchAny(goos, ProxyEnv(), name) && hasUserinfo(value)):
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

// hasUserinfo reports whether a proxy's address names a user (and so, most often, a password): "user:pass@host".
func hasUserinfo(proxy string) bool {
	_, rest, ok := strings.Cut(proxy, "://")
	if !ok {
		rest = proxy
	}
	host, _, _ := strings.Cut(rest, "/")
	return strings.Contains(host, "@")
}

// matchAny reports whether name matches one of patterns: a variable's name in which "*" stands for any run of
// characters. On Windows names are matched without regard to case, as Windows reads them.
func matchAny(goos string, patterns []string, name string) bool {
	for _, p := range patterns {
		if goos == "windows" {
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
