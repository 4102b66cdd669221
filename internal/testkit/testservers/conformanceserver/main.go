// Command conformanceserver is an MCP server with the surface that the official conformance suite expects of a
// server in its server mode: the test_* tools, resources, prompts, completion and logging, with the payloads the
// suite's scenarios describe. agenthost's gateway mode is tested by putting it between the suite and this server.
//
// Test support: a fixture for the tests of cmd/agenthost and the conformance runs of BENCHMARKS.md.
//
//	conformanceserver              serve over stdio
//	conformanceserver -http ADDR   serve streamable HTTP at http://ADDR/mcp (the suite run against it directly)
//
// Tools: test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
// test_multiple_content_types, test_tool_with_logging, test_tool_with_progress, test_error_handling,
// test_sampling {prompt}, test_elicitation {message}, test_elicitation_sep1034_defaults,
// test_elicitation_sep1330_enums and json_schema_2020_12_tool. Resources: test://static-text, test://static-binary,
// test://watched-resource (subscribable) and the template test://template/{id}/data. Prompts: test_simple_prompt,
// test_prompt_with_arguments {arg1, arg2}, test_prompt_with_embedded_resource {resourceUri} and
// test_prompt_with_image. Completion answers for the argument arg1.
//
// It exits when its stdin closes (stdio) or on SIGINT or SIGTERM. It writes to stderr only failures and, over
// HTTP, the line "conformanceserver: serving MCP at http://ADDR/mcp"; in stdio mode stdout is the MCP channel.
//
// It imports the standard library and the MCP SDK only, and no package of this project: it stands for a server that
// agenthost knows nothing about.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on `ADDR` instead of stdio")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "conformanceserver:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string) error {
	server := newServer()
	if addr == "" {
		err := server.Run(ctx, &mcp.StdioTransport{})
		if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil // stdin closed or asked to stop: a normal end
		}
		return fmt.Errorf("serve: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "conformanceserver: serving MCP at http://%s/mcp\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "conformanceserver", Version: "1.0.0"}, &mcp.ServerOptions{
		CompletionHandler:  complete,
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	addTools(s)
	addResources(s)
	addPrompts(s)
	return s
}

// Payloads, as the suite's scenarios describe them.
var (
	redPixel = pngPixel()
	tone     = wavTone()
)

// pngPixel is a 1x1 red PNG.
func pngPixel() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // encoding into memory cannot fail
	return buf.Bytes()
}

// wavTone is a short mono 8 kHz 8-bit WAV file of silence.
func wavTone() []byte {
	const rate, samples = 8000, 80
	var buf bytes.Buffer
	buf.WriteString("RIFF")
	_ = binary.Write(&buf, binary.LittleEndian, uint32(36+samples))
	buf.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate), uint16(1), uint16(8)} {
		_ = binary.Write(&buf, binary.LittleEndian, v)
	}
	buf.WriteString("data")
	_ = binary.Write(&buf, binary.LittleEndian, uint32(samples))
	buf.Write(bytes.Repeat([]byte{128}, samples))
	return buf.Bytes()
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	r := text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// noArgs is the input schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

func addTools(s *mcp.Server) {
	add := func(name, desc string, schema json.RawMessage, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	add("test_simple_text", "Returns simple text content.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("This is a simple text response for testing."), nil
	})
	add("test_image_content", "Returns image content.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", "Returns audio content.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: tone, MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", "Returns an embedded resource.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}, nil
	})
	add("test_multiple_content_types", "Returns text, an image and an embedded resource.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}},
		}}, nil
	})
	add("test_tool_with_logging", "Sends three log messages while it runs.", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformanceserver", Data: msg}); err != nil {
				return nil, err
			}
		}
		return text("Tool with logging executed successfully"), nil
	})
	add("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			if token == nil {
				continue
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100}); err != nil {
				return nil, err
			}
		}
		return text("Tool with progress executed successfully"), nil
	})
	add("test_error_handling", "Always fails.", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return errorResult("This tool intentionally returns an error for testing"), nil
	})
	add("test_sampling", "Asks the client's model to answer a prompt.",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		sampleTool)
	add("test_elicitation", "Asks the user for a username and an email address.",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return errorResult("invalid arguments: %v", err), nil
			}
			return elicit(req, "User response", in.Message, elicitUser)
		})
	add("test_elicitation_sep1034_defaults", "Asks for input with a default for every primitive type.", noArgs, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(req, "Elicitation completed", "Please review and update the form fields with defaults", elicitDefaults)
	})
	add("test_elicitation_sep1330_enums", "Asks for input with every kind of enum.", noArgs, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(req, "Elicitation completed", "Please select options from the enum fields", elicitEnums)
	})
	add("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
		"additionalProperties": false
	}`), func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("Received: " + string(req.Params.Arguments)), nil
	})
}

// Tools that need the client's model or the user ask in the multi round-trip way (SEP-2322): the handler returns
// InputRequests, and is called again with the answers in InputResponses. The SDK forbids a request to the client in
// the middle of a call on protocol 2026-07-28; with a client on an older version it sends the requests itself
// (sampling/createMessage, elicitation/create) and calls the handler again, so both kinds of client are served.

// inputKey names the one input request of a call.
const inputKey = "input"

func sampleTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
		return errorResult("invalid arguments: %v", err), nil
	}
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil {
		return errorResult("the client does not support sampling"), nil
	}
	switch res := req.Params.InputResponses[inputKey].(type) {
	case nil:
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputKey: &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
			MaxTokens: 100,
		}}}, nil
	case *mcp.CreateMessageWithToolsResult:
		var answer []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				answer = append(answer, t.Text)
			}
		}
		return text("LLM response: " + strings.Join(answer, "\n")), nil
	case *mcp.CreateMessageResult:
		answer := ""
		if t, ok := res.Content.(*mcp.TextContent); ok {
			answer = t.Text
		}
		return text("LLM response: " + answer), nil
	default:
		return errorResult("unexpected answer to the sampling request: %T", res), nil
	}
}

// The elicitation schemas of the suite's scenarios.
var (
	elicitUser = json.RawMessage(`{"type":"object","properties":{
		"username":{"type":"string","description":"User's response"},
		"email":{"type":"string","description":"User's email address"}},
		"required":["username","email"]}`)
	elicitDefaults = json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","description":"User name","default":"John Doe"},
		"age":{"type":"integer","description":"User age","default":30},
		"score":{"type":"number","description":"User score","default":95.5},
		"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","description":"Verification status","default":true}}}`)
	elicitEnums = json.RawMessage(`{"type":"object","properties":{
		"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`)
)

// elicit asks the client with schema and reports the answer as "<prefix>: action=..., content=...".
func elicit(req *mcp.CallToolRequest, prefix, message string, schema json.RawMessage) (*mcp.CallToolResult, error) {
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return errorResult("the client does not support elicitation"), nil
	}
	switch res := req.Params.InputResponses[inputKey].(type) {
	case nil:
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputKey: &mcp.ElicitParams{Message: message, RequestedSchema: schema}}}, nil
	case *mcp.ElicitResult:
		content, _ := json.Marshal(res.Content)
		return text(fmt.Sprintf("%s: action=%s, content=%s", prefix, res.Action, content)), nil
	default:
		return errorResult("unexpected answer to the elicitation: %T", res), nil
	}
}

func addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource.", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource.",
			}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (a PNG image).", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://static-binary", MIMEType: "image/png", Blob: redPixel}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource to subscribe to.", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content."}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data", Description: "Data for an id.", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := strings.CutPrefix(req.Params.URI, "test://template/")
			id, ok2 := strings.CutSuffix(id, "/data")
			if !ok || !ok2 || id == "" {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			data, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(data)}}}, nil
		})
}

func addPrompts(s *mcp.Server) {
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two arguments.", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{user(&mcp.TextContent{
			Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]),
		})}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
			}}),
			user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
		}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: redPixel, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}

// complete suggests values for the argument arg1 that start with what was typed.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if req.Params.Argument.Name != "arg1" {
		return res, nil
	}
	for _, v := range []string{"paris", "park", "party", "test", "testing"} {
		if strings.HasPrefix(v, req.Params.Argument.Value) {
			res.Completion.Values = append(res.Completion.Values, v)
		}
	}
	res.Completion.Total = len(res.Completion.Values)
	return res, nil
}

// sleep waits d, or until ctx ends; it reports whether the whole wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
