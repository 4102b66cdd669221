package runlog_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agenthost/agenthost/a2a"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/runlog"
)

// A call to an A2A peer that is an agenthost ends with the tool calls of the peer's own run, as its answer reported
// them: the console nests them under the peer's step. Without content their errors are left out.
func TestPeerCalls(t *testing.T) {
	for _, content := range []bool{true, false} {
		t.Run(map[bool]string{true: "content", false: "no content"}[content], func(t *testing.T) {
			// The peer: an orchestrator with the kit's tools, served over A2A.
			peerLLM := fakellm.New()
			t.Cleanup(peerLLM.Close)
			peerModel, err := openai.New(&openai.Options{BaseURL: peerLLM.URL, APIKey: "sk-test", Model: "peer-model", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			peerOrch := host.New(peerModel, host.NewToolManager([]host.Toolset{kit{}}, nil), &host.Options{Name: "peer"})
			hs := httptest.NewUnstartedServer(nil)
			srv := a2a.NewServer(peerOrch, &a2a.ServerOptions{Name: "peer", URL: "http://" + hs.Listener.Addr().String() + "/"})
			hs.Config.Handler = srv.Handler(httpedge.Options{}, nil)
			hs.Start()
			t.Cleanup(func() { hs.Close(); srv.Close() })
			peerLLM.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "p1", Name: "echo", Arguments: `{"x":"a"}`}, {ID: "p2", Name: "fail", Arguments: `{"x":"PEER-SECRET"}`}}},
				fakellm.Turn{Text: "The peer is done."},
			)

			// The caller: the peer as a tool, observed by the recorder.
			peers, err := a2a.Connect(t.Context(), []a2a.PeerConfig{{Name: "remote", URL: hs.URL + "/", Timeout: time.Minute}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { peers.Close() })
			llmSrv := fakellm.New()
			t.Cleanup(llmSrv.Close)
			model, err := openai.New(&openai.Options{BaseURL: llmSrv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			rec := runlog.New(&runlog.Options{Content: func(string) bool { return content }})
			orch := host.New(model, host.NewToolManager(peers.Toolsets(), &host.ToolManagerOptions{Observer: rec}),
				&host.Options{Name: "main", Observer: rec})
			llmSrv.Enqueue(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "remote", Arguments: `{"message":"go"}`}}},
				fakellm.Turn{Text: "Done."},
			)
			ctx, id := rec.Expect(t.Context(), "console")
			if _, err := orch.Ask(ctx, &host.Request{Prompt: "ask the peer"}, nil); err != nil {
				t.Fatal(err)
			}
			_, entries, _ := rec.Run(id, 0)
			var end *runlog.Entry
			for i, e := range entries {
				if e.Kind == runlog.KindToolEnd && e.Name == "remote" {
					end = &entries[i]
				}
			}
			if end == nil {
				t.Fatalf("no tool_end of the peer's call in %+v", entries)
			}
			if end.Peer != "remote" || len(end.PeerCalls) != 2 {
				t.Fatalf("peer %q, peer calls %+v; want remote and its two calls", end.Peer, end.PeerCalls)
			}
			echo, fail := end.PeerCalls[0], end.PeerCalls[1]
			if echo.Name != "echo" || !echo.OK || fail.Name != "fail" || fail.OK {
				t.Errorf("peer calls %+v; want echo ok, fail failed", end.PeerCalls)
			}
			if content && fail.Error == "" || !content && fail.Error != "" {
				t.Errorf("content %v: the failed call's error is %q", content, fail.Error)
			}
		})
	}
}
