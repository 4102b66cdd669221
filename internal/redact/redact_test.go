package redact

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"no url here", "no url here"},
		{"https://example.com/mcp", "https://example.com/mcp"},
		{"https://example.com/mcp?token=s3cret&v=2", "https://example.com/mcp?token=REDACTED&v=REDACTED"},
		{"https://alice:s3cret@example.com:8443/mcp", "https://REDACTED@example.com:8443/mcp"},
		{"https://s3cret@example.com", "https://REDACTED@example.com"},
		{`Post "http://127.0.0.1:9/mcp?apikey=s3cret": dial tcp 127.0.0.1:9: connect: connection refused`,
			`Post "http://127.0.0.1:9/mcp?apikey=REDACTED": dial tcp 127.0.0.1:9: connect: connection refused`},
		{"a http://h/?k=1 b https://u:p@h2/x#frag c", "a http://h/?k=REDACTED b https://REDACTED@h2/x#REDACTED c"},
		{"http://h/?flag&k=", "http://h/?REDACTED&k="},
		{"http://h/?a=1;b=2", "http://h/?a=REDACTED&b=REDACTED"},
		{"postgres://agent:pw@db:5432/app?sslmode=disable", "postgres://REDACTED@db:5432/app?sslmode=REDACTED"},
		{"xhttp://h/?k=v", "xhttp://h/?k=REDACTED"},
		{"a://bhttp://u:p@h/?k=v", "a://bhttp://REDACTED@h/?k=REDACTED"},
		{"://u:p@h", "://u:p@h"}, // no scheme: not a URL
		{"see <http://u:p@h/?q=1>.", "see <http://REDACTED@h/?q=REDACTED>."},
		// A password whose "#", "/" or "?" was not escaped: the userinfo runs to the last "@".
		{`parse "postgres://agent:pa#ss@db/app": invalid port ":pa" after host`,
			`parse "postgres://REDACTED@db/app": invalid port ":pa" after host`},
		{"postgres://agent:pa/ss@db:5432/app", "postgres://REDACTED@db:5432/app"},
		{"postgres://agent:pa?ss@db/app?sslmode=off", "postgres://REDACTED@db/app?sslmode=REDACTED"},
		{"https://agent:#secret@h", "https://REDACTED@h"},
		// An "@" after a host and its port is in the path or the query, not a userinfo.
		{"https://registry.example:8443/@scope/pkg", "https://registry.example:8443/@scope/pkg"},
		{"https://h/@scope/pkg?mail=a@b", "https://h/@scope/pkg?mail=REDACTED"},
		{"http://[::1]/x?mail=a@b", "http://[::1]/x?mail=REDACTED"},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestError(t *testing.T) {
	sentinel := errors.New("needs login")
	err := fmt.Errorf("connect https://u:hunter2@h/?token=abc: %w", sentinel)
	r := Error(err)
	if strings.Contains(r.Error(), "hunter2") || strings.Contains(r.Error(), "abc") {
		t.Errorf("Error kept a secret: %q", r)
	}
	if !errors.Is(r, sentinel) {
		t.Error("errors.Is does not see through Error")
	}
	if Error(r) != r {
		t.Error("an error redacted twice is wrapped twice")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestArgs(t *testing.T) {
	in := []string{"-y", "@scope/server", "--api-key=sk-abcdef123456", "--token", "t0ken", "--Password", "pw",
		"--client-secret=cs", "-e", "GITHUB_TOKEN=ghp_xyz", "ghp_0123456789", "--url", "https://u:p@h/?k=v",
		"--verbose", "--auth-header", "--port", "8080", "--secret", "--next"}
	want := []string{"-y", "@scope/server", "--api-key=REDACTED", "--token", "REDACTED", "--Password", "REDACTED",
		"--client-secret=REDACTED", "-e", "GITHUB_TOKEN=REDACTED", "REDACTED", "--url", "https://REDACTED@h/?k=REDACTED",
		"--verbose", "--auth-header", "--port", "8080", "--secret", "--next"}
	if got := Args(in); !slices.Equal(got, want) {
		t.Errorf("Args\n got %q\nwant %q", got, want)
	}
	if in[2] != "--api-key=sk-abcdef123456" {
		t.Error("Args changed its argument")
	}
}

func TestArgsHeaders(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"mcp-remote", "https://h/mcp", "--header", "Authorization: Bearer abc123secret"},
			[]string{"mcp-remote", "https://h/mcp", "--header", "Authorization: REDACTED"}},
		{[]string{"-H", "X-Api-Key: abc123secret"}, []string{"-H", "X-Api-Key: REDACTED"}},
		{[]string{"-H", "x-api-key:abc123secret"}, []string{"-H", "x-api-key:REDACTED"}},
		{[]string{"--header=Authorization: Bearer abc123secret"}, []string{"--header=Authorization: REDACTED"}},
		{[]string{"--header", "Proxy-Authorization: Basic abc123secret"}, []string{"--header", "Proxy-Authorization: REDACTED"}},
		{[]string{"--header", "Cookie: sid=abc123secret"}, []string{"--header", "Cookie: REDACTED"}},
		{[]string{"--header", "X-Goog-Api-Key:abc123secret"}, []string{"--header", "X-Goog-Api-Key:REDACTED"}},
		{[]string{"-H=X-Auth-Token: abc123secret"}, []string{"-H=X-Auth-Token: REDACTED"}},
		// Headers, addresses and URLs without a secret are kept.
		{[]string{"--header", "Accept: text/event-stream", "localhost:8080", "--url=https://h:8443/mcp"},
			[]string{"--header", "Accept: text/event-stream", "localhost:8080", "--url=https://h:8443/mcp"}},
		// "--password=" has an empty value: the next argument is not its value.
		{[]string{"--password=", "positional"}, []string{"--password=", "positional"}},
	} {
		got := Args(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Args(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if strings.Contains(strings.Join(got, " "), "abc123secret") {
			t.Errorf("Args(%q) keeps the secret: %q", tc.in, got)
		}
	}
}

// FuzzRedact checks that a URL's password and query value, planted in arbitrary text, never come out of Text, and
// that Text does not panic on any input.
func FuzzRedact(f *testing.F) {
	f.Add("connect ", "example.com:8443", "/mcp", "token", "alice", "hunter2-pass", "s3cret-query-value", ": refused")
	f.Add(`Get "`, "127.0.0.1:9", "", "apikey", "u", "pw0rd-xyz", "v@lue/with?odd#chars", `": EOF`)
	f.Add("a://b", "h", "/@scope/pkg", "k", "user@x", "p:a:ss", "x=y&z", "https://")
	f.Add(`parse "`, "db", "/app", "sslmode", "agent", "pa#ssword", "disable", `": invalid port`)
	f.Add(`parse "`, "db:5432", "/app", "k", "agent", "pa/ss?wo#rd", "v", `": bad`)
	f.Add("", "h", "/@scope/pkg", "mail", "agent", "#secret-pass", "a@b.example", "")
	f.Fuzz(func(t *testing.T, prefix, host, path, key, user, password, value, suffix string) {
		_ = Text(prefix + host + path + key + user + password + value + suffix) // never panics
		checkUnescapedPassword(t, prefix, host, path, user, password, suffix)
		u := url.URL{Scheme: "https", Host: host, Path: path, User: url.UserPassword(user, password),
			RawQuery: url.Values{key: {value}}.Encode()}
		raw := u.String()
		if _, err := url.Parse(raw); err != nil || u.Host == "" || strings.ContainsAny(raw, " \t\r\n\"'`<>") {
			return // only well-formed URLs, which the characters that end a URL in text do not break, are promised
		}
		out := Text(prefix + raw + suffix)
		for _, secret := range []string{password, value} {
			for _, form := range []string{url.UserPassword("", secret).String(), url.QueryEscape(secret)} {
				form = strings.TrimPrefix(form, ":")
				if len(form) < 6 {
					continue // too short to tell from the rest of the text
				}
				rest := prefix + suffix + host + path + url.QueryEscape(key) + url.PathEscape(user) + Marker + u.EscapedPath()
				if strings.Contains(rest, form) || strings.Contains(form, Marker) {
					continue // the secret is also written elsewhere
				}
				if strings.Contains(out, form) {
					t.Fatalf("Text(%q) = %q keeps the secret %q", prefix+raw+suffix, out, form)
				}
			}
		}
	})
}

// checkUnescapedPassword checks that a password written into a URL without escaping (as a parse error quotes it)
// does not come out of Text, when it does not look like a port: it starts with something other than a digit.
func checkUnescapedPassword(t *testing.T, prefix, host, path, user, password, suffix string) {
	t.Helper()
	plain := func(s string, extra string) bool {
		for _, c := range s {
			if !isLetter(byte(c)) && (c < '0' || c > '9') && !strings.ContainsRune(extra, c) || c > 127 {
				return false
			}
		}
		return true
	}
	if len(password) < 6 || password[0] >= '0' && password[0] <= '9' || !plain(password, "#/?!$%&()*+,;=:-._~") ||
		user == "" || !plain(user, "-._") || host == "" || !plain(host, "-.") || !plain(path, "/-._~") ||
		!strings.HasPrefix(path, "/") && path != "" {
		return
	}
	raw := "https://" + user + ":" + password + "@" + host + path
	out := Text(prefix + " " + raw + " " + suffix)
	if strings.Contains(prefix+suffix+host+path+user+Marker, password) {
		return // the password is also written elsewhere
	}
	if strings.Contains(out, password) {
		t.Fatalf("Text(%q) = %q keeps the password %q", raw, out, password)
	}
}

func TestHandler(t *testing.T) {
	var b strings.Builder
	logger := slog.New(Handler(slog.NewTextHandler(&b, nil))).With("url", "https://u:with-attrs@h/")
	logger.WithGroup("g").Warn("dial https://u:in-message@h/ failed", "err", errors.New(`Get "http://h/?token=in-error"`),
		"target", "http://h/?k=in-string", "n", 3, slog.Group("sub", "u", "https://h/?k=in-group"), "any", []string{"http://h/?k=in-any"})
	out := b.String()
	for _, secret := range []string{"with-attrs", "in-message", "in-error", "in-string", "in-group", "in-any"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log line holds %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "n=3") || !strings.Contains(out, "token=REDACTED") {
		t.Errorf("the log line lost what it should keep:\n%s", out)
	}
}
