package runlog_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/runlog"
)

// A model call the model retries is one model span with a model_retry entry per failed attempt, each with its error
// and the wait before the next, and the count on its model_end.
func TestModelRetries(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	rec := runlog.New(nil)
	orch := host.New(model, host.NewToolManager(nil, nil), &host.Options{Name: "main", Observer: rec})
	srv.Enqueue(
		fakellm.Turn{Status: 503, ErrorMessage: "overloaded", RetryAfter: 5 * time.Millisecond},
		fakellm.Turn{Status: 429, ErrorMessage: "slow down", RetryAfter: 7 * time.Millisecond},
		fakellm.Turn{Text: "fine"},
	)
	ctx, id := rec.Expect(t.Context(), "console")
	if _, err := orch.Ask(ctx, &host.Request{Prompt: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	_, entries, ok := rec.Run(id, 0)
	if !ok {
		t.Fatal("the run is not kept")
	}
	var retries []runlog.Entry
	var end *runlog.Entry
	for i, e := range entries {
		switch e.Kind {
		case runlog.KindModelRetry:
			retries = append(retries, e)
		case runlog.KindModelEnd:
			end = &entries[i]
		}
	}
	if len(retries) != 2 || end == nil {
		t.Fatalf("retries %+v, model_end %+v", retries, end)
	}
	for i, want := range []struct {
		err   string
		delay float64
	}{{"overloaded", 5}, {"slow down", 7}} {
		r := retries[i]
		if r.Attempt != i+1 || !strings.Contains(r.Error, want.err) || r.DelayMS != want.delay || r.Span != end.Span {
			t.Errorf("retry %d: %+v, want attempt %d, error with %q, delay %v ms, span %s", i, r, i+1, want.err, want.delay, end.Span)
		}
	}
	if end.Retries != 2 || end.Error != "" {
		t.Errorf("model_end: retries %d, error %q; want 2 and none", end.Retries, end.Error)
	}
}
