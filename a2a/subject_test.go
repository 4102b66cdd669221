package a2a

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/llm"
)

// subjectObserver records the subject (host.Subject) of each run it sees start.
type subjectObserver struct {
	mu       sync.Mutex
	subjects []string
}

func (o *subjectObserver) StartRun(ctx context.Context, _ *host.RunStart) (context.Context, func(*host.Answer, error)) {
	o.mu.Lock()
	o.subjects = append(o.subjects, host.Subject(ctx))
	o.mu.Unlock()
	return ctx, func(*host.Answer, error) {}
}

func (o *subjectObserver) StartModelCall(ctx context.Context, _ *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

func (o *subjectObserver) StartToolCall(ctx context.Context, _ *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return ctx, func(*host.Result, error) {}
}

// TestTaskRunMarkedWithSubject: a task's run is marked with its caller's subject, so that a console shows it to
// that caller alone.
func TestTaskRunMarkedWithSubject(t *testing.T) {
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	obs := &subjectObserver{}
	orch := host.New(fakeModel(t, fake), host.NewToolManager(nil, nil), &host.Options{Observer: obs})
	_, url := serveOrchestrator(t, orch, &ServerOptions{Caller: func(r *http.Request) string { return r.Header.Get("X-Caller") }})
	fake.Enqueue(fakellm.Turn{Text: "Hello Alice."})
	if rr := rpcAs(t, url, "alice", "SendMessage", sendMessageParams([]any{textParam("hi")}, nil, nil)); rr.Error != nil {
		t.Fatalf("SendMessage: %v", rr.Error)
	}
	var subjects []string
	testwait.Until(t, serverWaitLimit, "the task's run to start", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		subjects = append(subjects[:0], obs.subjects...)
		return len(subjects) > 0
	})
	if len(subjects) != 1 || subjects[0] != "alice" {
		t.Errorf("the runs' subjects %q, want [alice]", subjects)
	}
}
