// Command barestart is the slowstart server written on the standard library alone: an MCP stdio server that waits a
// given delay before it reads its first message, then serves the same two tools with the same schemas.
//
//	barestart [-delay 200ms]
//
// It exists for the start-up benchmark of mcpclients. A go-sdk binary spends about 6 ms of CPU on starting and
// exiting, before it serves anything; twenty of them starting at once on a small machine measure that cost more
// than the client's. This server starts in about a third of that, so the benchmark sees mostly the client.
//
// It speaks just enough of MCP for a client to connect, list and call tools, on protocol 2026-07-28
// (server/discover, subscriptions/listen) and on the earlier versions (initialize). Messages are newline-delimited
// JSON-RPC on stdin and stdout; it answers requests in order, one at a time, and exits when its stdin closes. A
// request it does not know gets a method-not-found error; a notification it does not know is ignored. It logs only
// failures, to stderr.
//
// Like slowstart, it imports no package of this project.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

func main() {
	delay := flag.Duration("delay", 200*time.Millisecond, "how long to wait before serving")
	flag.Parse()

	time.Sleep(*delay)
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "barestart:", err)
		os.Exit(1)
	}
}

// versions are the protocol versions the server speaks, newest first.
var versions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// serverInfo names the server in results. On 2026-07-28 it goes in every result's _meta, as serverInfoMeta.
const (
	serverInfo     = `{"name":"barestart","version":"1.0.0"}`
	serverInfoMeta = `{"io.modelcontextprotocol/serverInfo":` + serverInfo + `}`
)

// tools is the tools/list result's tools array: slowstart's tools, byte for byte.
const tools = `[` +
	`{"name":"add","description":"Adds two numbers.",` +
	`"inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false},` +
	`"outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"],"additionalProperties":false}},` +
	`{"name":"echo","description":"Returns the text it is given.",` +
	`"inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"the text to return"}},"required":["text"],"additionalProperties":false}}` +
	`]`

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// message is an incoming JSON-RPC message: a request when ID is set, a notification otherwise.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// rpcError is a JSON-RPC error, returned by a handler to answer its request with an error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// serve answers the messages read from in on out until in ends.
func serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	w := bufio.NewWriter(out)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if werr := handle(w, line); werr != nil {
				return fmt.Errorf("write: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
}

// handle answers one message and flushes what it wrote.
func handle(w *bufio.Writer, line []byte) error {
	var msg message
	if err := json.Unmarshal(line, &msg); err != nil {
		writeError(w, json.RawMessage("null"), &rpcError{codeParseError, "parse error: " + err.Error()})
		return w.Flush()
	}
	if msg.ID == nil {
		return nil // a notification: initialized, cancelled, ... need no answer
	}
	var result string
	var err error
	switch msg.Method {
	case "server/discover":
		result = `{"resultType":"complete","_meta":` + serverInfoMeta + `,"supportedVersions":` + mustJSON(versions) +
			`,"capabilities":{"tools":{"listChanged":true}}}`
	case "initialize":
		result, err = initialize(msg.Params)
	case "subscriptions/listen":
		// The subscription is acknowledged and then held open: the server never changes its tools, so the request
		// is never answered; the client cancels it when it closes.
		fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%s},"notifications":{"toolsListChanged":true}}}`+"\n", msg.ID)
		return w.Flush()
	case "ping":
		result = `{}`
	case "tools/list":
		result = `{"resultType":"complete","_meta":` + serverInfoMeta + `,"tools":` + tools + `}`
	case "tools/call":
		result, err = callTool(msg.Params)
	default:
		err = &rpcError{codeMethodNotFound, "method not found: " + msg.Method}
	}
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = &rpcError{codeInvalidParams, err.Error()}
		}
		writeError(w, msg.ID, re)
	} else {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result)
	}
	return w.Flush()
}

func writeError(w *bufio.Writer, id json.RawMessage, e *rpcError) {
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", id, mustJSON(e))
}

// initialize answers the handshake of protocols before 2026-07-28: the client's version when the server speaks it,
// the newest of those versions otherwise.
func initialize(params json.RawMessage) (string, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	v := p.ProtocolVersion
	if !slices.Contains(versions[1:], v) {
		v = versions[1]
	}
	return `{"protocolVersion":` + mustJSON(v) + `,"capabilities":{"tools":{"listChanged":true}},"serverInfo":` + serverInfo + `}`, nil
}

// callTool runs a tool. Arguments that do not decode are a tool error the model can read, as in slowstart; an
// unknown tool is a protocol error.
func callTool(params json.RawMessage) (string, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", fmt.Errorf("tools/call: %w", err)
	}
	switch p.Name {
	case "echo":
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(p.Arguments, &in); err != nil {
			return toolError(err), nil
		}
		return `{"content":[{"type":"text","text":` + mustJSON(in.Text) + `}]}`, nil
	case "add":
		var in struct {
			A float64 `json:"a"`
			B float64 `json:"b"`
		}
		if err := json.Unmarshal(p.Arguments, &in); err != nil {
			return toolError(err), nil
		}
		sum := strconv.FormatFloat(in.A+in.B, 'g', -1, 64)
		return `{"content":[{"type":"text","text":"` + sum + `"}],"structuredContent":{"sum":` + sum + `}}`, nil
	}
	return "", &rpcError{codeInvalidParams, "unknown tool: " + mustJSON(p.Name)}
}

func toolError(err error) string {
	return `{"isError":true,"content":[{"type":"text","text":` + mustJSON("invalid arguments: "+err.Error()) + `}]}`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
