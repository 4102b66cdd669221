package mcpclients

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/origin"
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
		cmd.Stderr = newLineLogger(s.logger, "stderr") // s.logger is tagged with the server's name
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

// lineLogger is an io.Writer that logs each complete line it is given.
type lineLogger struct {
	mu     sync.Mutex
	logger *slog.Logger
	stream string
	buf    []byte
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
	}
}

var _ io.Writer = (*lineLogger)(nil)
