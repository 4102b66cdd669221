package runlog_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/runlog"
)

// An approval asked of a console is recorded in the run that waits on it, the sub-agent's nested run included, and
// a call denied gets its tool_start and tool_end all the same.
func TestApprovals(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	ia := &approver{rec: h.rec, ok: true}
	if _, err := h.ask(ctx, "go", ia,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a1", Name: "helper", Arguments: `{"task":"be careful"}`}}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "a2", Name: "danger", Arguments: `{"x":"boom"}`}}}, // the helper's
		fakellm.Turn{Text: "it is done"}, // the helper's
		fakellm.Turn{Text: "all done"},
	); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := h.rec.Run(id, 0)
	// The helper's progress, "calling danger", reaches the calling run at a time of its own: left out of the order.
	progress := only(entries, runlog.KindToolProgress)
	if len(progress) != 1 || progress[0].Span != "t3" || progress[0].Progress == nil || progress[0].Progress.Message != "calling danger" {
		t.Errorf("progress = %+v; want the helper's call's", progress)
	}
	entries = slices.DeleteFunc(entries, func(e runlog.Entry) bool { return e.Kind == runlog.KindToolProgress })
	want := []string{
		"run_start r1<", "iteration r1<", "model_start m2<r1", "model_end m2<r1",
		"tool_start t3<r1",
		"run_start r4<t3", "iteration r4<t3", "model_start m5<r4", "model_end m5<r4",
		"approval r4<t3", "approval_done r4<t3",
		"tool_start t6<r4", "tool_end t6<r4",
		"iteration r4<t3", "model_start m7<r4", "text m7<r4", "model_end m7<r4", "answer r4<t3", "run_end r4<t3",
	}
	if k := kinds(entries); len(k) < len(want) || !slices.Equal(k[:len(want)], want) {
		t.Fatalf("entries:\n%s\nwant them to start with:\n%s", strings.Join(k, "\n"), strings.Join(want, "\n"))
	}
	w := only(entries, runlog.KindApproval)[0]
	if w.Approval == nil || w.Approval.Tool != "danger" || w.Approval.ID != "w1" || string(w.Approval.Arguments) != `{"x":"boom"}` || w.Name != "danger" {
		t.Errorf("approval = %+v", w)
	}
	if a := only(entries, runlog.KindApprovalDone)[0]; a.Answered == nil || !a.Answered.Approved || a.Answered.ID != "w1" {
		t.Errorf("approval_done = %+v", a)
	}

	// Denied: the call never runs, but has its entries.
	ia = &approver{rec: h.rec, ok: false}
	ctx, id = h.rec.Expect(t.Context(), "console")
	if _, err := h.ask(ctx, "go", ia,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "d1", Name: "danger", Arguments: `{}`}, {ID: "d2", Name: "danger", Arguments: `{}`}}},
		fakellm.Turn{Text: "it was denied"},
	); err != nil {
		t.Fatal(err)
	}
	_, entries, _ = h.rec.Run(id, 0)
	want = []string{
		"run_start r1<", "iteration r1<", "model_start m2<r1", "model_end m2<r1",
		"approval r1<", "approval_done r1<",
		"tool_start t3<r1", "tool_end t3<r1", // denied
		"tool_start t4<r1", "tool_end t4<r1", // the duplicate, answered with the first's result
		"iteration r1<",
	}
	if k := kinds(entries); len(k) < len(want) || !slices.Equal(k[:len(want)], want) {
		t.Fatalf("entries:\n%s\nwant them to start with:\n%s", strings.Join(k, "\n"), strings.Join(want, "\n"))
	}
	ends := only(entries, runlog.KindToolEnd)
	if e := ends[0]; e.CallID != "d1" || e.OK == nil || *e.OK || e.Info == nil || e.Info.Approval != "denied" {
		t.Errorf("the denied call's tool_end = %+v", e)
	}
	if e := ends[1]; e.CallID != "d2" || e.Info == nil || !e.Info.Duplicate {
		t.Errorf("the duplicate's tool_end = %+v", e)
	}
	if s := only(entries, runlog.KindToolStart); s[0].CallID != "d1" || s[0].Name != "danger" || s[1].CallID != "d2" {
		t.Errorf("tool_starts = %+v", s)
	}
}

// run_code's calls nest in its span.
func TestRunCodeNesting(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	code, _ := json.Marshal(map[string]string{"code": `[{"name":"echo","args":{"x":"a"}},{"name":"echo","args":{"x":"b"}},{"name":"chatty","args":{"n":2}}]`})
	if _, err := h.ask(ctx, "go", nil,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "rc", Name: "run_code", Arguments: string(code)}}},
		fakellm.Turn{Text: "done"},
	); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := h.rec.Run(id, 0)
	var rc runlog.Entry
	for _, e := range entries {
		if e.Kind == runlog.KindToolStart && e.Name == "run_code" {
			rc = e
		}
	}
	if rc.Span == "" || rc.Parent != "r1" {
		t.Fatalf("run_code's tool_start = %+v; entries %v", rc, kinds(entries))
	}
	// Each nested call starts and ends in one span nested in run_code's, after run_code's start and before its end.
	spans := map[string][]runlog.Kind{}
	var order []string
	rcEnded := false
	for _, e := range entries {
		switch {
		case e.Span == rc.Span && e.Kind == runlog.KindToolEnd:
			rcEnded = true
		case e.Parent == rc.Span:
			if rcEnded || e.Seq < rc.Seq {
				t.Errorf("%s of %s (seq %d) is outside run_code's call", e.Kind, e.Span, e.Seq)
			}
			if len(spans[e.Span]) == 0 {
				order = append(order, e.Name)
			}
			spans[e.Span] = append(spans[e.Span], e.Kind)
		}
	}
	if !slices.Equal(order, []string{"echo", "echo", "chatty"}) {
		t.Errorf("nested calls %v; want echo, echo, chatty", order)
	}
	for span, k := range spans {
		if k[0] != runlog.KindToolStart || k[len(k)-1] != runlog.KindToolEnd {
			t.Errorf("span %s: %v; want a tool_start first and a tool_end last", span, k)
		}
	}
	if n := len(only(entries, runlog.KindToolProgress)); n != 2 {
		t.Errorf("%d progress entries; want chatty's 2", n)
	}
}
