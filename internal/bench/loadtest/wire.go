package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// wireProtocol is the protocol version the wire client asks for: the streamable HTTP transport, with progress
// notifications on the call's own event stream.
const wireProtocol = "2025-06-18"

// wireClient is a minimal MCP client over streamable HTTP, written against the wire format: initialize, the
// initialized notification, an optional standalone event stream, and tools/call with the response read from the
// call's event stream. It does what the go-sdk client does for a call, at a fraction of its CPU, so that the load
// generator leaves more of a small machine to the server it measures.
type wireClient struct {
	url           string
	hc            *http.Client
	session       string
	protocol      string
	nextID        atomic.Int64
	notifications *atomic.Int64

	// standalone is the GET event stream, when open; closing cancels it.
	standalone context.CancelFunc
	wg         sync.WaitGroup
}

// dialWire opens a session: initialize, then notifications/initialized, then the standalone stream unless noSSE.
func dialWire(ctx context.Context, url string, hc *http.Client, noSSE bool, notifications *atomic.Int64) (*wireClient, error) {
	c := &wireClient{url: url, hc: hc, protocol: wireProtocol, notifications: notifications}
	params := map[string]any{
		"protocolVersion": wireProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "agenthost-loadtest-wire", "version": "dev"},
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := c.request(ctx, "initialize", params, &res); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if res.ProtocolVersion == "" {
		return nil, errors.New("initialize: no protocol version in the result")
	}
	c.protocol = res.ProtocolVersion
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return nil, err
	}
	if !noSSE {
		if err := c.openStandalone(ctx); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// callTool calls a tool with arguments and an optional progress token, counts the progress notifications that
// arrive on the call's stream, and returns the result.
func (c *wireClient) callTool(ctx context.Context, name string, args any, progressToken string) (*toolResult, error) {
	params := map[string]any{"name": name, "arguments": args}
	if progressToken != "" {
		params["_meta"] = map[string]any{"progressToken": progressToken}
	}
	var res toolResult
	if err := c.request(ctx, "tools/call", params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// toolResult is the part of a CallToolResult the load tool checks.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// rpcMessage is any JSON-RPC message from the server: a response, a notification or a request.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// request sends one JSON-RPC request and decodes its result into out. The response may come as JSON or as an
// event stream that carries notifications before it.
func (c *wireClient) request(ctx context.Context, method string, params, out any) error {
	id := c.nextID.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	resp, err := c.post(ctx, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, bytes.TrimSpace(b))
	}
	if c.session == "" {
		c.session = resp.Header.Get("Mcp-Session-Id")
	}
	want := strconv.FormatInt(id, 10)
	handle := func(data []byte) (bool, error) {
		var msg rpcMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			return false, fmt.Errorf("%s: malformed message: %w", method, err)
		}
		switch {
		case msg.Method == "notifications/progress":
			c.notifications.Add(1)
			return false, nil
		case msg.Method != "":
			return false, nil // other notifications, and requests this client never declared it could answer
		case string(msg.ID) != want:
			return false, fmt.Errorf("%s: response to id %s, want %s", method, msg.ID, want)
		case msg.Error != nil:
			return true, fmt.Errorf("%s: error %d: %s", method, msg.Error.Code, msg.Error.Message)
		}
		return true, json.Unmarshal(msg.Result, out)
	}
	if resp.Header.Get("Content-Type") == "application/json" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		_, err = handle(b)
		return err
	}
	found := false
	err = readEvents(resp.Body, func(data []byte) (bool, error) {
		done, err := handle(data)
		found = done
		return done, err
	})
	if err == nil && !found {
		err = fmt.Errorf("%s: the event stream ended without a response", method)
	}
	return err
}

// notify sends a notification, which the server accepts with 202.
func (c *wireClient) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"`+method+`"}`))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: HTTP %s", method, resp.Status)
	}
	return nil
}

func (c *wireClient) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.setSessionHeaders(req)
	return c.hc.Do(req)
}

func (c *wireClient) setSessionHeaders(req *http.Request) {
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", c.protocol)
	}
}

// openStandalone opens the GET event stream on which a server sends what belongs to no request, and reads it in
// the background until close.
func (c *wireClient) openStandalone(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		cancel()
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	c.setSessionHeaders(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("standalone stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return fmt.Errorf("standalone stream: HTTP %s", resp.Status)
	}
	c.standalone = cancel
	c.wg.Go(func() {
		defer resp.Body.Close()
		_ = readEvents(resp.Body, func([]byte) (bool, error) { return false, nil })
	})
	return nil
}

// close ends the session: the standalone stream is closed and the session deleted.
func (c *wireClient) close() {
	if c.standalone != nil {
		c.standalone()
		c.wg.Wait()
	}
	if c.session == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	c.setSessionHeaders(req)
	if resp, err := c.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// readEvents calls fn with the data of each server-sent event in r until fn says it is done, fn fails or r ends.
func readEvents(r io.Reader, fn func(data []byte) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 16<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if len(data) == 0 {
				continue
			}
			done, err := fn(data)
			if done || err != nil {
				return err
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	return sc.Err()
}
