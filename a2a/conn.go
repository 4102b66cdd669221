package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/agenthost/agenthost/telemetry"
)

// maxResponseBytes bounds a JSON-RPC response read from a peer.
const maxResponseBytes = 64 << 20

// conn speaks JSON-RPC to a peer's chosen interface, in the interface's version. It is safe for concurrent use.
type conn struct {
	http   *http.Client
	ep     endpoint
	nextID atomic.Int64
	tel    *telemetry.Telemetry // nil: untraced
}

// methods are the method names of one version.
type methods struct{ send, stream, get, cancel string }

func (c *conn) methods() methods {
	if c.ep.Version == v03 {
		return methods{"message/send", "message/stream", "tasks/get", "tasks/cancel"}
	}
	return methods{"SendMessage", "SendStreamingMessage", "GetTask", "CancelTask"}
}

// sendParams returns the params of a send for m in the interface's version: blocking, as v0.3 needs said.
func (c *conn) sendParams(m message) any {
	if c.ep.Version == v03 {
		blocking := true
		return sendParamsV03{Message: messageToV03(m), Configuration: &sendConfigV03{AcceptedOutputModes: []string{}, Blocking: &blocking}}
	}
	return sendParams{Message: m, Configuration: &sendConfig{}, Tenant: c.ep.Tenant}
}

func (c *conn) taskParams(id string) any {
	return taskIDParams{ID: id, Tenant: c.ep.Tenant}
}

// send sends m and waits for the peer's reply: a Message, or a Task in whatever state the peer returned it.
func (c *conn) send(ctx context.Context, m message) (*streamResponse, error) {
	raw, err := c.call(ctx, c.methods().send, c.sendParams(m))
	if err != nil {
		return nil, err
	}
	res, err := c.decodeResult(raw)
	if err != nil {
		return nil, err
	}
	if res.Task == nil && res.Message == nil {
		return nil, newError(codeInvalidAgentResponse, "the reply to %s is neither a task nor a message", c.methods().send)
	}
	return res, nil
}

// getTask returns the task id as the peer has it now.
func (c *conn) getTask(ctx context.Context, id string) (*task, error) {
	return c.taskCall(ctx, c.methods().get, id)
}

// cancelTask asks the peer to cancel task id.
func (c *conn) cancelTask(ctx context.Context, id string) (*task, error) {
	return c.taskCall(ctx, c.methods().cancel, id)
}

func (c *conn) taskCall(ctx context.Context, method, id string) (*task, error) {
	raw, err := c.call(ctx, method, c.taskParams(id))
	if err != nil {
		return nil, err
	}
	if c.ep.Version == v03 {
		res, err := decodeV03(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if res.Task == nil {
			return nil, newError(codeInvalidAgentResponse, "the reply to %s is not a task", method)
		}
		return res.Task, nil
	}
	var t task
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return &t, nil
}

// decodeResult reads a send's result or a stream's event in the interface's version.
func (c *conn) decodeResult(raw json.RawMessage) (*streamResponse, error) {
	if c.ep.Version == v03 {
		return decodeV03(raw)
	}
	var res streamResponse
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if res.empty() {
		// Tolerate a peer that returns the bare Task, as GetTask does.
		var t task
		if json.Unmarshal(raw, &t) == nil && t.ID != "" && t.Status.State != "" {
			res.Task = &t
		}
	}
	return &res, nil
}

// stream sends m with the streaming method and hands each event to on, until on says stop, the stream ends, or
// ctx ends. An error before any event (a JSON-RPC error, an HTTP error) is returned as such.
func (c *conn) stream(ctx context.Context, m message, on func(*streamResponse) bool) (err error) {
	method := c.methods().stream
	if c.tel != nil {
		var end func(error)
		ctx, end = c.tel.StartA2AClient(ctx, method, c.ep.Version.String(), c.ep.URL)
		defer func() { end(err) }()
	}
	resp, err := c.post(ctx, method, c.sendParams(m), true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		_, err := c.readResponse(resp)
		if err == nil {
			err = newError(codeInvalidAgentResponse, "%s answered %q instead of an event stream", method, resp.Header.Get("Content-Type"))
		}
		return err
	}
	r := newSSEReader(resp.Body)
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: reading the stream: %w", method, err)
		}
		var rr rpcResponse
		if err := json.Unmarshal(ev.Data, &rr); err != nil {
			return fmt.Errorf("%s: an event is not a JSON-RPC response: %w", method, err)
		}
		if rr.Error != nil {
			return rr.Error
		}
		if ev.Type == "error" {
			return newError(codeInternal, "the peer sent an error event without an error")
		}
		res, err := c.decodeResult(rr.Result)
		if err != nil {
			return fmt.Errorf("%s: event: %w", method, err)
		}
		if res.empty() {
			continue // an event of a kind this client does not know
		}
		if !on(res) {
			return nil
		}
	}
}

// call makes one JSON-RPC call and returns its result, or the peer's error as an *rpcError.
func (c *conn) call(ctx context.Context, method string, params any) (_ json.RawMessage, err error) {
	if c.tel != nil {
		var end func(error)
		ctx, end = c.tel.StartA2AClient(ctx, method, c.ep.Version.String(), c.ep.URL)
		defer func() { end(err) }()
	}
	resp, err := c.post(ctx, method, params, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return c.readResponse(resp)
}

// readResponse reads a JSON-RPC response. A peer that answers an HTTP error with a JSON-RPC error body (as the JS
// SDK does for internal errors) gets its error reported; any other HTTP error is reported with its status.
func (c *conn) readResponse(resp *http.Response) (json.RawMessage, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("the response is larger than %d bytes", maxResponseBytes)
	}
	var rr rpcResponse
	jsonErr := json.Unmarshal(body, &rr)
	switch {
	case jsonErr == nil && rr.Error != nil:
		return nil, rr.Error
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("HTTP %s: %s", resp.Status, excerpt(body))
	case jsonErr != nil:
		return nil, newError(codeInvalidAgentResponse, "the response is not JSON-RPC: %v", jsonErr)
	case rr.Result == nil:
		return nil, newError(codeInvalidAgentResponse, "the response has neither result nor error")
	}
	return rr.Result, nil
}

// post sends one JSON-RPC request with A2A-Version and Content-Type: application/json; the client adds the
// configured headers when the endpoint is at the peer's origin.
func (c *conn) post(ctx context.Context, method string, params any, stream bool) (*http.Response, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10)), Method: method, Params: p})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ep.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	setVersion(req, c.ep.Version)
	c.tel.InjectHTTP(ctx, req.Header)
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return resp, nil
}

// setVersion puts the protocol version on req.
func setVersion(req *http.Request, v version) {
	req.Header.Set("A2A-Version", v.String())
}

// excerpt returns the start of an error body, on one line.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
