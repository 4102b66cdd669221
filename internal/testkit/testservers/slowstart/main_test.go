package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServer connects a go-sdk client to the server in memory, after its delay, and uses every tool.
func TestServer(t *testing.T) {
	serverT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- run(t.Context(), 50*time.Millisecond, serverT) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "dev"}, nil)
	session, err := client.Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || res.Tools[0].Name != "add" || res.Tools[1].Name != "echo" {
		t.Fatalf("tools %+v", res.Tools)
	}
	for _, c := range []struct {
		tool, args, text, structured string
		isError                      bool
	}{
		{tool: "echo", args: `{"text":"hi"}`, text: "hi"},
		{tool: "add", args: `{"a":1,"b":2.5}`, text: "3.5", structured: `{"sum":3.5}`},
		{tool: "add", args: `{"a":"one"}`, text: "invalid arguments: ", isError: true},
	} {
		r, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		text := r.Content[0].(*mcp.TextContent).Text
		if r.IsError != c.isError || !strings.HasPrefix(text, c.text) {
			t.Errorf("%s(%s): isError %v, text %q", c.tool, c.args, r.IsError, text)
		}
		if c.structured != "" {
			if got, _ := json.Marshal(r.StructuredContent); string(got) != c.structured {
				t.Errorf("%s: structured %s, want %s", c.tool, got, c.structured)
			}
		}
	}
	session.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end after the client left")
	}
}

// TestSchemasAsInferred checks the claim of the package doc: the schemas written out are the ones the SDK would infer
// from the argument types, so that a client sees the same tools as from a server that infers them.
func TestSchemasAsInferred(t *testing.T) {
	for _, c := range []struct {
		name    string
		written json.RawMessage
		infer   func() (*jsonschema.Schema, error)
	}{
		{"echo input", echoTool.InputSchema.(json.RawMessage), func() (*jsonschema.Schema, error) { return jsonschema.For[echoIn](nil) }},
		{"add input", addTool.InputSchema.(json.RawMessage), func() (*jsonschema.Schema, error) { return jsonschema.For[addIn](nil) }},
		{"add output", addTool.OutputSchema.(json.RawMessage), func() (*jsonschema.Schema, error) { return jsonschema.For[addOut](nil) }},
	} {
		s, err := c.infer()
		if err != nil {
			t.Fatal(err)
		}
		inferred, _ := json.Marshal(s)
		if !sameJSON(t, inferred, c.written) {
			t.Errorf("%s:\n written  %s\n inferred %s", c.name, c.written, inferred)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
