package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient connects the go-sdk client to the server on each protocol generation and uses every tool: the
// benchmark's client must see the same server as slowstart's.
func TestGoSDKClient(t *testing.T) {
	for _, version := range []string{"", "2025-11-25", "2024-11-05"} {
		name := version
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			session := connect(t, version)
			want := version
			if want == "" {
				want = versions[0]
			}
			if got := session.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("protocol version %q, want %q", got, want)
			}

			res, err := session.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(res.Tools)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, string(got), tools) {
				t.Errorf("tools:\n got %s\nwant %s", got, tools)
			}

			for _, c := range []struct {
				tool, args, text, structured string
				isError                      bool
			}{
				{tool: "echo", args: `{"text":"hi \"there\""}`, text: `hi "there"`},
				{tool: "add", args: `{"a":1,"b":2.5}`, text: "3.5", structured: `{"sum":3.5}`},
				{tool: "echo", args: `{"text":3}`, text: "invalid arguments: json: cannot unmarshal number", isError: true},
			} {
				res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
				if err != nil {
					t.Fatalf("%s: %v", c.tool, err)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if res.IsError != c.isError || !strings.HasPrefix(text, c.text) {
					t.Errorf("%s(%s): isError %v, text %q; want %v, %q", c.tool, c.args, res.IsError, text, c.isError, c.text)
				}
				if c.structured != "" {
					got, _ := json.Marshal(res.StructuredContent)
					if !jsonEqual(t, string(got), c.structured) {
						t.Errorf("%s: structured content %s, want %s", c.tool, got, c.structured)
					}
				}
			}

			if _, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope", Arguments: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), `unknown tool: "nope"`) {
				t.Errorf("unknown tool: error %v", err)
			}
			if err := session.Ping(t.Context(), nil); err != nil {
				t.Errorf("ping: %v", err)
			}
		})
	}
}

// connect runs the server on pipes and connects a go-sdk client to it, asking for version ("" for the latest). The
// session is closed, and the server's end checked, when t ends.
func connect(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serve(inR, outW)
		outW.CloseWithError(io.EOF)
		done <- err
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "dev"}, nil)
	session, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		inW.Close()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		session.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return session
}

// TestProtocolErrors feeds the server lines a client should not send.
func TestProtocolErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u')"}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: resources/list"}}`},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":[]}`, `{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"tools/call: json: cannot unmarshal array into Go value of type struct { Name string \"json:\\\"name\\\"\"; Arguments json.RawMessage \"json:\\\"arguments\\\"\" }"}}`},
		{`{"jsonrpc":"2.0","method":"notifications/whatever"}`, ``},
	} {
		var out strings.Builder
		if err := serve(strings.NewReader(c.in+"\n"), &out); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
