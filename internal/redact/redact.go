// Package redact takes secrets out of what agenthost prints: the userinfo, query values and fragment of URLs (in
// arbitrary text, such as an error's message, or given alone), and the values of secret-looking command-line
// arguments. It is the one place that decides what a secret looks like; every printer of servers' and peers' state
// (logs, `check`, `mcp list`, health endpoints, the tool errors the model reads) goes through it.
//
// It imports only the standard library.
package redact

import (
	"errors"
	"strings"
)

// Marker replaces what is taken out.
const Marker = "REDACTED"

// URL returns raw with its userinfo replaced by Marker, the value of each query parameter replaced by Marker (the
// keys are kept, so that the message still says which parameters were sent), and a fragment replaced by Marker.
// Text that is not a URL with a scheme is returned through Text.
func URL(raw string) string {
	return Text(raw)
}

// Text returns s with every URL in it ("scheme://…", up to white space, a quote or angle bracket, or the next URL)
// redacted as URL says. Errors of the standard library quote the URL they failed on, which ends it.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	copied := 0
	for start := schemeStart(s, 0); start >= 0; {
		sep := start + strings.Index(s[start:], "://")
		next := schemeStart(s, sep+3)
		end := len(s)
		if next >= 0 {
			end = next
		}
		if i := strings.IndexAny(s[sep+3:end], " \t\r\n\"'`<>"); i >= 0 {
			end = sep + 3 + i
		}
		b.WriteString(s[copied:start])
		b.WriteString(s[start : sep+3])
		b.WriteString(redactRest(s[sep+3 : end]))
		copied = end
		start = next
	}
	b.WriteString(s[copied:])
	return b.String()
}

// schemeStart returns the offset of the first URL scheme in s at or after from (a letter followed by letters,
// digits, "+", "-" or "." and then "://"), or -1.
func schemeStart(s string, from int) int {
	for {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			return -1
		}
		sep := from + i
		start := sep
		for start > from && schemeByte(s[start-1]) {
			start--
		}
		for start < sep && !isLetter(s[start]) { // a scheme starts with a letter
			start++
		}
		if start < sep {
			return start
		}
		from = sep + 3
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func schemeByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// redactRest redacts what follows "scheme://": the authority's userinfo, the query's values and the fragment.
func redactRest(rest string) string {
	authEnd := strings.IndexAny(rest, "/?#\\")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	var b strings.Builder
	if at := strings.LastIndexByte(rest[:authEnd], '@'); at >= 0 {
		b.WriteString(Marker)
		b.WriteString(rest[at:authEnd])
	} else if at := strings.LastIndexByte(rest, '@'); at > authEnd && unescapedPassword(rest[:authEnd]) {
		// "agent:pa#ss@db/app", as a parse error quotes it: the password holds a "#", "/", "?" or "\" that the
		// writer did not escape, so the userinfo runs to the last "@".
		authEnd = at + strings.IndexAny(rest[at:], "/?#\\")
		if authEnd < at {
			authEnd = len(rest)
		}
		b.WriteString(Marker)
		b.WriteString(rest[at:authEnd])
	} else {
		b.WriteString(rest[:authEnd])
	}
	rest = rest[authEnd:]
	path, query, fragment := rest, "", ""
	hasQuery, hasFragment := false, false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		path, fragment, hasFragment = rest[:i], rest[i+1:], true
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query, hasQuery = path[:i], path[i+1:], true
	}
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(redactQuery(query))
	}
	if hasFragment {
		b.WriteByte('#')
		if fragment != "" {
			b.WriteString(Marker)
		}
	}
	return b.String()
}

// unescapedPassword reports whether an authority without "@", cut at the first "/", "?", "#" or "\\", is the
// start of a userinfo "user:pass…" rather than a host with a port: it has a ":" followed by something other than
// a port's digits. "h:8080/@scope/pkg" and "[::1]/?mail=a@b" are hosts.
func unescapedPassword(authority string) bool {
	if strings.HasPrefix(authority, "[") {
		return false
	}
	_, port, ok := strings.Cut(authority, ":")
	if !ok {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return true
		}
	}
	return port == ""
}

// redactQuery keeps each parameter's key and replaces its value; a parameter without "=" may be a bare token, so it
// is replaced whole.
func redactQuery(q string) string {
	var b strings.Builder
	for i, param := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' }) {
		if i > 0 {
			b.WriteByte('&')
		}
		key, value, ok := strings.Cut(param, "=")
		switch {
		case !ok:
			b.WriteString(Marker)
		case value == "":
			b.WriteString(key + "=")
		default:
			b.WriteString(key + "=" + Marker)
		}
	}
	return b.String()
}

// Error returns err with its message redacted by Text; errors.Is and errors.As still see err. A nil err stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var r *redacted
	if errors.As(err, &r) && r.msg == err.Error() {
		return err // redacted already
	}
	return &redacted{err: err, msg: Text(err.Error())}
}

type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
