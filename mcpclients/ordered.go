package mcpclients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's client hands a response to its caller as soon as it reads it, but runs notification handlers on another
// goroutine: a progress notification that a server sends just before its result can reach its handler after the call
// has returned, when nobody listens any more. So progress notifications are relayed where the messages are read, in
// the server's order, each before the messages after it go on to the SDK (which then ignores them: it has no
// progress handler):
//   - stdio: progressFirst wraps the transport's connection, whose Read the SDK calls for each message in turn;
//   - HTTP: progressStreams wraps the body of each SSE response, which the SDK reads event by event. (The streamable
//     transport's connection cannot be wrapped: the SDK looks on it for methods of its own.)
// Relaying runs on the reader, so what receives the progress must not wait for this server (the run's events, where
// it goes, do not).

// Log messages (notifications/message) that come during a call are relayed the same way, for the same reason.

// The methods relayed in order.
const (
	progressMethod = "notifications/progress"
	logMethod      = "notifications/message"
)

// relayers receive the notifications relayed in order: progress, and log messages.
type relayers struct {
	progress func(*mcp.ProgressNotificationParams)
	log      func(*mcp.LoggingMessageParams)
}

// relay passes msg to its relayer when it is a notification relayed in order.
func (r relayers) relay(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return
	}
	switch req.Method {
	case progressMethod:
		var p mcp.ProgressNotificationParams
		if err := json.Unmarshal(req.Params, &p); err == nil && p.ProgressToken != nil {
			r.progress(&p)
		}
	case logMethod:
		var p mcp.LoggingMessageParams
		if err := json.Unmarshal(req.Params, &p); err == nil {
			r.log(&p)
		}
	}
}

// progressFirst wraps a transport so that its connections relay progress notifications (and log messages) as they
// are read.
type progressFirst struct {
	mcp.Transport
	relay relayers
}

func (t *progressFirst) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &progressFirstConn{Connection: conn, relay: t.relay}, nil
}

type progressFirstConn struct {
	mcp.Connection
	relay relayers
}

func (c *progressFirstConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.relay.relay(msg)
	}
	return msg, err
}

// progressStreams is an http.RoundTripper whose SSE responses relay the progress notifications they carry as each
// event is read, before any byte of the next event is handed on.
type progressStreams struct {
	base  http.RoundTripper
	relay relayers
}

func (t *progressStreams) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp.Body = &progressBody{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10), relay: t.relay}
	}
	return resp, nil
}

// progressBody passes an SSE stream through unchanged, a line at a time, and relays each progress notification when
// the blank line that ends its event has been read.
type progressBody struct {
	body  io.ReadCloser
	r     *bufio.Reader
	relay relayers
	out   []byte // read but not yet handed on
	data  []byte // the data of the event being read
}

func (b *progressBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		line, err := b.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			b.out = append(b.out, line...) // a long line: handed on in pieces, read as data below when whole
			b.data = nil
			continue
		}
		b.out = append(b.out, line...)
		field := bytes.TrimRight(line, "\r\n")
		switch {
		case len(field) == 0 && len(line) > 0: // the end of an event
			if msg, err := jsonrpc.DecodeMessage(b.data); err == nil {
				b.relay.relay(msg)
			}
			b.data = b.data[:0]
		case bytes.HasPrefix(field, []byte("data:")):
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, bytes.TrimPrefix(bytes.TrimPrefix(field, []byte("data:")), []byte(" "))...)
		}
		if err != nil {
			if len(b.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *progressBody) Close() error { return b.body.Close() }
