// Command slowstart is an MCP stdio server for benchmarks and tests: it sets itself up, then waits a given delay
// before it reads its first message, as a server does that loads something at start-up, then serves a few cheap
// tools.
//
//	slowstart [-delay 200ms]
//
// Tools:
//   - echo {text}: returns text.
//   - add {a, b}: returns a+b as text and as structured content.
//
// It exits when its stdin closes. SIGINT and SIGTERM end it with the default action: it holds nothing that needs
// cleaning up. It logs only failures, to stderr; stdout is the MCP channel.
//
// It imports the standard library and the MCP SDK only, and no package of this project: it stands for a server
// that agenthost knows nothing about. It is written as a small server lean at start-up would be: its tools' schemas
// are written out as JSON rather than inferred from Go types by reflection, and its handlers decode their own
// arguments. The schemas are the ones the SDK would infer from the argument types, so clients see the same tools.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	delay := flag.Duration("delay", 200*time.Millisecond, "how long to wait before serving")
	flag.Parse()

	if err := run(context.Background(), *delay, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "slowstart:", err)
		os.Exit(1)
	}
}

var (
	echoTool = &mcp.Tool{
		Name:        "echo",
		Description: "Returns the text it is given.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the text to return"}},"required":["text"],"additionalProperties":false}`),
	}
	addTool = &mcp.Tool{
		Name:         "add",
		Description:  "Adds two numbers.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"],"additionalProperties":false}`),
	}
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in echoIn
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return badArguments(err), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
}

func add(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in addIn
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return badArguments(err), nil
	}
	sum := in.A + in.B
	text := strconv.FormatFloat(sum, 'g', -1, 64)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: addOut{Sum: sum}}, nil
}

// badArguments is the result of a call whose arguments do not decode: a tool error the model can read, as the SDK's
// typed handlers return it.
func badArguments(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "invalid arguments: " + err.Error()}}}
}

// run sets the server up, waits delay, then serves t until the client leaves.
func run(ctx context.Context, delay time.Duration, t mcp.Transport) error {
	server := mcp.NewServer(&mcp.Implementation{Name: "slowstart", Version: "1.0.0"}, nil)
	server.AddTool(echoTool, echo)
	server.AddTool(addTool, add)

	// The server is set up first: the delay stands for all of a slow server's start-up, after which it only has
	// to answer. The client's first messages wait in the pipe meanwhile, so connecting takes at least the delay.
	time.Sleep(delay)

	err := server.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) {
		return nil // stdin closed: a normal end
	}
	return fmt.Errorf("serve: %w", err)
}
