package runlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm/openai"
	"github.com/agenthost/agenthost/runlog"
)

// The tests drive a real orchestrator, whose model is llm/openai talking to a scripted fakellm server, whose tools
// are the test's kit and a sub-agent, with the recorder as its observer, as the wiring installs it.

// harness is an orchestrator "main" with the kit's tools and the sub-agent "helper" (an orchestrator with the kit's
// tools), both observed by rec.
type harness struct {
	llm  *fakellm.Server
	rec  *runlog.Recorder
	orch *host.Orchestrator
}

func newHarness(t *testing.T, opts *runlog.Options) *harness {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	model, err := openai.New(&openai.Options{BaseURL: srv.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := runlog.New(opts)
	policies := map[string]host.ToolPolicy{"danger": {RequireApproval: true}}
	subTools := host.NewToolManager([]host.Toolset{kit{}}, &host.ToolManagerOptions{Observer: rec, Policies: policies})
	sub := host.New(model, subTools, &host.Options{Name: "helper", Observer: rec, ToolTimeout: time.Minute})
	agents := &host.SubAgents{}
	agents.Add("helper", "does what it is told", sub)
	tools := host.NewToolManager([]host.Toolset{kit{}, agents}, &host.ToolManagerOptions{Observer: rec, Policies: policies})
	orch := host.New(model, tools, &host.Options{Name: "main", Observer: rec, ToolTimeout: time.Minute,
		CodeMode: host.CodeModeOptions{Runner: listRunner{}}})
	return &harness{llm: srv, rec: rec, orch: orch}
}

// ask runs prompt under ctx with the scripted turns and returns its answer and error.
func (h *harness) ask(ctx context.Context, prompt string, ia host.Interactor, turns ...fakellm.Turn) (*host.Answer, error) {
	h.llm.Enqueue(turns...)
	return h.orch.Ask(ctx, &host.Request{Prompt: prompt, Interactor: ia}, nil)
}

// kit is the test's toolset:
//   - echo {"x": s} answers "echoed s";
//   - block waits for its context to end;
//   - danger (approval required) answers "done";
//   - chatty {"n": n} reports n progress notifications, then answers "chatted".
type kit struct{}

func (kit) Name() string { return "kit" }

func (kit) Tools(context.Context) ([]host.Tool, error) {
	return []host.Tool{kitTool("echo"), kitTool("block"), kitTool("danger"), kitTool("chatty")}, nil
}

type kitTool string

func (k kitTool) Spec() host.ToolSpec {
	return host.ToolSpec{Name: string(k), Description: "the kit's " + string(k), InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (k kitTool) Call(ctx context.Context, args json.RawMessage, call *host.Call) (*host.Result, error) {
	var in struct {
		X string `json:"x"`
		N int    `json:"n"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	switch k {
	case "echo":
		return &host.Result{Text: "echoed " + in.X}, nil
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "chatty":
		for i := range in.N {
			call.ReportProgress(host.Progress{Progress: float64(i + 1), Total: float64(in.N)})
		}
		return &host.Result{Text: "chatted"}, nil
	}
	return &host.Result{Text: "done"}, nil
}

// listRunner is a CodeRunner whose script is a JSON list of calls, [{"name": ..., "args": {...}}], made in order;
// its result is their results' texts, one a line.
type listRunner struct{}

func (listRunner) Describe([]*host.ManagedTool) string { return "a JSON list of calls" }

func (listRunner) Run(ctx context.Context, code string, tools host.ToolCaller) (*host.Result, error) {
	var calls []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal([]byte(code), &calls); err != nil {
		return &host.Result{Text: err.Error(), IsError: true}, nil
	}
	var waits []func() (*host.Result, error)
	for _, c := range calls {
		waits = append(waits, tools.StartTool(ctx, c.Name, c.Args))
	}
	var out []string
	for _, w := range waits {
		res, err := w()
		if err != nil {
			return nil, err
		}
		out = append(out, res.Text)
	}
	return &host.Result{Text: strings.Join(out, "\n")}, nil
}

// approver is an Interactor that answers every approval with ok, recording the question and the answer as a
// console's does.
type approver struct {
	rec *runlog.Recorder
	ok  bool

	mu sync.Mutex
	n  int
}

func (a *approver) Approve(ctx context.Context, req *host.ApprovalRequest) (bool, error) {
	a.mu.Lock()
	a.n++
	id := fmt.Sprintf("w%d", a.n)
	a.mu.Unlock()
	a.rec.Waiting(ctx, &runlog.Waiting{ID: id, Type: "approval", Tool: req.Tool, Source: req.Source, Arguments: req.Arguments})
	a.rec.Answered(ctx, &runlog.ApprovalAnswer{ID: id, Approved: a.ok})
	return a.ok, nil
}

func (a *approver) Elicit(context.Context, *host.ElicitRequest) (*host.ElicitResult, error) {
	return nil, errors.New("no elicitation in these tests")
}

// kinds lists the entries' kinds, with each stretch of text entries of one span shown once.
func kinds(entries []runlog.Entry) []string {
	var out []string
	for i, e := range entries {
		if e.Kind == runlog.KindText && i > 0 && entries[i-1].Kind == runlog.KindText && entries[i-1].Span == e.Span {
			continue
		}
		out = append(out, string(e.Kind)+" "+e.Span+"<"+e.Parent)
	}
	return out
}

// only returns the entries of kind k.
func only(entries []runlog.Entry, k runlog.Kind) []runlog.Entry {
	var out []runlog.Entry
	for _, e := range entries {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// text joins the text of the text entries of span.
func text(entries []runlog.Entry, span string) string {
	var b strings.Builder
	for _, e := range entries {
		if e.Kind == runlog.KindText && e.Span == span {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// follow follows run id from its start in a goroutine; the function returned waits for Follow to return and gives
// what it handed over and returned.
func follow(ctx context.Context, rec *runlog.Recorder, id string) func() ([]runlog.Entry, error) {
	var got []runlog.Entry
	done := make(chan error, 1)
	go func() {
		done <- rec.Follow(ctx, id, 0, func(e runlog.Entry) { got = append(got, e) })
	}()
	return func() ([]runlog.Entry, error) {
		err := <-done
		return got, err
	}
}

// lastRun returns the newest run's summary and entries.
func lastRun(t *testing.T, rec *runlog.Recorder) (runlog.Summary, []runlog.Entry) {
	t.Helper()
	runs := rec.Runs()
	if len(runs) == 0 {
		t.Fatal("no run recorded")
	}
	sum, entries, ok := rec.Run(runs[0].ID, 0)
	if !ok {
		t.Fatalf("Run(%q) found nothing", runs[0].ID)
	}
	return sum, entries
}
