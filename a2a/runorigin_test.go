package a2a

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/runstarts"
)

// The runs of tasks come from "a2a".
func TestTaskRunOrigin(t *testing.T) {
	llmSrv := fakellm.New()
	t.Cleanup(llmSrv.Close)
	obs := &runstarts.Observer{}
	_, url := serveOrchestrator(t, host.New(fakeModel(t, llmSrv), host.NewToolManager(nil, nil), &host.Options{Observer: obs}), &ServerOptions{})
	llmSrv.Enqueue(fakellm.Turn{Text: "hello"})
	peers, err := Connect(t.Context(), []PeerConfig{{Name: "b", URL: url}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peers.Close() })
	tools, _ := peers.Toolsets()[0].Tools(t.Context())
	res, err := tools[0].Call(t.Context(), json.RawMessage(`{"message":"hi"}`), nil)
	if err != nil || res.IsError || !strings.Contains(res.Text, "hello") {
		t.Fatalf("call: %+v, %v", res, err)
	}
	if !slices.Equal(obs.Origins(), []string{"a2a"}) {
		t.Errorf("origins = %q; want a2a", obs.Origins())
	}
}
