package runlog_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/runlog"
)

// BenchmarkRecorderEvent measures what recording one event costs a run: a text delta and a tool's progress, with
// and without content, with and without a Watch.
func BenchmarkRecorderEvent(b *testing.B) {
	events := map[string]*host.Event{
		"text":     {Kind: host.EventTextDelta, Iteration: 1, Text: "a piece of text"},
		"progress": {Kind: host.EventToolProgress, Iteration: 1, ToolCall: &host.ToolEvent{ID: "c1", Name: "t", Progress: &host.Progress{Progress: 1}}},
	}
	for _, name := range []string{"text", "progress"} {
		for _, origin := range []string{"console", "mcp"} {
			for _, watched := range []bool{false, true} {
				label := name + "/" + origin
				if watched {
					label += "/watched"
				}
				b.Run(label, func(b *testing.B) {
					rec := runlog.New(&runlog.Options{MaxEntries: 1 << 30})
					ctx, cancel := context.WithCancel(b.Context())
					defer cancel()
					if watched {
						go rec.Watch(ctx, func(runlog.Summary) {})
					}
					runCtx, end := rec.StartRun(host.WithOrigin(ctx, origin), &host.RunStart{Agent: "a", Prompt: "p", Origin: origin})
					ev := events[name]
					b.ReportAllocs()
					for b.Loop() {
						rec.ObserveEvent(runCtx, ev)
					}
					b.StopTimer()
					end(&host.Answer{StoppedBy: host.StopAnswered}, nil)
				})
			}
		}
	}
}

// BenchmarkIdleHeap measures the heap that 200 short runs (the number a recorder keeps by default) hold once
// recorded: what an idle console costs.
func BenchmarkIdleHeap(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		rec := recordShortRuns(b.Context(), 200)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/200, "heap-B/run")
		runtime.KeepAlive(rec)
		b.StartTimer()
	}
}

// recordShortRuns records n short runs (a model call with two messages, a few text deltas, an answer) in a new
// Recorder.
func recordShortRuns(ctx context.Context, n int) *runlog.Recorder {
	rec := runlog.New(nil)
	for range n {
		runCtx, end := rec.StartRun(host.WithOrigin(ctx, "console"), &host.RunStart{Agent: "a", Prompt: "hello there", Origin: "console"})
		rec.ObserveEvent(runCtx, &host.Event{Kind: host.EventIteration, Iteration: 1})
		mctx, mend := rec.StartModelCall(runCtx, &host.ModelCallStart{Iteration: 1, Request: &llm.Request{Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "you are helpful"}, {Role: llm.RoleUser, Content: "hello there"}}}})
		for range 5 {
			rec.ObserveEvent(mctx, &host.Event{Kind: host.EventTextDelta, Iteration: 1, Text: "some text "})
		}
		mend(&llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "some text some text"}}, nil)
		end(&host.Answer{Text: "some text some text", StoppedBy: host.StopAnswered}, nil)
	}
	return rec
}
