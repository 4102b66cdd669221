package mcpclients

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/origin"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/mcpauth"
)

// transport makes a new connection to the server each time it is called: a fresh child process for stdio.
func (s *Server) transport(ctx context.Context) (mcp.Transport, *exec.Cmd, error) {
	c := s.cfg
	if s.opts.dial != nil {
		t, err := s.opts.dial(c)
		return t, nil, err
	}
	switch c.Transport {
	case TransportStdio:
		cmd := exec.Command(c.Command, c.Args...)
		cmd.Dir = c.Cwd
		cmd.Env = childEnv(os.Environ(), c.EnvPassthrough, c.Env)
		// The child's stderr is its log: it goes to ours, line by line and tagged, never to stdout (which may be
		// agenthost's own MCP channel).
		stderr := newLineLogger(s.logger, "stderr") // s.logger is tagged with the server's name
		cmd.Stderr = stderr
		s.mu.Lock()
		s.stderr = stderr // its last lines say why the child failed, when it does
		s.mu.Unlock()
		ownProcessGroup(cmd)
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateDuration}, cmd, nil
	case TransportHTTP, TransportSSE:
		var h auth.OAuthHandler
		if c.OAuth != nil {
			var err error
			if h, err = c.OAuth(ctx); err != nil {
				return nil, nil, err
			}
		}
		client := s.httpClient()
		if c.Transport == TransportHTTP {
			return &mcp.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client, MaxRetries: streamRetries, OAuthHandler: h}, nil, nil
		}
		if h != nil {
			// The legacy transport takes no OAuth handler: its requests go through one.
			authorized := *client
			authorized.Transport = &mcpauth.RoundTripper{Handler: h, URL: c.URL, Base: client.Transport}
			client = &authorized
		}
		return &mcp.SSEClientTransport{Endpoint: c.URL, HTTPClient: client}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", c.Transport)
}

// streamRetries is how many times the SDK tries to resume an SSE stream that ended before its response came: a GET
// with Last-Event-ID, after the delay the server set with its retry field (SEP-1699) or 1 to 3 seconds of backoff.
// Resuming keeps a call alive when a server ends its stream early, as the spec lets it. Beyond these attempts the SDK
// ends the session, within about 5 seconds of a server going away, and the supervisor's reconnection takes over
// with a new session.
const streamRetries = 2

// terminateDuration is how long a stdio server has to exit after its stdin is closed, before it is signalled.
const terminateDuration = 2 * time.Second

// httpClient returns the client of the server's HTTP transports: it adds the configured headers, and relays the
// progress notifications of SSE streams as they are read (see progressStreams). The configured headers and the
// OAuth token go only to the configured URL's origin: a redirect to another origin is refused, and a request sent
// elsewhere all the same (to the message endpoint an SSE server named, say) goes without them.
func (s *Server) httpClient() *http.Client {
	o, err := origin.Parse(s.cfg.URL)
	if err != nil {
		o = origin.Origin{} // no request has it: the headers go nowhere, and the SDK reports the URL
	}
	rt := &origin.Transport{Origin: o, Header: s.cfg.Headers, Base: http.DefaultTransport}
	return &http.Client{Transport: &progressStreams{base: rt, relay: s.relayers()}, CheckRedirect: origin.CheckRedirect(o)}
}

// lineLogger is an io.Writer that logs each complete line it is given, and keeps the last few: a server that
// fails at start says why there, and the last lines are shown with its status.
type lineLogger struct {
	mu     sync.Mutex
	logger *slog.Logger
	stream string
	buf    []byte
	tail   []string // the last tailLines lines, each at most tailLineBytes
}

// The child's last stderr lines kept for its status: a few, each cut to a line of a screen's width or two.
const (
	tailLines     = 5
	tailLineBytes = 300
)

// Tail returns the last lines written, the unfinished one included, redacted (redact.Text), oldest first.
func (l *lineLogger) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := slices.Clone(l.tail)
	if text := strings.TrimSpace(string(l.buf)); text != "" {
		lines = append(lines, clipLine(redact.Text(withoutOpenURL(text))))
		if len(lines) > tailLines {
			lines = lines[1:]
		}
	}
	return lines
}

// withoutOpenURL drops the last word of an unfinished line when it is a URL: its userinfo may still be coming, and
// redaction cannot tell a password from a host before the "@".
func withoutOpenURL(s string) string {
	i := strings.LastIndexAny(s, " \t") + 1
	if strings.Contains(s[i:], "://") {
		return s[:i] + "…"
	}
	return s
}

// clipLine cuts s to tailLineBytes, on a rune boundary.
func clipLine(s string) string {
	if len(s) <= tailLineBytes {
		return s
	}
	cut := tailLineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func newLineLogger(logger *slog.Logger, stream string) *lineLogger {
	return &lineLogger{logger: logger, stream: stream}
}

const maxLogLine = 8 << 10

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			if len(l.buf) > maxLogLine { // a runaway line is logged in pieces, not kept
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) emit(line []byte) {
	if text := strings.TrimRight(string(line), "\r"); text != "" {
		l.logger.Info(text, "stream", l.stream)
		if strings.TrimSpace(text) != "" {
			// Redacted whole, then cut: a cut inside a URL's userinfo would hide the "@" redaction looks for.
			l.tail = append(l.tail, clipLine(redact.Text(strings.TrimSpace(text))))
			if len(l.tail) > tailLines {
				l.tail = slices.Delete(l.tail, 0, len(l.tail)-tailLines)
			}
		}
	}
}

var _ io.Writer = (*lineLogger)(nil)
