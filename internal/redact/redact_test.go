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

// FuzzRedact checks that a URL's password and query value, planted in arbitrary text, never come out of Text, and
// that Text does not panic on any input.
func FuzzRedact(f *testing.F) {
	f.Add("connect ", "example.com:8443", "/mcp", "token", "alice", "hunter2-pass", "s3cret-query-value", ": refused")
	f.Add(`Get "`, "127.0.0.1:9", "", "apikey", "u", "pw0rd-xyz", "v@lue/with?odd#chars", `": EOF`)
	f.Add("a://b", "h", "/@scope/pkg", "k", "user@x", "p:a:ss", "x=y&z", "https://")
	f.Fuzz(func(t *testing.T, prefix, host, path, key, user, password, value, suffix string) {
		_ = Text(prefix + host + path + key + user + password + value + suffix) // never panics
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
