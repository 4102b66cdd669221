package runlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/runlog"
)

// MaxRuns drops the oldest ended runs first, and never a running one.
func TestMaxRuns(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxRuns: 2})
	var ids []string
	for i := range 3 {
		ctx, id := h.rec.Expect(t.Context(), "console")
		ids = append(ids, id)
		if _, err := h.ask(ctx, fmt.Sprintf("prompt %d", i), nil, fakellm.Turn{Text: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	runs := h.rec.Runs()
	if len(runs) != 2 || runs[0].ID != ids[2] || runs[1].ID != ids[1] {
		t.Fatalf("Runs = %+v; want the last two, newest first (%v)", runs, ids[1:])
	}
	if _, _, ok := h.rec.Run(ids[0], 0); ok {
		t.Error("the oldest run is still kept")
	}

	// Three runs expected, so running: none is dropped, and the ended ones go first.
	var running []string
	for range 3 {
		_, id := h.rec.Expect(t.Context(), "console")
		running = append(running, id)
	}
	runs = h.rec.Runs()
	if len(runs) != 3 {
		t.Fatalf("%d runs kept; want the 3 running ones", len(runs))
	}
	for i, s := range runs {
		if s.ID != running[2-i] || s.Status != runlog.StatusRunning {
			t.Errorf("run %d = %+v; want %s, running", i, s, running[2-i])
		}
	}
}

// MaxEntries keeps a run's first entries and counts the others, but a run always ends, and so does every span
// whose start was kept: a model call, a tool call, a nested run (with its answer). The root's answer is kept too.
func TestMaxEntries(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxEntries: 7})
	ctx, id := h.rec.Expect(t.Context(), "console")
	wait := follow(t.Context(), h.rec, id)
	if _, err := h.ask(ctx, "go", nil, nestedTurns()...); err != nil {
		t.Fatal(err)
	}
	got, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	sum, entries, _ := h.rec.Run(id, 0)
	want := []string{
		"run_start r1<", "iteration r1<", "model_start m2<r1", "model_end m2<r1",
		"tool_start t3<r1", "tool_start t4<r1", "run_start r5<t4", // the first 7
		"answer r5<t4", "run_end r5<t4", // the nested run's inner entries dropped, not its end
		"tool_end t3<r1", "tool_end t4<r1",
		"answer r1<", "run_end r1<",
	}
	if k := kinds(entries); !slices.Equal(k, want) {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(k, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(got, entries) {
		t.Errorf("Follow handed over %v; want what Run returns", kinds(got))
	}
	for i, e := range entries {
		if e.Seq != i+1 {
			t.Errorf("entry %d has seq %d", i+1, e.Seq)
		}
	}
	// Dropped: the nested run's iteration, model_start, text and model_end; main's second iteration, model_start,
	// text and model_end.
	if sum.Entries != len(want) || sum.Dropped < 8 || sum.Status != runlog.Status(host.StopAnswered) {
		t.Errorf("summary = %+v; want %d entries, the rest dropped, answered", sum, len(want))
	}

	// With room for the root's start only, its answer and end are kept still.
	h = newHarness(t, &runlog.Options{MaxEntries: 1})
	if _, err := h.ask(t.Context(), "go", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, entries := lastRun(t, h.rec); !slices.Equal(kinds(entries), []string{"run_start r1<", "answer r1<", "run_end r1<"}) {
		t.Errorf("entries %v; want the run's start, answer and end", kinds(entries))
	}
}

// Watch reports a run as it starts, at most about every 100ms while it changes, and as it ends.
func TestWatch(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var got []runlog.Summary
	ended := make(chan struct{})
	var endOnce sync.Once // a run may be reported ended twice: its last change can reach Watch after Watch saw it end
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.rec.Watch(ctx, func(s runlog.Summary) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, s)
			if s.Status != runlog.StatusRunning {
				endOnce.Do(func() { close(ended) })
			}
		})
	}()
	// Watch is registered once a change reaches it: an expected run that nobody runs is one.
	for {
		_, _ = h.rec.Expect(t.Context(), "probe")
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	got = nil
	mu.Unlock()

	const progress = 2000
	began := time.Now()
	if _, err := h.ask(host.WithOrigin(t.Context(), "cli"), "go", nil,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "chatty", Arguments: fmt.Sprintf(`{"n":%d}`, progress)}}},
		fakellm.Turn{Text: "done"},
	); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	<-ended
	cancel()
	<-done
	var mine []runlog.Summary
	for _, s := range got {
		if s.Origin == "cli" {
			mine = append(mine, s)
		}
	}
	// One at the start, one at the end, and at most one per 100ms between (and one more for a period begun).
	if limit := 3 + int(took/(100*time.Millisecond)); len(mine) > limit || len(mine) < 2 {
		t.Fatalf("%d summaries in %v; want 2 to %d", len(mine), took, limit)
	}
	if last := mine[len(mine)-1]; last.Status != runlog.Status(host.StopAnswered) || last.Ended == nil || last.Entries < progress {
		t.Errorf("the last summary = %+v; want the run ended with all its entries", last)
	}
	if mine[0].Status != runlog.StatusRunning {
		t.Errorf("the first summary = %+v; want it running", mine[0])
	}
}

// Runs recorded at once keep apart, under -race.
func TestConcurrentRuns(t *testing.T) {
	h := newHarness(t, nil)
	// Each run calls echo with its prompt, then answers with what echo said.
	h.llm.SetResponder(func(req *fakellm.Request) fakellm.Turn {
		msgs := req.Messages
		last := msgs[len(msgs)-1]
		if last.Role == "tool" {
			return fakellm.Turn{Text: "answer to " + msgs[1].Content}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "x", Name: "echo", Arguments: fmt.Sprintf(`{"x":%q}`, last.Content)}}}
	})
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, id := h.rec.Expect(t.Context(), "console")
		ids[i] = id
		wait := follow(t.Context(), h.rec, id)
		wg.Go(func() {
			if _, err := h.orch.Ask(ctx, &host.Request{Prompt: fmt.Sprintf("prompt %d", i)}, nil); err != nil {
				t.Error(err)
			}
			got, err := wait()
			if err != nil || len(got) == 0 || got[len(got)-1].Kind != runlog.KindRunEnd {
				t.Errorf("run %d: Follow = %v with %d entries", i, err, len(got))
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		sum, entries, ok := h.rec.Run(id, 0)
		if !ok || sum.ModelCalls != 2 || sum.ToolCalls != 1 || sum.Status != runlog.Status(host.StopAnswered) {
			t.Errorf("run %d = %+v", i, sum)
			continue
		}
		if e := only(entries, runlog.KindToolEnd)[0]; e.Result != fmt.Sprintf("echoed prompt %d", i) || e.Span != only(entries, runlog.KindToolStart)[0].Span {
			t.Errorf("run %d's tool_end = %+v", i, e)
		}
	}
}

// An expected run whose context ends before a run took it ends, cancelled, and is trimmed like any ended run; one
// that a run took is not touched when its context ends later.
func TestExpectedRunNeverStarted(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxRuns: 1})
	ctx, cancel := context.WithCancel(t.Context())
	_, id := h.rec.Expect(ctx, "console")
	wait := follow(t.Context(), h.rec, id)
	cancel()
	if got, err := wait(); err != nil || len(got) != 0 {
		t.Fatalf("Follow = %v, %v; want it to return once the run is abandoned, with no entry", got, err)
	}
	sum, _, ok := h.rec.Run(id, 0)
	if !ok || sum.Status != runlog.Status(host.StopCancelled) || sum.Error != "the run did not start" || sum.Ended == nil {
		t.Fatalf("summary = %+v; want it cancelled, not started", sum)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	ctx, next := h.rec.Expect(ctx, "console")
	if runs := h.rec.Runs(); len(runs) != 1 || runs[0].ID != next {
		t.Errorf("Runs = %+v; want the abandoned run trimmed for %s", runs, next)
	}
	if _, err := h.ask(ctx, "go", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if sum, _, _ := h.rec.Run(next, 0); sum.Status != runlog.Status(host.StopAnswered) || sum.Error != "" {
		t.Errorf("summary after its context ended = %+v; want it answered still", sum)
	}
}

// Watch reports the runs kept first, newest first, then the changes.
func TestWatchReportsKeptRunsFirst(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.ask(t.Context(), "go", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	ended := h.rec.Runs()[0]
	_, running := h.rec.Expect(t.Context(), "console")
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan runlog.Summary, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.rec.Watch(ctx, func(s runlog.Summary) { got <- s })
	}()
	if s := <-got; s.ID != running || s.Status != runlog.StatusRunning {
		t.Errorf("first summary = %+v; want the expected run %s, running", s, running)
	}
	if s := <-got; s.ID != ended.ID || s.Status != runlog.Status(host.StopAnswered) {
		t.Errorf("second summary = %+v; want the run ended %s", s, ended.ID)
	}
	_, third := h.rec.Expect(t.Context(), "console")
	if s := <-got; s.ID != third {
		t.Errorf("third summary = %+v; want the new run %s", s, third)
	}
	cancel()
	<-done
}

// A prompt, arguments, a result and messages longer than 64 KiB are clipped, the arguments staying JSON.
func TestContentClipped(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	long := strings.Repeat("é", 40<<10) // 80 KiB
	args, _ := json.Marshal(map[string]string{"x": long})
	if _, err := h.ask(ctx, long, nil,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "e1", Name: "echo", Arguments: string(args)}}},
		fakellm.Turn{Text: "ok"},
	); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := h.rec.Run(id, 0)
	// clipped checks that s is the first 64 KiB of a text of n bytes (less the end of a character cut) and says so.
	clipped := func(what, s string, n int) {
		t.Helper()
		kept, _, _ := strings.Cut(s, "…[clipped ")
		suffix := fmt.Sprintf("…[clipped %d bytes]", n-len(kept))
		if !strings.HasSuffix(s, suffix) || len(kept) > 64<<10 || len(kept) < 64<<10-3 {
			t.Errorf("%s: %d bytes ending %q; want 64 KiB and %q", what, len(s), s[max(0, len(s)-40):], suffix)
		}
	}
	clipped("the prompt", entries[0].Prompt, len(long))
	var arg string
	start := only(entries, runlog.KindToolStart)[0]
	if err := json.Unmarshal(start.Arguments, &arg); err != nil {
		t.Fatalf("the arguments are not a JSON string: %v", err)
	}
	if !strings.HasPrefix(arg, `{"x":"ééé`) {
		t.Errorf("the arguments = %q...; want them clipped", arg[:20])
	}
	clipped("the arguments", arg, len(args))
	clipped("the result", only(entries, runlog.KindToolEnd)[0].Result, len("echoed ")+len(long))
	for _, m := range only(entries, runlog.KindModelStart)[1].Messages {
		if len(m.Content) > 64<<10+100 {
			t.Errorf("a %s message of %d bytes is kept", m.Role, len(m.Content))
		}
		for _, c := range m.ToolCalls {
			if len(c.Arguments) > 64<<10+100 {
				t.Errorf("a tool call's arguments of %d bytes are kept", len(c.Arguments))
			}
		}
	}
	if b, err := json.Marshal(entries); err != nil || len(b) > 8*(64<<10)+(16<<10) { // 8 pieces of 64 KiB: the prompt twice, the arguments thrice, the result twice
		t.Errorf("the entries are %d bytes of JSON (%v); want the pieces clipped", len(b), err)
	}
}

// A model server that streams its whole answer as one delta gets that delta clipped, as the answer is.
func TestTextDeltaClipped(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	long := strings.Repeat("z", 100<<10)
	if _, err := h.ask(ctx, "go", nil, fakellm.Turn{Text: long, ChunkSize: len(long)}); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := h.rec.Run(id, 0)
	deltas := only(entries, runlog.KindText)
	if len(deltas) != 1 {
		t.Fatalf("%d text entries; want the one delta", len(deltas))
	}
	if n := len(deltas[0].Text); n > 64<<10+100 || !strings.HasSuffix(deltas[0].Text, fmt.Sprintf("…[clipped %d bytes]", len(long)-64<<10)) {
		t.Errorf("the delta of %d bytes is kept as %d bytes ending %q; want 64 KiB and a note", len(long), n, deltas[0].Text[max(0, n-30):])
	}
}

// Each model call of a run sends the conversation so far again. A message already sent is kept once: the clipped
// copy of a long tool result made for the first call that sent it is the one every later call's entry holds, so
// what a run keeps grows with its length, not with its square.
func TestSentMessagesKeptOnce(t *testing.T) {
	h := newHarness(t, nil)
	ctx, id := h.rec.Expect(t.Context(), "console")
	long, _ := json.Marshal(map[string]string{"x": strings.Repeat("y", 80<<10)})
	turns := []fakellm.Turn{{ToolCalls: []fakellm.ToolCall{{ID: "e1", Name: "echo", Arguments: string(long)}}}}
	for i := range 4 {
		turns = append(turns, fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: fmt.Sprintf("s%d", i), Name: "echo", Arguments: `{"x":"short"}`}}})
	}
	turns = append(turns, fakellm.Turn{Text: "ok"})
	if _, err := h.ask(ctx, "go", nil, turns...); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := h.rec.Run(id, 0)
	starts := only(entries, runlog.KindModelStart)
	if len(starts) != 6 {
		t.Fatalf("%d model calls recorded; want 6", len(starts))
	}
	// find returns the message of e whose tool call id or call's id is callID, and its role.
	find := func(e runlog.Entry, role, callID string) *llm.Message {
		for i, m := range e.Messages {
			if string(m.Role) == role && (m.ToolCallID == callID || len(m.ToolCalls) > 0 && m.ToolCalls[0].ID == callID) {
				return &e.Messages[i]
			}
		}
		t.Fatalf("no %s message of call %s in a model call's messages", role, callID)
		return nil
	}
	firstResult, firstCall := find(starts[1], "tool", "e1"), find(starts[1], "assistant", "e1")
	if !strings.Contains(firstResult.Content, "…[clipped ") || !strings.Contains(firstCall.ToolCalls[0].Arguments, "…[clipped ") {
		t.Fatalf("the long result and arguments are not clipped: %d and %d bytes", len(firstResult.Content), len(firstCall.ToolCalls[0].Arguments))
	}
	for _, e := range starts[2:] {
		result, call := find(e, "tool", "e1"), find(e, "assistant", "e1")
		if unsafe.StringData(result.Content) != unsafe.StringData(firstResult.Content) ||
			unsafe.StringData(call.ToolCalls[0].Arguments) != unsafe.StringData(firstCall.ToolCalls[0].Arguments) {
			t.Errorf("model call %d keeps a copy of its own of the clipped result or arguments", e.Iteration)
		}
		if result.Content != firstResult.Content {
			t.Errorf("model call %d: the result differs from the one sent first", e.Iteration)
		}
	}
}

// 200 short runs, what a console keeps, cost little: a few KiB each, not a chunk of 256 entries.
func TestIdleHeap(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := recordShortRuns(t.Context(), 200)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rec)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 4<<20 {
		t.Errorf("200 short runs hold %d bytes; want less than 4 MiB", held)
	}
}

// A watch started (StartWatch) before a run is dropped, and run after, reports the run gone: a front end that opens
// its stream between the two (its client read the runs kept before) misses nothing.
func TestStartWatchReportsRunsGoneBeforeRun(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxRuns: 1})
	if _, err := h.ask(t.Context(), "first", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	first := h.rec.Runs()[0]
	wt := h.rec.StartWatch()
	if _, err := h.ask(t.Context(), "second", nil, fakellm.Turn{Text: "ok"}); err != nil { // drops the first
		t.Fatal(err)
	}
	if runs := h.rec.Runs(); len(runs) != 1 || runs[0].ID == first.ID {
		t.Fatalf("runs kept %+v; want the second only", runs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan runlog.Summary, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wt.Run(ctx, func(s runlog.Summary) { got <- s })
	}()
	timeout := time.After(30 * time.Second)
	for gone := false; !gone; {
		select {
		case s := <-got:
			gone = s.ID == first.ID && s.Status == runlog.StatusGone
		case <-timeout:
			t.Fatalf("no gone report of %s within 30s", first.ID)
		}
	}
	cancel()
	<-done
	wt.Stop() // after Run, a no-op
}

// Watch reports a run dropped past MaxRuns once, StatusGone, with its id and subject, and not after.
func TestWatchReportsRunsGone(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxRuns: 1})
	if _, err := h.ask(host.WithSubject(t.Context(), "alice"), "first", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	first := h.rec.Runs()[0]
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan runlog.Summary, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.rec.Watch(ctx, func(s runlog.Summary) { got <- s })
	}()
	if s := <-got; s.ID != first.ID {
		t.Fatalf("first summary = %+v; want the kept run %s", s, first.ID)
	}
	if _, err := h.ask(t.Context(), "second", nil, fakellm.Turn{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	second := h.rec.Runs()[0]
	var gone []runlog.Summary
	timeout := time.After(30 * time.Second)
	for {
		var s runlog.Summary
		select {
		case s = <-got:
		case <-timeout:
			t.Fatalf("no gone report and end of %s within 30s; gone %+v", second.ID, gone)
		}
		switch {
		case s.Status == runlog.StatusGone:
			gone = append(gone, s)
		case s.ID == first.ID:
			t.Errorf("the dropped run reported again: %+v", s)
		}
		if s.ID == second.ID && s.Status != runlog.StatusRunning && len(gone) > 0 {
			break
		}
	}
	if len(gone) != 1 || gone[0].ID != first.ID || gone[0].Subject != "alice" {
		t.Errorf("gone reports %+v; want one, of %s for alice", gone, first.ID)
	}
	cancel()
	<-done
}
