package a2a

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
)

// docTool returns a result with one reference, so that the answer cites it.
type docTool struct{}

func (docTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: "docs", Description: "finds docs", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (docTool) Call(context.Context, json.RawMessage, *host.Call) (*host.Result, error) {
	return &host.Result{Text: "found", References: []host.Reference{{Title: "The Guide", URI: "https://example.com/guide"}}}, nil
}

type toolList []host.Tool

func (l toolList) Name() string                               { return "test" }
func (l toolList) Tools(context.Context) ([]host.Tool, error) { return l, nil }

// newTestServer serves an orchestrator on a fakellm model over A2A, on an httptest server.
func newTestServer(t *testing.T, policies map[string]host.ToolPolicy, tools ...host.Tool) (*fakellm.Server, *Server, string) {
	t.Helper()
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	tm := host.NewToolManager([]host.Toolset{toolList(tools)}, &host.ToolManagerOptions{Policies: policies})
	srv, url := serveOrchestrator(t, host.New(fakeModel(t, llm), tm, nil), &ServerOptions{})
	return llm, srv, url
}

// fakeModel is a model on llm.
func fakeModel(t *testing.T, llm *fakellm.Server) *openai.Model {
	t.Helper()
	model, err := openai.New(&openai.Options{BaseURL: llm.URL, APIKey: "sk-test", Model: "fake", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// serveOrchestrator serves orch over A2A with opts, named "tester", on an httptest server, until the test ends, and
// returns the server and its URL.
func serveOrchestrator(t *testing.T, orch *host.Orchestrator, opts *ServerOptions) (*Server, string) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	o := *opts
	o.Name, o.URL = "tester", "http://"+hs.Listener.Addr().String()+"/"
	srv := NewServer(orch, &o)
	hs.Config.Handler = srv.Handler(httpedge.Options{}, nil)
	hs.Start()
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, o.URL
}

// guidePeer serves an agent whose model reads the docs tool and cites the guide, and returns the tools of the peer
// that reaches it, named b.
func guidePeer(t *testing.T) (tools []host.Tool, url string) {
	t.Helper()
	llm, _, url := newTestServer(t, nil, docTool{})
	llm.Enqueue(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "docs", Arguments: `{}`}}},
		fakellm.Turn{Text: "See the guide [source 1]."},
	)
	peers, err := Connect(t.Context(), []PeerConfig{{Name: "b", URL: url}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peers.Close() })
	tools, _ = peers.Toolsets()[0].Tools(t.Context())
	return tools, url
}

func TestRoundTripThroughPeerTool(t *testing.T) {
	tools, _ := guidePeer(t)
	if len(tools) != 1 {
		t.Fatalf("tools = %d", len(tools))
	}
	var progress []string
	call := host.NewCall("x", "b", "a2a:b", func(p host.Progress) { progress = append(progress, p.Message) }, nil)
	res, err := tools[0].Call(t.Context(), json.RawMessage(`{"message":"find the guide"}`), call)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(res.Text, "See the guide [1].") {
		t.Errorf("result = %+v", res)
	}
	if len(res.References) != 1 || res.References[0].URI != "https://example.com/guide" || res.References[0].Title != "The Guide" {
		t.Errorf("references = %+v", res.References)
	}
	t.Logf("progress: %q", progress)
	t.Logf("text: %q structured: %s", res.Text, res.Structured)
}
