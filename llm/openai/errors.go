package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// maxErrorBody bounds how much of an error response is read, and maxMessage how much of it an error carries.
const (
	maxErrorBody = 64 << 10
	maxMessage   = 500
)

// statusError is an HTTP error status from the provider, with the provider's own message.
type statusError struct {
	code       int
	message    string
	retryAfter time.Duration // valid when hasRetryAfter
	hasRetry   bool
	noRetry    bool // the server said x-should-retry: false
}

func (e *statusError) Error() string {
	s := strconv.Itoa(e.code)
	if text := http.StatusText(e.code); text != "" {
		s += " " + text
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

// checkResponse turns an error status into a statusError, so that errors read the same whatever shape of error body
// a server uses, and rejects a non-streamed answer. It closes the body of a response it rejects.
func (m *Model) checkResponse(res *http.Response) (*http.Response, error) {
	if res.StatusCode >= 400 {
		return nil, m.statusError(res)
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		_ = res.Body.Close()
		return nil, errors.New("the server answered with a JSON body instead of an event stream")
	}
	return res, nil
}

// statusError reads res's error body, closes it, and returns the error of its status.
func (m *Model) statusError(res *http.Response) *statusError {
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	e := &statusError{code: res.StatusCode, message: providerMessage(body)}
	if m.apiKey != "" {
		e.message = strings.ReplaceAll(e.message, m.apiKey, "[redacted]")
	}
	e.retryAfter, e.hasRetry = parseRetryAfter(res.Header, time.Now())
	e.noRetry = strings.EqualFold(res.Header.Get("X-Should-Retry"), "false")
	return e
}

// StatusCode is the HTTP status of the API's answer that err reports, or 0 when err is no such answer (the
// server could not be reached, say).
func StatusCode(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return 0
}

// providerMessage extracts the human-readable message from an error body. Servers disagree on its shape:
// {"error":{"message":...}} (OpenAI, Ollama), {"error":"..."}, {"message":...} (vLLM), {"detail":...}
// (FastAPI-based servers), or plain text from a proxy.
func providerMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		if raw, ok := obj["error"]; ok {
			var nested struct {
				Message string `json:"message"`
			}
			var s string
			switch {
			case json.Unmarshal(raw, &s) == nil && s != "":
				return clip(s)
			case json.Unmarshal(raw, &nested) == nil && nested.Message != "":
				return clip(nested.Message)
			}
		}
		for _, key := range []string{"message", "detail"} {
			var s string
			if json.Unmarshal(obj[key], &s) == nil && s != "" {
				return clip(s)
			}
		}
		if raw, ok := obj["detail"]; ok {
			return clip(string(raw)) // FastAPI validation errors: a JSON array
		}
		return clip(string(body))
	}
	return clip(string(body))
}

// clip makes s one line of at most maxMessage bytes, cut on a rune boundary.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// parseRetryAfter reads Retry-After-Ms (milliseconds, as OpenAI sends) or Retry-After (seconds or an HTTP date).
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(time.Hour/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > float64(time.Hour/time.Second) {
			return time.Hour, true // longer than anyone waits; keeps the conversion from overflowing
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryDelay says whether err may be retried after retry earlier retries, and after how long.
func (m *Model) retryDelay(err error, retry int) (time.Duration, bool) {
	if retry >= m.maxRetries || !retryable(err) {
		return 0, false
	}
	var se *statusError
	if errors.As(err, &se) && se.hasRetry {
		if se.retryAfter > maxRetryAfter {
			return 0, false
		}
		return se.retryAfter, true
	}
	d := m.backoff << min(retry, 16)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	if jitter := int64(d / 4); jitter > 0 {
		d -= time.Duration(rand.Int64N(jitter))
	}
	return d, true
}

// retryable reports whether err is a transient failure: a 408, 429 or 5xx status, or a connection that failed
// or broke. Cancellation, idle timeouts and malformed answers are not.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		if se.noRetry {
			return false
		}
		return se.code == http.StatusRequestTimeout || se.code == http.StatusTooManyRequests || se.code >= 500
	}
	var idle *idleError
	if errors.As(err, &idle) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}
