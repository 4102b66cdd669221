package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestProviderMessage(t *testing.T) {
	long := strings.Repeat("é", 400)
	tests := []struct {
		name string
		body string
		want string
	}{
		{"openai", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Rate limit reached"},
		{"error string", `{"error":"model 'x' not found"}`, "model 'x' not found"},
		{"vllm", `{"object":"error","message":"max_tokens too large","type":"BadRequestError","code":400}`, "max_tokens too large"},
		{"fastapi detail string", `{"detail":"Not Found"}`, "Not Found"},
		{"fastapi detail list", `{"detail":[{"loc":["body"],"msg":"field required"}]}`, `[{"loc":["body"],"msg":"field required"}]`},
		{"error object without message", `{"error":{"code":42}}`, `{"error":{"code":42}}`},
		{"plain text on lines", "upstream connect error\n  or disconnect\n", "upstream connect error or disconnect"},
		{"empty", "", ""},
		{"long text clipped on a rune", long, strings.Repeat("é", 250) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := providerMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("providerMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzProviderMessage(f *testing.F) {
	for _, seed := range []string{
		`{"error":{"message":"x"}}`, `{"error":"x"}`, `{"message":"x"}`, `{"detail":[1]}`, "plain", "", `{"error":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg := providerMessage(body)
		if len(msg) > maxMessage+len("…") {
			t.Errorf("message of %d bytes, want at most %d", len(msg), maxMessage)
		}
		if strings.ContainsAny(msg, "\n\r\t") {
			t.Errorf("message spans lines: %q", msg)
		}
		if utf8.Valid(body) && !utf8.ValidString(msg) {
			t.Errorf("valid UTF-8 in, invalid out: %q", msg)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		wantOK  bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"milliseconds win", map[string]string{"Retry-After": "3", "Retry-After-Ms": "120"}, 120 * time.Millisecond, true},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "Retry-After-Ms": "soon"}, 2 * time.Second, true},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"huge", map[string]string{"Retry-After": "1e300"}, time.Hour, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, ok := parseRetryAfter(h, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter = %s, %v; want %s, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	m := &Model{maxRetries: 5, backoff: 100 * time.Millisecond}
	connErr := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	tests := []struct {
		name     string
		err      error
		retry    int
		min, max time.Duration
		ok       bool
	}{
		{"429 with Retry-After", &statusError{code: 429, retryAfter: 2 * time.Second, hasRetry: true}, 0, 2 * time.Second, 2 * time.Second, true},
		{"429 Retry-After too long", &statusError{code: 429, retryAfter: 2 * time.Minute, hasRetry: true}, 0, 0, 0, false},
		{"500 first backoff", &statusError{code: 500}, 0, 75 * time.Millisecond, 100 * time.Millisecond, true},
		{"500 third backoff", &statusError{code: 500}, 2, 300 * time.Millisecond, 400 * time.Millisecond, true},
		{"backoff capped", &statusError{code: 503}, 4, 0, maxBackoff, true},
		{"out of retries", &statusError{code: 500}, 5, 0, 0, false},
		{"408", &statusError{code: 408}, 0, 0, time.Second, true},
		{"x-should-retry false", &statusError{code: 500, noRetry: true}, 0, 0, 0, false},
		{"404", &statusError{code: 404}, 0, 0, 0, false},
		{"connection refused", connErr, 0, 0, time.Second, true},
		{"connection broken", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), 0, 0, time.Second, true},
		{"canceled", &url.Error{Op: "Post", URL: "http://x", Err: context.Canceled}, 0, 0, 0, false},
		{"idle", &idleError{idle: time.Second}, 0, 0, 0, false},
		{"malformed answer", errors.New("the stream ended without any chunk"), 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := m.retryDelay(tt.err, tt.retry)
			if ok != tt.ok || (ok && (d < tt.min || d > tt.max)) {
				t.Errorf("retryDelay = %s, %v; want %v within [%s, %s]", d, ok, tt.ok, tt.min, tt.max)
			}
		})
	}
}

func TestStatusErrorText(t *testing.T) {
	tests := []struct {
		err  *statusError
		want string
	}{
		{&statusError{code: 429, message: "rate limited"}, "429 Too Many Requests: rate limited"},
		{&statusError{code: 500}, "500 Internal Server Error"},
		{&statusError{code: 599, message: "odd"}, "599: odd"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
