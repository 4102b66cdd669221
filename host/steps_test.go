package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/llm/openai"
)

// journal is a StepRunner that records steps as a durable runner does, for tests: by start order, which is how a
// durable engine numbers them. It replays the first replay entries of a journal without running them, and
// simulates a crash: steps started at index crashAt or later fail with errCrash without running.
type journal struct {
	mu      sync.Mutex
	entries []journalEntry // by start index; recorded entries are done
	replay  int
	crashAt int // -1: never
	started []string
	// overlap runs each step on a goroutine of its own, so that steps started together run together, as a durable
	// engine's do; the start order, which numbers them, stays that of the calls of Go.
	overlap bool
}

type journalEntry struct {
	name string
	b    []byte
	err  error
	done bool
}

var errCrash = errors.New("the process died")

func (j *journal) begin(name string) (idx int, recorded *journalEntry, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	idx = len(j.started)
	j.started = append(j.started, name)
	if idx < j.replay {
		e := j.entries[idx]
		if e.name != name {
			return idx, nil, fmt.Errorf("nondeterminism: step %d is %q, recorded as %q", idx, name, e.name)
		}
		return idx, &e, nil
	}
	if j.crashAt >= 0 && idx >= j.crashAt {
		return idx, nil, errCrash
	}
	for len(j.entries) <= idx {
		j.entries = append(j.entries, journalEntry{})
	}
	return idx, nil, nil
}

func (j *journal) record(idx int, name string, b []byte, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return // the end of ctx is not an outcome
	}
	j.entries[idx] = journalEntry{name: name, b: b, err: err, done: true}
}

func (j *journal) Step(ctx context.Context, name string, do func(context.Context) ([]byte, error)) ([]byte, error) {
	return j.Go(ctx, name, do)()
}

func (j *journal) Go(ctx context.Context, name string, do func(context.Context) ([]byte, error)) func() ([]byte, error) {
	idx, rec, err := j.begin(name)
	switch {
	case err != nil:
		return func() ([]byte, error) { return nil, err }
	case rec != nil:
		return func() ([]byte, error) { return rec.b, rec.err }
	}
	if j.overlap {
		var b []byte
		done := make(chan struct{})
		go func() {
			defer close(done)
			b, err = do(ctx)
			j.record(idx, name, b, err)
		}()
		return func() ([]byte, error) { <-done; return b, err }
	}
	b, err := do(ctx) // synchronously, unless overlap
	j.record(idx, name, b, err)
	return func() ([]byte, error) { return b, err }
}

// recorded returns the first n entries, which must all be done: the journal of a process that died after them.
func (j *journal) recorded(t *testing.T, n int) []journalEntry {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, e := range j.entries[:n] {
		if !e.done {
			t.Fatalf("step %d (%s) did not finish before the crash", i, j.started[i])
		}
	}
	return slices.Clone(j.entries[:n])
}

// durableRun is a run that uses every kind of step: it opens a conversation, calls the model four times (one call
// forcing a tool), runs two tools in one round, one of them after an approval, and saves the conversation.
type durableRun struct {
	turns []fakellm.Turn
	// per-run counts of what ran, reset by each newDurableRun
	search, fetch atomic.Int32
	asked         atomic.Int32
}

func (d *durableRun) tools() []Tool {
	return []Tool{
		&funcTool{spec: ToolSpec{Name: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			fn: func(_ context.Context, args json.RawMessage, _ *Call) (*Result, error) {
				d.search.Add(1)
				return &Result{Text: "results for " + string(args), References: []Reference{{Title: "Go spec", URI: "https://go.dev/ref/spec", Content: "The spec."}}}, nil
			}},
		&funcTool{spec: ToolSpec{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)},
			fn: func(_ context.Context, args json.RawMessage, _ *Call) (*Result, error) {
				d.fetch.Add(1)
				return &Result{Text: "page " + string(args), IsError: strings.Contains(string(args), "missing")}, nil
			}},
	}
}

func (d *durableRun) Approve(context.Context, *ApprovalRequest) (bool, error) {
	d.asked.Add(1)
	return true, nil
}

func (d *durableRun) Elicit(context.Context, *ElicitRequest) (*ElicitResult, error) {
	return &ElicitResult{Action: ElicitDecline}, nil
}

var durableTurns = []fakellm.Turn{
	{ToolCalls: []fakellm.ToolCall{{ID: "f1", Name: "search", Arguments: `{"q":"forced"}`}}}, // the forced call
	{ToolCalls: []fakellm.ToolCall{{ID: "s1", Name: "search", Arguments: `{"q":"spec"}`}, {ID: "p1", Name: "fetch", Arguments: `{"url":"missing"}`}}},
	{ToolCalls: []fakellm.ToolCall{{ID: "p2", Name: "fetch", Arguments: `{"url":"https://go.dev"}`}}},
	{Text: "Go has a spec [source 2]."},
}

// newDurableOrch returns an orchestrator for the durable run on a new fakellm server scripted with turns.
func newDurableOrch(t *testing.T, d *durableRun, store ConversationStore, turns []fakellm.Turn) (*Orchestrator, *fakellm.Server) {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.Enqueue(turns...)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tm := NewToolManager([]Toolset{&staticSet{name: "test", tools: d.tools()}}, &ToolManagerOptions{
		Policies: map[string]ToolPolicy{"search": {Forced: true}, "fetch": {RequireApproval: true}},
	})
	return New(model, tm, &Options{Conversations: store}), srv
}

// TestStepsResumeAfterCrash runs the durable run, crashing it after each number of steps in turn, and resumes it
// from what was recorded: the steps that finished are not run again (the model is asked and the tools are called
// only for the others), and the run ends with the answer and the conversation of a run that never crashed.
func TestStepsResumeAfterCrash(t *testing.T) {
	ask := func(t *testing.T, orch *Orchestrator, d *durableRun, steps StepRunner, id string) (*Answer, error) {
		return orch.Ask(t.Context(), &Request{Prompt: "What is Go?", ConversationID: id, StartConversation: true, Interactor: d, Steps: steps}, nil)
	}
	// The run without a crash, recorded whole.
	whole := &journal{crashAt: -1}
	d := &durableRun{}
	store := NewMemoryStore(nil)
	orch, _ := newDurableOrch(t, d, store, durableTurns)
	want, err := ask(t, orch, d, whole, "conv")
	if err != nil {
		t.Fatal(err)
	}
	if want.Text != "Go has a spec [1].\n\nSources:\n[1] Go spec — https://go.dev/ref/spec" {
		t.Fatalf("answer %q", want.Text)
	}
	wantConv, _ := store.Load(t.Context(), "conv")
	wantNames := slices.Clone(whole.started)
	if got := strings.Join(wantNames, "\n"); got != strings.Join([]string{
		"load conversation",
		"tool search decision",
		"iteration 0: model call forcing search",
		"iteration 0: tool call search (f1)",
		"iteration 1: model call",
		"iteration 1: approval of fetch (p1)",
		"iteration 1: tool call search (s1)",
		"iteration 1: tool call fetch (p1)",
		"iteration 2: model call",
		"iteration 2: approval of fetch (p2)",
		"iteration 2: tool call fetch (p2)",
		"iteration 3: model call",
		"save conversation",
	}, "\n") {
		t.Fatalf("steps:\n%s", got)
	}

	isModel := func(name string) bool { return strings.Contains(name, "model call") }
	count := func(names []string, f func(string) bool) int32 {
		n := int32(0)
		for _, name := range names {
			if f(name) {
				n++
			}
		}
		return n
	}
	for k := 0; k <= len(wantNames); k++ {
		t.Run(fmt.Sprintf("crash after %d steps", k), func(t *testing.T) {
			store := NewMemoryStore(nil)
			// The first process runs until it dies after k steps.
			first := &journal{crashAt: k}
			d := &durableRun{}
			orch, _ := newDurableOrch(t, d, store, durableTurns[:count(wantNames[:k], isModel)])
			// A crash before the last step fails the run; one at the last step, the save, leaves the answer unsaved.
			if _, err := ask(t, orch, d, first, "conv"); k < len(wantNames)-1 && !errors.Is(err, errCrash) {
				t.Fatalf("the crashed run ended with %v, want errCrash", err)
			}
			// The second process resumes from the journal: only the steps after k run.
			rest := wantNames[k:]
			resumed := &journal{entries: first.recorded(t, k), replay: k, crashAt: -1}
			d2 := &durableRun{}
			orch2, srv2 := newDurableOrch(t, d2, store, durableTurns[count(wantNames[:k], isModel):])
			got, err := ask(t, orch2, d2, resumed, "conv")
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text || !reflect.DeepEqual(got.References, want.References) || got.StoppedBy != want.StoppedBy {
				t.Errorf("resumed answer %q %+v, want %q %+v", got.Text, got.References, want.Text, want.References)
			}
			if n := int32(srv2.RequestCount()); n != count(rest, isModel) {
				t.Errorf("the resumed run asked the model %d times, want %d", n, count(rest, isModel))
			}
			searches := count(rest, func(n string) bool { return strings.Contains(n, "tool call search") })
			fetches := count(rest, func(n string) bool { return strings.Contains(n, "tool call fetch") })
			approvals := count(rest, func(n string) bool { return strings.Contains(n, "approval") })
			if d2.search.Load() != searches || d2.fetch.Load() != fetches || d2.asked.Load() != approvals {
				t.Errorf("the resumed run called search %d, fetch %d times and asked %d approvals; want %d, %d and %d",
					d2.search.Load(), d2.fetch.Load(), d2.asked.Load(), searches, fetches, approvals)
			}
			if !slices.Equal(resumed.started, wantNames) {
				t.Errorf("the resumed run's steps:\n%s", strings.Join(resumed.started, "\n"))
			}
			conv, err := store.Load(t.Context(), "conv")
			if err != nil || !reflect.DeepEqual(conv.Messages, wantConv.Messages) || !reflect.DeepEqual(conv.Sources, wantConv.Sources) {
				t.Errorf("the conversation after the resumed run:\n%s\nwant\n%s (%v)", messagesText(conv), messagesText(wantConv), err)
			}
		})
	}
}

func messagesText(c *Conversation) string {
	if c == nil {
		return "<nil>"
	}
	var b strings.Builder
	for _, m := range c.Messages {
		fmt.Fprintf(&b, "%s: %s", m.Role, m.Content)
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, " [%s %s]", tc.Name, tc.Arguments)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// A recorded step that cannot be read back fails the run with a clear error.
func TestStepsUnreadableRecord(t *testing.T) {
	_, err := decodeStep[*llm.Response]([]byte("not json"), nil)
	if err == nil || !strings.Contains(err.Error(), "a recorded step cannot be read") {
		t.Errorf("err = %v", err)
	}
}
