package runlog

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// sentOf knows a message by every field: a field added to llm.Message or llm.ToolCall must be added to sentMessage
// too, or a message that differs by it only would show the copy of another.
func TestSentKnowsEveryField(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	if got, want := fields(llm.Message{}), []string{"Role", "Content", "ToolCalls", "ToolCallID", "Name"}; !slices.Equal(got, want) {
		t.Errorf("llm.Message has the fields %q; sentOf compares %q: update it", got, want)
	}
	if got, want := fields(llm.ToolCall{}), []string{"ID", "Name", "Arguments"}; !slices.Equal(got, want) {
		t.Errorf("llm.ToolCall has the fields %q; sentOf compares %q: update it", got, want)
	}
}

// modelStarts returns the messages of the model_start entries of the run id.
func modelStarts(t *testing.T, r *Recorder, id string) [][]llm.Message {
	t.Helper()
	_, entries, _ := r.Run(id, 0)
	var out [][]llm.Message
	for _, e := range entries {
		if e.Kind == KindModelStart {
			out = append(out, e.Messages)
		}
	}
	return out
}

// A message changed at a place where the previous call sent another (a tool result cut to fit the context, say)
// is copied afresh, long or short, and one that did not change is the copy kept before.
func TestSentChangedNotReused(t *testing.T) {
	r := New(nil)
	ctx, id := r.Expect(t.Context(), "console")
	runCtx, end := r.StartRun(ctx, &host.RunStart{Agent: "a", Prompt: "p"})
	long := strings.Repeat("a", 100<<10)
	call := func(msgs ...llm.Message) {
		_, endModel := r.StartModelCall(runCtx, &host.ModelCallStart{Iteration: 1, Request: &llm.Request{Messages: msgs}})
		endModel(&llm.Response{}, nil)
	}
	user := llm.Message{Role: llm.RoleUser, Content: "question"}
	call(user, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: long})
	call(user, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "b" + long[1:]}) // same length, other text
	call(user, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "cut"})
	call(user, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "cut"})
	end(&host.Answer{StoppedBy: host.StopAnswered}, nil)
	starts := modelStarts(t, r, id)
	if len(starts) != 4 {
		t.Fatalf("%d model calls recorded, want 4", len(starts))
	}
	for i, want := range []string{"aaa", "baa", "cut", "cut"} {
		if got := starts[i][1].Content; !strings.HasPrefix(got, want) {
			t.Errorf("call %d shows the tool result %.10q…; want %q…", i+1, got, want)
		}
	}
	if unsafe.StringData(starts[0][0].Content) != unsafe.StringData(starts[3][0].Content) {
		t.Error("the unchanged user message is copied again")
	}
}

// What the recorder keeps to know a long message again is a fingerprint: the orchestrator's string of one request
// is not kept alive until the next.
func TestSentLongTextNotKeptAlive(t *testing.T) {
	r := New(nil)
	ctx, _ := r.Expect(t.Context(), "console")
	runCtx, end := r.StartRun(ctx, &host.RunStart{Agent: "a", Prompt: "p"})
	defer end(&host.Answer{StoppedBy: host.StopAnswered}, nil)
	freed := make(chan struct{})
	func() {
		long := strings.Repeat("x", 1<<20)
		runtime.AddCleanup(unsafe.StringData(long), func(ch chan struct{}) { close(ch) }, freed)
		msgs := []llm.Message{{Role: llm.RoleTool, ToolCallID: "c1", Content: long}}
		_, endModel := r.StartModelCall(runCtx, &host.ModelCallStart{Iteration: 1, Request: &llm.Request{Messages: msgs}})
		endModel(&llm.Response{}, nil)
	}()
	for range 20 {
		runtime.GC()
		select {
		case <-freed:
			return
		default:
		}
		runtime.Gosched()
	}
	t.Error("the 1 MiB text of a model call's request is still alive after the call, while its run goes on")
}
