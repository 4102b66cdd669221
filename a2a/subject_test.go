package a2a

import (
	"net/http"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/runstarts"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// TestTaskRunMarkedWithSubject: a task's run is marked with its caller's subject, so that a console shows it to
// that caller alone.
func TestTaskRunMarkedWithSubject(t *testing.T) {
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	obs := &runstarts.Observer{}
	orch := host.New(fakeModel(t, fake), host.NewToolManager(nil, nil), &host.Options{Observer: obs})
	_, url := serveOrchestrator(t, orch, &ServerOptions{Caller: func(r *http.Request) string { return r.Header.Get("X-Caller") }})
	fake.Enqueue(fakellm.Turn{Text: "Hello Alice."})
	if rr := rpcAs(t, url, "alice", "SendMessage", sendMessageParams([]any{textParam("hi")}, nil, nil)); rr.Error != nil {
		t.Fatalf("SendMessage: %v", rr.Error)
	}
	var subjects []string
	testwait.Until(t, serverWaitLimit, "the task's run to start", func() bool {
		subjects = obs.Subjects()
		return len(subjects) > 0
	})
	if len(subjects) != 1 || subjects[0] != "alice" {
		t.Errorf("the runs' subjects %q, want [alice]", subjects)
	}
}
