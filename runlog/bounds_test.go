package runlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
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

// MaxEntries keeps a run's first entries and counts the others, but a run always ends.
func TestMaxEntries(t *testing.T) {
	h := newHarness(t, &runlog.Options{MaxEntries: 5})
	ctx, id := h.rec.Expect(t.Context(), "console")
	wait := follow(t.Context(), h.rec, id)
	if _, err := h.ask(ctx, "go", nil,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "e1", Name: "echo", Arguments: `{"x":"1"}`}}},
		fakellm.Turn{Text: "a long answer in many deltas"},
	); err != nil {
		t.Fatal(err)
	}
	got, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	sum, entries, _ := h.rec.Run(id, 0)
	if len(entries) != 6 || len(got) != 6 || entries[5].Kind != runlog.KindRunEnd || entries[5].Seq != 6 || entries[4].Kind != runlog.KindToolStart {
		t.Fatalf("entries %v; want the first 5 and the run's end", kinds(entries))
	}
	if sum.Entries != 6 || sum.Dropped < 8 || sum.Status != runlog.Status(host.StopAnswered) {
		t.Errorf("summary = %+v; want 6 entries, the rest dropped, answered", sum)
	}
}

// Watch reports a run as it starts, at most about every 100ms while it changes, and as it ends.
func TestWatch(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var got []runlog.Summary
	ended := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.rec.Watch(ctx, func(s runlog.Summary) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, s)
			if s.Status != runlog.StatusRunning {
				close(ended)
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
