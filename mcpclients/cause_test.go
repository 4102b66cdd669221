package mcpclients

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// A server that fails at start is shown with its root cause and what to do, and a stdio server's last stderr lines.
func TestFailedServerCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(unauthorized.Close)
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(forbidden.Close)
	release := make(chan struct{})
	hangs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hangs.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees the handlers

	dies := selfServer(t, "dies", "dies")
	configs := []ServerConfig{
		dies,
		{Name: "refused", Transport: TransportHTTP, URL: "http://" + closed + "/mcp"},
		{Name: "unauthorized", Transport: TransportHTTP, URL: unauthorized.URL + "/mcp"},
		{Name: "forbidden", Transport: TransportHTTP, URL: forbidden.URL + "/mcp"},
		{Name: "hangs", Transport: TransportHTTP, URL: hangs.URL + "/mcp", ConnectTimeout: 500 * time.Millisecond},
		{Name: "missing", Transport: TransportStdio, Command: "no-such-agenthost-test-command"},
	}
	c, err := Connect(t.Context(), configs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	want := map[string]string{
		"dies":         "the server exited before it answered; its last lines on stderr say why",
		"refused":      "connection refused: nothing listens at " + closed + "; start the server, or correct url",
		"unauthorized": "401 Unauthorized: " + strings.TrimPrefix(unauthorized.URL, "http://") + " wants credentials; set its token in headers, or, if it uses OAuth, run `agenthost mcp login unauthorized`",
		"forbidden":    "403 Forbidden: ",
		"hangs":        "timed out: " + strings.TrimPrefix(hangs.URL, "http://") + " did not answer within connect_timeout (500ms)",
		"missing":      `command "no-such-agenthost-test-command" not found: install it, or give its full path in command`,
	}
	for _, st := range c.Status() {
		if st.State != StateFailed || !strings.HasPrefix(st.Cause, want[st.Name]) {
			t.Errorf("%s: state %s, error %q, cause %q; want the cause to begin %q", st.Name, st.State, st.Error, st.Cause, want[st.Name])
		}
		if st.Name != "dies" && len(st.Stderr) != 0 {
			t.Errorf("%s: stderr %q, want none", st.Name, st.Stderr)
		}
	}
	st := c.Status()[0]
	wantTail := []string{
		"starting, step 5", "starting, step 6", "starting, step 7",
		"see https://REDACTED@example.com/help?token=REDACTED",
		"docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
	}
	if !slices.Equal(st.Stderr, wantTail) {
		t.Errorf("dies: stderr\n%q\nwant the last five lines, redacted\n%q", st.Stderr, wantTail)
	}

	// A required server's error says the same.
	dies.Required = true
	_, err = Connect(t.Context(), []ServerConfig{dies}, nil)
	if err == nil || !strings.Contains(err.Error(), "\n  the server exited before it answered") || !strings.Contains(err.Error(), "\n    docker: Cannot connect to the Docker daemon") {
		t.Errorf("Connect with the required server = %v", err)
	}
}

func TestStderrTailIsBounded(t *testing.T) {
	l := newLineLogger(slog.New(slog.DiscardHandler), "stderr")
	long := strings.Repeat("é", tailLineBytes)
	for range 3 {
		if _, err := l.Write([]byte(long + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range l.Tail() {
		if len(line) > tailLineBytes+len("…") || !strings.HasSuffix(line, "…") {
			t.Errorf("line of %d bytes: %q", len(line), line)
		}
	}
}

// TestStderrTailKeepsNoPassword: a password in a URL stays out of the tail when the line is cut inside the URL's
// userinfo, and when the line is not finished yet (the "@" may still come).
func TestStderrTailKeepsNoPassword(t *testing.T) {
	l := newLineLogger(slog.New(slog.DiscardHandler), "stderr")
	pad := strings.Repeat("x", tailLineBytes-30)
	if _, err := l.Write([]byte(pad + " postgres://admin:SuperSecretPassword@db/app\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("connecting to postgres://admin:SuperSec")); err != nil {
		t.Fatal(err)
	}
	tail := l.Tail()
	if len(tail) != 2 {
		t.Fatalf("tail %q, want 2 lines", tail)
	}
	for _, line := range tail {
		if strings.Contains(line, "SuperSec") || strings.Contains(line, "Super") {
			t.Errorf("a password reaches the tail: %q", line)
		}
	}
	if !strings.HasPrefix(tail[1], "connecting to ") {
		t.Errorf("the unfinished line lost more than its URL: %q", tail[1])
	}
}
