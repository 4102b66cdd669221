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
// It exits when its stdin closes, or on SIGINT or SIGTERM. It logs only failures, to stderr; stdout is the MCP
// channel.
//
// It imports the standard library and the MCP SDK only, and no package of this project: it stands for a server
// that agenthost knows nothing about.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	delay := flag.Duration("delay", 200*time.Millisecond, "how long to wait before serving")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "slowstart:", err)
		stop()
		os.Exit(1)
	}
}

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

func run(ctx context.Context, delay time.Duration) error {
	server := mcp.NewServer(&mcp.Implementation{Name: "slowstart", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns the text it is given."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			sum := in.A + in.B
			text := strconv.FormatFloat(sum, 'g', -1, 64)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, addOut{Sum: sum}, nil
		})

	// The server is set up first: the delay stands for all of a slow server's start-up, after which it only has
	// to answer. The client's first messages wait in the pipe meanwhile, so connecting takes at least the delay.
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(delay):
	}

	err := server.Run(ctx, &mcp.StdioTransport{})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil // stdin closed or asked to stop: a normal end
	}
	return fmt.Errorf("serve: %w", err)
}
