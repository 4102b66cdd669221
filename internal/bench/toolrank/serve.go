package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve is the subcommand `toolrank serve -dataset NAME [-data PATH]`: a stdio MCP server of one dataset's tools,
// which the measurement connects agenthost to. A call returns one text content naming the tool; it exits when its
// stdin closes.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolrank serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("dataset", "", "the dataset whose tools to serve: torchhub, tensorflowhub or huggingface")
	data := fs.String("data", defaultData, "the compact copy of APIBench")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := loadCorpus(*data)
	if err != nil {
		return err
	}
	var d *dataset
	for _, x := range c.Datasets {
		if x.Name == *name {
			d = x
		}
	}
	if d == nil {
		return fmt.Errorf("no dataset %q", *name)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "apibench-" + d.Name, Version: "1.0.0"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}})
	for _, t := range d.Tools {
		text := d.Name + "." + t.Name + " called"
		server.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
			})
	}
	err = server.Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, io.EOF) {
		return nil // stdin closed: a normal end
	}
	return err
}
