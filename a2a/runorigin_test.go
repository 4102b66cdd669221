package a2a

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
)

// origins is an Observer that records the origin of each run it sees start.
type origins struct {
	mu   sync.Mutex
	seen []string
}

func (o *origins) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	o.mu.Lock()
	o.seen = append(o.seen, run.Origin)
	o.mu.Unlock()
	return ctx, func(*host.Answer, error) {}
}

func (o *origins) StartModelCall(ctx context.Context, _ *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

func (o *origins) StartToolCall(ctx context.Context, _ *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return ctx, func(*host.Result, error) {}
}

// The runs of tasks come from "a2a".
func TestTaskRunOrigin(t *testing.T) {
	llmSrv := fakellm.New()
	t.Cleanup(llmSrv.Close)
	obs := &origins{}
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
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.seen, []string{"a2a"}) {
		t.Errorf("origins = %q; want a2a", obs.seen)
	}
}
