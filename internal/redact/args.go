package redact

import (
	"slices"
	"strings"
)

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

// secretHeaders are headers whose value is a credential though their name has none of secretWords.
var secretHeaders = []string{"authorization", "proxy-authorization", "cookie", "x-api-key"}

// Args returns a copy of a command line with its secrets replaced by Marker: the value of a flag whose name looks
// secret, in both forms "--api-key=VALUE" and "--api-key VALUE"; the value of a secret-looking NAME=VALUE (as in
// "-e GITHUB_TOKEN=…"); the value of a secret header "Name: value", alone (as in "--header", "Authorization: Bearer
// …") or after a flag's "=" ("--header=Authorization: …"); any value that starts as a known kind of token does
// ("sk-…", "ghp_…"); and URLs, as Text redacts them.
//
// A flag given with "=" and nothing after it ("--password=") has an empty value, so the next argument is not its
// value and is kept.
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
		if h, ok := secretHeader(a); ok {
			out[i] = h
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && value != "" && !strings.Contains(name, "://") {
			if SecretName(name) {
				out[i] = name + "=" + Marker
				continue
			}
			if h, ok := secretHeader(value); ok {
				out[i] = name + "=" + h
				continue
			}
		}
		out[i] = Text(a)
	}
	return out
}

// secretHeader returns a, an HTTP header "Name: value" or "Name:value", with its value replaced by Marker, if the
// name looks secret (SecretName) or is one of secretHeaders.
func secretHeader(a string) (string, bool) {
	name, value, ok := strings.Cut(a, ":")
	if !ok || name == "" || strings.TrimSpace(value) == "" || strings.HasPrefix(value, "//") {
		return "", false
	}
	for _, c := range name {
		if !isLetter(byte(c)) && (c < '0' || c > '9') && c != '-' && c != '_' {
			return "", false // not a header's name; "localhost:8080" and URLs have no secret name anyway
		}
	}
	if !SecretName(name) && !slices.Contains(secretHeaders, strings.ToLower(name)) {
		return "", false
	}
	space := value[:len(value)-len(strings.TrimLeft(value, " \t"))]
	return name + ":" + space + Marker, true
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
