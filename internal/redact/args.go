package redact

import "strings"

// secretWords are the parts of a flag's or variable's name that say its value is a secret: "--api-key",
// "--token", "--client-secret", "--password", "--auth", "GITHUB_TOKEN=…".
var secretWords = []string{"token", "key", "secret", "password", "passwd", "auth", "credential", "bearer", "cookie", "session"}

// tokenPrefixes start values that are credentials whatever flag carries them: OpenAI and Anthropic keys, GitHub,
// GitLab and Slack tokens, AWS access key ids, and an Authorization header's value.
var tokenPrefixes = []string{"sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "AKIA", "ASIA", "Bearer ", "Basic "}

// SecretName reports whether a flag's or variable's name says its value is a secret.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Args returns a copy of a command line with its secrets replaced by Marker: the value of a flag whose name looks
// secret, in both forms "--api-key=VALUE" and "--api-key VALUE"; the value of a secret-looking NAME=VALUE (as in
// "-e GITHUB_TOKEN=…"); any value that starts as a known kind of token does ("sk-…", "ghp_…"); and URLs, as Text
// redacts them.
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case looksLikeToken(a):
			out[i] = Marker
			continue
		case i > 0 && secretFlag(args[i-1]) && !strings.HasPrefix(a, "-"):
			out[i] = Marker
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && value != "" && SecretName(name) && !strings.Contains(name, "://") {
			out[i] = name + "=" + Marker
			continue
		}
		out[i] = Text(a)
	}
	return out
}

// secretFlag reports whether a is a flag without "=" whose name looks secret, so that the next argument is its
// value.
func secretFlag(a string) bool {
	if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
		return false
	}
	return SecretName(strings.TrimLeft(a, "-"))
}

func looksLikeToken(v string) bool {
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(v, p) && len(v) > len(p)+3 {
			return true
		}
	}
	return false
}
